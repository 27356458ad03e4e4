//! Policy → mount plan: which paths bash may write, which stay read-only inside them, which
//! are masked. The same `Guard` that checks pi's file tools decides, so the two layers agree.
//!
//! `plan` is pure (it is told what exists); `surface::scan::scan_protected` is the I/O that
//! feeds it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::policy::bash::Network;
use crate::policy::config::Mode;
use crate::policy::guard::{Guard, Protection};
use crate::policy::protected::{is_under, Keep, Place, TABLE};
use crate::surface::scan::{allow_write_roots, Scan};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum MountKind {
    Writable,
    ReadOnly,
    /// An empty `.pi` (a placeholder, or one left empty): bound read-only like `ReadOnly`,
    /// then covered by a read-only tmpfs holding only a `.gitignore` that ignores
    /// everything, itself included. git inside then takes the directory for ignored, not for
    /// an empty untracked one it must remove (`git clean -d`, `git stash -u`: a mount point
    /// cannot be removed, and they failed on it). Nothing of it reaches the host: pi there
    /// sees the empty directory.
    Placeholder,
    /// An empty read-only tmpfs over a denied directory.
    MaskDir,
    /// /dev/null over a denied file.
    MaskFile,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Mount {
    pub(crate) path: PathBuf,
    pub(crate) kind: MountKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountPlan {
    pub(crate) cwd: PathBuf,
    /// In mount order: a deeper path comes after its parents and so wins.
    pub(crate) mounts: Vec<Mount>,
    /// Protected directories that do not exist yet: created empty (and kept) as mount points
    /// so the command cannot create them.
    pub(crate) placeholders: Vec<PathBuf>,
    pub(crate) network: Network,
    /// Where the command's script appears inside the sandbox (read-only, in the sandbox's own
    /// /dev: not in /tmp, which may be the session's host folder).
    pub(crate) script: Option<PathBuf>,
    /// The host folder bound at /tmp: the session's own (`tmp_map`), the same for every
    /// command. None: a private tmpfs per command.
    pub(crate) tmp: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Dir,
    File,
    /// A symlink: never a mount source or destination (bwrap would follow it, to where the
    /// link points now); a protected link's target is mounted instead.
    Link,
    Missing,
}

/// What `plan` needs to know about the disk.
pub(crate) struct Facts<'a> {
    pub(crate) kind_of: &'a dyn Fn(&Path) -> FileKind,
    /// What `scan_protected` found in the writable trees.
    pub(crate) scan: &'a Scan,
    /// Whether a directory is empty (asked of the `.pi` directories mounted only).
    pub(crate) is_empty_dir: &'a dyn Fn(&Path) -> bool,
}

/// /tmp is a private tmpfs inside the sandbox: a host path below it is visible there only
/// if a mount brings it in.
fn under_tmp(p: &Path) -> bool {
    p.starts_with("/tmp")
}

/// The writable trees of `guard` as bash gets them (before `/tmp` and missing ones are
/// dropped): allowWrite (a linked worktree's git dirs included), less the entries the guard
/// protects themselves (an allowWrite directory inside a denyWrite match or a `.pi`: the
/// guard refuses writes there, so bash must not get them). Read-only mode has none.
pub(crate) fn writable_roots(guard: &Guard) -> Vec<PathBuf> {
    if guard.mode().value == Mode::ReadOnly {
        return vec![];
    }
    allow_write_roots(guard)
}

/// What `plan` asks of the disk, each path once: the denyRead list and the table's fixed
/// places alone are dozens of paths, asked about several times in one plan.
struct Disk<'a> {
    kind_of: &'a dyn Fn(&Path) -> FileKind,
    known: RefCell<HashMap<PathBuf, FileKind>>,
}

impl Disk<'_> {
    fn kind(&self, p: &Path) -> FileKind {
        if let Some(k) = self.known.borrow().get(p) {
            return *k;
        }
        let k = (self.kind_of)(p);
        self.known.borrow_mut().insert(p.to_path_buf(), k);
        k
    }

    fn exists(&self, p: &Path) -> bool {
        self.kind(p) != FileKind::Missing
    }
}

