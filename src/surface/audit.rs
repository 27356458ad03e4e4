//! After a sandboxed command: what it created or changed on pi's control surface.
//!
//! Mounts keep existing paths read-only, but cannot stop a command from creating a new name:
//! a `.pi` directory in a subdirectory (pi loads extensions from it), a new repository whose
//! hooks or config run commands when the user next runs git there, a worktree's commondir
//! rewritten. So every command is bracketed by a scan: what `protected::TABLE` covers and was
//! not there before (or, for entries compared by content, holds something else now) is
//! judged by the entry's `OnChange` rule and, if unsafe, moved into a new quarantine
//! directory with an unpredictable name (never deleted). When a path cannot be neutralised
//! the audit fails closed: the finding is marked `blocking` and bash stays blocked until
//! the path is gone or safe. New denyWrite matches are moved aside too (the file tools may
//! not create them either), as is what a protected link pointed to while it did not exist;
//! a new env file that nothing else protects is the command's own, and stays.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// "Now" on the clock the file system stamps inodes with (the kernel's coarse clock, which
/// lags the fine one by up to a tick): the change time of a new, unnamed temp file. An inode
/// changed strictly before it was not changed by the command that follows.
fn baseline_time() -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let meta = tempfile::tempfile().ok()?.metadata().ok()?;
    Some(UNIX_EPOCH + Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec() as u32))
}

/// When the sandbox first ran a session with this agent dir, on the file system's clock: the
/// user's files are what predates it. Recorded once in `<agent dir>/sandbox-first-session`,
/// so that what one session's commands wrote is not the user's in the next session either
/// (a stage planted in one session and armed in the next). None when it cannot be read or
/// recorded: then nothing counts as the user's (fail closed).
pub(crate) fn first_session_time(agent_dir: &Path) -> Option<SystemTime> {
    let file = agent_dir.join("sandbox-first-session");
    let parse = |text: &str| -> Option<SystemTime> {
        let (secs, nanos) = text.trim().split_once('.')?;
        Some(UNIX_EPOCH + Duration::new(secs.parse().ok()?, nanos.parse().ok()?))
    };
    match std::fs::read_to_string(&file) {
        Ok(text) => return parse(&text),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return None,
        Err(_) => {}
    }
    let now = baseline_time()?;
    let since = now.duration_since(UNIX_EPOCH).ok()?;
    let text = format!("{}.{:09}\n", since.as_secs(), since.subsec_nanos());
    std::fs::create_dir_all(agent_dir).ok()?;
    // Written whole beside it, then linked into place: a session starting at the same
    // moment keeps the first record.
    let tmp = tempfile::NamedTempFile::new_in(agent_dir).ok()?;
    std::fs::write(tmp.path(), &text).ok()?;
    match std::fs::hard_link(tmp.path(), &file) {
        Ok(()) => Some(now),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            parse(&std::fs::read_to_string(&file).ok()?)
        }
        Err(_) => None,
    }
}

use crate::content;
use crate::policy::guard::Protection;
use crate::policy::protected::{GitPathKind, Hit, Keep, OnChange, Place};
use crate::surface::quarantine::Quarantine;
use crate::surface::scan::{fingerprinted_content, Found, Scan, FP_LINK, LINK_TARGET_MISSING};

/// What was done about one new or changed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) path: PathBuf,
    /// Where it was moved, if it was.
    pub(crate) moved_to: Option<PathBuf>,
    pub(crate) why: String,
    /// It could not be neutralised: bash stays blocked while it is there.
    pub(crate) blocking: bool,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.moved_to {
            Some(to) => write!(
                f,
                "{} was created or changed by the command and moved to {}: {}",
                self.path.display(),
                to.display(),
                self.why
            ),
            None => write!(f, "{}: {}", self.path.display(), self.why),
        }
    }
}

/// The protected paths seen just before a command, to judge what it created or changed.
#[derive(Debug)]
pub(crate) struct Auditor {
    /// Where what is moved aside goes.
    quarantine: Quarantine,
    /// The git dirs at the baseline: one the scan finds after the command is new.
    git_dirs: std::collections::HashSet<PathBuf>,
    /// The links on protected links' ways at the baseline (`Protection::WayLink`): one a
    /// command replaces with a folder drops out of the scan, and is judged all the same.
    ways: Vec<Found>,
    /// Path → whether its entry was compared by content (`by_content`), and its fingerprint
    /// (content or link target, for entries compared by content).
    known: HashMap<PathBuf, (bool, Vec<u8>)>,
    /// What could not be neutralised: bash is blocked while any of it is still unsafe.
    blocked: Vec<Found>,
    /// When the sandbox's first session started (`first_session_time`): an inode whose
    /// change time is older is the user's. Never moved on: what an earlier command (or the
    /// write tool) of this or an earlier session wrote is no more the user's than what this
    /// command writes.
    since: Option<SystemTime>,
}

