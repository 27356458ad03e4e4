//! The env files of the home directory, for bash to hide. The read tool asks about an env
//! file wherever it is; bash cannot ask per file, so it hides each one it knows of (a mask
//! bound over it) until the user allows reading it. The trees the index covers and the
//! session directory's ancestors are looked at for every command
//! (`mounts::env_files_around`); the rest of the home directory — another project's
//! `~/work/x/.env` — is found by this search: a walk of the home directory (its real path)
//! on a thread of its own, started with the session (the first command waits for it), then
//! again every few seconds, listing only the directories whose times changed since.
//!
//! The trees the index covers are walked too, although the index sees env files there live:
//! the index does not look inside the directories it binds read-only whole (`.pi`, pi's agent
//! dir when allowWrite reaches it), and this search does. Mounts of network and FUSE file
//! systems below home are not walked (a hung server would hang the walk); nor is anything
//! reached through a symlink. Commands wait at most `FIRST_WAIT` for a pass; past it they
//! are refused (fail closed).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The shortest wait between two passes.
const MIN_INTERVAL: Duration = Duration::from_secs(2);
/// The longest: an env file the user makes mid-session is hidden within about this long.
const MAX_INTERVAL: Duration = Duration::from_secs(10);
/// Between the two, a pass waits this many times the last pass's duration, so that a large
/// home costs a small share of one core (about 1 %).
const INTERVAL_FACTOR: u32 = 100;
/// How long a command waits for a pass it needs before it is refused.
const FIRST_WAIT: Duration = Duration::from_secs(30);
/// An answer this old is not used: passes end at least every `MAX_INTERVAL` plus their own
/// duration.
const STALE: Duration = Duration::from_secs(40);
/// A directory listed less than this after it last changed is listed again next time: a
/// name added in the same tick of the file system's clock would leave its times as they were.
pub(crate) const RACY: Duration = Duration::from_secs(2);
/// Names looked up in a directory that can be entered but not listed (a command can open
/// such a file by guessing its name).
const LIKELY_NAMES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.development",
    ".env.development.local",
    ".env.test",
    ".env.test.local",
    ".env.staging",
    ".env.production",
    ".env.production.local",
    ".env.prod",
    ".env.dev",
];
/// File systems not walked: network and FUSE mounts can hang a walk; autofs mounts on touch.
fn is_remote(fstype: &str) -> bool {
    matches!(
        fstype,
        "nfs"
            | "nfs4"
            | "cifs"
            | "smb3"
            | "smbfs"
            | "9p"
            | "ceph"
            | "glusterfs"
            | "lustre"
            | "afs"
            | "davfs"
            | "autofs"
            | "fuse"
            | "sshfs"
    ) || fstype.starts_with("fuse.")
}