pub(crate) fn plan(
    guard: &Guard,
    facts: &Facts,
    network: Network,
    script: Option<&Path>,
) -> MountPlan {
    let env = guard.env();
    let disk = Disk {
        kind_of: facts.kind_of,
        known: RefCell::default(),
    };
    let writable = mounted_writable(guard, facts, &disk);
    let inside_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));

    let mut mounts: Vec<Mount> = writable
        .iter()
        .map(|p| Mount {
            path: p.clone(),
            kind: MountKind::Writable,
        })
        .collect();
    let Islands {
        read_only,
        mut placeholders,
        covering,
    } = read_only_islands(guard, facts, &disk, &writable);
    mounts.extend(pinned(guard, &disk, &writable, read_only, &covering));
    empty_pi_ignored(&mut mounts, &placeholders, facts, &disk);

    // A session directory below /tmp must still exist inside, read-only if not writable.
    if under_tmp(&env.cwd) && !inside_writable(&env.cwd) && disk.exists(&env.cwd) {
        mounts.push(Mount {
            path: env.cwd.clone(),
            kind: MountKind::ReadOnly,
        });
    }

    // Masks last among equals: deny wins. Nothing is mounted below a mask (its tmpfs is
    // read-only, so bwrap could not create the mount point, and denyRead wins anyway).
    let mut masks = masks(guard, facts, &disk, &mounts);
    // Every pi session's /tmp sits in one folder of the user's: where bash would see it at
    // its host path (a TMPDIR outside /tmp), it is hidden (this session's is bound at /tmp).
    if let Some(all) = guard.sessions_tmp_parent() {
        if !under_tmp(all) && disk.kind(all) == FileKind::Dir {
            masks.push(Mount {
                path: all.to_path_buf(),
                kind: MountKind::MaskDir,
            });
        }
    }
    mounts.retain(|m| !masks.iter().any(|k| m.path.starts_with(&k.path)));
    placeholders.retain(|p| !masks.iter().any(|k| p.starts_with(&k.path)));
    mounts.extend(masks);

    // Deeper paths after shallower ones; for the same path, the stricter kind last.
    let mut seen = HashSet::new();
    mounts.retain(|m| seen.insert(m.clone()));
    mounts.sort_by(|a, b| {
        (a.path.components().count(), a.kind, &a.path).cmp(&(
            b.path.components().count(),
            b.kind,
            &b.path,
        ))
    });
    MountPlan {
        cwd: env.cwd.clone(),
        mounts,
        placeholders,
        network,
        script: script.map(Path::to_path_buf),
        tmp: env.tmp.clone().filter(|t| disk.kind(t) == FileKind::Dir),
    }
}

/// The writable roots that become mounts. `/tmp` itself (the private tmpfs, or the session's
/// folder bound there) is writable already; paths below it are bound in. A root inside what a
/// protected link points to is no more writable than the link's name.
fn mounted_writable(guard: &Guard, facts: &Facts, disk: &Disk) -> Vec<PathBuf> {
    let mut writable = writable_roots(guard);
    let session_tmp = guard.env().tmp.as_deref();
    writable.retain(|p| {
        p.as_path() != Path::new("/tmp")
            && Some(p.as_path()) != session_tmp
            && disk.kind(p) == FileKind::Dir
            && !facts.scan.second_names.iter().any(|f| is_under(p, &f.path))
    });
    writable
}

/// The read-only paths inside or beside the writable trees, none inside another.
struct Islands {
    read_only: Vec<PathBuf>,
    /// Those that do not exist yet: created empty as mount points.
    placeholders: Vec<PathBuf>,
    /// The read-only directories (placeholders included): nothing below one is mounted.
    covering: Vec<PathBuf>,
}

