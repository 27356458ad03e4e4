//! What the scan of bash's writable trees finds (`scan::scan_protected`), kept current from
//! inotify events instead of walking the trees before and after every command.
//!
//! The index walks the trees once, watching every directory the scan goes into, and keeps
//! what each path contributes: directories (inode, git-dir test, whether the scan goes below
//! them), protected paths, and files with several names. A query drains the event queue and
//! judges again only the directories something happened in; a directory that is new, was
//! replaced, or changed what it is (it became a git dir, or protected) is walked again whole.
//! So a command costs what changed, not the size of the tree. Events are queued by the kernel
//! as each change happens, so after a command has exited its changes are all in the queue.
//!
//! What is assembled from those nodes at each query (the protected set, link targets, the
//! audit's fingerprints, other names of protected files) is the same code as the full scan's.
//! When the index cannot be trusted (the watch limit was reached, the event queue
//! overflowed, the policy or the roots changed), a query falls back to a full scan and
//! says so: it never answers from a partial index.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use crate::policy::guard::{Guard, KnownGitDirs, Protection};
use crate::policy::protected::GitDirCache;
use crate::surface::index_verify::{verify, verify_requested};
use crate::surface::scan::{
    hard_link, judge, record, scan_protected, scanned_roots, Links, Scan, Walk,
};

/// How far the index can be trusted, for `/sandbox` and the footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// Walking the trees for the first time; a command waits for it.
    Building,
    /// Current: commands cost what changed.
    Ready { dirs: usize },
    /// Every command walks the trees in full; why.
    FullScans(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Building => write!(f, "being built (a command waits for it)"),
            Status::Ready { dirs } => write!(f, "current ({dirs} directories watched)"),
            Status::FullScans(why) => write!(f, "full scan for every command: {why}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirNode {
    dev_ino: (u64, u64),
    git_dir: bool,
    descend: bool,
    /// Listed and watched (an unreadable directory is neither).
    watched: bool,
}

/// What one path contributes to the scan.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    dir: Option<DirNode>,
    protection: Option<Protection>,
    /// (dev, ino) of a regular file with several names.
    multi: Option<(u64, u64)>,
}

/// A directory to judge again, with the names that changed in it (None: all of it).
#[cfg(target_os = "linux")]
type Dirty = (PathBuf, Option<HashSet<OsString>>);

#[cfg(target_os = "linux")]
type Watcher = inotify::Inotify;
#[cfg(target_os = "linux")]
type Wd = inotify::WatchDescriptor;

struct Tree {
    guard: Guard,
    /// Set when an update between queries found the index unusable: the next query rebuilds.
    lost: Option<Lost>,
    roots: Vec<PathBuf>,
    /// The roots' own git-dir test and inode, to notice them change.
    root_state: Vec<(bool, Option<(u64, u64)>)>,
    nodes: BTreeMap<PathBuf, Node>,
    /// For each directory the scan goes into: the names in it that are nodes.
    children: HashMap<PathBuf, HashSet<OsString>>,
    #[cfg(target_os = "linux")]
    watcher: Watcher,
    /// Where events are read into; kept, since a query that finds none still reads once.
    #[cfg(target_os = "linux")]
    events: Box<[u8]>,
    #[cfg(target_os = "linux")]
    dirs: HashMap<Wd, PathBuf>,
    #[cfg(target_os = "linux")]
    wd_of: HashMap<PathBuf, Wd>,
    /// `repo_within`'s answers since the last change the events reported: dir → (top, found).
    #[allow(clippy::type_complexity)]
    repos_around: HashMap<PathBuf, (PathBuf, Option<(PathBuf, PathBuf)>)>,
}

enum State {
    Building,
    Ready(Box<Tree>),
    FullScans(String),
}

/// The index of one session's writable trees, shared with the thread that builds it.
#[derive(Clone)]
pub(crate) struct Index {
    shared: Arc<(Mutex<State>, Condvar)>,
    /// How often a query had to rebuild it (overflow, other roots).
    rebuilds: Arc<std::sync::atomic::AtomicUsize>,
    /// Set when the guard's judgement of paths already indexed changed (a hooks directory
    /// found): the next use rebuilds instead of answering.
    stale: Arc<std::sync::atomic::AtomicBool>,
}

/// Why an index is not usable as it stands.
enum Lost {
    /// Rebuild it: the events cannot be followed (queue overflow), or the policy changed.
    Rebuild(String),
    /// Give up on it for the session (the watch limit).
    Abandon(String),
}