impl Auditor {
    /// An auditor that takes what changed before `since` for the user's (see
    /// `first_session_time`; None: nothing is).
    pub(crate) fn new(quarantine: Quarantine, since: Option<SystemTime>) -> Auditor {
        Auditor {
            quarantine,
            git_dirs: Default::default(),
            ways: Vec::new(),
            known: HashMap::new(),
            blocked: Vec::new(),
            since,
        }
    }

    /// Records what exists just before a command: only what appears or changes after it is
    /// suspect.
    pub(crate) fn baseline(&mut self, scan: &Scan) {
        self.ways.clear();
        self.git_dirs = scan.git_dirs.iter().cloned().collect();
        for f in compared(scan) {
            self.known.insert(f.path.clone(), known(f));
            if matches!(f.why, Protection::WayLink { .. }) {
                self.ways.push(f.clone());
            }
        }
    }

    /// Whether `path` (and, for a directory, its list of entries) is older than the
    /// session: its inode change time cannot be set back, and moves, links and writes all
    /// update it.
    fn unchanged_since_baseline(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Some(since) = self.since else {
            return false;
        };
        std::fs::symlink_metadata(path).is_ok_and(|m| {
            let ctime = UNIX_EPOCH + Duration::new(m.ctime().max(0) as u64, m.ctime_nsec() as u32);
            ctime < since
        })
    }

    /// Records paths the sandbox made itself (placeholders).
    pub(crate) fn baseline_paths(&mut self, paths: &[PathBuf]) {
        for p in paths {
            self.known.entry(p.clone()).or_default();
        }
    }

    /// Compares `now` (scanned after the command) with the baseline and neutralises what is
    /// new or changed.
    #[cfg(test)]
    pub(crate) fn after(&mut self, now: &Scan) -> Vec<Finding> {
        self.after_accepting(now, &|_| false)
    }

    /// `after`, leaving what `accepted` says is fine where it is (an env file git checked
    /// out whose content git's objects held before: `CommittedEnv::hides_nothing`).
    pub(crate) fn after_accepting(
        &mut self,
        now: &Scan,
        accepted: &dyn Fn(&Found) -> bool,
    ) -> Vec<Finding> {
        self.after_only_accepting(now, |_| true, accepted)
    }

    /// `after`, judging only what makes a directory a git dir or points git at one (a
    /// `commondir`, a gitfile). Run first: what those make protected, or exempt from
    /// denyWrite as git's data, is only known once they are gone (see `Session`).
    pub(crate) fn after_structural(&mut self, now: &Scan) -> Vec<Finding> {
        self.after_only(now, |f| {
            matches!(&f.why, Protection::Surface(h) if match h.entry.place {
                Place::GitFile => true,
                Place::Git(pattern) => pattern.ends_with("commondir"),
                _ => false,
            })
        })
    }

    fn after_only(&mut self, now: &Scan, judged: impl Fn(&Found) -> bool) -> Vec<Finding> {
        self.after_only_accepting(now, judged, &|_| false)
    }

