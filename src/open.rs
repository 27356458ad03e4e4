//! Opening the file the guard judged, and no other.
//!
//! The guard resolves a path to its canonical form (no symlinks left in it). pi used to open
//! the path again by name, later, and a link swapped in between (by a bash command running at
//! the same moment) redirected the open. Here the canonical path is opened refusing every
//! symlink on the way (`openat2` with `RESOLVE_NO_SYMLINKS` on Linux, `O_NOFOLLOW` component
//! by component elsewhere): if anything on the path became a link since the check, the open
//! fails instead of following it. The opened file is then checked (`fstat`): a regular file,
//! and for writes a single link, or the one name the guard already allowed.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

#[derive(Debug)]
pub(crate) enum OpenError {
    /// A component of the judged path is a symlink now (it was not when judged).
    Changed {
        path: PathBuf,
    },
    NotRegular {
        path: PathBuf,
    },
    /// The file gained a second name after it was judged.
    HardLinked {
        path: PathBuf,
        links: u64,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Changed { path } => write!(
                f,
                "{} changed while it was being opened (a part of it is now a symbolic link); refused so that the file opened is the one that was checked. Try again.",
                path.display()
            ),
            OpenError::NotRegular { path } => {
                write!(f, "{} is not a regular file", path.display())
            }
            OpenError::HardLinked { path, links } => write!(
                f,
                "{} has {links} names (hard links); writing it would change the others too, which were not checked",
                path.display()
            ),
            OpenError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for OpenError {}

fn io_err(path: &Path) -> impl Fn(io::Error) -> OpenError + '_ {
    move |e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            OpenError::Changed {
                path: path.to_path_buf(),
            }
        } else if e.raw_os_error() == Some(libc::ENXIO) {
            // A socket, or a FIFO opened for writing with no reader (`NO_WAIT`).
            OpenError::NotRegular {
                path: path.to_path_buf(),
            }
        } else {
            OpenError::Io {
                path: path.to_path_buf(),
                source: e,
            }
        }
    }
}

fn cstring(bytes: &[u8]) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// `openat(dir, name, flags)` returning an owned fd.
fn openat(
    dir: libc::c_int,
    name: &[u8],
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let name = cstring(name)?;
    // SAFETY: a valid C string and flags; the fd returned is ours to own.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by openat and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens absolute `path` refusing symlinks in every component (ELOOP if one is there).
#[cfg(target_os = "linux")]
pub(crate) fn open_no_symlinks(
    path: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let mode = if flags & libc::O_CREAT != 0 { mode } else { 0 };
    let resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let c = cstring(path.as_os_str().as_bytes())?;
    openat2(libc::AT_FDCWD, &c, flags | libc::O_CLOEXEC, mode, resolve).or_else(|e| {
        // Kernels before 5.6 (or seccomp filters) lack openat2: walk instead.
        match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => open_by_walk(path, flags, mode),
            _ => Err(e),
        }
    })
}

/// `openat2(dir, path, {flags, mode, resolve})`.
#[cfg(target_os = "linux")]
pub(crate) fn openat2(
    dir: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // struct open_how from <linux/openat2.h> (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: flags as u64,
        mode: mode as u64,
        resolve,
    };
    // SAFETY: openat2 with a valid dirfd, path, open_how and its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_no_symlinks(
    path: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    open_by_walk(path, flags, mode)
}

/// `O_NOFOLLOW` component by component from `/`.
fn open_by_walk(path: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let names: Vec<&[u8]> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_bytes()),
            _ => None,
        })
        .collect();
    let root = openat(libc::AT_FDCWD, b"/", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let Some((last, dirs)) = names.split_last() else {
        return Ok(root);
    };
    let mut dir = root;
    for name in dirs {
        dir = openat(
            dir.as_raw_fd(),
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            0,
        )?;
    }
    openat(dir.as_raw_fd(), last, flags | libc::O_NOFOLLOW, mode)
}