impl Index {
    /// Starts building the index for `guard`'s writable trees on a thread of its own.
    pub(crate) fn start(guard: &Guard) -> Index {
        let index = Index {
            shared: Arc::new((Mutex::new(State::Building), Condvar::new())),
            rebuilds: Default::default(),
            stale: Default::default(),
        };
        let shared = index.shared.clone();
        let guard = guard.clone();
        let spawned = std::thread::Builder::new()
            .name("pi-sandbox-index".into())
            .spawn(move || {
                let state = State::built(guard);
                let (lock, ready) = &*shared;
                *lock.lock().unwrap_or_else(|e| e.into_inner()) = state;
                ready.notify_all();
            });
        if let Err(e) = spawned {
            *index.lock() = State::FullScans(format!("cannot start the index thread: {e}"));
        }
        index
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        let mut state = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        self.apply_staleness(&mut state);
        state
    }

    /// The guard now judges some indexed paths differently (it shares its hooks directories
    /// with the index's copy): rebuild before the next answer.
    pub(crate) fn invalidate(&self) {
        self.stale.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut state = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        self.apply_staleness(&mut state);
    }

    fn apply_staleness(&self, state: &mut State) {
        if let State::Ready(tree) = state {
            if self.stale.swap(false, std::sync::atomic::Ordering::SeqCst) {
                tree.lost = Some(Lost::Rebuild("the git hooks directories changed".into()));
            }
        }
    }

    /// Runs `f` with what the index knows of git dirs, brought up to date first; while it is
    /// being built or cannot be trusted, `f` is told nothing (the disk answers).
    pub(crate) fn with_git_dirs<R>(&self, f: impl FnOnce(KnownGitDirs) -> R) -> R {
        let mut state = self.lock();
        let State::Ready(tree) = &mut *state else {
            return f(&|_| None);
        };
        if tree.lost.is_some() {
            return f(&|_| None);
        }
        if let Err(lost) = tree.update() {
            tree.lost = Some(lost);
            return f(&|_| None);
        }
        let tree: &Tree = tree;
        if verify_requested() {
            return f(&|dir| {
                let known = tree.git_dir(dir);
                if let Some(k) = known {
                    let disk = crate::policy::protected::is_git_dir_on_disk(dir);
                    assert_eq!(
                        k,
                        disk,
                        "the index says {} is{} a git dir; the disk says otherwise",
                        dir.display(),
                        if k { "" } else { " not" }
                    );
                }
                known
            });
        }
        f(&|dir| tree.git_dir(dir))
    }

    /// The repository whose worktree holds `dir` (looking no higher than `top`), as
    /// `hooks::repo_within` finds it on disk, from what the index knows: None when it cannot
    /// say (not built, not trusted, or a directory on the way not indexed). Asked right after
    /// a judgement that brought the index up to date (`with_git_dirs`), so it reads no events
    /// itself: a `.git` made in between is as late as one made after a look at the disk.
    pub(crate) fn repo_within(&self, dir: &Path, top: &Path) -> Option<Option<(PathBuf, PathBuf)>> {
        let mut state = self.lock();
        let State::Ready(tree) = &mut *state else {
            return None;
        };
        if tree.lost.is_some() {
            return None;
        }
        tree.repo_within(dir, top)
    }

    /// Waits until the first build is done (a query would wait for it too; this lets a caller
    /// wait without holding its own locks).
    pub(crate) fn wait_ready(&self) {
        drop(self.built());
    }

    /// The state, once the first build is done.
    fn built(&self) -> std::sync::MutexGuard<'_, State> {
        let (lock, ready) = &*self.shared;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*state, State::Building) {
            state = ready.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        self.apply_staleness(&mut state);
        state
    }

    /// How often a query had to rebuild the index.
    #[cfg(test)]
    pub(crate) fn rebuilds(&self) -> usize {
        self.rebuilds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Never waits: pi's main thread shows it.
    pub(crate) fn status(&self) -> Status {
        let state = match self.shared.0.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            // A query holds it (rarely long: a rebuild after an overflow).
            Err(std::sync::TryLockError::WouldBlock) => return Status::Building,
        };
        match &*state {
            State::Building => Status::Building,
            State::Ready(t) => Status::Ready {
                dirs: t.watched_dirs(),
            },
            State::FullScans(why) => Status::FullScans(why.clone()),
        }
    }

    /// What the scan would find now, for `guard` (waits while the index is being built).
    pub(crate) fn scan(&self, guard: &Guard) -> Scan {
        let mut state = self.built();
        let roots = scanned_roots(guard);
        let answer = |state: &mut State| match state {
            State::Ready(tree) => Some(tree.query(&roots)),
            _ => None,
        };
        let mut outcome = answer(&mut state);
        if let Some(Err(Lost::Rebuild(_))) = outcome {
            // Rebuilt here, on the caller's (worker) thread: this query pays for it.
            self.rebuilds
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            *state = State::built(guard.clone());
            outcome = answer(&mut state);
        }
        match outcome {
            Some(Ok(scan)) => {
                if verify_requested() {
                    verify(&scan, guard, &roots);
                }
                scan
            }
            Some(Err(Lost::Abandon(why))) => {
                *state = State::FullScans(why);
                scan_protected(guard, &roots)
            }
            // No index, or one that could not follow even right after a rebuild (the next
            // query tries again).
            Some(Err(Lost::Rebuild(_))) | None => scan_protected(guard, &roots),
        }
    }
}

