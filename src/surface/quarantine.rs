//! Where the audit puts what it moves aside: a folder per project under pi's agent dir.
//!
//! Outside every tree a command can write and every tree git shows, so no name pattern ever
//! has to be trusted (a folder a command names like a quarantine is judged like any other),
//! and the user's `git status` stays clean. Each move gets a folder of its own holding the
//! moved path under its name plus `.quarantined` (no table entry matches that) and an
//! `origin` file with the path it came from, to restore it by hand.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The folder name below pi's agent dir.
pub(crate) const DIR_NAME: &str = "sandbox-quarantine";

/// The quarantine of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quarantine {
    root: PathBuf,
}

impl Quarantine {
    /// `<agent dir>/sandbox-quarantine/<project>`, the project named as pi names its session
    /// folders (`--home-u-proj--`), so the user finds it next to what they know.
    pub(crate) fn for_project(agent_dir: &Path, cwd: &Path) -> Quarantine {
        let mut name = b"--".to_vec();
        let cwd = cwd.as_os_str().as_bytes();
        name.extend(cwd.strip_prefix(b"/").unwrap_or(cwd).iter().map(|&b| {
            if b == b'/' || b == b':' {
                b'-'
            } else {
                b
            }
        }));
        name.extend_from_slice(b"--");
        Quarantine {
            root: agent_dir.join(DIR_NAME).join(OsStr::from_bytes(&name)),
        }
    }

    /// Moves `path` into a new folder of the quarantine and returns where it is now. Across
    /// file systems it is copied (links as links, modes kept) and then removed; a copy that
    /// cannot be finished removes nothing.
    pub(crate) fn move_aside(&self, path: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(&self.root)
            .map_err(|e| format!("cannot create {}: {e}", self.root.display()))?;
        let stamp = stamp();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{stamp}-"))
            .rand_bytes(8)
            .tempdir_in(&self.root)
            .map_err(|e| format!("cannot create a folder in {}: {e}", self.root.display()))?
            .keep();
        let mut name = path
            .file_name()
            .unwrap_or(OsStr::new("unnamed"))
            .to_os_string();
        name.push(".quarantined");
        let to = dir.join(name);
        let mut origin = path.as_os_str().as_bytes().to_vec();
        origin.push(b'\n');
        let moved = std::fs::write(dir.join("origin"), &origin)
            .map_err(|e| e.to_string())
            .and_then(|()| move_path(path, &to));
        if let Err(e) = moved {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        Ok(to)
    }
}

/// UTC time as `YYYYmmddTHHMMSS`: the folders sort by when they were made.
fn stamp() -> String {
    let t = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    t.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(15)
        .collect()
}

/// `rename`, or across file systems a copy followed by removal of the original.
fn move_path(from: &Path, to: &Path) -> Result<(), String> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            copy_tree(from, to).map_err(|e| format!("copying it failed: {e}"))?;
            let meta = std::fs::symlink_metadata(from).map_err(|e| e.to_string())?;
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(from)
            } else {
                std::fs::remove_file(from)
            };
            removed.map_err(|e| format!("copied, but removing the original failed: {e}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Copies `from` to `to` without following links; what is neither a file, a directory nor a
/// link (a FIFO, a socket, a device) holds nothing to keep and is left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(from)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if kind.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
    } else if kind.is_file() {
        std::fs::copy(from, to).map(|_| ())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_is_named_as_pi_names_its_session_folders() {
        let q = Quarantine::for_project(Path::new("/a/agent"), Path::new("/home/u/my proj"));
        assert_eq!(
            q.root,
            Path::new("/a/agent/sandbox-quarantine/--home-u-my proj--")
        );
    }

    #[test]
    fn a_moved_path_keeps_its_content_and_says_where_it_came_from() {
        let t = tempfile::tempdir().unwrap();
        let hooks = t.path().join("proj/.git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("pre-commit", hooks.join("post-merge")).unwrap();
        let q = Quarantine::for_project(&t.path().join("agent"), &t.path().join("proj"));
        let to = q.move_aside(&hooks).unwrap();
        assert!(!hooks.exists());
        assert!(to.starts_with(&q.root));
        assert_eq!(to.file_name().unwrap(), "hooks.quarantined");
        assert_eq!(
            std::fs::read_to_string(to.join("pre-commit")).unwrap(),
            "#!/bin/sh\n"
        );
        assert_eq!(
            std::fs::read_to_string(to.parent().unwrap().join("origin")).unwrap(),
            format!("{}\n", hooks.display())
        );
    }

    #[test]
    fn a_copy_across_file_systems_keeps_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let from = t.path().join("d");
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("sub/x"), "x").unwrap();
        std::fs::set_permissions(from.join("sub/x"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("/nowhere", from.join("l")).unwrap();
        copy_tree(&from, &t.path().join("e")).unwrap();
        let x = std::fs::metadata(t.path().join("e/sub/x")).unwrap();
        assert_eq!(x.permissions().mode() & 0o777, 0o755);
        assert_eq!(
            std::fs::read_link(t.path().join("e/l")).unwrap(),
            Path::new("/nowhere")
        );
    }

    #[test]
    fn the_stamp_is_date_and_time() {
        let s = stamp();
        assert_eq!(s.len(), 15, "{s}");
        assert_eq!(&s[8..9], "T", "{s}");
    }
}
