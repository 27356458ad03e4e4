//! Git hooks wherever git looks for them. `.git/hooks` is on the control surface
//! (`protected`); a repository can point `core.hooksPath` elsewhere, into the worktree
//! (husky's `.husky/_`), at any config level git reads. Those directories are protected the
//! same way: the user's next `git commit` on the host runs what is there.
//!
//! The effective value comes from git itself (system, global, repository and worktree
//! config, includes and conditional includes), run on the host as `git config`, which runs
//! nothing a repository names: a system git, a minimal environment, `core.fsmonitor` off,
//! and a time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::platform::detect;

/// A directory git runs hooks from, other than the git dir's own `hooks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookDir {
    /// Canonical.
    pub path: PathBuf,
    /// The repository's git dir, for messages.
    pub git_dir: PathBuf,
    /// Why: `core.hooksPath = <value>`, or husky's scripts behind its wrappers.
    pub why: String,
}

const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// The repository around `dir`: its git dir and worktree (`.git` directory or gitfile in
/// `dir` or an ancestor). None outside any repository.
pub fn enclosing_repo(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in dir.ancestors() {
        let dot_git = d.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => return Some((dot_git, d.to_path_buf())),
            Ok(m) if m.is_file() => {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let target = text.strip_prefix("gitdir:")?.trim();
                let git_dir = d.join(target);
                return Some((git_dir, d.to_path_buf()));
            }
            _ => {}
        }
    }
    None
}

/// The effective `core.hooksPath` of the repository (`git_dir`, `worktree`), resolved as git
/// resolves it (relative to the worktree), plus the hook scripts' directory when it is a
/// husky layout (`<dir>/_` wrappers that run `<dir>/<hook>`). Empty when unset, or when no
/// system git is there to ask (the table's `.git/hooks` still applies).
pub fn hook_dirs(git_dir: &Path, worktree: &Path, home: &Path) -> Vec<HookDir> {
    let config = core_config(git_dir, Some(worktree), home);
    match config.hooks_path {
        Some(value) => dirs_for(&value, git_dir, worktree, home),
        None => vec![],
    }
}

/// `hook_dirs` for a git dir found in the writable trees, whose worktree is not known: the
/// parent of a `.git` directory, else `core.worktree` (a submodule's git dir), else the
/// git dir itself (a bare repository, whose hooks run there).
pub fn hook_dirs_of(git_dir: &Path, home: &Path) -> Vec<HookDir> {
    let named_dot_git = git_dir.file_name().is_some_and(|n| n == ".git");
    let worktree = if named_dot_git {
        git_dir.parent().map(Path::to_path_buf)
    } else {
        None
    };
    let config = core_config(git_dir, worktree.as_deref(), home);
    let Some(value) = config.hooks_path else {
        return vec![];
    };
    let worktree = worktree
        .or_else(|| config.worktree.map(|w| git_dir.join(w)))
        .unwrap_or_else(|| git_dir.to_path_buf());
    dirs_for(&value, git_dir, &worktree, home)
}

/// The config files whose change can change a git dir's own `core.hooksPath`.
pub fn config_files(git_dir: &Path) -> [PathBuf; 2] {
    [git_dir.join("config"), git_dir.join("config.worktree")]
}

fn dirs_for(value: &str, git_dir: &Path, worktree: &Path, home: &Path) -> Vec<HookDir> {
    let expanded = match value.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(value),
    };
    let path = worktree.join(expanded);
    let path = crate::paths::canonicalize(&path).unwrap_or(path);
    let mut out = vec![HookDir {
        path: path.clone(),
        git_dir: git_dir.to_path_buf(),
        why: format!("core.hooksPath = {value}"),
    }];
    // husky 9: `.husky/_/<hook>` are generated wrappers that run `.husky/<hook>`.
    if path.file_name().is_some_and(|n| n == "_") {
        if let Some(scripts) = path.parent() {
            out.push(HookDir {
                path: scripts.to_path_buf(),
                git_dir: git_dir.to_path_buf(),
                why: format!(
                    "the hook scripts husky's wrappers in {} run (core.hooksPath = {value})",
                    path.display()
                ),
            });
        }
    }
    out
}

/// What git's config says of a repository's hooks and worktree.
#[derive(Default)]
struct CoreConfig {
    hooks_path: Option<String>,
    worktree: Option<String>,
}