    fn after_only_accepting(
        &mut self,
        now: &Scan,
        judged: impl Fn(&Found) -> bool,
        accepted: &dyn Fn(&Found) -> bool,
    ) -> Vec<Finding> {
        let mut findings = Vec::new();
        // A link on a protected link's way that is no link any more is not on its way now:
        // judged from what the baseline saw there.
        let gone: Vec<Found> = (self.ways.iter())
            .filter(|w| judged(w) && !now.all().any(|f| f.path == w.path))
            .map(|w| Found {
                fingerprint: Vec::new(),
                ..w.clone()
            })
            .collect();
        let mut unmade = std::collections::HashSet::new();
        for found in compared(now).chain(&gone).filter(|f| judged(f)) {
            // Inside what was just moved aside.
            let here = std::fs::symlink_metadata(&found.path).is_ok();
            if !here && !matches!(found.why, Protection::WayLink { .. }) {
                continue;
            }
            let seen = self.known.get(&found.path);
            let before = seen.map(|(_, fp)| fp);
            if before.is_some_and(|fp| *fp == found.fingerprint) {
                continue;
            }
            if accepted(found) {
                self.known.insert(found.path.clone(), known(found));
                continue;
            }
            // Protected now only because the command changed what is around it (made its
            // directory a git dir; uncovered it by moving a protected directory), or covered
            // now by an entry compared the other way (a commondir in a directory the command
            // made a git dir is a worktree's, compared by content; its fingerprint before
            // says nothing): the path itself is untouched, the user's. What changed around
            // it is judged on its own.
            let comparable = seen.is_some_and(|(by, _)| *by == by_content(found));
            if !comparable && self.unchanged_since_baseline(&found.path) {
                // Older files that git would run, in a folder the command made a git dir
                // (moved there, or given objects/): what made it one goes, they stay.
                match self.new_git_dir_around(&found.path, now) {
                    Some(dir) if would_run(found) => {
                        if !unmade.contains(&dir) {
                            let moved = self.unmake_git_dir(&dir, &found.path);
                            if moved.is_empty() {
                                // Its markers are as old: no way to tell; judged as new.
                                findings.extend(judge(&self.quarantine, found, None));
                                continue;
                            }
                            findings.extend(moved);
                            unmade.insert(dir);
                        }
                        continue;
                    }
                    _ => {}
                }
                self.known.insert(found.path.clone(), known(found));
                continue;
            }
            let finding = judge(&self.quarantine, found, before.map(Vec::as_slice));
            // A path moved aside is gone: if a later command re-creates it, that is new again.
            match &finding {
                Some(f) if f.blocking => self.blocked.push(found.clone()),
                Some(f) if f.moved_to.is_some() => {}
                _ => {
                    self.known.insert(found.path.clone(), known(found));
                }
            }
            findings.extend(finding);
        }
        findings
    }
}

impl Auditor {
    /// The innermost git dir around `path` that the baseline did not have.
    fn new_git_dir_around(&self, path: &Path, now: &Scan) -> Option<PathBuf> {
        (now.git_dirs.iter())
            .filter(|g| path.starts_with(g) && !self.git_dirs.contains(*g))
            .max_by_key(|g| g.as_os_str().len())
            .cloned()
    }

    /// Moves aside what the session made of `dir`'s git-dir markers (HEAD, objects, refs), so that git no longer takes it for a repository, leaving the user's
    /// `older` file where it is.
    fn unmake_git_dir(&self, dir: &Path, older: &Path) -> Vec<Finding> {
        let why = format!(
            "it made {} a git repository around {}, which predates the session but which git would run or read on the host; your file stays where it is",
            crate::shown::path(dir),
            crate::shown::path(older)
        );
        // A commondir is judged on its own, first (`after_structural`).
        ["HEAD", "objects", "refs"]
            .iter()
            .map(|name| dir.join(name))
            .filter(|p| std::fs::symlink_metadata(p).is_ok() && !self.unchanged_since_baseline(p))
            .map(|p| quarantine(&self.quarantine, &p, &why, None))
            .collect()
    }
}

/// Whether git would run something from `found` (live hooks, a config with keys off the safe
/// list): what a folder made a git dir around it must not bring to life.
fn would_run(found: &Found) -> bool {
    let Protection::Surface(hit) = &found.why else {
        return false;
    };
    let path = &found.path;
    match hit.entry.on_change {
        OnChange::MoveIfLiveHooks => !is_dir(path) || !live_hooks(path).is_empty(),
        OnChange::MoveIfUnsafeGitConfig => !is_dir(path) && unsafe_git_config(path, None).is_some(),
        _ => false,
    }
}

/// Whether the scan fingerprints `f` by content (`Keep::Audit` entries; a link, by its target,
/// under any entry): a fingerprint is compared only with one taken the same way.
fn by_content(f: &Found) -> bool {
    matches!(&f.why, Protection::Surface(h) if h.entry.keep == Keep::Audit)
}

/// What the auditor keeps of a path it has seen.
fn known(f: &Found) -> (bool, Vec<u8>) {
    (by_content(f), f.fingerprint.clone())
}

fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

