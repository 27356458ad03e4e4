//! The session's own /tmp on the host (`policy::tmp_map`): made at load in a folder of the
//! user's own in the host's temp dir (`pi-sandbox-<uid>`, mode 0700, so no other user sees or
//! plants anything there), removed when the session ends. Folders left by sessions whose
//! process is gone (killed, crashed) are removed at the next load.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Makes the session's folder below `host_tmp`.
pub(crate) fn make(host_tmp: &Path) -> io::Result<tempfile::TempDir> {
    let parent = own_parent(host_tmp)?;
    remove_orphans(&parent);
    tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&parent)
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

/// Removes the folders of sessions whose process no longer runs (`<pid>-<random>`).
fn remove_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if pid > 0 && !process_runs(pid) {
            // remove_dir_all does not follow links; what it cannot remove stays.
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn process_runs(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
        // an orphan of a process that cannot exist, and a live session's folder
        let orphan = parent.join("2147483646-abc");
        std::fs::create_dir_all(orphan.join("sub")).unwrap();
        std::fs::write(orphan.join("sub/f"), "x").unwrap();
        let second = make(host.path()).unwrap();
        assert!(!orphan.exists(), "the dead session's folder stays");
        assert!(first.path().exists(), "a live session's folder went");
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