/// The search, shared by the session and its thread; dropping the last handle stops it.
#[derive(Clone)]
pub(crate) struct EnvFileSearch {
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
        /// How many passes have ended: the tests wait for the next one.
        #[cfg_attr(not(test), allow(dead_code))]
        passes: u64,
        /// When the pass ended: an answer older than `STALE` means the passes stopped
        /// ending (a file system hung mid-session), and is not used.
        at: Instant,
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl EnvFileSearch {
    /// Starts searching `home` on a thread of its own.
    pub(crate) fn start(home: &Path) -> EnvFileSearch {
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

    /// Waits (at most `FIRST_WAIT`) for the first pass to end.
    pub(crate) fn wait_ready(&self) {
        let _ = self.found();
    }

    /// The env files the last pass found (waiting at most `FIRST_WAIT` for the first), or
    /// why there is no answer: then bash cannot know what to hide, and is refused.
    pub(crate) fn found(&self) -> Result<Arc<Vec<PathBuf>>, String> {
        let deadline = Instant::now() + FIRST_WAIT;
        let mut state = lock(&self.shared.state);
        loop {
            match &*state {
                State::Failed(why) => return Err(why.clone()),
                State::Found { files, at, .. } if at.elapsed() < STALE => return Ok(files.clone()),
                _ => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "the search for env files in the home directory has not finished a pass in {} s (a slow or hung file system below it?); bash is refused until it does",
                    FIRST_WAIT.as_secs()
                ));
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// How many passes have ended (the tests wait for the next one).
    #[cfg(test)]
    pub(crate) fn passes(&self) -> u64 {
        match &*lock(&self.shared.state) {
            State::Found { passes, .. } => *passes,
            _ => 0,
        }
    }
}

fn search_until_stopped(home: &Path, shared: &Shared) {
    // Its real path: a home that is a symlink (moved to another disk) is walked where it is.
    let home = match std::fs::canonicalize(home) {
        Ok(h) if h.is_dir() => h,
        Ok(h) => {
            return fail(shared, format!("the home directory {} is not a directory, so it cannot be searched for env files; bash is refused", h.display()));
        }
        Err(e) => {
            return fail(
                shared,
                format!(
                    "the home directory {} cannot be searched for env files ({e}); bash is refused",
                    home.display()
                ),
            );
        }
    };
    // A panic must not leave commands waiting, nor bash running with nothing hidden.
    let searched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut tree = Tree::default();
        let mut passes = 0;
        loop {
            let unwalked = remote_mounts_below(&home);
            let began = Instant::now();
            let files = tree.pass(&home, &|p| unwalked.contains(p));
            let took = began.elapsed();
            passes += 1;
            let mut state = lock(&shared.state);
            *state = State::Found {
                files: Arc::new(files),
                passes,
                at: Instant::now(),
            };
            shared.changed.notify_all();
            // The first pass listed everything; later ones say what a pass costs.
            let pause = if passes == 1 {
                MIN_INTERVAL
            } else {
                (took * INTERVAL_FACTOR).clamp(MIN_INTERVAL, MAX_INTERVAL)
            };
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
        fail(
            shared,
            "the search for env files in the home directory failed; bash is refused until pi restarts".into(),
        );
    }
}

fn fail(shared: &Shared, why: String) {
    *lock(&shared.state) = State::Failed(why);
    shared.changed.notify_all();
}

/// The mount points below `home` of network and FUSE file systems (`is_remote`), from
/// `/proc/self/mountinfo`: found by path, so that the walk never touches them.
fn remote_mounts_below(home: &Path) -> HashSet<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|text| remote_mounts_in(&text, home))
        .unwrap_or_default()
}

/// `remote_mounts_below` of a mountinfo text. Pure.
fn remote_mounts_in(text: &str, home: &Path) -> HashSet<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let (fields, rest) = line.split_once(" - ")?;
            let mount_point = unescape_mount_path(fields.split(' ').nth(4)?);
            let fstype = rest.split(' ').next()?;
            (is_remote(fstype) && mount_point.starts_with(home) && mount_point != home)
                .then_some(mount_point)
        })
        .collect()
}

/// A mountinfo path: space, tab, newline and backslash are written as octal escapes.
fn unescape_mount_path(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// A directory as last listed: its env files and subdirectories. Also what
/// `mounts::EnvFileListings` keeps of the directories around the indexed trees.
#[derive(Clone)]
pub(crate) struct Listed {
    /// Device, inode, modification and change times: adding, removing or renaming a name
    /// changes the times, and the change time cannot be set back.
    stamp: Stamp,
    /// Listed long enough after its last change that an unchanged stamp means unchanged.
    pub(crate) settled: bool,
    pub(crate) env_files: Vec<OsString>,
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
    /// Walks `root` again, listing only what changed, leaving out the directories `skip`
    /// names (and what is below them); returns every env file found.
    fn pass(&mut self, root: &Path, skip: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
        let mut before = std::mem::take(&mut self.dirs);
        let mut found = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if skip(&dir) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            let listed = relisted(&dir, &meta, before.remove(&dir));
            found.extend(listed.env_files.iter().map(|n| dir.join(n)));
            stack.extend(listed.subdirs.iter().map(|n| dir.join(n)));
            self.dirs.insert(dir, listed);
        }
        found
    }
}

/// `previous` (`dir`'s listing from last time) while `meta` (the directory's, now) says
/// nothing changed since, else a new listing.
pub(crate) fn relisted(dir: &Path, meta: &std::fs::Metadata, previous: Option<Listed>) -> Listed {
    let stamp = stamp_of(meta);
    match previous {
        Some(l) if l.settled && l.stamp == stamp => l,
        previous => list(dir, stamp, previous),
    }
}