/// What a scan found, one entry per path: a path found both under its own name and as a
/// second name of another (a protected link's target, a hard link) is compared as itself,
/// by its own entry's fingerprint. A path found only as second names is compared as a
/// protected link's target when it is one: that alone is judged (a target the command
/// created while the link dangled is moved aside). The others judge nothing, and met first
/// they would record the path as seen: a new env file in a dependency tree, hidden as
/// itself, that a `*.pem` folder's link points to, or the file a `.env` link leads to.
fn compared(scan: &Scan) -> impl Iterator<Item = &Found> {
    let paths = |keep: fn(&Protection) -> bool| -> std::collections::HashSet<&Path> {
        (scan.all().filter(|f| keep(&f.why)))
            .map(|f| f.path.as_path())
            .collect()
    };
    let direct = paths(|why| !is_second_name(why));
    let link_targets = paths(|why| matches!(why, Protection::LinkTarget { .. }));
    scan.all().filter(move |f| {
        let path = f.path.as_path();
        !is_second_name(&f.why)
            || (!direct.contains(path)
                && (matches!(f.why, Protection::LinkTarget { .. }) || !link_targets.contains(path)))
    })
}

/// Other names of a protected path, and env files hidden for their name alone (their own,
/// or a link's): each defers to the path's own entry, if it has one.
fn is_second_name(why: &Protection) -> bool {
    match why {
        Protection::LinkTarget { .. }
        | Protection::HardLink { .. }
        | Protection::EnvFile { also: None } => true,
        // A hard link to a hidden env file: hidden, and a second name all the same.
        Protection::EnvFile { also: Some(also) } => is_second_name(also),
        _ => false,
    }
}

/// Moves `path` into the project's quarantine (`crate::surface::quarantine`); `restore` is written
/// back in its place (a changed file that existed before the command). Fails closed: a
/// path that cannot be moved is reported as blocking.
fn quarantine(to: &Quarantine, path: &Path, why: &str, restore: Option<&[u8]>) -> Finding {
    let fail = |e: String| {
        Finding {
        path: path.to_path_buf(),
        moved_to: None,
        why: format!(
            "{why}; moving it aside failed ({e}). bash stays blocked until you remove it yourself (outside pi) or make it safe"
        ),
        blocking: true,
    }
    };
    let to = match to.move_aside(path) {
        Ok(to) => to,
        Err(e) => return fail(e),
    };
    if let Some(bytes) = restore {
        if let Err(e) = restore_file(path, bytes) {
            return Finding {
                moved_to: Some(to),
                ..fail(format!("restoring the previous content failed: {e}"))
            };
        }
    }
    Finding {
        path: path.to_path_buf(),
        moved_to: Some(to),
        why: match restore {
            Some(_) => format!("{why}; the previous content was put back"),
            None => why.to_string(),
        },
        blocking: false,
    }
}

/// Puts back what a fingerprint (`scan::fingerprint`) recorded: a link, or a file's content.
fn restore_file(path: &Path, fingerprint: &[u8]) -> std::io::Result<()> {
    if let Some(target) = fingerprint.strip_prefix(FP_LINK) {
        use std::os::unix::ffi::OsStrExt;
        return std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), path);
    }
    let bytes = fingerprinted_content(fingerprint)
        .ok_or_else(|| std::io::Error::other("no content was recorded"))?;
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)
}

/// The live hooks in a hooks directory: anything but git's `*.sample` files. Names only:
/// nothing is opened but the directory (`O_DIRECTORY`: a FIFO put in its place fails at
/// once), and any kind of file under a live name is live.
fn live_hooks(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.to_string_lossy().ends_with(".sample"))
        .collect()
}

/// Whether the gitfile `path` points at a git dir git made for it, proven by git's own
/// back-link from that git dir to `path`, never by where the git dir sits: a linked
/// worktree's admin dir whose `gitdir` file names `path`, or a submodule's git dir whose
/// `core.worktree` (as git reads it) is the directory holding `path`. Err says why not.
fn gitfile_is_linked(path: &Path) -> Result<(), String> {
    let text =
        content::read(path, content::GIT_FILE_LIMIT).map_err(|not| not_a_file(&not, "gitfile"))?;
    let Some(target) = crate::policy::protected::gitfile_target_in(path, &text) else {
        return Err("git does not read it as a gitfile (`gitdir: <path>`)".into());
    };
    if crate::policy::protected::worktree_links_back(&target, path)
        || submodule_links_back(&target, path)
    {
        return Ok(());
    }
    Err("it names no git dir that git itself linked to it (a worktree's admin dir whose gitdir file names it, or a submodule's git dir whose core.worktree names its folder)".into())
}

