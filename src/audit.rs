//! After a sandboxed command: control-surface paths that appeared during it.
//!
//! The OS layer can make existing paths read-only, but cannot stop a command from creating a
//! new name: a `.pi` directory in a subdirectory (pi loads extensions from it), or a new git
//! repository whose hooks or config run commands when the user next runs git there, outside
//! the sandbox. So every command is bracketed: the protected paths seen just before it are
//! the baseline; what is new afterwards is neutralised (renamed, never deleted) and reported.
//! New files matching denyWrite are reported only: they are the user's data.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// What was done about one new path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    /// Where it was moved, if it was.
    pub moved_to: Option<PathBuf>,
    pub why: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.moved_to {
            Some(to) => write!(
                f,
                "{} was created by the command and moved to {}: {}",
                self.path.display(),
                to.display(),
                self.why
            ),
            None => write!(f, "{}: {}", self.path.display(), self.why),
        }
    }
}

/// The suffix of a neutralised path.
pub const QUARANTINE_SUFFIX: &str = "pi-sandbox-quarantined";

/// git config keys a fresh repository may carry; any other key can run commands or redirect
/// git (core.hooksPath, core.fsmonitor, filter drivers, aliases, include.path, ...).
const SAFE_GIT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "extensions.objectformat",
    "remote.*.url",
    "remote.*.fetch",
    "remote.*.pushurl",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
];

/// The keys in a git config text, lower-cased as git compares them, subsections as `*`.
/// Unparseable lines count as a key of their own, so they are never taken for safe.
fn git_config_keys(text: &str) -> Vec<String> {
    let is_blank = |l: &str| l.is_empty() || l.starts_with('#') || l.starts_with(';');
    let mut section = String::new();
    let mut keys = Vec::new();
    for raw in text.lines() {
        let mut body = raw.trim();
        if let Some(rest) = body.strip_prefix('[') {
            let Some(end) = rest.find(']') else {
                keys.push(format!("unparseable:{body}"));
                continue;
            };
            let header = &rest[..end];
            section = match header.split_once(|c: char| c.is_whitespace() || c == '.') {
                Some((name, _sub)) => format!("{}.*", name.to_ascii_lowercase()),
                None => header.to_ascii_lowercase(),
            };
            // A key may follow the header on the same line: `[core] hooksPath = x`.
            body = rest[end + 1..].trim();
        }
        if is_blank(body) {
            continue;
        }
        let name = body.split('=').next().unwrap_or("").trim();
        keys.push(format!("{section}.{}", name.to_ascii_lowercase()));
    }
    keys
}

/// Keys in `text` that a fresh repository should not have.
pub fn unsafe_git_keys(text: &str) -> Vec<String> {
    git_config_keys(text)
        .into_iter()
        .filter(|k| !SAFE_GIT_KEYS.contains(&k.as_str()))
        .collect()
}

/// Tracks the protected paths that existed before each command.
#[derive(Debug, Default)]
pub struct Auditor {
    known: HashSet<PathBuf>,
}

impl Auditor {
    /// Records what exists just before a command: only what appears after it is suspect.
    pub fn baseline(&mut self, protected: &[PathBuf]) {
        self.known.extend(protected.iter().cloned());
    }

