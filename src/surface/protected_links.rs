//! The symlinks inside protected folders. pi loads `.pi/extensions/x.ts` and git runs
//! `.git/hooks/pre-commit` through whatever link sits there, so what each link leads to is
//! protected like the folder: `mounts::record` binds it read-only for bash and hands it to
//! the path guard as a second name, and a missing target is watched by the audit.
//!
//! Every scan asks again (links the user makes mid-session count), but a folder is listed
//! again only when its identity or times changed since the last listing: pi's own folders
//! (an agent dir with installed packages) can hold thousands of entries.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Folders of pi's agent dir that hold nothing pi loads through a link: the transcripts
/// (guarded on their own) and what the audit moved aside.
const NOT_LOADED: &[&str] = &["sessions", crate::surface::quarantine::DIR_NAME];

type Stamp = (u64, u64, i64, i64, i64, i64);

fn stamp_of(m: &std::fs::Metadata) -> Stamp {
    (
        m.dev(),
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    )
}

/// A folder as last listed: its links and subfolders.
struct Listed {
    stamp: Stamp,
    /// Listed long enough after its last change that an unchanged stamp means unchanged
    /// (a change within the same clock tick leaves the times as they were).
    settled: bool,
    links: Vec<OsString>,
    subdirs: Vec<OsString>,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Listed>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Listed>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Every symlink at or below `dir` (not following any), `dir` included when it is one.
/// Below pi's agent dir (`agent_dir`), its transcripts and quarantine are left out.
pub(crate) fn links_below(dir: &Path, agent_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.parent() == Some(agent_dir)
            && d.file_name()
                .is_some_and(|n| NOT_LOADED.iter().any(|x| n == *x))
        {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&d) else {
            cache.remove(&d);
            continue;
        };
        if meta.file_type().is_symlink() {
            found.push(d);
            continue;
        }
        if !meta.is_dir() {
            continue;
        }
        let stamp = stamp_of(&meta);
        let listed = match cache.remove(&d) {
            Some(l) if l.settled && l.stamp == stamp => l,
            _ => list(&d, stamp, &meta),
        };
        found.extend(listed.links.iter().map(|n| d.join(n)));
        stack.extend(listed.subdirs.iter().map(|n| d.join(n)));
        cache.insert(d, listed);
    }
    found
}

fn list(dir: &Path, stamp: Stamp, meta: &std::fs::Metadata) -> Listed {
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(meta.ctime().max(0) as u64, meta.ctime_nsec() as u32);
    let settled = std::time::SystemTime::now()
        .duration_since(changed)
        .is_ok_and(|age| age > std::time::Duration::from_millis(50));
    let mut listed = Listed {
        stamp,
        settled,
        links: vec![],
        subdirs: vec![],
    };
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match entry.file_type() {
            Ok(t) if t.is_symlink() => listed.links.push(entry.file_name()),
            Ok(t) if t.is_dir() => listed.subdirs.push(entry.file_name()),
            _ => {}
        }
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn finds_links_at_any_depth_and_sees_new_ones_and_retargeted_ones() {
        let t = tempfile::tempdir().unwrap();
        let pi = t.path().join(".pi");
        std::fs::create_dir_all(pi.join("extensions/deep")).unwrap();
        std::fs::write(pi.join("settings.json"), "{}").unwrap();
        symlink("../../src/x.ts", pi.join("extensions/x.ts")).unwrap();
        let agent = t.path().join("agent");
        let mut found = links_below(&pi, &agent);
        assert_eq!(found, [pi.join("extensions/x.ts")]);
        // a link made later, deeper, right after the last listing
        symlink("/nowhere", pi.join("extensions/deep/y.ts")).unwrap();
        found = links_below(&pi, &agent);
        found.sort();
        assert_eq!(
            found,
            [pi.join("extensions/deep/y.ts"), pi.join("extensions/x.ts")]
        );
        // the folder itself a link
        symlink(&pi, t.path().join("pi-link")).unwrap();
        assert_eq!(
            links_below(&t.path().join("pi-link"), &agent),
            [t.path().join("pi-link")]
        );
    }

    #[test]
    fn the_agent_dirs_transcripts_and_quarantine_are_left_out() {
        let t = tempfile::tempdir().unwrap();
        let agent = t.path().join("agent");
        for d in ["sessions/--p--", "sandbox-quarantine/--p--/x", "extensions"] {
            std::fs::create_dir_all(agent.join(d)).unwrap();
        }
        symlink("/a", agent.join("sessions/--p--/s.jsonl")).unwrap();
        symlink("/b", agent.join("sandbox-quarantine/--p--/x/l")).unwrap();
        symlink("/c", agent.join("extensions/e.ts")).unwrap();
        assert_eq!(links_below(&agent, &agent), [agent.join("extensions/e.ts")]);
    }
}
