//! The env files of the home directory, for bash to hide. The read tool asks about an env
//! file wherever it is; bash cannot ask per file, so it hides each one it knows of (a
//! `/dev/null` bound over it) until the user allows reading it. The trees the index covers
//! and the session directory's ancestors are looked at for every command
//! (`mounts::env_files_around`); the rest of the home directory — another project's
//! `~/work/x/.env` — is found by this search: a walk of the whole home directory on a thread
//! of its own, started with the session (the first command waits for it), then again every
//! few seconds, listing only the directories whose times changed since.
//!
//! A command cannot add an env file here that the index does not see (it can only write in
//! the indexed trees); one the user makes elsewhere mid-session is hidden from the commands
//! after the next pass. The walk stays on the home directory's file system (a network share
//! mounted below it is not walked) and follows no symlink.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The shortest wait between two passes.
const MIN_INTERVAL: Duration = Duration::from_secs(2);
/// A pass waits this many times its own duration before the next, so that a large home
/// costs a small share of one core (about 1 %).
const INTERVAL_FACTOR: u32 = 100;
/// A directory listed less than this after it last changed is listed again next pass: a
/// name added in the same tick of the file system's clock would leave its times as they were.
const RACY: Duration = Duration::from_secs(2);

/// The search, shared by the session and its thread; dropping the last handle stops it.
#[derive(Clone)]
pub struct EnvFileSearch {
    shared: Arc<Shared>,
    _stop: Arc<StopOnDrop>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
}

enum State {
    Searching,
    Found {
        files: Arc<Vec<PathBuf>>,
        passes: u64,
    },
    Failed(String),
}

/// Stops the thread when the last handle goes.
struct StopOnDrop(Arc<Shared>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.changed.notify_all();
    }
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl EnvFileSearch {
    /// Starts searching `home` on a thread of its own.
    pub fn start(home: &Path) -> EnvFileSearch {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::Searching),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let search = EnvFileSearch {
            shared: shared.clone(),
            _stop: Arc::new(StopOnDrop(shared.clone())),
        };
        let home = home.to_path_buf();
        let thread = shared.clone();
        let started = std::thread::Builder::new()
            .name("pi-sandbox-env-files".into())
            .spawn(move || search_until_stopped(&home, &thread));
        if let Err(e) = started {
            *lock(&shared.state) = State::Failed(format!(
                "the search for env files in the home directory could not start: {e}"
            ));
        }
        search
    }

    /// Waits for the first pass to end.
    pub fn wait_ready(&self) {
        let mut state = lock(&self.shared.state);
        while matches!(*state, State::Searching) {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The env files the last pass found (waits for the first one), or why there is no
    /// answer: then bash cannot know what to hide, and is refused.
    pub fn found(&self) -> Result<Arc<Vec<PathBuf>>, String> {
        self.wait_ready();
        match &*lock(&self.shared.state) {
            State::Found { files, .. } => Ok(files.clone()),
            State::Failed(why) => Err(why.clone()),
            State::Searching => unreachable!("waited for the first pass"),
        }
    }

    /// How many passes have ended (the tests wait for the next one).
    pub fn passes(&self) -> u64 {
        match &*lock(&self.shared.state) {
            State::Found { passes, .. } => *passes,
            _ => 0,
        }
    }
}

fn search_until_stopped(home: &Path, shared: &Shared) {
    // A panic must not leave commands waiting, nor bash running with nothing hidden.
    let searched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut tree = Tree::default();
        let mut passes = 0;
        loop {
            let began = Instant::now();
            let files = tree.pass(home);
            passes += 1;
            let took = began.elapsed();
            let mut state = lock(&shared.state);
            *state = State::Found {
                files: Arc::new(files),
                passes,
            };
            shared.changed.notify_all();
            let pause = MIN_INTERVAL.max(took * INTERVAL_FACTOR);
            let (guard, _) = shared
                .changed
                .wait_timeout_while(state, pause, |_| !shared.stop.load(Ordering::SeqCst))
                .unwrap_or_else(|e| e.into_inner());
            drop(guard);
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
        }
    }));
    if searched.is_err() {
        *lock(&shared.state) = State::Failed(
            "the search for env files in the home directory failed; bash is refused until pi restarts".into(),
        );
        shared.changed.notify_all();
    }
}

/// A directory as last listed.
struct Listed {
    /// Device, inode, modification and change times: adding, removing or renaming a name
    /// changes the times, and the change time cannot be set back.
    stamp: Stamp,
    /// Listed long enough after its last change that an unchanged stamp means unchanged.
    settled: bool,
    env_files: Vec<OsString>,
    subdirs: Vec<OsString>,
}

type Stamp = (u64, u64, (i64, i64), (i64, i64));

fn stamp_of(m: &std::fs::Metadata) -> Stamp {
    (
        m.dev(),
        m.ino(),
        (m.mtime(), m.mtime_nsec()),
        (m.ctime(), m.ctime_nsec()),
    )
}

/// Every directory of the home directory's tree as last listed.
#[derive(Default)]
struct Tree {
    dirs: HashMap<PathBuf, Listed>,
}