/// Read-only islands inside the writable trees: what the scan found (pi's control surface,
/// denyWrite matches, hard links to protected files, protected links' targets), the table's
/// fixed places (agent dir, shell rc files, ...), and placeholders for protected directories
/// that do not exist yet.
fn read_only_islands(guard: &Guard, facts: &Facts, disk: &Disk, writable: &[PathBuf]) -> Islands {
    let mut read_only: Vec<PathBuf> = facts
        .scan
        .protected
        .iter()
        .filter(|f| !matches!(f.why, Protection::EnvFile { .. }))
        .map(|f| f.path.clone())
        .collect();
    read_only.extend(
        guard
            .anchors()
            .fixed_paths()
            .iter()
            .filter(|(_, e)| e.keep == Keep::Mount)
            .map(|(p, _)| p.clone()),
    );
    let mut placeholders = placeholders(guard, facts, disk, writable);
    read_only.extend(placeholders.iter().cloned());
    // A read-only directory covers everything inside it: nothing below it is mounted again
    // (a writable pin there would open a hole in it, and bwrap could not create a mount
    // point inside it anyway).
    read_only.retain(|p| {
        matches!(disk.kind(p), FileKind::Dir | FileKind::File) || placeholders.contains(p)
    });
    read_only.sort_by_key(|p| p.components().count());
    let mut covering: Vec<PathBuf> = Vec::new();
    read_only.retain(|p| {
        if covering.iter().any(|c| is_under(p, c)) {
            return false;
        }
        if disk.kind(p) == FileKind::Dir || placeholders.contains(p) {
            covering.push(p.clone());
        }
        true
    });
    placeholders.retain(|p| read_only.contains(p));
    Islands {
        read_only,
        placeholders,
        covering,
    }
}

/// Placeholders: protected directories that do not exist yet become empty read-only mount
/// points, so the command cannot create them. The audit alone would not do for the project's
/// `.pi`: it runs after the command, on the host, and until then what the command wrote there
/// is loaded by any pi that starts in the project (a second one, or the user's next one when
/// this pi was killed mid-command: then no audit runs, and the next session's baseline takes
/// the file for the user's). The placeholder leaves no such window.
fn placeholders(guard: &Guard, facts: &Facts, disk: &Disk, writable: &[PathBuf]) -> Vec<PathBuf> {
    let inside_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut placeholders = Vec::new();
    for e in TABLE.iter().filter(|e| e.placeholder) {
        let candidates: Vec<PathBuf> = match e.place {
            Place::Name(n) if !n.ends_with('*') => vec![guard.env().cwd.join(n)],
            // Only git dirs with their own object store: a linked worktree's admin dir takes
            // its hooks from the common dir, and `git worktree remove` must be able to
            // delete it (a mount point inside would make that fail).
            Place::Git(rel) => facts
                .scan
                .git_dirs
                .iter()
                .filter(|g| disk.kind(&g.join("objects")) == FileKind::Dir)
                .map(|g| g.join(rel))
                .collect(),
            _ => vec![],
        };
        for p in candidates {
            if !disk.exists(&p)
                && p.parent().is_some_and(|d| disk.kind(d) == FileKind::Dir)
                && inside_writable(&p)
            {
                placeholders.push(p);
            }
        }
    }
    placeholders
}

/// An empty `.pi` (this command's placeholder, one kept from an earlier command, or the
/// user's own, empty) is shown to git as ignored (`MountKind::Placeholder`): git could not
/// remove it anyway.
fn empty_pi_ignored(mounts: &mut [Mount], placeholders: &[PathBuf], facts: &Facts, disk: &Disk) {
    let empty = |p: &Path| {
        placeholders.iter().any(|h| h == p)
            || (disk.kind(p) == FileKind::Dir && (facts.is_empty_dir)(p))
    };
    for m in mounts.iter_mut() {
        if m.kind == MountKind::ReadOnly && has_placeholder_name(&m.path) && empty(&m.path) {
            m.kind = MountKind::Placeholder;
        }
    }
}

/// Whether `p` is named like a placeholder git sees in a work tree (`.pi`), as opposed to
/// one inside a git dir (hooks), which git never lists.
fn has_placeholder_name(p: &Path) -> bool {
    TABLE.iter().any(|e| {
        e.placeholder && matches!(e.place, Place::Name(n) if p.file_name() == Some(n.as_ref()))
    })
}