impl State {
    /// A tree built now for `guard`'s writable trees, or why there is none.
    fn built(guard: Guard) -> State {
        match Tree::build(guard) {
            Ok(t) => State::Ready(Box::new(t)),
            Err(why) => State::FullScans(why),
        }
    }
}

fn dev_ino(m: &std::fs::Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

fn root_state(git: &mut GitDirCache, roots: &[PathBuf]) -> Vec<(bool, Option<(u64, u64)>)> {
    roots
        .iter()
        .map(|r| {
            let meta = std::fs::symlink_metadata(r).ok();
            (git.is_git_dir(r), meta.map(|m| dev_ino(&m)))
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
impl Tree {
    fn build(_guard: Guard) -> Result<Tree, String> {
        Err("no file watcher on this platform yet".into())
    }
    fn watched_dirs(&self) -> usize {
        0
    }
    fn query(&mut self, _roots: &[PathBuf]) -> Result<Scan, Lost> {
        Err(Lost::Abandon("no file watcher on this platform yet".into()))
    }
    fn update(&mut self) -> Result<(), Lost> {
        Err(Lost::Abandon("no file watcher on this platform yet".into()))
    }
    fn git_dir(&self, _dir: &Path) -> Option<bool> {
        None
    }
    fn repo_within(&mut self, _dir: &Path, _top: &Path) -> Option<Option<(PathBuf, PathBuf)>> {
        None
    }
}

#[cfg(target_os = "linux")]
impl Tree {
    fn build(guard: Guard) -> Result<Tree, String> {
        let watcher = Watcher::init().map_err(|e| format!("inotify is unavailable: {e}"))?;
        let roots = scanned_roots(&guard);
        let mut git = GitDirCache::default();
        let mut tree = Tree {
            lost: None,
            root_state: root_state(&mut git, &roots),
            guard,
            roots: roots.clone(),
            nodes: BTreeMap::new(),
            children: HashMap::new(),
            watcher,
            events: vec![0u8; 64 * 1024].into_boxed_slice(),
            dirs: HashMap::new(),
            wd_of: HashMap::new(),
            repos_around: HashMap::new(),
        };
        let mut seen = HashSet::new();
        for r in &roots {
            tree.walk_dir(r, &mut git, &mut seen).map_err(why_lost)?;
        }
        Ok(tree)
    }

    fn watched_dirs(&self) -> usize {
        self.dirs.len()
    }

    /// Watches `dir`, then judges each entry in it and walks the directories the scan goes
    /// into (watch first: what appears after the listing is an event).
    fn walk_dir(
        &mut self,
        dir: &Path,
        git: &mut GitDirCache,
        seen: &mut HashSet<PathBuf>,
    ) -> Result<bool, Lost> {
        if !seen.insert(dir.to_path_buf()) {
            return Ok(true);
        }
        if !self.watch(dir)? {
            return Ok(false);
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            self.unwatch(dir);
            return Ok(false);
        };
        let mut names = HashSet::new();
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if self.judge_entry(&entry.path(), file_type, git, seen)? {
                names.insert(entry.file_name());
            }
        }
        self.children.insert(dir.to_path_buf(), names);
        Ok(true)
    }

    /// Judges one entry and, for a directory the scan goes into, walks it. True if the entry
    /// is kept as a node (a plain file with one name is not: it contributes nothing).
    fn judge_entry(
        &mut self,
        path: &Path,
        file_type: std::fs::FileType,
        git: &mut GitDirCache,
        seen: &mut HashSet<PathBuf>,
    ) -> Result<bool, Lost> {
        let judged = judge(&self.guard, git, path, file_type);
        let meta = if file_type.is_dir() || file_type.is_file() {
            std::fs::symlink_metadata(path).ok()
        } else {
            None
        };
        let multi = meta
            .as_ref()
            .filter(|m| m.is_file() && m.nlink() > 1)
            .map(dev_ino);
        let mut dir = match (&meta, file_type.is_dir()) {
            (Some(m), true) => Some(DirNode {
                dev_ino: dev_ino(m),
                git_dir: judged.git_dir,
                descend: judged.walk == Walk::Descend,
                watched: false,
            }),
            _ => None,
        };
        if let Some(d) = &mut dir {
            if d.descend {
                d.watched = self.walk_dir(path, git, seen)?;
            }
        }
        let node = Node {
            dir,
            protection: judged.protection,
            multi,
        };
        let kept = node.dir.is_some() || node.protection.is_some() || node.multi.is_some();
        if kept {
            self.nodes.insert(path.to_path_buf(), node);
        }
        Ok(kept)
    }

    /// Adds a watch on `dir`; false if it cannot be read (the full scan skips it too).
    fn watch(&mut self, dir: &Path) -> Result<bool, Lost> {
        use inotify::WatchMask as M;
        // No MODIFY: what a path contributes never depends on its content (the audit reads
        // the content of what it compares at each query); ATTRIB brings link-count changes.
        let mask = M::CREATE
            | M::DELETE
            | M::ATTRIB
            | M::MOVED_FROM
            | M::MOVED_TO
            | M::DELETE_SELF
            | M::MOVE_SELF
            | M::DONT_FOLLOW
            | M::ONLYDIR;
        match self.watcher.watches().add(dir, mask) {
            Ok(wd) => {
                self.dirs.insert(wd.clone(), dir.to_path_buf());
                self.wd_of.insert(dir.to_path_buf(), wd);
                Ok(true)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => Err(Lost::Abandon(
                "the inotify watch limit was reached (raise fs.inotify.max_user_watches)".into(),
            )),
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => Err(Lost::Abandon(
                "the kernel is out of memory for inotify".into(),
            )),
            Err(_) => Ok(false),
        }
    }

    /// Stops watching `dir`, unless its watch now belongs to the same directory under a new
    /// name (moved: the kernel keeps one watch per inode).
    fn unwatch(&mut self, dir: &Path) {
        if let Some(wd) = self.wd_of.remove(dir) {
            if self.dirs.get(&wd).is_some_and(|p| p == dir) {
                self.dirs.remove(&wd);
                let _ = self.watcher.watches().remove(wd);
            }
        }
    }

    /// Forgets `path` and everything below it.
    fn forget(&mut self, path: &Path) {
        let below: Vec<PathBuf> = self
            .nodes
            .range(path.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(path))
            .map(|(p, _)| p.clone())
            .collect();
        for p in below {
            if let Some(Node { dir: Some(d), .. }) = self.nodes.remove(&p) {
                if d.watched {
                    self.unwatch(&p);
                }
                self.children.remove(&p);
            }
        }
        self.unwatch(path);
        self.children.remove(path);
    }

    /// Drains the event queue: the directories to judge again, each with the names of the
    /// entries that changed in it (None: the directory itself changed; judge all of it).
    fn dirty(&mut self) -> Result<Vec<Dirty>, Lost> {
        use inotify::EventMask as E;
        let mut dirty: HashMap<PathBuf, Option<HashSet<OsString>>> = HashMap::new();
        let whole = |dirty: &mut HashMap<_, _>, dir: PathBuf| {
            dirty.insert(dir, None);
        };
        loop {
            let events = match self.watcher.read_events(&mut self.events) {
                Ok(events) => events,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(Lost::Rebuild(format!("reading inotify events: {e}"))),
            };
            let mut any = false;
            for event in events {
                any = true;
                if event.mask.contains(E::Q_OVERFLOW) {
                    return Err(Lost::Rebuild("the inotify event queue overflowed".into()));
                }
                let Some(dir) = self.dirs.get(&event.wd).cloned() else {
                    continue;
                };
                if event
                    .mask
                    .intersects(E::IGNORED | E::DELETE_SELF | E::MOVE_SELF)
                {
                    // The directory itself went: its parent's entry says what is there now.
                    if let Some(parent) = dir.parent() {
                        whole(&mut dirty, parent.to_path_buf());
                    }
                    if event.mask.contains(E::IGNORED) {
                        self.dirs.remove(&event.wd);
                        if self.wd_of.get(&dir) == Some(&event.wd) {
                            self.wd_of.remove(&dir);
                        }
                    }
                    whole(&mut dirty, dir);
                    continue;
                }
                match event.name {
                    // Each change to an entry names it in its directory's events.
                    Some(name) => {
                        if let Some(names) =
                            dirty.entry(dir).or_insert_with(|| Some(HashSet::new()))
                        {
                            names.insert(name.to_os_string());
                        }
                    }
                    None => whole(&mut dirty, dir),
                }
            }
            if !any {
                break;
            }
        }
        let mut dirty: Vec<_> = dirty.into_iter().collect();
        // Parents first: a directory walked again whole covers what is below it.
        dirty.sort_by_key(|(p, _)| p.components().count());
        Ok(dirty)
    }

    /// Judges again the entries `names` of `dir` (all of them when None); walks again what is
    /// new or changed what it is.
    fn rejudge(
        &mut self,
        dir: &Path,
        names: Option<&HashSet<OsString>>,
        git: &mut GitDirCache,
        seen: &mut HashSet<PathBuf>,
    ) -> Result<(), Lost> {
        if seen.contains(dir) {
            return Ok(()); // walked again whole already
        }
        let Some(old) = self.children.get(dir).cloned() else {
            return Ok(()); // not a directory the scan goes into (or gone)
        };
        // What is there now, of the names to judge: (name, type) or gone.
        let mut now: Vec<(OsString, Option<std::fs::FileType>)> = Vec::new();
        match names {
            Some(names) => {
                for name in names {
                    let t = std::fs::symlink_metadata(dir.join(name))
                        .ok()
                        .map(|m| m.file_type());
                    now.push((name.clone(), t));
                }
            }
            None => {
                let listed: HashMap<OsString, std::fs::FileType> = match std::fs::read_dir(dir) {
                    Ok(entries) => entries
                        .flatten()
                        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
                        .collect(),
                    Err(_) => HashMap::new(),
                };
                for gone in old.iter().filter(|n| !listed.contains_key(*n)) {
                    now.push((gone.clone(), None));
                }
                now.extend(listed.into_iter().map(|(n, t)| (n, Some(t))));
            }
        }
        for (name, file_type) in now {
            let path = dir.join(&name);
            let Some(file_type) = file_type else {
                self.forget(&path);
                if let Some(c) = self.children.get_mut(dir) {
                    c.remove(&name);
                }
                continue;
            };
            let before = self.nodes.get(&path).cloned();
            let judged = judge(&self.guard, git, &path, file_type);
            let meta = std::fs::symlink_metadata(&path).ok();
            let same_dir = match (&before, &meta) {
                (Some(Node { dir: Some(d), .. }), Some(m)) if m.is_dir() => {
                    d.dev_ino == dev_ino(m)
                        && d.git_dir == judged.git_dir
                        && d.descend == (judged.walk == Walk::Descend)
                        && (d.watched || !d.descend)
                        && before.as_ref().map(|n| &n.protection) == Some(&judged.protection)
                }
                _ => false,
            };
            if same_dir {
                continue; // its own events cover what is inside
            }
            self.forget(&path);
            let kept = self.judge_entry(&path, file_type, git, seen)?;
            if let Some(c) = self.children.get_mut(dir) {
                if kept {
                    c.insert(name);
                } else {
                    c.remove(&name);
                }
            }
        }
        Ok(())
    }

    /// The scan, from the nodes, after applying what happened since the last query.
    /// The session starts a new index when it loads a new policy; a mode change shows here
    /// as other roots.
    fn query(&mut self, roots: &[PathBuf]) -> Result<Scan, Lost> {
        if roots != self.roots {
            return Err(Lost::Rebuild("the writable trees changed".into()));
        }
        if let Some(lost) = self.lost.take() {
            return Err(lost);
        }
        self.update()?;
        Ok(self.assemble(roots))
    }

    /// Applies what happened since the last update.
    fn update(&mut self) -> Result<(), Lost> {
        let mut git = GitDirCache::default();
        // A root that did not exist has no watch: look for it each time. The others report
        // their own changes (below).
        for (root, (_, inode)) in self.roots.iter().zip(&self.root_state) {
            if inode.is_none() && std::fs::symlink_metadata(root).is_ok() {
                return Err(Lost::Rebuild("a writable tree was created".into()));
            }
        }
        let dirty = self.dirty()?;
        if !dirty.is_empty() {
            self.repos_around.clear();
        }
        let mut seen = HashSet::new();
        for (dir, _) in &dirty {
            // A root replaced, moved, or made (or unmade) a git dir: judged anew whole.
            if let Some(i) = self.roots.iter().position(|r| r == dir) {
                let now = root_state(&mut git, std::slice::from_ref(dir));
                if now[0] != self.root_state[i] {
                    return Err(Lost::Rebuild("a writable tree was replaced".into()));
                }
            }
        }
        for (dir, names) in &dirty {
            // A directory whose own git-dir test changed is walked again whole: what is
            // below it is judged differently now.
            let own = self.nodes.get(dir).and_then(|n| n.dir);
            let now_git = git.is_git_dir(dir);
            match own {
                Some(d) if d.git_dir != now_git => {
                    self.forget(dir);
                    if let Ok(meta) = std::fs::symlink_metadata(dir) {
                        self.judge_entry(dir, meta.file_type(), &mut git, &mut seen)?;
                    }
                }
                _ => self.rejudge(dir, names.as_ref(), &mut git, &mut seen)?,
            }
        }
        Ok(())
    }

    /// Whether `dir` is a git dir, if the index knows it (a root, or a directory the walk
    /// reached); None otherwise.
    fn git_dir(&self, dir: &Path) -> Option<bool> {
        if let Some(i) = self.roots.iter().position(|r| r == dir) {
            return Some(self.root_state[i].0);
        }
        self.nodes.get(dir).and_then(|n| n.dir).map(|d| d.git_dir)
    }

    /// `Index::repo_within` on the nodes: every directory on the way must be one the walk
    /// reached, and a `.git` that is not a directory is looked at on disk (a gitfile, or
    /// something git would not take for one). Answers are kept until the next change the
    /// events report (writes come to the same few directories, one decision after another).
    fn repo_within(&mut self, dir: &Path, top: &Path) -> Option<Option<(PathBuf, PathBuf)>> {
        if let Some((t, found)) = self.repos_around.get(dir) {
            if t == top {
                return Some(found.clone());
            }
        }
        let found = self.repo_within_nodes(dir, top)?;
        self.repos_around
            .insert(dir.to_path_buf(), (top.to_path_buf(), found.clone()));
        Some(found)
    }

    fn repo_within_nodes(&self, dir: &Path, top: &Path) -> Option<Option<(PathBuf, PathBuf)>> {
        for d in dir.ancestors().take_while(|a| a.starts_with(top)) {
            let indexed = self.roots.iter().any(|r| r == d)
                || self.nodes.get(d).is_some_and(|n| n.dir.is_some());
            if !indexed {
                return None;
            }
            let dot_git = d.join(".git");
            match self.nodes.get(&dot_git) {
                Some(n) if n.dir.is_some() => return Some(Some((dot_git, d.to_path_buf()))),
                Some(_) => {
                    if let Some(found) = crate::surface::hooks::repo_within(d, d) {
                        return Some(Some(found));
                    }
                }
                None => {}
            }
        }
        Some(None)
    }

    /// The scan from the nodes; the roots' own git-dir test is kept current by `update`.
    fn assemble(&self, roots: &[PathBuf]) -> Scan {
        let mut scan = Scan::default();
        for (root, (git_dir, _)) in roots.iter().zip(&self.root_state) {
            if *git_dir {
                scan.git_dirs.push(root.clone());
            }
        }
        let mut protected = Vec::new();
        for (path, node) in &self.nodes {
            if node.dir.is_some_and(|d| d.git_dir) {
                scan.git_dirs.push(path.clone());
            }
            if let Some(why) = &node.protection {
                protected.push((path.clone(), why.clone()));
            }
        }
        let links = if self.nodes.values().any(|n| n.multi.is_some()) {
            Links::Collect
        } else {
            Links::Skip
        };
        let linked = record(&mut scan, roots, &self.guard, protected, links);
        if !linked.is_empty() {
            for (path, node) in &self.nodes {
                if let Some(of) = node.multi.and_then(|k| linked.get(&k)) {
                    hard_link(&mut scan, &self.guard, path, of);
                }
            }
        }
        scan
    }
}

#[cfg(target_os = "linux")]
fn why_lost(l: Lost) -> String {
    match l {
        Lost::Rebuild(w) | Lost::Abandon(w) => w,
    }
}

#[cfg(all(test, target_os = "linux"))]
#[path = "index_tests.rs"]
mod tests;
