//! Policy → mount plan: which paths bash may write, which stay read-only inside them, which
//! are masked. The same `Guard` that checks pi's file tools decides, so the two layers agree.
//!
//! `plan` is pure (it is told what exists); `scan_protected` and `worktree_git_dirs` are the
//! I/O that feeds it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Mode;
use crate::guard::Guard;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MountKind {
    Writable,
    ReadOnly,
    /// An empty read-only tmpfs over a denied directory.
    MaskDir,
    /// /dev/null over a denied file.
    MaskFile,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mount {
    pub path: PathBuf,
    pub kind: MountKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountPlan {
    pub cwd: PathBuf,
    /// In mount order: a deeper path comes after its parents and so wins.
    pub mounts: Vec<Mount>,
    /// Protected directories that do not exist yet: created empty (and kept) as mount points
    /// so the command cannot create them.
    pub placeholders: Vec<PathBuf>,
    pub network: bool,
    /// Where the command's script appears inside the sandbox (in its private /tmp, read-only,
    /// added after the tmpfs so it stays visible).
    pub script: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Dir,
    File,
    Missing,
}

/// What `plan` needs to know about the disk.
pub struct Facts<'a> {
    pub kind_of: &'a dyn Fn(&Path) -> FileKind,
    /// Existing protected paths inside the writable trees (`scan_protected`).
    pub protected: Vec<PathBuf>,
    /// A worktree's git dirs outside the workspace (`worktree_git_dirs`).
    pub git_dirs: Vec<PathBuf>,
}

/// /tmp is a private tmpfs inside the sandbox: a host path below it is visible there only
/// if a mount brings it in.
fn under_tmp(p: &Path) -> bool {
    p.starts_with("/tmp")
}

pub fn plan(guard: &Guard, facts: &Facts, network: bool, script: Option<&Path>) -> MountPlan {
    let env = guard.env();
    let kind = facts.kind_of;
    let exists = |p: &Path| kind(p) != FileKind::Missing;

    let mut writable: Vec<PathBuf> = Vec::new();
    if guard.mode().value != Mode::ReadOnly {
        writable.extend(guard.allow_write_paths().map(Path::to_path_buf));
        writable.extend(facts.git_dirs.iter().cloned());
    }
    writable.extend(guard.session_dir_paths().map(Path::to_path_buf));
    // `/tmp` itself is the private tmpfs, writable already; paths below it are bound in.
    writable.retain(|p| p.as_path() != Path::new("/tmp") && exists(p));
    let inside_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));

    let mut mounts: Vec<Mount> = writable
        .iter()
        .map(|p| Mount {
            path: p.clone(),
            kind: MountKind::Writable,
        })
        .collect();

    // Read-only islands inside the writable trees: pi's control surface and denyWrite files.
    let mut placeholders = Vec::new();
    let mut read_only: Vec<PathBuf> = vec![env.agent_dir.clone()];
    let project_pi = env.cwd.join(".pi");
    read_only.push(project_pi.clone());
    let mut git_meta = vec![env.cwd.join(".git")];
    git_meta.extend(facts.git_dirs.iter().cloned());
    for g in &git_meta {
        if kind(g) == FileKind::Dir {
            read_only.push(g.join("hooks"));
            read_only.push(g.join("config"));
            if !exists(&g.join("hooks")) && inside_writable(g) {
                placeholders.push(g.join("hooks"));
            }
        }
    }
    if !exists(&project_pi) && inside_writable(&env.cwd) {
        placeholders.push(project_pi);
    }
    read_only.extend(facts.protected.iter().cloned());
    let mut pinned: Vec<PathBuf> = Vec::new();
    for p in read_only {
        if !(exists(&p) || placeholders.contains(&p)) {
            continue;
        }
        let Some(root) = writable
            .iter()
            .filter(|w| p.starts_with(w))
            .max_by_key(|w| w.as_os_str().len())
        else {
            continue;
        };
        // Every directory between the writable root and the protected path becomes a mount
        // point too: a mount point cannot be renamed or removed (EBUSY), so the command
        // cannot move `.git` aside and re-create `.git/hooks` under the old name.
        for a in p
            .ancestors()
            .skip(1)
            .take_while(|a| *a != root.as_path() && a.starts_with(root))
        {
            if !pinned.iter().any(|q| q == a) {
                pinned.push(a.to_path_buf());
            }
        }
        mounts.push(Mount {
            path: p,
            kind: MountKind::ReadOnly,
        });
    }
    mounts.extend(pinned.into_iter().map(|path| Mount {
        path,
        kind: MountKind::Writable,
    }));

    // A session directory below /tmp must still exist inside, read-only if not writable.
    if under_tmp(&env.cwd) && !inside_writable(&env.cwd) && exists(&env.cwd) {
        mounts.push(Mount {
            path: env.cwd.clone(),
            kind: MountKind::ReadOnly,
        });
    }

    // Masks last among equals: deny wins. Nothing is mounted below a mask (its tmpfs is
    // read-only, so bwrap could not create the mount point, and denyRead wins anyway).
    let mut masks = Vec::new();
    // What the mounts bring into the private /tmp; a mask below /tmp matters only there.
    let mounted: Vec<PathBuf> = mounts.iter().map(|m| m.path.clone()).collect();
    for p in guard.deny_read_paths() {
        if under_tmp(p) && !mounted.iter().any(|m| p.starts_with(m)) {
            continue;
        }
        match kind(p) {
            FileKind::Dir => masks.push(Mount {
                path: p.to_path_buf(),
                kind: MountKind::MaskDir,
            }),
            FileKind::File => masks.push(Mount {
                path: p.to_path_buf(),
                kind: MountKind::MaskFile,
            }),
            FileKind::Missing => {}
        }
    }
    mounts.retain(|m| !masks.iter().any(|k| m.path.starts_with(&k.path)));
    placeholders.retain(|p| !masks.iter().any(|k| p.starts_with(&k.path)));
    mounts.extend(masks);

    // Deeper paths after shallower ones; for the same path, the stricter kind last.
    let mut seen = HashSet::new();
    mounts.retain(|m| seen.insert(m.clone()));
    mounts.sort_by_key(|m| (m.path.components().count(), m.kind));
    MountPlan {
        cwd: env.cwd.clone(),
        mounts,
        placeholders,
        network,
        script: script.map(Path::to_path_buf),
    }
}