    /// Compares `protected` (found after the command) with the baseline and neutralises what
    /// is new. `is_control_surface` tells pi's control surface from a denyWrite match.
    pub fn after(
        &mut self,
        protected: &[PathBuf],
        is_control_surface: impl Fn(&Path) -> bool,
    ) -> Vec<Finding> {
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut findings = Vec::new();
        for path in protected {
            if self.known.contains(path) {
                continue;
            }
            let finding = if !is_control_surface(path) {
                Some(Finding {
                    path: path.clone(),
                    moved_to: None,
                    why: "it matches a denyWrite pattern; the OS layer can only keep existing files read-only, so check whether this file should exist".into(),
                })
            } else {
                neutralise(path, stamp)
            };
            // A path moved aside is gone: if a later command re-creates it, that is new again.
            if finding.as_ref().is_none_or(|f| f.moved_to.is_none()) {
                self.known.insert(path.clone());
            }
            findings.extend(finding);
        }
        findings
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

fn quarantine_name(path: &Path, stamp: u64) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{QUARANTINE_SUFFIX}-{stamp}"));
    path.with_file_name(name)
}

fn moved(path: &Path, stamp: u64, why: &str) -> Option<Finding> {
    let to = quarantine_name(path, stamp);
    match std::fs::rename(path, &to) {
        Ok(()) => Some(Finding {
            path: path.to_path_buf(),
            moved_to: Some(to),
            why: why.into(),
        }),
        Err(e) => Some(Finding {
            path: path.to_path_buf(),
            moved_to: None,
            why: format!("{why}; moving it aside failed ({e}): remove it yourself before running pi or git there"),
        }),
    }
}

/// A new `.pi` directory, git hooks or git config: renamed so that nothing loads or runs it.
fn neutralise(path: &Path, stamp: u64) -> Option<Finding> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        // An empty one holds nothing pi could load (and may be another run's placeholder).
        ".pi" if is_empty_dir(path) => None,
        ".pi" => moved(
            path,
            stamp,
            "a .pi directory can hold extensions that pi runs unsandboxed when started there",
        ),
        "hooks" => {
            // A fresh `git init` writes only *.sample hooks, which git never runs.
            let live: Vec<PathBuf> = std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| !p.to_string_lossy().ends_with(".sample"))
                .collect();
            if live.is_empty() {
                return None;
            }
            moved(
                path,
                stamp,
                "git hooks run outside the sandbox the next time you use git in this repository",
            )
        }
        "config" => {
            let text = std::fs::read_to_string(path).unwrap_or_else(|_| "[unreadable".into());
            let bad = unsafe_git_keys(&text);
            if bad.is_empty() {
                return None;
            }
            moved(
                path,
                stamp,
                &format!(
                    "this new repository's git config sets {} (can run commands outside the sandbox); git works without the file",
                    bad.join(", ")
                ),
            )
        }
        _ => moved(path, stamp, "part of pi's control surface"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_git_init_config_is_safe_and_command_keys_are_not() {
        let fresh = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert!(unsafe_git_keys(fresh).is_empty());
        let remote = "[remote \"origin\"]\n\turl = https://x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n";
        assert!(
            unsafe_git_keys(remote).is_empty(),
            "{:?}",
            unsafe_git_keys(remote)
        );
        assert_eq!(
            unsafe_git_keys("[core]\n  hooksPath = /x\n"),
            ["core.hookspath"]
        );
        assert_eq!(
            unsafe_git_keys("[core] fsmonitor = evil\n"),
            ["core.fsmonitor"]
        );
        assert_eq!(unsafe_git_keys("[alias]\n st = !sh -c x\n"), ["alias.st"]);
        assert_eq!(
            unsafe_git_keys("[include]\n path = ../x\n"),
            ["include.path"]
        );
        assert_eq!(
            unsafe_git_keys("[filter \"lfs\"]\n clean = x\n"),
            ["filter.*.clean"]
        );
        assert_eq!(unsafe_git_keys("[core\n"), ["unparseable:[core"]);
    }

    #[test]
    fn only_new_control_surface_paths_are_moved_and_baseline_ones_are_left() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let old_pi = root.join("old/.pi");
        let new_pi = root.join("new/.pi");
        let new_env = root.join(".env");
        let repo = root.join("repo/.git");
        for d in [&old_pi, &new_pi, &repo.join("hooks")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(&new_env, "X=1").unwrap();
        std::fs::write(new_pi.join("settings.json"), "{}").unwrap();
        let empty_pi = root.join("empty/.pi");
        std::fs::create_dir_all(&empty_pi).unwrap();
        std::fs::write(repo.join("hooks/pre-commit.sample"), "").unwrap();
        std::fs::write(repo.join("config"), "[core]\n\tbare = false\n").unwrap();
        let mut a = Auditor::default();
        a.baseline(std::slice::from_ref(&old_pi));
        let after = vec![
            old_pi.clone(),
            new_pi.clone(),
            empty_pi.clone(),
            new_env.clone(),
            repo.join("hooks"),
            repo.join("config"),
        ];
        let found = a.after(&after, |p| p != new_env);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].path, new_pi);
        assert!(found[0].moved_to.is_some());
        assert!(!new_pi.exists() && found[0].moved_to.as_ref().unwrap().exists());
        assert!(old_pi.exists());
        // an empty .pi holds nothing to load: left in place
        assert!(empty_pi.exists());
        assert_eq!(found[1].path, new_env);
        assert!(found[1].moved_to.is_none() && new_env.exists());
        // the sample-only hooks dir and the plain config stay
        assert!(repo.join("hooks").exists() && repo.join("config").exists());
        // reported once: a rescan no longer lists what was moved
        let rescan: Vec<PathBuf> = after.iter().filter(|p| **p != new_pi).cloned().collect();
        assert!(a.after(&rescan, |p| p != new_env).is_empty());
        // re-created after being moved aside: caught again
        std::fs::create_dir_all(new_pi.join("extensions")).unwrap();
        let again = a.after(&after, |p| p != new_env);
        assert_eq!(again.len(), 1, "{again:?}");
        assert_eq!(again[0].path, new_pi);
    }

    #[test]
    fn a_live_hook_or_a_dangerous_config_is_moved_aside() {
        let t = tempfile::tempdir().unwrap();
        let git = t.path().join("r/.git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\ncurl evil").unwrap();
        std::fs::write(git.join("config"), "[core]\n\thooksPath = /tmp/h\n").unwrap();
        let mut a = Auditor::default();
        let found = a.after(&[git.join("hooks"), git.join("config")], |_| true);
        assert_eq!(found.len(), 2);
        assert!(!git.join("hooks").exists() && !git.join("config").exists());
        assert!(found[1].why.contains("core.hookspath"), "{}", found[1].why);
    }
}
