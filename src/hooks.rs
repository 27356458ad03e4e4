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
    let Some(value) = configured_hooks_path(git_dir, worktree, home) else {
        return vec![];
    };
    let expanded = match value.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(&value),
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

/// `git config --get core.hooksPath` for the repository, run so that nothing the
/// repository says can run code: git from a system directory, no inherited environment.
fn configured_hooks_path(git_dir: &Path, worktree: &Path, home: &Path) -> Option<String> {
    let git = detect::system_program("git")?;
    let mut cmd = Command::new(git);
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "core.fsmonitor=false", "-c", "safe.directory=*"])
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(worktree)
        .args(["config", "--path", "--get", "core.hooksPath"])
        .current_dir(worktree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .stdout(Stdio::piped());
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        cmd.env("XDG_CONFIG_HOME", xdg);
    }
    let mut child = cmd.spawn().ok()?;
    let status = detect::wait_or_kill(&mut child, GIT_TIMEOUT).ok()??;
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let value = out.trim_end_matches('\n').to_string();
    (status.success() && !value.is_empty()).then_some(value)
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
