//! Git hooks wherever git looks for them. `.git/hooks` is on the control surface
//! (`protected`); a repository can point `core.hooksPath` elsewhere, into the worktree
//! (husky's `.husky/_`), at any config level git reads. Those directories are protected the
//! same way: the user's next `git commit` on the host runs what is there.
//!
//! The effective value comes from git itself (system, global, repository and worktree
//! config, includes and conditional includes), run on the host as `git config`, which runs
//! nothing a repository names: a system git, a minimal environment, `core.fsmonitor` off,
//! and a time limit.

use std::os::unix::ffi::OsStrExt;
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
    repo_within(dir, Path::new("/"))
}

/// The repository whose worktree holds `dir`, looking no higher than `top`: the nearest
/// `.git` directory or gitfile (followed to its git dir) in `dir` or an ancestor below `top`.
/// (git dir, worktree).
pub fn repo_within(dir: &Path, top: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in dir.ancestors().take_while(|a| a.starts_with(top)) {
        let dot_git = d.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => return Some((dot_git, d.to_path_buf())),
            Ok(m) if m.is_file() => {
                if let Some(git_dir) = crate::protected::gitfile_target(&dot_git) {
                    return Some((git_dir, d.to_path_buf()));
                }
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
    hook_dirs_in(git_dir, worktree, home).unwrap_or_default()
}

/// `hook_dirs`, or None when git could not say (no system git, a failure, the time limit).
pub fn hook_dirs_in(git_dir: &Path, worktree: &Path, home: &Path) -> Option<Vec<HookDir>> {
    let config = core_config(git_dir, Some(worktree), home)?;
    Some(match config.hooks_path {
        Some(value) => dirs_for(&value, git_dir, worktree, home),
        None => vec![],
    })
}

/// `hook_dirs` for a git dir found in the writable trees, whose worktree is not known:
/// `core.worktree` when set (a submodule's git dir), else the parent of a `.git` directory,
/// the worktree a linked worktree's admin dir links back to (its `gitdir` file), or the git
/// dir itself for a bare repository. None when git could not say, or where a relative
/// `core.hooksPath` would be relative to is not known: what is known is kept.
pub fn hook_dirs_of(git_dir: &Path, home: &Path) -> Option<Vec<HookDir>> {
    let named_dot_git = git_dir.file_name().is_some_and(|n| n == ".git");
    let linked = || {
        let back = std::fs::read(git_dir.join("gitdir")).ok()?;
        let gitfile = git_dir.join(std::ffi::OsStr::from_bytes(back.trim_ascii()));
        gitfile.parent().map(Path::to_path_buf)
    };
    let default_worktree = if named_dot_git {
        git_dir.parent().map(Path::to_path_buf)
    } else {
        linked()
    };
    let config = core_config(git_dir, None, home)?;
    let Some(value) = config.hooks_path else {
        return Some(vec![]);
    };
    let worktree = match (config.worktree, default_worktree) {
        (Some(w), _) => git_dir.join(w),
        (None, Some(w)) => w,
        (None, None) if config.bare => git_dir.to_path_buf(),
        (None, None) => return None,
    };
    Some(dirs_for(&value, git_dir, &worktree, home))
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
    // Not there yet, two or more levels missing (`tools/hooks` without `tools`): a `tools`
    // made as a link would take git elsewhere, where no rule names the hooks. The first
    // missing directory is protected whole until it exists.
    let missing = first_missing_ancestor(&path).filter(|m| out.iter().all(|h| h.path != *m));
    if let Some(first_missing) = missing {
        out.push(HookDir {
            path: first_missing,
            git_dir: git_dir.to_path_buf(),
            why: format!("the missing directory on the way to core.hooksPath = {value}"),
        });
    }
    out
}

/// The topmost missing directory on the way to `path`, when more than `path` itself is
/// missing.
fn first_missing_ancestor(path: &Path) -> Option<PathBuf> {
    if std::fs::symlink_metadata(path).is_ok() {
        return None;
    }
    let mut missing = path;
    for a in path.ancestors().skip(1) {
        if std::fs::symlink_metadata(a).is_ok() {
            break;
        }
        missing = a;
    }
    (missing != path).then(|| missing.to_path_buf())
}

/// What git's config says of a repository's hooks and worktree.
#[derive(Default)]
struct CoreConfig {
    hooks_path: Option<String>,
    worktree: Option<String>,
    bare: bool,
}

/// `core.hooksPath`, `core.worktree` and `core.bare` as git reads them for the repository
/// (every config level, includes), asked so that nothing the repository says can run code:
/// git from a system directory, no inherited environment, a time limit. None when no system
/// git is there to ask, or it fails or hangs.
fn core_config(git_dir: &Path, worktree: Option<&Path>, home: &Path) -> Option<CoreConfig> {
    let git = detect::system_program("git")?;
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
    // -z: a value holding a newline cannot pass for another key.
    cmd.args([
        "config",
        "-z",
        "--path",
        "--get-regexp",
        r"^core\.(hookspath|worktree|bare)$",
    ])
    .current_dir(worktree.unwrap_or(git_dir))
    .stdin(Stdio::null())
    .stderr(Stdio::null())
    .stdout(Stdio::piped());
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        cmd.env("XDG_CONFIG_HOME", xdg);
    }
    let mut child = cmd.spawn().ok()?;
    // Waited for before reading (a hung git must not hang us): its few lines of output fit
    // in the pipe's buffer.
    let status = detect::wait_or_kill(&mut child, GIT_TIMEOUT).ok()??;
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take()?, &mut out).ok()?;
    match status.code() {
        Some(0) => {}
        // No key matched: none of them is set.
        Some(1) if out.is_empty() => return Some(CoreConfig::default()),
        _ => return None,
    }
    // Records of `key\nvalue\0`; the last value of each key wins, as git's own `--get` has it.
    let mut config = CoreConfig::default();
    for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        let value = (!value.is_empty()).then(|| value.to_string());
        match key {
            "core.hookspath" => config.hooks_path = value,
            "core.worktree" => config.worktree = value,
            "core.bare" => config.bare = value.as_deref() == Some("true"),
            _ => {}
        }
    }
    Some(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(dirs: Vec<HookDir>) -> Vec<PathBuf> {
        dirs.into_iter().map(|d| d.path).collect()
    }

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
        let dirs = paths(hook_dirs(&git_dir, &worktree, &repo));
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
        assert!(hook_dirs_of(&nested.join(".git"), &root)
            .unwrap()
            .is_empty());
        git(&nested, &["config", "core.hooksPath", "githooks"]);
        let dirs = hook_dirs_of(&nested.join(".git"), &root).unwrap();
        assert_eq!(dirs.len(), 1);
        assert_eq!(dirs[0].path, nested.join("githooks"));
        assert_eq!(dirs[0].git_dir, nested.join(".git"));
        // a bare repository: its hooks run from the git dir
        let bare = root.join("bare.git");
        std::fs::create_dir(&bare).unwrap();
        git(&bare, &["init", "-q", "--bare"]);
        git(&bare, &["config", "core.hooksPath", "myhooks"]);
        assert_eq!(
            hook_dirs_of(&bare, &root).unwrap()[0].path,
            bare.join("myhooks")
        );
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
        let dirs = paths(hook_dirs_of(&module, &root).unwrap());
        assert_eq!(dirs, [work.join(".husky/_"), work.join(".husky")]);
    }

    #[test]
    fn a_linked_worktrees_admin_dir_resolves_against_that_worktree_and_unknowns_stay_unknown() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let main = root.join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.email=a@b",
                "-c",
                "user.name=a",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "i",
            ],
        );
        git(&main, &["worktree", "add", "-q", "../wt"]);
        git(&main, &["config", "core.hooksPath", ".husky/_"]);
        let admin = main.join(".git/worktrees/wt");
        let dirs = paths(hook_dirs_of(&admin, &root).unwrap());
        assert_eq!(dirs, [root.join("wt/.husky/_"), root.join("wt/.husky")]);
        // the repository around a path, through the linked worktree's gitfile
        let (git_dir, worktree) = repo_within(&root.join("wt/src"), &root).unwrap();
        assert_eq!((git_dir, worktree), (admin.clone(), root.join("wt")));
        // no worktree to resolve against (not bare, no core.worktree, no back-link): unknown
        let orphan = root.join("orphan.git");
        std::fs::create_dir(&orphan).unwrap();
        git(&orphan, &["init", "-q", "--bare"]);
        git(&orphan, &["config", "core.bare", "false"]);
        git(&orphan, &["config", "core.hooksPath", "h"]);
        assert!(hook_dirs_of(&orphan, &root).is_none());
        // no repository below the top looked from
        assert!(repo_within(&root.join("wt/src"), &root.join("wt/src")).is_none());
    }

    #[test]
    fn a_hooks_path_missing_two_levels_down_protects_the_first_missing_directory() {
        let t = tempfile::tempdir().unwrap();
        let repo = std::fs::canonicalize(t.path()).unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["config", "core.hooksPath", "tools/hooks"]);
        let dirs = paths(hook_dirs(&repo.join(".git"), &repo, &repo));
        assert_eq!(dirs, [repo.join("tools/hooks"), repo.join("tools")]);
        // one level missing: the hooks directory itself covers it
        std::fs::create_dir(repo.join("tools")).unwrap();
        let dirs = paths(hook_dirs(&repo.join(".git"), &repo, &repo));
        assert_eq!(dirs, [repo.join("tools/hooks")]);
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
