//! The session's own /tmp on the host (`policy::tmp_map`): made at load in a folder of the
//! user's own in the host's temp dir (`pi-sandbox-<uid>`, mode 0700, so no other user sees or
//! plants anything there), removed when the session ends. Folders left by sessions whose
//! process is gone (killed, crashed) are removed at the next load.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The session's folder, removed when dropped. Its lock says it is alive: held on the folder
/// itself for the session's life, so a sweep from another process (another pid namespace, a
/// container sharing /tmp, another host on a shared TMPDIR) cannot take it for an orphan.
#[derive(Debug)]
pub(crate) struct SessionTmp {
    dir: tempfile::TempDir,
    _lock: std::fs::File,
}

impl SessionTmp {
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Makes the session's folder below `host_tmp`.
pub(crate) fn make(host_tmp: &Path) -> io::Result<SessionTmp> {
    let parent = own_parent(host_tmp)?;
    remove_orphans(&parent);
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&parent)?;
    let lock = std::fs::File::open(dir.path())?;
    if !try_lock(&lock) {
        return Err(io::Error::other("the new folder is locked by someone else"));
    }
    Ok(SessionTmp { dir, _lock: lock })
}

/// An exclusive lock on `file`, without waiting.
fn try_lock(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Where the session's folder goes: `TMPDIR` when it is an absolute path, else /tmp (an
/// empty or relative one would put it in the project).
pub(crate) fn host_tmp() -> PathBuf {
    std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// `host_tmp/pi-sandbox-<uid>`, made if missing; refused unless it is a real directory of
/// ours that no one else may enter (another user could have made it first).
fn own_parent(host_tmp: &Path) -> io::Result<PathBuf> {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let parent = host_tmp.join(format!("pi-sandbox-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&parent)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private folder of this user (remove it, or set TMPDIR elsewhere)",
                parent.display()
            ),
        ));
    }
    Ok(parent)
}

/// Removes the folders of sessions that ended without removing theirs (killed, crashed):
/// those whose lock nobody holds.
fn remove_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(dir) = std::fs::File::open(e.path()) else {
            continue;
        };
        if try_lock(&dir) {
            // remove_dir_all does not follow links; what it cannot remove stays.
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_folder_is_private_and_orphans_of_dead_sessions_go() {
        let host = tempfile::tempdir().unwrap();
        let first = make(host.path()).unwrap();
        let parent = first.path().parent().unwrap().to_path_buf();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&parent), 0o700);
        assert_eq!(mode(first.path()), 0o700);
        // an orphan (no one holds its lock), and a live session's folder (its lock is held,
        // whatever its name says about the pid)
        let orphan = parent.join("1-abc");
        std::fs::create_dir_all(orphan.join("sub")).unwrap();
        std::fs::write(orphan.join("sub/f"), "x").unwrap();
        let renamed = parent.join("2147483646-live");
        std::fs::rename(first.path(), &renamed).unwrap();
        let second = make(host.path()).unwrap();
        assert!(!orphan.exists(), "the dead session's folder stays");
        assert!(renamed.exists(), "a live session's folder went");
        std::fs::rename(&renamed, first.path()).unwrap();
        drop(second);
        let gone = first.path().to_path_buf();
        drop(first);
        assert!(!gone.exists());
    }

    #[test]
    fn a_parent_another_could_enter_is_refused() {
        let host = tempfile::tempdir().unwrap();
        let uid = unsafe { libc::geteuid() };
        let parent = host.path().join(format!("pi-sandbox-{uid}"));
        std::fs::create_dir(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = make(host.path()).unwrap_err();
        assert!(err.to_string().contains("not a private folder"), "{err}");
        std::fs::remove_dir(&parent).unwrap();
        std::os::unix::fs::symlink(host.path(), &parent).unwrap();
        assert!(make(host.path()).is_err(), "a link in its place");
    }
}
