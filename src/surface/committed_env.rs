//! Env files the project's repository tracks. Their content is in git's objects, which bash
//! must read for git to work, so `git show HEAD:.env` reads it whatever hides the file in
//! the worktree: a limit of the design, told to the user in `/sandbox` and in the first
//! note of a session.
//!
//! Asked of git itself (`git ls-files -z`), run as `hooks` runs git (a system git, no
//! inherited environment, nothing the repository names run, a time limit), filtered with the
//! guard's env-file test (templates such as `.env.example` included, as the guard does).
//! Once per session, after its first sandboxed command, never on a command's way in; every
//! later question gets the cached answer.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::shown;

/// How many of the tracked env files a note names; the rest are counted.
const NAMED: usize = 5;

/// The session's answer, asked once.
pub(crate) struct CommittedEnv {
    cwd: PathBuf,
    home: PathBuf,
    /// The tracked env files, relative to the repository's top; or why git could not say.
    found: OnceLock<Result<Vec<PathBuf>, String>>,
    /// The first note was given.
    told: AtomicBool,
}

impl CommittedEnv {
    pub(crate) fn new(cwd: &Path, home: &Path) -> CommittedEnv {
        CommittedEnv {
            cwd: cwd.to_path_buf(),
            home: home.to_path_buf(),
            found: OnceLock::new(),
            told: AtomicBool::new(false),
        }
    }

    /// The tracked env files of the repository around the session's directory (none outside
    /// a repository), asked of git on the first call.
    pub(crate) fn found(&self) -> &Result<Vec<PathBuf>, String> {
        self.found
            .get_or_init(|| match crate::surface::hooks::enclosing_repo(&self.cwd) {
                Some((git_dir, worktree)) => tracked_env_files(&git_dir, &worktree, &self.home),
                None => Ok(vec![]),
            })
    }

    /// The note for the session's first command: once, and only when there is something to
    /// say.
    pub(crate) fn first_note(&self) -> Option<String> {
        if self.told.swap(true, Ordering::SeqCst) {
            return None;
        }
        let files = self.found().as_ref().ok().filter(|f| !f.is_empty())?;
        Some(format!(
            "This repository tracks {} in git: the committed content is in git's objects, which the sandbox does not hide from commands (/sandbox says more).",
            named(files)
        ))
    }

    /// The paragraph of `/sandbox`.
    pub(crate) fn report(&self) -> String {
        match self.found() {
            Ok(files) if files.is_empty() => {
                "\nEnv files tracked by git: none (their content would be readable from git's objects, e.g. `git show HEAD:.env`, whatever hides the file)\n".into()
            }
            Ok(files) => format!(
                "\nEnv files tracked by git: {}\n  Their committed content is in git's objects: `git show HEAD:<file>` reads it inside the sandbox whatever hides the file. Stop tracking them (`git rm --cached`) and change the secrets they held; earlier commits keep them until the history is rewritten.\n",
                named(files)
            ),
            Err(why) => format!("\nEnv files tracked by git: unknown ({why})\n"),
        }
    }
}

/// `files` by name, at most `NAMED` of them, the rest counted.
fn named(files: &[PathBuf]) -> String {
    let mut names: Vec<String> = files.iter().take(NAMED).map(|f| shown::path(f)).collect();
    if files.len() > NAMED {
        names.push(format!("and {} more", files.len() - NAMED));
    }
    names.join(", ")
}

/// The env files among what git's index holds for the repository at `worktree`.
fn tracked_env_files(git_dir: &Path, worktree: &Path, home: &Path) -> Result<Vec<PathBuf>, String> {
    let mut args: Vec<&OsStr> = vec![
        "--git-dir".as_ref(),
        git_dir.as_os_str(),
        "--work-tree".as_ref(),
        worktree.as_os_str(),
    ];
    args.extend(["ls-files", "-z"].map(OsStr::new));
    let out = git_output(&args, worktree, home)?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(OsStr::from_bytes(name)))
        .filter(|p| crate::policy::guard::is_env_file(p))
        .collect())
}

/// `git <args>`'s output, git run as every lookup of ours runs it (`hooks::run_git`).
fn git_output(args: &[&OsStr], dir: &Path, home: &Path) -> Result<Vec<u8>, String> {
    let run = crate::surface::hooks::run_git(args, None, dir, home).map_err(|e| e.to_string())?;
    match run.code {
        Some(0) => Ok(run.stdout),
        code => Err(format!("git ls-files failed (exit code {code:?})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::hooks::test_git as git;

    #[test]
    fn tracked_env_files_are_found_and_told_once() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join("api/sub")).unwrap();
        git(&repo, &["init", "-q"]);
        for f in [
            ".env",
            "api/.env.production",
            ".env.example",
            "README.md",
            "envy",
            "api/sub/x.env",
        ] {
            std::fs::write(repo.join(f), "A=1\n").unwrap();
        }
        // Hidden or ignored in the worktree does not matter: the index holds it.
        std::fs::write(repo.join(".gitignore"), ".env\n").unwrap();
        git(&repo, &["add", "-f", "."]);
        std::fs::write(repo.join(".env.local"), "untracked\n").unwrap();
        // Asked from a subdirectory: the whole repository is listed.
        let c = CommittedEnv::new(&repo.join("api/sub"), t.path());
        let mut found = c.found().clone().unwrap();
        found.sort();
        let want: Vec<PathBuf> = [".env", ".env.example", "api/.env.production"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found, want);
        let note = c.first_note().expect("a note");
        assert!(
            note.contains(".env, ") && note.contains("api/.env.production"),
            "{note}"
        );
        assert_eq!(c.first_note(), None, "once per session");
        assert!(c.report().contains("git show HEAD:"), "{}", c.report());
    }

    #[test]
    fn nothing_to_say_outside_a_repository_or_without_env_files() {
        let t = tempfile::tempdir().unwrap();
        let c = CommittedEnv::new(t.path(), t.path());
        assert_eq!(c.found(), &Ok(vec![]));
        assert_eq!(c.first_note(), None);
        assert!(c.report().contains("none"));
        git(t.path(), &["init", "-q"]);
        std::fs::write(t.path().join("a.txt"), "x").unwrap();
        git(t.path(), &["add", "a.txt"]);
        let c = CommittedEnv::new(t.path(), t.path());
        assert_eq!(c.first_note(), None);
    }

    #[test]
    fn hostile_names_are_escaped_and_many_are_counted() {
        let t = tempfile::tempdir().unwrap();
        git(t.path(), &["init", "-q"]);
        for i in 0..8 {
            let dir = t.path().join(format!("d{i}\u{1b}[2K\u{202e}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(".env"), "A=1\n").unwrap();
        }
        git(t.path(), &["add", "."]);
        let note = CommittedEnv::new(t.path(), t.path()).first_note().unwrap();
        assert!(
            !note.contains('\u{1b}') && !note.contains('\u{202e}'),
            "{note}"
        );
        assert!(note.contains("\\x1b[2K\\u{202e}/.env"), "{note}");
        assert!(note.contains("and 3 more"), "{note}");
    }
}