/// `core.hooksPath` and `core.worktree` as git reads them for the repository (every config
/// level, includes), asked so that nothing the repository says can run code: git from a
/// system directory, no inherited environment, a time limit. Nothing when no system git is
/// there to ask, or it fails.
fn core_config(git_dir: &Path, worktree: Option<&Path>, home: &Path) -> CoreConfig {
    let Some(git) = detect::system_program("git") else {
        return CoreConfig::default();
    };
    let mut cmd = Command::new(git);
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "core.fsmonitor=false", "-c", "safe.directory=*"])
        .arg("--git-dir")
        .arg(git_dir);
    if let Some(w) = worktree {
        cmd.arg("--work-tree").arg(w);
    }
    cmd.args([
        "config",
        "--path",
        "--get-regexp",
        r"^core\.(hookspath|worktree)$",
    ])
    .current_dir(worktree.unwrap_or(git_dir))
    .stdin(Stdio::null())
    .stderr(Stdio::null())
    .stdout(Stdio::piped());
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        cmd.env("XDG_CONFIG_HOME", xdg);
    }
    let Ok(mut child) = cmd.spawn() else {
        return CoreConfig::default();
    };
    // Waited for before reading (a hung git must not hang us): its few lines of output fit
    // in the pipe's buffer.
    let status = detect::wait_or_kill(&mut child, GIT_TIMEOUT);
    if !matches!(status, Ok(Some(s)) if s.success()) {
        return CoreConfig::default();
    }
    let mut out = String::new();
    let read = child
        .stdout
        .take()
        .map(|mut o| std::io::Read::read_to_string(&mut o, &mut out));
    if !matches!(read, Some(Ok(_))) {
        return CoreConfig::default();
    }
    // The last value of each key wins, as git's own `--get` has it.
    let mut config = CoreConfig::default();
    for line in out.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        if value.is_empty() {
            continue;
        }
        match key {
            "core.hookspath" => config.hooks_path = Some(value.to_string()),
            "core.worktree" => config.worktree = Some(value.to_string()),
            _ => {}
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn hooks_path_from_the_repository_config_and_husky_scripts() {
        let t = tempfile::tempdir().unwrap();
        let repo = std::fs::canonicalize(t.path()).unwrap();
        git(&repo, &["init", "-q"]);
        assert!(hook_dirs(&repo.join(".git"), &repo, &repo).is_empty());
        git(&repo, &["config", "core.hooksPath", ".husky/_"]);
        let (git_dir, worktree) = enclosing_repo(&repo.join("src/deep")).unwrap();
        assert_eq!(
            (git_dir.clone(), worktree.clone()),
            (repo.join(".git"), repo.clone())
        );
        let dirs: Vec<PathBuf> = hook_dirs(&git_dir, &worktree, &repo)
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(dirs, [repo.join(".husky/_"), repo.join(".husky")]);
    }

    #[test]
    fn hooks_of_a_git_dir_found_in_the_trees_resolve_against_its_worktree() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        // a nested repository: relative to the directory holding `.git`
        let nested = root.join("vendor/lib");
        std::fs::create_dir_all(&nested).unwrap();
        git(&nested, &["init", "-q"]);
        assert!(hook_dirs_of(&nested.join(".git"), &root).is_empty());
        git(&nested, &["config", "core.hooksPath", "githooks"]);
        let dirs = hook_dirs_of(&nested.join(".git"), &root);
        assert_eq!(dirs.len(), 1);
        assert_eq!(dirs[0].path, nested.join("githooks"));
        assert_eq!(dirs[0].git_dir, nested.join(".git"));
        // a bare repository: its hooks run from the git dir
        let bare = root.join("bare.git");
        std::fs::create_dir(&bare).unwrap();
        git(&bare, &["init", "-q", "--bare"]);
        git(&bare, &["config", "core.hooksPath", "myhooks"]);
        assert_eq!(hook_dirs_of(&bare, &root)[0].path, bare.join("myhooks"));
        // a git dir elsewhere with core.worktree (a submodule's): relative to that worktree
        let module = root.join("modules/sub");
        let work = root.join("sub");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(root.join("modules")).unwrap();
        let module_arg = module.to_str().unwrap();
        git(&work, &["init", "-q", "--separate-git-dir", module_arg]);
        for (key, value) in [
            ("core.worktree", "../../sub"),
            ("core.hooksPath", ".husky/_"),
        ] {
            git(&root, &["--git-dir", module_arg, "config", key, value]);
        }
        let dirs: Vec<PathBuf> = hook_dirs_of(&module, &root)
            .into_iter()
            .map(|d| d.path)
            .collect();
        assert_eq!(dirs, [work.join(".husky/_"), work.join(".husky")]);
    }

    #[test]
    fn hooks_path_from_the_global_config_expands_home() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        let repo = home.join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(
            home.join(".gitconfig"),
            "[core]\n\thooksPath = ~/my-hooks\n",
        )
        .unwrap();
        let dirs = hook_dirs(&repo.join(".git"), &repo, &home);
        assert_eq!(dirs[0].path, home.join("my-hooks"));
        assert!(dirs[0].why.contains("core.hooksPath"));
    }
}
