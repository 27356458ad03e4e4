//! Env files and what git already holds of them.
//!
//! **What is worth hiding.** bash hides an env file (a mask bound over it) because it may
//! hold secrets the model has not been shown. A file whose exact content git's objects
//! already held before the sandbox's first session hides nothing: `git show` or `git
//! cat-file` reads that content inside the sandbox whatever hides the working copy, and the
//! mask only breaks git (a character device where git expects a file: `git status` reports
//! it changed, `git diff` cannot hash it, `git stash` and `rebase` refuse). In approval mode
//! ask such a file is not hidden (`hides_nothing`), the read tool reads it without asking,
//! and the audit lets git check one out (`git worktree add`, `checkout`). A working copy with anything added (a local secret) has another blob id,
//! which no old object has: it stays hidden.
//!
//! **How "held before" is proved** (`git_objects`): the blob id of the working copy,
//! computed by us, names a loose object or is listed by a pack index of the repository's
//! object store, in a regular file whose inode changed last before the sandbox's first
//! session (`audit::first_session_time`). A command can write `.git/objects` and `.git/index`
//! (git needs it to), so neither the index, a ref, nor an object a command wrote counts:
//! otherwise a command could write the blob of a guessed content and learn from the file
//! being shown whether the guess was right. Not the current session's start either: a
//! command of an earlier session could have planted the guess for the next one to confirm.
//! The cost: an env file whose content was first committed after that first session stays
//! hidden until the user allows reading it. Only SHA-1 repositories are read; in a
//! SHA-256 one nothing is proved and the files stay hidden.
//!
//! Env files the project's repository tracks are also listed once (the first note of a
//! session and `/sandbox`): their committed content is in git's objects, readable whatever
//! hides the file. Asked of git itself (`git ls-files -z`), run as `hooks` runs git (a
//! system git, no inherited environment, nothing the repository names run, a time limit),
//! once per session, after its first sandboxed command, never on a command's way in.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use crate::policy::guard::{Guard, Op, Protection};
use crate::shown;
use crate::surface::git_objects;
use crate::surface::scan::Scan;

/// Env files larger than this are not hashed (and stay hidden): env files are small.
const LARGEST: u64 = 1 << 20;

/// A file as it is now: its path and inode, size and times. A proof holds while it does.
type Stamp = (PathBuf, u64, u64, u64, i64, i64, i64, i64);

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
    /// The sandbox's first session: objects older than it are the user's. None: none is.
    trusted_before: Option<SystemTime>,
    /// What `hides_nothing` found, for the files as they were then.
    proved: Mutex<HashMap<Stamp, bool>>,
}