/// The directories between a path and the writable root it lies in (the deepest first).
fn between(writable: &[PathBuf], p: &Path) -> Vec<PathBuf> {
    let Some(root) = writable
        .iter()
        .filter(|w| p.starts_with(w))
        .max_by_key(|w| w.as_os_str().len())
    else {
        return vec![];
    };
    p.ancestors()
        .skip(1)
        .take_while(|a| *a != root.as_path() && a.starts_with(root))
        .map(Path::to_path_buf)
        .collect()
}

/// The read-only mounts of the islands inside the writable trees, and the directories on
/// their way pinned as writable mount points.
fn pinned(
    guard: &Guard,
    disk: &Disk,
    writable: &[PathBuf],
    read_only: Vec<PathBuf>,
    covering: &[PathBuf],
) -> Vec<Mount> {
    let mut mounts = Vec::new();
    let mut pinned: Vec<PathBuf> = Vec::new();
    for p in read_only {
        if !writable.iter().any(|w| p.starts_with(w)) {
            continue;
        }
        // Every directory between the writable root and the protected path becomes a mount
        // point too: a mount point cannot be renamed or removed (EBUSY), so the command
        // cannot move `.git` aside and re-create `.git/hooks` under the old name.
        for a in between(writable, &p) {
            if !pinned.contains(&a) {
                pinned.push(a);
            }
        }
        mounts.push(Mount {
            path: p,
            kind: MountKind::ReadOnly,
        });
    }
    // A hooks directory or included config file git would use that does not exist yet: the
    // directories on its way are pinned too, so that none can be renamed or replaced by a
    // link that sends git elsewhere (what the command creates in the path itself is moved
    // aside by the audit).
    for missing in guard
        .git_paths()
        .into_iter()
        .map(|g| g.path)
        .filter(|p| disk.kind(p) == FileKind::Missing)
    {
        for a in between(writable, &missing) {
            // Inside a read-only directory nothing can be replaced, and no writable mount
            // may open a hole in it.
            if covering.iter().any(|c| is_under(&a, c)) {
                break;
            }
            if disk.kind(&a) == FileKind::Dir && !pinned.contains(&a) {
                pinned.push(a);
            }
        }
    }
    mounts.extend(pinned.into_iter().map(|path| Mount {
        path,
        kind: MountKind::Writable,
    }));
    mounts
}

/// The masks: denyRead paths (below /tmp only where `mounts` bring them in) and the env files
/// the user has not allowed reading, none inside a masked directory.
fn masks(guard: &Guard, facts: &Facts, disk: &Disk, mounts: &[Mount]) -> Vec<Mount> {
    let mut masks = Vec::new();
    // What the mounts bring into the private /tmp; a mask below /tmp matters only there.
    let mounted: Vec<PathBuf> = mounts.iter().map(|m| m.path.clone()).collect();
    for p in guard.deny_read_paths() {
        if under_tmp(p) && !mounted.iter().any(|m| p.starts_with(m)) {
            continue;
        }
        match disk.kind(p) {
            FileKind::Dir => masks.push(Mount {
                path: p.to_path_buf(),
                kind: MountKind::MaskDir,
            }),
            FileKind::File => masks.push(Mount {
                path: p.to_path_buf(),
                kind: MountKind::MaskFile,
            }),
            FileKind::Link | FileKind::Missing => {}
        }
    }
    // Env files the user has not allowed reading, wherever the scan found them.
    let env_files = facts
        .scan
        .protected
        .iter()
        .filter(|f| matches!(f.why, Protection::EnvFile { .. }))
        .map(|f| &f.path)
        .chain(&facts.scan.hidden_env_files);
    masks.extend(
        env_files
            .filter(|p| disk.kind(p) == FileKind::File)
            .map(|p| Mount {
                path: p.clone(),
                kind: MountKind::MaskFile,
            }),
    );
    // A mask inside a masked directory is hidden already (and bwrap could not create its
    // mount point in the read-only tmpfs).
    let masked_dirs: Vec<PathBuf> = masks
        .iter()
        .filter(|m| m.kind == MountKind::MaskDir)
        .map(|m| m.path.clone())
        .collect();
    masks.retain(|m| {
        !masked_dirs
            .iter()
            .any(|d| *d != m.path && is_under(&m.path, d))
    });
    masks
}