impl Tree {
    /// Walks `root` again, listing only what changed; returns every env file found.
    fn pass(&mut self, root: &Path) -> Vec<PathBuf> {
        let mut before = std::mem::take(&mut self.dirs);
        let mut found = Vec::new();
        let Ok(top) = std::fs::symlink_metadata(root) else {
            return found;
        };
        if !top.is_dir() {
            return found;
        }
        let device = top.dev();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() || meta.dev() != device {
                continue;
            }
            let stamp = stamp_of(&meta);
            let listed = match before.remove(&dir) {
                Some(l) if l.settled && l.stamp == stamp => l,
                _ => list(&dir, stamp),
            };
            found.extend(listed.env_files.iter().map(|n| dir.join(n)));
            stack.extend(listed.subdirs.iter().map(|n| dir.join(n)));
            self.dirs.insert(dir, listed);
        }
        found
    }
}

/// Lists `dir` (unreadable: nothing in it, as for the command, which runs as the same user).
fn list(dir: &Path, stamp: Stamp) -> Listed {
    let listed_at = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let (secs, nanos) = stamp.3;
    let changed_at = Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
    let mut listed = Listed {
        stamp,
        settled: listed_at
            .checked_sub(changed_at)
            .is_some_and(|age| age > RACY),
        env_files: vec![],
        subdirs: vec![],
    };
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            listed.subdirs.push(entry.file_name());
        } else if kind.is_file() && crate::guard::is_env_file(Path::new(&entry.file_name())) {
            listed.env_files.push(entry.file_name());
        }
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn names(found: &[PathBuf], root: &Path) -> Vec<String> {
        let mut v: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn finds_env_files_at_any_depth_and_follows_no_link() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(home.join("work/x/deep/er")).unwrap();
        fs::write(home.join(".env"), "A=1").unwrap();
        fs::write(home.join("work/x/.env.local"), "B=1").unwrap();
        fs::write(home.join("work/x/deep/er/.env"), "C=1").unwrap();
        fs::write(home.join("work/x/.envrc"), "not one").unwrap();
        fs::write(home.join("work/x/env"), "not one").unwrap();
        fs::create_dir(home.join("work/.env.d")).unwrap();
        fs::write(outside.path().join(".env"), "D=1").unwrap();
        std::os::unix::fs::symlink(outside.path(), home.join("work/linked")).unwrap();
        std::os::unix::fs::symlink(outside.path().join(".env"), home.join("work/.env")).unwrap();
        let found = Tree::default().pass(home);
        assert_eq!(
            names(&found, home),
            [".env", "work/x/.env.local", "work/x/deep/er/.env"]
        );
    }

    #[test]
    fn a_pass_lists_again_only_what_changed_and_sees_additions_removals_and_renames() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        fs::create_dir_all(home.join("a/b")).unwrap();
        fs::write(home.join("a/b/.env"), "1").unwrap();
        let mut tree = Tree::default();
        assert_eq!(names(&tree.pass(home), home), ["a/b/.env"]);
        // Each change below happens within the racy window, so the directories it touches
        // are listed again whatever their times say; the rest is reused.
        fs::create_dir_all(home.join("c/d")).unwrap();
        fs::write(home.join("c/d/.env.prod"), "2").unwrap();
        fs::rename(home.join("a/b"), home.join("a/moved")).unwrap();
        assert_eq!(
            names(&tree.pass(home), home),
            ["a/moved/.env", "c/d/.env.prod"]
        );
        fs::remove_file(home.join("a/moved/.env")).unwrap();
        assert_eq!(names(&tree.pass(home), home), ["c/d/.env.prod"]);
        assert!(
            !tree.dirs.contains_key(&home.join("a/b")),
            "a renamed directory is forgotten"
        );
    }

    #[test]
    fn a_settled_directory_is_not_listed_again() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        fs::write(home.join(".env"), "1").unwrap();
        let mut tree = Tree::default();
        tree.pass(home);
        // Pretend the listing was settled, then change what it says without touching the
        // directory: the pass trusts the listing.
        let listed = tree.dirs.get_mut(home).unwrap();
        listed.settled = true;
        listed.env_files.push(".env.remembered".into());
        assert_eq!(names(&tree.pass(home), home), [".env", ".env.remembered"]);
        // A name added changes the directory's times: listed again.
        std::thread::sleep(Duration::from_millis(20));
        fs::write(home.join(".env.new"), "2").unwrap();
        tree.dirs.get_mut(home).unwrap().settled = true;
        assert_eq!(names(&tree.pass(home), home), [".env", ".env.new"]);
    }

    #[test]
    fn the_search_answers_after_its_first_pass_and_keeps_looking() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        fs::create_dir_all(home.join("p")).unwrap();
        fs::write(home.join("p/.env"), "1").unwrap();
        let search = EnvFileSearch::start(home);
        assert_eq!(names(&search.found().unwrap(), home), ["p/.env"]);
        fs::write(home.join("p/.env.later"), "2").unwrap();
        let seen = search.passes();
        let deadline = Instant::now() + Duration::from_secs(20);
        while search.passes() <= seen && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            names(&search.found().unwrap(), home),
            ["p/.env", "p/.env.later"]
        );
    }

    /// `cargo test --release --lib env_files_pass_cost -- --ignored --nocapture`: how long a
    /// first and a later pass over this machine's $HOME take.
    #[test]
    #[ignore]
    fn env_files_pass_cost() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let mut tree = Tree::default();
        let t0 = Instant::now();
        let found = tree.pass(&home);
        let first = t0.elapsed();
        std::thread::sleep(RACY);
        tree.pass(&home);
        let t1 = Instant::now();
        tree.pass(&home);
        println!(
            "{} directories, {} env files: first pass {:?}, a later one {:?}",
            tree.dirs.len(),
            found.len(),
            first,
            t1.elapsed()
        );
    }
}