/// `git submodule` writes `core.worktree` into the submodule's git dir, relative to it.
fn submodule_links_back(git_dir: &Path, gitfile: &Path) -> bool {
    let Some(worktree) = crate::surface::hooks::core_worktree(git_dir) else {
        return false;
    };
    let (Some(dir), Ok(back)) = (
        gitfile.parent(),
        crate::paths::canonicalize(&git_dir.join(worktree)),
    ) else {
        return false;
    };
    crate::paths::canonicalize(dir).is_ok_and(|d| d == back)
}

/// Why what is at a path is no `expected` file: what it is instead. A FIFO, socket or
/// device would make git (and a reader without `content::read`'s care) wait or fail.
fn not_a_file(not: &content::NotContent, expected: &str) -> String {
    use content::NotContent::{Device, Fifo, Socket};
    let blocks = matches!(not, Fifo | Socket | Device);
    format!(
        "it is {not}, not a {expected}{}",
        if blocks {
            ": git would wait on it or fail reading it"
        } else {
            ""
        }
    )
}

/// Why the git config at `path` is unsafe, as git reads it: entries the command added
/// (`before`: its fingerprint from before the command) with keys off the safe list, a file
/// git cannot read, or no regular file at all. None when it is safe.
fn unsafe_git_config(path: &Path, before: Option<&[u8]>) -> Option<String> {
    let text = match content::read(path, content::GIT_FILE_LIMIT) {
        Ok(text) => text,
        Err(not) => return Some(not_a_file(&not, "git config")),
    };
    let old = before.and_then(fingerprinted_content);
    match crate::surface::git_config::added_unsafe_keys(old, &text, path) {
        Ok(bad) if bad.is_empty() => None,
        Ok(bad) => Some(format!(
            "this git config sets {} (can run commands outside the sandbox); git works without it",
            bad.join(", ")
        )),
        Err(e) => Some(format!(
            "{e}; only a config git reads, with safe keys, is kept"
        )),
    }
}

/// Judges one new (`before` None) or changed path by its table entry's rule.
fn judge(to: &Quarantine, found: &Found, before: Option<&[u8]>) -> Option<Finding> {
    let path = &found.path;
    // What was there before the command, to put back: a regular file's content or a link
    // (not what the fingerprint says of anything else, which is no content).
    let restore = before.filter(|b| fingerprinted_content(b).is_some() || b.starts_with(FP_LINK));
    let why = match &found.why {
        Protection::EnvFile { also: Some(also) } => also.as_ref(),
        why => why,
    };
    match why {
        Protection::Surface(hit) => judge_by_entry(to, path, hit, before, restore),
        // The file tools may not create it, so neither may a command: mounts can keep only
        // existing files read-only, so a new one is moved aside (kept, never deleted).
        Protection::DenyWrite(label) => {
            Some(quarantine(
                to,
                path,
                &format!("it matches {label}, which the agent may not create or change; remove the pattern from filesystem.denyWrite, or create the file yourself, if it is wanted"),
                restore,
            ))
        }
        // git runs what is there at the user's next commit, or reads it as config.
        Protection::GitPath { label, kind } => {
            let why = match kind {
                GitPathKind::Hooks => format!("it is in the {label}; git would run it on the host"),
                GitPathKind::Config => format!(
                    "it is the {label}; git would read it on the host, where its keys can run commands"
                ),
            };
            Some(quarantine(to, path, &why, restore))
        }
        // What a protected link pointed to while it did not exist, created by the command:
        // pi or git load it through the link.
        Protection::LinkTarget { link, of } if before == Some(LINK_TARGET_MISSING) => {
            Some(quarantine(
                to,
                path,
                &format!(
                    "it is what the protected link {} ({}) points to, and did not exist before the command",
                    link.display(),
                    of.label()
                ),
                None,
            ))
        }
        // Kept read-only while they are second names; judged through the protected name.
        // Hidden, not protected from the command: one it wrote itself is its own.
        // Replaced or removed: the protected link leads elsewhere now. What was there goes
        // back (it was a link, fingerprinted as one).
        Protection::WayLink { .. } if std::fs::symlink_metadata(path).is_err() => {
            put_back(path, restore)
        }
        Protection::WayLink { link, of } => {
            Some(quarantine(
                to,
                path,
                &format!(
                    "the protected link {} ({}) leads through it; changing it sends what pi or git load elsewhere",
                    crate::shown::path(link),
                    of.label()
                ),
                restore,
            ))
        }
        Protection::LinkTarget { .. } | Protection::HardLink { .. } | Protection::EnvFile { .. } => {
            None
        }
    }
}