/// For the opens of a file that is then checked to be regular: a FIFO a command put there
/// (no writer, or no reader) would hold the open, and pi with it, until someone opened the
/// other end. Non-blocking, it opens at once (or fails, `ENXIO`) and `regular` refuses it;
/// a regular file reads and writes the same either way.
const NO_WAIT: libc::c_int = libc::O_NONBLOCK | libc::O_NOCTTY;

fn regular(file: &File, path: &Path) -> Result<std::fs::Metadata, OpenError> {
    let meta = file.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    Ok(meta)
}

/// Reads the whole of the canonical path `judged`.
pub(crate) fn read(judged: &Path) -> Result<Vec<u8>, OpenError> {
    let fd = open_no_symlinks(judged, libc::O_RDONLY | NO_WAIT, 0).map_err(io_err(judged))?;
    let mut file = File::from(fd);
    regular(&file, judged)?;
    let mut out = Vec::new();
    io::Read::read_to_end(&mut file, &mut out).map_err(io_err(judged))?;
    Ok(out)
}

/// Replaces the content of the canonical path `judged` (created if missing, mode 0666 less
/// the umask, as pi's own write does). `links_allowed` is the link count the guard saw and
/// allowed (1 for a new or single-named file): a file that gained a name since is refused.
pub(crate) fn write(judged: &Path, content: &[u8], links_allowed: u64) -> Result<(), OpenError> {
    let fd = open_no_symlinks(judged, libc::O_WRONLY | libc::O_CREAT | NO_WAIT, 0o666)
        .map_err(io_err(judged))?;
    let mut file = File::from(fd);
    let meta = regular(&file, judged)?;
    if meta.nlink() > links_allowed.max(1) {
        return Err(OpenError::HardLinked {
            path: judged.to_path_buf(),
            links: meta.nlink(),
        });
    }
    file.set_len(0).map_err(io_err(judged))?;
    io::Write::write_all(&mut file, content).map_err(io_err(judged))?;
    Ok(())
}

/// Whether `judged` can be opened for reading (and writing), without following links.
pub(crate) fn access(judged: &Path, write: bool) -> Result<(), OpenError> {
    let flags = NO_WAIT | if write { libc::O_RDWR } else { libc::O_RDONLY };
    let fd = open_no_symlinks(judged, flags, 0).map_err(io_err(judged))?;
    regular(&File::from(fd), judged).map(|_| ())
}

/// The link count of `judged` now (1 when it does not exist), for `write`.
pub(crate) fn link_count(judged: &Path) -> u64 {
    std::fs::symlink_metadata(judged).map_or(1, |m| m.nlink())
}

/// A handle on the canonical path `judged` for bwrap to mount (`--bind-fd`): `O_PATH`, no
/// link followed anywhere on the way, and never a symlink itself.
#[cfg(target_os = "linux")]
pub(crate) fn mount_source(judged: &Path) -> Result<OwnedFd, OpenError> {
    let fd = open_no_symlinks(judged, libc::O_PATH, 0).map_err(io_err(judged))?;
    // The walk fallback opens a final symlink itself (O_PATH|O_NOFOLLOW): refuse it.
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a valid fd and a stat buffer of the right size.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return Err(io_err(judged)(io::Error::last_os_error()));
    }
    // SAFETY: fstat succeeded and filled the buffer.
    if unsafe { st.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(OpenError::Changed {
            path: judged.to_path_buf(),
        });
    }
    Ok(fd)
}