impl CommittedEnv {
    pub(crate) fn new(cwd: &Path, home: &Path, trusted_before: Option<SystemTime>) -> CommittedEnv {
        CommittedEnv {
            cwd: cwd.to_path_buf(),
            home: home.to_path_buf(),
            found: OnceLock::new(),
            told: AtomicBool::new(false),
            trusted_before,
            proved: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the regular file `path` hides nothing: its content is a blob the object store
    /// of the repository around it held before the sandbox's first session, in a file
    /// commands may read (see the module's comment). Remembered while the file is unchanged.
    pub(crate) fn hides_nothing(&self, path: &Path, guard: &Guard) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(before) = self.trusted_before else {
            return false;
        };
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if !m.is_file() || m.len() > LARGEST {
            return false;
        }
        let stamp: Stamp = (
            path.to_path_buf(),
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        );
        let mut proved = self.proved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = proved.get(&stamp) {
            return *known;
        }
        let answer = prove(path, before, guard);
        proved.insert(stamp, answer);
        answer
    }

    /// `scan` as bash's mounts should have it: the env files that hide nothing are shown,
    /// under what else protects them (a denyWrite match stays read-only).
    pub(crate) fn unhide(&self, scan: &mut Scan, guard: &Guard) {
        scan.protected = std::mem::take(&mut scan.protected)
            .into_iter()
            .filter_map(|f| match f.why {
                Protection::EnvFile { also } if self.hides_nothing(&f.path, guard) => {
                    also.map(|why| crate::surface::scan::Found { why: *why, ..f })
                }
                _ => Some(f),
            })
            .collect();
        scan.hidden_env_files
            .retain(|p| !self.hides_nothing(p, guard));
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
    /// `secret`: which env files may hold secrets (`Guard::is_secret_env_file`; templates
    /// are not named unless it says so).
    pub(crate) fn first_note(&self, secret: &dyn Fn(&Path) -> bool) -> Option<String> {
        if self.told.swap(true, Ordering::SeqCst) {
            return None;
        }
        let files = self.secret(secret).ok().filter(|f| !f.is_empty())?;
        let files = &files;
        Some(format!(
            "This repository tracks {} in git: the committed content is in git's objects, which the sandbox does not hide from commands (/sandbox says more).",
            named(files)
        ))
    }

    /// The paragraph of `/sandbox`.
    pub(crate) fn report(&self, secret: &dyn Fn(&Path) -> bool) -> String {
        match self.secret(secret) {
            Ok(files) if files.is_empty() => {
                "\nEnv files tracked by git: none (their content would be readable from git's objects, e.g. `git show HEAD:.env`, whatever hides the file)\n".into()
            }
            Ok(files) => format!(
                "\nEnv files tracked by git: {}\n  Their committed content is in git's objects: `git show HEAD:<file>` reads it inside the sandbox whatever hides the file. Stop tracking them (`git rm --cached`) and change the secrets they held; earlier commits keep them until the history is rewritten.\n",
                named(&files)
            ),
            Err(why) => format!("\nEnv files tracked by git: unknown ({why})\n"),
        }
    }

    /// The tracked env files `secret` says may hold secrets.
    fn secret(&self, secret: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, String> {
        self.found()
            .as_ref()
            .map(|files| files.iter().filter(|f| secret(f)).cloned().collect())
            .map_err(Clone::clone)
    }
}

/// `hides_nothing`'s proof, asked of the disk.
fn prove(path: &Path, before: SystemTime, guard: &Guard) -> bool {
    let Some((git_dir, _)) = path
        .parent()
        .and_then(crate::surface::hooks::enclosing_repo)
    else {
        return false;
    };
    let Ok(content) = crate::content::read(path, LARGEST) else {
        return false;
    };
    let id = git_objects::blob_id(&content);
    let readable = |p: &Path| guard.check(Op::Read, p).allowed() && !guard.is_secret_env_file(p);
    git_objects::held_before(&git_objects::objects_dir(&git_dir), &id, before, &readable)
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
        let c = CommittedEnv::new(&repo.join("api/sub"), t.path(), None);
        let mut found = c.found().clone().unwrap();
        found.sort();
        let want: Vec<PathBuf> = [".env", ".env.example", "api/.env.production"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(found, want);
        let note = c.first_note(&|_| true).expect("a note");
        assert!(
            note.contains(".env, ") && note.contains("api/.env.production"),
            "{note}"
        );
        assert_eq!(c.first_note(&|_| true), None, "once per session");
        assert!(
            c.report(&|_| true).contains("git show HEAD:"),
            "{}",
            c.report(&|_| true)
        );
    }

    #[test]
    fn an_env_file_git_held_before_hides_nothing_one_with_more_does() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = crate::policy::config::Env::under(&root);
        std::fs::create_dir_all(&env.cwd).unwrap();
        std::fs::create_dir_all(&env.agent_dir).unwrap();
        git(&env.cwd, &["init", "-q"]);
        let dot_env = env.cwd.join(".env");
        std::fs::write(&dot_env, "A=1\n").unwrap();
        git(&env.cwd, &["add", "-f", ".env"]);
        let guard = crate::surface::scan::tests::guard("{}", &env);
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        let c = CommittedEnv::new(&env.cwd, &env.home, Some(later));
        assert!(c.hides_nothing(&dot_env, &guard));
        let mut scan = Scan {
            protected: vec![crate::surface::scan::Found {
                path: dot_env.clone(),
                why: Protection::EnvFile {
                    also: Some(Box::new(Protection::DenyWrite("denyWrite '.env'".into()))),
                },
                fingerprint: vec![],
            }],
            ..Scan::default()
        };
        c.unhide(&mut scan, &guard);
        assert_eq!(
            scan.protected[0].why,
            Protection::DenyWrite("denyWrite '.env'".into()),
            "shown, still read-only"
        );
        // A local secret added: another blob.
        std::fs::write(&dot_env, "A=1\nSECRET=x\n").unwrap();
        assert!(!c.hides_nothing(&dot_env, &guard));
        // No trusted time (the first session's could not be recorded): nothing is proved.
        std::fs::write(&dot_env, "A=1\n").unwrap();
        assert!(c.hides_nothing(&dot_env, &guard));
        let none = CommittedEnv::new(&env.cwd, &env.home, None);
        assert!(!none.hides_nothing(&dot_env, &guard));
        // Objects written after the trusted time prove nothing.
        let earlier = SystemTime::now() - std::time::Duration::from_secs(3600);
        assert!(
            !CommittedEnv::new(&env.cwd, &env.home, Some(earlier)).hides_nothing(&dot_env, &guard)
        );
    }

    #[test]
    fn nothing_to_say_outside_a_repository_or_without_env_files() {
        let t = tempfile::tempdir().unwrap();
        let c = CommittedEnv::new(t.path(), t.path(), None);
        assert_eq!(c.found(), &Ok(vec![]));
        assert_eq!(c.first_note(&|_| true), None);
        assert!(c.report(&|_| true).contains("none"));
        git(t.path(), &["init", "-q"]);
        std::fs::write(t.path().join("a.txt"), "x").unwrap();
        git(t.path(), &["add", "a.txt"]);
        let c = CommittedEnv::new(t.path(), t.path(), None);
        assert_eq!(c.first_note(&|_| true), None);
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
        let note = CommittedEnv::new(t.path(), t.path(), None)
            .first_note(&|_| true)
            .unwrap();
        assert!(
            !note.contains('\u{1b}') && !note.contains('\u{202e}'),
            "{note}"
        );
        assert!(note.contains("\\x1b[2K\\u{202e}/.env"), "{note}");
        assert!(note.contains("and 3 more"), "{note}");
    }
}
