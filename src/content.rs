//! Reading a file that a sandboxed command may have put there: a git config, a gitfile, a
//! `commondir`, a worktree's back-link. The command chooses what sits at the name, so the
//! read must not block (a FIFO with no writer waits forever, and pi's bash queue with it),
//! must not follow a link the command planted, and must not read without end (a device, a
//! huge file). One helper does it for every such read: the audit, the scan's fingerprints
//! and the git lookups.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The bound on what is read of a git file. git's own bound for a gitfile
/// (`read_gitfile_gently` refuses one over 1 MiB), and far above any config, `commondir` or
/// back-link git writes: a file larger than this is no git file we accept, and a command
/// cannot make the audit read or hold more.
pub(crate) const GIT_FILE_LIMIT: u64 = 1 << 20;

/// Why a path holds no content to judge: what it is instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotContent {
    Missing,
    Link,
    Fifo,
    Socket,
    Device,
    Directory,
    /// A regular file over the bound; `stamp` (inode, change time) changes with any write.
    TooLarge {
        limit: u64,
        size: u64,
        stamp: (u64, i64, i64),
    },
    Unreadable(String),
}

impl fmt::Display for NotContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotContent::Missing => f.write_str("missing"),
            NotContent::Link => f.write_str("a symbolic link"),
            NotContent::Fifo => f.write_str("a FIFO"),
            NotContent::Socket => f.write_str("a socket"),
            NotContent::Device => f.write_str("a device"),
            NotContent::Directory => f.write_str("a directory"),
            NotContent::TooLarge { limit, size, .. } => {
                write!(f, "a file of {size} bytes (more than the {limit} read)")
            }
            NotContent::Unreadable(e) => write!(f, "unreadable ({e})"),
        }
    }
}

fn kind_of(t: std::fs::FileType) -> Option<NotContent> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some(NotContent::Directory)
    } else if t.is_symlink() {
        Some(NotContent::Link)
    } else if t.is_fifo() {
        Some(NotContent::Fifo)
    } else if t.is_socket() {
        Some(NotContent::Socket)
    } else if t.is_block_device() || t.is_char_device() {
        Some(NotContent::Device)
    } else {
        Some(NotContent::Unreadable("an unknown kind of file".into()))
    }
}

/// The content of the regular file at `path`, at most `limit` bytes of it. Opened without
/// blocking (`O_NONBLOCK`: a FIFO opens at once, with no writer), without following a final
/// symlink (`O_NOFOLLOW`), close-on-exec; then `fstat` on what was opened decides, so a
/// swap between a look and the open cannot slip anything else in. Anything but a regular
/// file is refused as what it is.
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, NotContent> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) => return Err(open_failed(path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| NotContent::Unreadable(e.to_string()))?;
    if let Some(not) = kind_of(meta.file_type()) {
        return Err(not);
    }
    let too_large = |size| NotContent::TooLarge {
        limit,
        size,
        stamp: (meta.ino(), meta.ctime(), meta.ctime_nsec()),
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| NotContent::Unreadable(e.to_string()))?;
    // It grew while being read.
    if out.len() as u64 > limit {
        return Err(too_large(out.len() as u64));
    }
    Ok(out)
}

/// What a failed open means: a final symlink (`ELOOP` under `O_NOFOLLOW`), a socket (which
/// cannot be opened, `ENXIO`), a missing path, or whatever the path turns out to be.
fn open_failed(path: &Path, e: std::io::Error) -> NotContent {
    if e.kind() == std::io::ErrorKind::NotFound {
        return NotContent::Missing;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) => kind_of(m.file_type()).unwrap_or_else(|| NotContent::Unreadable(e.to_string())),
        Err(_) if e.raw_os_error() == Some(libc::ELOOP) => NotContent::Link,
        Err(_) => NotContent::Unreadable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn reads_a_regular_file_and_refuses_everything_else_as_what_it_is() {
        let t = tempfile::tempdir().unwrap();
        let p = |n: &str| t.path().join(n);
        std::fs::write(p("file"), b"[core]\n").unwrap();
        assert_eq!(read(&p("file"), 100).unwrap(), b"[core]\n");
        assert_eq!(read(&p("file"), 7).unwrap(), b"[core]\n");
        assert!(matches!(
            read(&p("file"), 6),
            Err(NotContent::TooLarge {
                size: 7,
                limit: 6,
                ..
            })
        ));
        assert_eq!(read(&p("none"), 10), Err(NotContent::Missing));
        std::os::unix::fs::symlink(p("file"), p("link")).unwrap();
        assert_eq!(read(&p("link"), 10), Err(NotContent::Link));
        std::fs::create_dir(p("dir")).unwrap();
        assert_eq!(read(&p("dir"), 10), Err(NotContent::Directory));
        let _sock = std::os::unix::net::UnixListener::bind(p("sock")).unwrap();
        assert_eq!(read(&p("sock"), 10), Err(NotContent::Socket));
        assert_eq!(read(Path::new("/dev/zero"), 10), Err(NotContent::Device));
        assert_eq!(NotContent::Fifo.to_string(), "a FIFO");
    }

    #[test]
    fn a_fifo_with_no_writer_is_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("config");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let started = Instant::now();
        assert_eq!(read(&fifo, GIT_FILE_LIMIT), Err(NotContent::Fifo));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