/// The kind of `p` on disk, not following a final symlink (rule paths are canonical).
pub fn kind_on_disk(p: &Path) -> FileKind {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => FileKind::Dir,
        Ok(_) => FileKind::File,
        Err(_) => FileKind::Missing,
    }
}

/// Directories not worth walking: huge, and generated rather than edited.
const SKIP_DIRS: &[&str] = &["node_modules", "target", ".git"];

/// How deep and how much `scan_protected` walks, so a huge tree cannot stall every command.
pub const SCAN_MAX_DEPTH: usize = 8;
pub const SCAN_MAX_ENTRIES: usize = 100_000;

/// Existing paths inside `roots` that the guard keeps read-only (denyWrite matches, `.pi`
/// directories, nested repositories' hooks): the OS layer binds them read-only. Does not
/// follow symlinks; skips `node_modules`, `target` and `.git` (whose hooks and config are
/// protected separately).
pub fn scan_protected(guard: &Guard, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut budget = SCAN_MAX_ENTRIES;
    let mut stack: Vec<(PathBuf, usize)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if budget == 0 {
                return found;
            }
            budget -= 1;
            let path = entry.path();
            if guard.write_protection(&path).is_some() {
                found.push(path);
                continue;
            }
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name();
            if name == ".git" && ft.is_dir() {
                for meta in ["hooks", "config"] {
                    let p = path.join(meta);
                    if kind_on_disk(&p) != FileKind::Missing {
                        found.push(p);
                    }
                }
            }
            if ft.is_dir() && depth + 1 < SCAN_MAX_DEPTH && !SKIP_DIRS.iter().any(|s| name == *s) {
                stack.push((path, depth + 1));
            }
        }
    }
    found
}