/// Lists `dir`. One that cannot be listed but may be entered gets its likely env file names
/// looked up; one whose listing fails otherwise (out of descriptors, an I/O error) keeps
/// what it held before, to be listed again next pass.
fn list(dir: &Path, stamp: Stamp, previous: Option<Listed>) -> Listed {
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
    let entries = std::fs::read_dir(dir).and_then(|entries| {
        entries
            .map(|e| e.and_then(|e| Ok((e.file_name(), e.file_type()?))))
            .collect::<std::io::Result<Vec<_>>>()
    });
    match entries {
        Ok(entries) => {
            for (name, kind) in entries {
                if kind.is_dir() {
                    listed.subdirs.push(name);
                } else if (kind.is_file() || kind.is_symlink())
                    && crate::policy::guard::is_env_file(Path::new(&name))
                {
                    // A link named like an env file too: what it leads to is hidden.
                    listed.env_files.push(name);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            listed.env_files = LIKELY_NAMES
                .iter()
                .filter(|n| {
                    std::fs::symlink_metadata(dir.join(n))
                        .is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
                })
                .map(OsString::from)
                .collect();
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => {
            listed = previous.unwrap_or(listed);
            listed.settled = false;
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
        let found = Tree::default().pass(home, &|_| false);
        // a link named like one is found (what it leads to is hidden), never gone into
        assert_eq!(
            names(&found, home),
            [
                ".env",
                "work/.env",
                "work/x/.env.local",
                "work/x/deep/er/.env"
            ]
        );
    }

    #[test]
    fn a_pass_lists_again_only_what_changed_and_sees_additions_removals_and_renames() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        fs::create_dir_all(home.join("a/b")).unwrap();
        fs::write(home.join("a/b/.env"), "1").unwrap();
        let mut tree = Tree::default();
        assert_eq!(names(&tree.pass(home, &|_| false), home), ["a/b/.env"]);
        // Each change below happens within the racy window, so the directories it touches
        // are listed again whatever their times say; the rest is reused.
        fs::create_dir_all(home.join("c/d")).unwrap();
        fs::write(home.join("c/d/.env.prod"), "2").unwrap();
        fs::rename(home.join("a/b"), home.join("a/moved")).unwrap();
        assert_eq!(
            names(&tree.pass(home, &|_| false), home),
            ["a/moved/.env", "c/d/.env.prod"]
        );
        fs::remove_file(home.join("a/moved/.env")).unwrap();
        assert_eq!(names(&tree.pass(home, &|_| false), home), ["c/d/.env.prod"]);
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
        tree.pass(home, &|_| false);
        // Pretend the listing was settled, then change what it says without touching the
        // directory: the pass trusts the listing.
        let listed = tree.dirs.get_mut(home).unwrap();
        listed.settled = true;
        listed.env_files.push(".env.remembered".into());
        assert_eq!(
            names(&tree.pass(home, &|_| false), home),
            [".env", ".env.remembered"]
        );
        // A name added changes the directory's times: listed again.
        std::thread::sleep(Duration::from_millis(20));
        fs::write(home.join(".env.new"), "2").unwrap();
        tree.dirs.get_mut(home).unwrap().settled = true;
        assert_eq!(
            names(&tree.pass(home, &|_| false), home),
            [".env", ".env.new"]
        );
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
        let found = tree.pass(&home, &|_| false);
        let first = t0.elapsed();
        std::thread::sleep(RACY);
        tree.pass(&home, &|_| false);
        let t1 = Instant::now();
        tree.pass(&home, &|_| false);
        println!(
            "{} directories, {} env files: first pass {:?}, a later one {:?}",
            tree.dirs.len(),
            found.len(),
            first,
            t1.elapsed()
        );
    }

    #[test]
    fn network_and_fuse_mounts_below_home_are_found_by_path() {
        let info = "\
36 25 0:32 / /home/u rw,relatime shared:1 - ext4 /dev/sda2 rw
40 36 0:40 / /home/u/nas rw - nfs4 server:/export rw
41 36 0:41 / /home/u/my\\040drive rw - fuse.sshfs u@h:/ rw
42 36 0:42 / /home/u/disk rw - btrfs /dev/sdb1 rw
43 25 0:43 / /mnt/elsewhere rw - cifs //s/x rw
44 36 0:44 / /home/u/auto rw - autofs systemd-1 rw";
        let mut found: Vec<_> = remote_mounts_in(info, Path::new("/home/u"))
            .into_iter()
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                PathBuf::from("/home/u/auto"),
                PathBuf::from("/home/u/my drive"),
                PathBuf::from("/home/u/nas")
            ]
        );
    }

    #[test]
    fn a_home_that_is_a_symlink_is_searched_where_it_leads() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("data/u/work/y")).unwrap();
        fs::write(t.path().join("data/u/work/y/.env"), "1").unwrap();
        std::os::unix::fs::symlink(t.path().join("data/u"), t.path().join("home")).unwrap();
        let search = EnvFileSearch::start(&t.path().join("home"));
        let real = fs::canonicalize(t.path().join("data/u")).unwrap();
        assert_eq!(names(&search.found().unwrap(), &real), ["work/y/.env"]);
    }

    #[test]
    fn a_missing_home_fails_closed() {
        let t = tempfile::tempdir().unwrap();
        let search = EnvFileSearch::start(&t.path().join("gone"));
        assert!(search.found().unwrap_err().contains("bash is refused"));
    }
}