/// Creates the canonical directory `judged` and its missing parents, refusing links on the way.
pub(crate) fn mkdir_all(judged: &Path) -> Result<(), OpenError> {
    let mut done = PathBuf::from("/");
    for c in judged.components() {
        let Component::Normal(name) = c else { continue };
        let parent = open_no_symlinks(&done, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(io_err(&done))?;
        done.push(name);
        let cname = cstring(name.as_bytes()).map_err(io_err(&done))?;
        // SAFETY: a valid directory fd and C string.
        let rc = unsafe { libc::mkdirat(parent.as_raw_fd(), cname.as_ptr(), 0o777) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(io_err(&done)(e));
            }
        }
    }
    // Whatever exists there must be a real directory, not a link to one.
    open_no_symlinks(judged, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(io_err(judged))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    #[cfg(target_os = "linux")]
    fn mount_sources_are_the_judged_inode_and_never_a_link() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("ws/hooks")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        let fd = mount_source(&root.join("ws/hooks")).unwrap();
        let via_fd = std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        assert_eq!(
            via_fd.ino(),
            std::fs::metadata(root.join("ws/hooks")).unwrap().ino()
        );
        // a link as the source, or on the way to it, is refused rather than followed
        symlink(root.join("elsewhere"), root.join("ws/link")).unwrap();
        assert!(matches!(
            mount_source(&root.join("ws/link")),
            Err(OpenError::Changed { .. })
        ));
        std::fs::rename(root.join("ws"), root.join("ws.old")).unwrap();
        symlink(root.join("ws.old"), root.join("ws")).unwrap();
        assert!(matches!(
            mount_source(&root.join("ws/hooks")),
            Err(OpenError::Changed { .. })
        ));
        // the fd taken before the swap still names the original directory
        let via_fd = std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        assert_eq!(
            via_fd.ino(),
            std::fs::metadata(root.join("ws.old/hooks")).unwrap().ino()
        );
    }

    #[test]
    fn opens_the_judged_file_and_refuses_a_link_swapped_in() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::write(root.join("ws/a.txt"), "hello").unwrap();
        std::fs::write(root.join("secret"), "SECRET").unwrap();
        assert_eq!(read(&root.join("ws/a.txt")).unwrap(), b"hello");
        // the file becomes a link after the check
        std::fs::remove_file(root.join("ws/a.txt")).unwrap();
        symlink(root.join("secret"), root.join("ws/a.txt")).unwrap();
        assert!(matches!(
            read(&root.join("ws/a.txt")),
            Err(OpenError::Changed { .. })
        ));
        assert!(matches!(
            write(&root.join("ws/a.txt"), b"x", 1),
            Err(OpenError::Changed { .. })
        ));
        assert_eq!(std::fs::read(root.join("secret")).unwrap(), b"SECRET");
        // a directory on the way becomes a link
        std::fs::rename(root.join("ws"), root.join("ws-real")).unwrap();
        symlink(root.join("ws-real"), root.join("ws")).unwrap();
        assert!(matches!(
            write(&root.join("ws/new.txt"), b"x", 1),
            Err(OpenError::Changed { .. })
        ));
        assert!(!root.join("ws-real/new.txt").exists());
        assert!(mkdir_all(&root.join("ws/d")).is_err());
    }

    #[test]
    fn writes_replace_content_and_refuse_new_hard_links() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let f = root.join("f.txt");
        write(&f, b"long content", 1).unwrap();
        write(&f, b"short", 1).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"short");
        std::fs::hard_link(&f, root.join("other")).unwrap();
        assert!(matches!(
            write(&f, b"x", 1),
            Err(OpenError::HardLinked { links: 2, .. })
        ));
        assert_eq!(std::fs::read(root.join("other")).unwrap(), b"short");
        mkdir_all(&root.join("a/b/c")).unwrap();
        assert!(root.join("a/b/c").is_dir());
        access(&f, true).unwrap();
        assert!(matches!(
            read(&root.join("a")),
            Err(OpenError::NotRegular { .. })
        ));
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let fifo = root.join("notes.txt");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let results = [
                read(&fifo).map(|_| ()),
                write(&fifo, b"x", 1),
                access(&fifo, false),
                access(&fifo, true),
            ];
            tx.send(results.map(|r| matches!(r, Err(OpenError::NotRegular { .. }))))
                .unwrap();
        });
        let refused = rx.recv_timeout(std::time::Duration::from_secs(5));
        assert_eq!(refused, Ok([true; 4]), "the file tools waited on a FIFO");
    }
}