/// When the session starts at the root of a git worktree (`.git` is a file), the worktree's
/// git dir and the common dir live outside the workspace; git needs to write both. Started
/// in a subdirectory, nothing is granted.
pub fn worktree_git_dirs(cwd: &Path) -> Vec<PathBuf> {
    if kind_on_disk(&cwd.join(".git")) != FileKind::File {
        return vec![];
    }
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "--absolute-git-dir", "--git-common-dir"])
        .output();
    let Ok(out) = out else { return vec![] };
    if !out.status.success() {
        return vec![];
    }
    let mut dirs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let p = cwd.join(line.trim());
        if let Ok(c) = crate::paths::canonicalize(&p) {
            if !c.starts_with(cwd) && !dirs.contains(&c) {
                dirs.push(c);
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{merge, Env};
    use crate::guard::ApprovalMode;
    use std::collections::HashMap;

    fn guard(project_json: &str, env: &Env) -> Guard {
        let cfg = merge(
            &env.auth_json(),
            &[(env.project_config(), Some(project_json.to_string()))],
        )
        .unwrap();
        Guard::new(&cfg, env, ApprovalMode::Ask).unwrap()
    }

    /// A fake disk for the pure planner: canonicalisation of these paths is the identity as
    /// long as nothing on the real disk exists there.
    fn env() -> Env {
        Env {
            home: "/nonexistent-pi-test/home/u".into(),
            cwd: "/nonexistent-pi-test/w/proj".into(),
            agent_dir: "/nonexistent-pi-test/home/u/.pi/agent".into(),
            session_dir: None,
        }
    }

    /// The plan for `g` on a fake disk holding `disk`, with `protected` found by the scan.
    fn plan_on(g: &Guard, disk: &[(PathBuf, FileKind)], protected: Vec<PathBuf>) -> MountPlan {
        let disk: HashMap<PathBuf, FileKind> = disk.iter().cloned().collect();
        let kind = |p: &Path| disk.get(p).copied().unwrap_or(FileKind::Missing);
        let facts = Facts {
            kind_of: &kind,
            protected,
            git_dirs: vec![],
        };
        plan(g, &facts, false, Some(Path::new("/tmp/s.sh")))
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
            vec![r("/w/proj/certs/a.pem")],
        );
        assert_eq!(
            show(&p),
            [
                "Writable /w/proj",
                "Writable /home/u",
                // pinned so they cannot be renamed away from what they hold
                "Writable /home/u/.pi",
                "Writable /w/proj/.git",
                "Writable /w/proj/certs",
                "ReadOnly /w/proj/.pi",
                "MaskDir /home/u/.ssh",
                "ReadOnly /home/u/.pi/agent",
                "ReadOnly /w/proj/.git/hooks",
                "ReadOnly /w/proj/.git/config",
                "ReadOnly /w/proj/certs/a.pem",
                "Writable /home/u/.pi/agent/sessions",
                "MaskFile /home/u/.pi/agent/auth.json",
            ]
        );
        // .pi did not exist: it is created as an empty mount point
        assert_eq!(p.placeholders, vec![r("/w/proj/.pi")]);
        assert!(!p.network);
    }

    #[test]
    fn read_only_mode_leaves_only_the_session_folder_writable() {
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
        assert_eq!(show(&p), ["Writable /home/u/.pi/agent/sessions"]);
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
                "ReadOnly /w/proj/.pi",
                "MaskDir /home/u/.ssh"
            ]
        );
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
    fn scan_finds_existing_protected_files_without_following_links() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = Env {
            home: root.join("home"),
            cwd: root.join("proj"),
            agent_dir: root.join("home/.pi/agent"),
            session_dir: None,
        };
        for d in [
            "proj/a/b",
            "proj/node_modules/x",
            "proj/sub/.pi",
            "proj/vendor/.git/hooks",
            "outside",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "proj/a/b/key.pem",
            "proj/.env",
            "proj/node_modules/x/.env",
            "proj/a/ok.txt",
            "outside/z.pem",
        ] {
            std::fs::write(root.join(f), b"").unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside"), root.join("proj/link")).unwrap();
        let g = guard("{}", &env);
        let mut found = scan_protected(&g, std::slice::from_ref(&env.cwd));
        found.sort();
        let rel: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "proj/.env",
                "proj/a/b/key.pem",
                "proj/sub/.pi",
                "proj/vendor/.git/hooks"
            ]
        );
    }
}