/// A path `protected::TABLE` covers, judged by its entry's `OnChange` rule.
fn judge_by_entry(
    to: &Quarantine,
    path: &Path,
    hit: &Hit,
    before: Option<&[u8]>,
    restore: Option<&[u8]>,
) -> Option<Finding> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let what = hit.entry.why;
    if is_link {
        return Some(quarantine(
            to,
            path,
            &format!("a link here makes pi or git load whatever it points to ({what})"),
            restore,
        ));
    }
    match hit.entry.on_change {
        OnChange::Accept => None,
        OnChange::MoveAside => Some(quarantine(to, path, what, restore)),
        // An empty one holds nothing pi could load (and may be another run's placeholder).
        OnChange::MoveUnlessEmpty if is_empty_dir(path) => None,
        OnChange::MoveUnlessEmpty => Some(quarantine(to, path, what, restore)),
        OnChange::MoveIfLiveHooks => {
            // A fresh `git init` writes only *.sample hooks, which git never runs; anything
            // else (a file where the directory belongs included) is not git's own.
            if is_dir(path) && live_hooks(path).is_empty() {
                return None;
            }
            Some(quarantine(to, path, what, restore))
        }
        // A directory where a config file belongs holds no keys: git cannot read it.
        OnChange::MoveIfUnsafeGitConfig if is_dir(path) => None,
        OnChange::MoveIfUnsafeGitConfig => {
            unsafe_git_config(path, before).map(|why| quarantine(to, path, &why, restore))
        }
        OnChange::MoveUnlessGitLinked => match gitfile_is_linked(path) {
            Ok(()) => None,
            Err(not) => Some(quarantine(to, path, &format!("{what}; {not}"), restore)),
        },
        // Compared as git reads the file (`protected::git_path_text`), so that git cannot
        // read a path other than the one accepted.
        OnChange::MoveUnlessContent(expected) => {
            let why = match content::read(path, content::GIT_FILE_LIMIT) {
                Ok(t) if crate::policy::protected::git_path_text(&t) == expected.as_bytes() => {
                    return None
                }
                Ok(_) => format!("{what}; git itself writes {expected:?} here"),
                Err(not) => format!("{what}; {}", not_a_file(&not, "file git writes")),
            };
            Some(quarantine(to, path, &why, restore))
        }
    }
}

/// Puts back the link that was on a protected link's way (`restore`, fingerprinted as one).
fn put_back(path: &Path, restore: Option<&[u8]>) -> Option<Finding> {
    restore.map(|bytes| match restore_file(path, bytes) {
        Ok(()) => Finding {
            path: path.to_path_buf(),
            moved_to: None,
            why: "a link on the way of a protected link was removed; it was put back"
                .into(),
            blocking: false,
        },
        Err(e) => Finding {
            path: path.to_path_buf(),
            moved_to: None,
            why: format!("a link on the way of a protected link was removed and cannot be put back ({e}); bash stays blocked until you restore it"),
            blocking: true,
        },
    })
}

impl Auditor {
    /// Blocks bash on `path` with `why` (a finding the caller could not settle); it is tried
    /// again, and lifted, like any blocking finding.
    pub(crate) fn block(&mut self, path: &Path, why: &str) -> Finding {
        if std::fs::symlink_metadata(path).is_ok() {
            self.blocked.push(Found {
                path: path.to_path_buf(),
                why: Protection::DenyWrite(why.to_string()),
                fingerprint: Vec::new(),
            });
        }
        Finding {
            path: path.to_path_buf(),
            moved_to: None,
            why: format!("{why}. bash stays blocked until you remove it yourself (outside pi)"),
            blocking: true,
        }
    }

    /// Tries again to neutralise what blocked bash; returns what still blocks it (empty:
    /// bash may run). A path the user removed or made safe no longer blocks.
    pub(crate) fn retry_blocked(&mut self) -> Vec<Finding> {
        let mut still = Vec::new();
        let mut remaining = Vec::new();
        for found in std::mem::take(&mut self.blocked) {
            if std::fs::symlink_metadata(&found.path).is_err() {
                continue;
            }
            if let Some(f) = judge(&self.quarantine, &found, None).filter(|f| f.blocking) {
                still.push(f);
                remaining.push(found);
            }
        }
        self.blocked = remaining;
        still
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