/// The kind of `p` on disk, not following a final symlink (rule paths are canonical).
pub(crate) fn kind_on_disk(p: &Path) -> FileKind {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => FileKind::Dir,
        Ok(m) if m.file_type().is_symlink() => FileKind::Link,
        Ok(_) => FileKind::File,
        Err(_) => FileKind::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::config::{merge, Env};
    use crate::policy::guard::ApprovalMode;
    use crate::surface::scan::tests::guard;
    use crate::surface::scan::{
        env_files_around, scan_protected, scanned_roots, EnvFileListings, Found,
    };
    use std::collections::HashMap;

    /// A fake disk for the pure planner: canonicalisation of these paths is the identity as
    /// long as nothing on the real disk exists there.
    fn env() -> Env {
        Env {
            home: "/nonexistent-pi-test/home/u".into(),
            cwd: "/nonexistent-pi-test/w/proj".into(),
            agent_dir: "/nonexistent-pi-test/home/u/.pi/agent".into(),
            session_dirs: vec![],
            session_file: None,
            pi_loads: vec![],
            tmp: None,
        }
    }

    /// The plan for `g` on a fake disk holding `disk`, with `protected` found by the scan.
    fn plan_on(g: &Guard, disk: &[(PathBuf, FileKind)], protected: Vec<PathBuf>) -> MountPlan {
        let disk: HashMap<PathBuf, FileKind> = disk.iter().cloned().collect();
        let kind = |p: &Path| disk.get(p).copied().unwrap_or(FileKind::Missing);
        let scan = Scan {
            protected: protected
                .into_iter()
                .map(|path| Found {
                    path,
                    why: Protection::DenyWrite("test".into()),
                    fingerprint: vec![],
                })
                .collect(),
            git_dirs: disk
                .keys()
                .filter(|p| p.ends_with(".git") && disk[*p] == FileKind::Dir)
                .cloned()
                .collect(),
            ..Default::default()
        };
        let is_empty_dir = |p: &Path| !disk.keys().any(|k| k.parent() == Some(p));
        let facts = Facts {
            kind_of: &kind,
            scan: &scan,
            is_empty_dir: &is_empty_dir,
        };
        plan(g, &facts, Network::Off, Some(Path::new("/tmp/s.sh")))
    }

    fn show(plan: &MountPlan) -> Vec<String> {
        plan.mounts
            .iter()
            .map(|m| {
                format!(
                    "{:?} {}",
                    m.kind,
                    m.path
                        .display()
                        .to_string()
                        .replace("/nonexistent-pi-test", "")
                )
            })
            .collect()
    }

    #[test]
    fn plan_orders_writable_protected_and_masked_paths() {
        let env = env();
        let g = guard(r#"{"filesystem":{"allowWrite":[".","~"]}}"#, &env);
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let p = plan_on(
            &g,
            &[
                (r("/w/proj"), FileKind::Dir),
                (r("/w/proj/.git"), FileKind::Dir),
                (r("/w/proj/.git/hooks"), FileKind::Dir),
                (r("/w/proj/.git/config"), FileKind::File),
                (r("/home/u"), FileKind::Dir),
                (r("/home/u/.ssh"), FileKind::Dir),
                (r("/home/u/.pi/agent"), FileKind::Dir),
                (r("/home/u/.pi/agent/auth.json"), FileKind::File),
                (r("/home/u/.pi/agent/sessions"), FileKind::Dir),
                (r("/w/proj/certs/a.pem"), FileKind::File),
            ],
            vec![
                r("/w/proj/certs/a.pem"),
                r("/w/proj/.git/hooks"),
                r("/w/proj/.git/config"),
            ],
        );
        assert_eq!(
            show(&p),
            [
                "Writable /home/u",
                "Writable /w/proj",
                // pinned so they cannot be renamed away from what they hold
                "Writable /home/u/.pi",
                "Writable /w/proj/.git",
                "Writable /w/proj/certs",
                "Placeholder /w/proj/.pi",
                "MaskDir /home/u/.ssh",
                "ReadOnly /home/u/.pi/agent",
                "ReadOnly /w/proj/.git/config",
                "ReadOnly /w/proj/.git/hooks",
                "ReadOnly /w/proj/certs/a.pem",
                // the agent dir is read-only whole, session transcripts included
                "MaskFile /home/u/.pi/agent/auth.json",
            ]
        );
        // .pi did not exist: it is created as an empty mount point
        assert_eq!(p.placeholders, vec![r("/w/proj/.pi")]);
        assert_eq!(p.network, Network::Off);
    }

    #[test]
    fn pi_s_session_folder_is_masked_when_shared_and_read_only_in_the_project() {
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let mut env = env();
        env.session_dirs = vec![r("/data/sessions"), r("/w/proj/var/sessions")];
        let g = guard(r#"{"filesystem":{"allowWrite":["."]}}"#, &env);
        let p = plan_on(
            &g,
            &[
                (r("/w/proj"), FileKind::Dir),
                (r("/w/proj/var/sessions"), FileKind::Dir),
                (r("/data/sessions"), FileKind::Dir),
            ],
            vec![],
        );
        let shown = show(&p);
        for expected in [
            "Writable /w/proj",
            // pinned: a mount point cannot be renamed away from pi's path
            "Writable /w/proj/var",
            "ReadOnly /w/proj/var/sessions",
            // every project's transcripts: hidden
            "MaskDir /data/sessions",
        ] {
            assert!(
                shown.iter().any(|s| s == expected),
                "{expected} in {shown:?}"
            );
        }
    }

    #[test]
    fn nothing_writable_is_mounted_inside_a_read_only_directory() {
        let env = env();
        let g = guard(
            r#"{"filesystem":{"allowWrite":[".","keys.pem/sub"],"denyWrite":["*.pem"]}}"#,
            &env,
        );
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let p = plan_on(
            &g,
            &[
                (r("/w/proj"), FileKind::Dir),
                (r("/w/proj/keys.pem"), FileKind::Dir),
                (r("/w/proj/keys.pem/sub"), FileKind::Dir),
                (r("/w/proj/keys.pem/sub/.git"), FileKind::Dir),
                (r("/w/proj/keys.pem/sub/.git/config"), FileKind::File),
            ],
            // the scan found the denied directory, and (say, as a link's target) a file
            // deep inside it
            vec![r("/w/proj/keys.pem"), r("/w/proj/keys.pem/sub/.git/config")],
        );
        // keys.pem/sub is listed in allowWrite but lies in a denied directory: not writable;
        // no pin (writable mount point) and no hooks placeholder inside keys.pem
        assert_eq!(
            show(&p),
            [
                "Writable /w/proj",
                "ReadOnly /w/proj/keys.pem",
                "Placeholder /w/proj/.pi",
            ]
        );
        assert_eq!(p.placeholders, vec![r("/w/proj/.pi")]);
    }

    #[test]
    fn only_an_empty_or_missing_pi_is_shown_to_git_as_ignored() {
        let env = env();
        let g = guard("{}", &env);
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let repo = [
            (r("/w/proj"), FileKind::Dir),
            (r("/w/proj/.git"), FileKind::Dir),
            (r("/w/proj/.git/objects"), FileKind::Dir),
        ];
        // No .pi, no hooks: both are placeholders; git removes an empty untracked .pi, and
        // never looks into its own hooks directory as part of the tree.
        let p = plan_on(&g, &repo, vec![]);
        let shown = show(&p);
        assert!(
            shown.contains(&"Placeholder /w/proj/.pi".to_string()),
            "{shown:?}"
        );
        assert!(
            shown.contains(&"ReadOnly /w/proj/.git/hooks".to_string()),
            "{shown:?}"
        );
        assert_eq!(
            p.placeholders,
            vec![r("/w/proj/.pi"), r("/w/proj/.git/hooks")]
        );
        // The placeholder is kept after the command (removing it could lift another
        // sandbox's mount): an empty .pi the next command finds is treated the same.
        let mut kept = repo.to_vec();
        kept.push((r("/w/proj/.pi"), FileKind::Dir));
        let p = plan_on(&g, &kept, vec![r("/w/proj/.pi")]);
        let shown = show(&p);
        assert!(
            shown.contains(&"Placeholder /w/proj/.pi".to_string()),
            "{shown:?}"
        );
        assert!(!p.placeholders.contains(&r("/w/proj/.pi")), "it exists");
        // A .pi with something in it is the user's: bound read-only as it is, and git sees
        // it as they do.
        let mut with_pi = kept.clone();
        with_pi.push((r("/w/proj/.pi/settings.json"), FileKind::File));
        let p = plan_on(&g, &with_pi, vec![r("/w/proj/.pi")]);
        let shown = show(&p);
        assert!(
            shown.contains(&"ReadOnly /w/proj/.pi".to_string()),
            "{shown:?}"
        );
        assert!(
            !shown.iter().any(|s| s.starts_with("Placeholder")),
            "{shown:?}"
        );
    }

    #[test]
    fn read_only_mode_leaves_nothing_writable() {
        let env = env();
        let g = guard(r#"{"mode":"read-only"}"#, &env);
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let p = plan_on(
            &g,
            &[
                (r("/w/proj"), FileKind::Dir),
                (r("/home/u/.pi/agent/sessions"), FileKind::Dir),
            ],
            vec![],
        );
        assert!(show(&p).is_empty(), "{:?}", show(&p));
        assert!(p.placeholders.is_empty());
    }

    #[test]
    fn nothing_is_mounted_below_a_mask_and_tmp_is_private_but_for_what_is_bound() {
        let env = env();
        let g = guard(
            r#"{"filesystem":{"allowWrite":[".","~/.ssh/tmp","/tmp/x"],"denyRead":["~/.ssh","/tmp/secret"]}}"#,
            &env,
        );
        let r = |s: &str| PathBuf::from(format!("/nonexistent-pi-test{s}"));
        let p = plan_on(
            &g,
            &[
                (r("/w/proj"), FileKind::Dir),
                (r("/home/u/.ssh"), FileKind::Dir),
                (r("/home/u/.ssh/tmp"), FileKind::Dir),
                (PathBuf::from("/tmp/x"), FileKind::Dir),
                (PathBuf::from("/tmp/secret"), FileKind::Dir),
            ],
            vec![],
        );
        // /tmp/x is bound in; /tmp/secret stays invisible behind the private tmpfs, unmasked
        assert_eq!(
            show(&p),
            [
                "Writable /tmp/x",
                "Writable /w/proj",
                "Placeholder /w/proj/.pi",
                "MaskDir /home/u/.ssh"
            ]
        );
    }

    #[test]
    fn the_sessions_own_tmp_is_bound_at_tmp_its_neighbours_masked_and_it_is_not_walked() {
        let mut env = env();
        let own = PathBuf::from("/nonexistent-pi-test/t/pi-sandbox-0/1-x");
        let all = own.parent().unwrap().to_path_buf();
        env.tmp = Some(own.clone());
        let g = guard("{}", &env);
        let p = plan_on(
            &g,
            &[
                (env.cwd.clone(), FileKind::Dir),
                (own.clone(), FileKind::Dir),
                (all.clone(), FileKind::Dir),
            ],
            vec![],
        );
        assert_eq!(p.tmp.as_deref(), Some(own.as_path()));
        assert_eq!(
            show(&p),
            [
                "Writable /w/proj",
                "MaskDir /t/pi-sandbox-0",
                "Placeholder /w/proj/.pi"
            ]
        );
        // The file tools' /tmp is the same folder; the index does not walk it.
        assert_eq!(g.session_path(Path::new("/tmp/x.py")), own.join("x.py"));
        assert!(!crate::surface::scan::scanned_roots(&g).contains(&own));
        // A home and agent dir below /tmp (a CI image's HOME=/tmp/...) keep their host meaning.
        let mut below = env.clone();
        below.home = "/tmp/ci-home".into();
        below.agent_dir = "/tmp/ci-home/.pi/agent".into();
        let g2 = guard("{}", &below);
        for p in [
            "/tmp/ci-home/.gitconfig",
            "/tmp/ci-home/.pi/agent/settings.json",
        ] {
            assert_eq!(g2.session_path(Path::new(p)), Path::new(p));
        }
        assert_eq!(g2.session_path(Path::new("/tmp/x")), own.join("x"));
        // Gone from the disk: a private tmpfs, not a bind of nothing.
        let p = plan_on(&g, &[(env.cwd.clone(), FileKind::Dir)], vec![]);
        assert_eq!(p.tmp, None);
    }

    #[test]
    fn a_session_below_tmp_is_visible_even_when_read_only() {
        let mut env = env();
        env.cwd = "/tmp/pi-test-below-tmp-proj".into();
        let g = guard(r#"{"mode":"read-only"}"#, &env);
        let p = plan_on(&g, &[(env.cwd.clone(), FileKind::Dir)], vec![]);
        assert_eq!(show(&p), ["ReadOnly /tmp/pi-test-below-tmp-proj"]);
    }

    #[test]
    fn env_files_around_the_indexed_trees_are_hidden_too() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = Env::under(&root);
        for d in ["proj/sub", "home/.env.d"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            ".env",
            "home/.env.prod",
            "home/notes.txt",
            "proj/.env",
            "proj/sub/.env",
        ] {
            std::fs::write(root.join(f), b"K=V").unwrap();
        }
        std::os::unix::fs::symlink(root.join("home/notes.txt"), root.join("home/.env.link"))
            .unwrap();
        let g = guard("{}", &env);
        let mut found = env_files_around(&g, &mut EnvFileListings::default());
        found.sort();
        // The project's own are the index's; a directory named like one is none, a link named
        // like one hides what it leads to.
        assert_eq!(
            found,
            [
                root.join(".env"),
                root.join("home/.env.prod"),
                root.join("home/notes.txt")
            ]
        );
        // They are masked like the indexed ones.
        let scan = Scan {
            hidden_env_files: found.clone(),
            ..Scan::default()
        };
        let facts = Facts {
            kind_of: &kind_on_disk,
            scan: &scan,
            is_empty_dir: &|_| false,
        };
        let plan = plan(&g, &facts, Network::Off, None);
        for f in &found {
            assert!(
                plan.mounts
                    .iter()
                    .any(|m| &m.path == f && m.kind == MountKind::MaskFile),
                "{f:?} not masked"
            );
        }
        // A project that narrows allowWrite still has its other env files hidden: the
        // session's directory is indexed whatever allowWrite says.
        let narrow = guard(r#"{"filesystem":{"allowWrite":["./sub"]}}"#, &env);
        assert!(scanned_roots(&narrow).contains(&root.join("proj")));
        let scan = scan_protected(&narrow, &scanned_roots(&narrow));
        let hidden: Vec<&Path> = scan
            .protected
            .iter()
            .filter(|f| matches!(f.why, Protection::EnvFile { .. }))
            .map(|f| f.path.as_path())
            .collect();
        assert!(
            hidden.contains(&root.join("proj/.env").as_path()),
            "{hidden:?}"
        );
        assert!(
            hidden.contains(&root.join("proj/sub/.env").as_path()),
            "{hidden:?}"
        );
        // approval mode always: nothing to hide.
        let cfg = merge(crate::policy::config::Config::defaults_for(&env), &[]).unwrap();
        let always = Guard::new(&cfg, &env, ApprovalMode::Always).unwrap();
        assert!(env_files_around(&always, &mut EnvFileListings::default()).is_empty());
    }
}
