//! Judges every `connect` of a sandboxed command, so that it can reach no unix socket that
//! exists outside its sandbox (an ssh-agent, a docker daemon, the user's D-Bus), while the
//! sockets it creates itself keep working (a server and a client, Python's multiprocessing
//! `Manager`).
//!
//! `pi-sandbox-init` installs `seccomp::notify_filter` inside the sandbox and hands its
//! listener here, with a sock_diag netlink socket opened inside (it sees the sandbox's
//! network namespace). Each `connect` then waits until this thread answers. The answer is
//! never "go ahead" (the kernel would read the address and the descriptor again, and another
//! thread of the command could have changed both meanwhile): the call is performed here, on
//! the socket taken from the command with `pidfd_getfd` and with the address read once, and
//! its result is returned as the call's.
//!
//! A unix socket may be connected to when the listening socket behind it is held open by a
//! process of this sandbox (it was created inside: nothing outside can hand one in), or when
//! `network.allowUnixSockets` lists it. sock_diag says which listening socket is bound to the
//! socket file (or to the abstract name); `/proc/<pid>/fd` of the sandbox's processes says
//! who holds it. The socket file is opened once, inside the caller's root, and connected to
//! through that descriptor, so no path can be swapped in between.
//!
//! Unix datagram sockets, which name a destination in every send, cannot be created inside
//! (`seccomp::kernel_filters`); stream and seqpacket sockets take no address after `connect`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::policy::bash::Network;
use crate::process::pid_namespace;

use super::fd_passing;

/// A socket the user exposes (`network.allowUnixSockets`), identified by its inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedSocket {
    pub(crate) path: PathBuf,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct SocketRules {
    pub(crate) network: Network,
    pub(crate) allowed: Vec<AllowedSocket>,
    /// `network.allowAllUnixSockets`: the user turned this check off.
    pub(crate) allow_all: bool,
}

/// Takes the proxy's listening socket made inside a filtered command's network namespace.
pub(crate) type Door = Box<dyn FnOnce(OwnedFd) + Send>;

/// A connection refused: the socket (a path, or `@name` for an abstract one) and the
/// sentence that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) socket: String,
    pub(crate) message: String,
}

/// The supervisor of one command: a thread serving its listener until every process under
/// the filter has exited.
#[derive(Debug)]
pub(crate) struct Supervisor {
    refusals: Arc<Mutex<Vec<Refusal>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Supervisor {
    /// Serves the listener `pi-sandbox-init` sends over `end`. With `door` (filtered
    /// network), init sends the proxy's listening socket along, and `door` gets it.
    pub(crate) fn start(
        end: OwnedFd,
        rules: SocketRules,
        door: Option<Door>,
    ) -> std::io::Result<Supervisor> {
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel();
        let shared = refusals.clone();
        std::thread::Builder::new()
            .name("pi-sandbox-sockets".into())
            .spawn(move || {
                let fds = match door {
                    None => fd_passing::receive_fds::<2>(end.as_raw_fd())
                        .map(|[listener, diag]| (listener, diag)),
                    Some(door) => fd_passing::receive_fds::<3>(end.as_raw_fd()).map(
                        |[listener, diag, proxy]| {
                            door(proxy);
                            (listener, diag)
                        },
                    ),
                };
                drop(end);
                if let Some((listener, diag)) = fds {
                    serve(Arc::new(listener), Arc::new(diag), rules, shared);
                }
                let _ = tx.send(());
            })?;
        Ok(Supervisor { refusals, done })
    }

    /// What was refused. Waits up to `wait` for the thread to see the last process go (the
    /// command has exited by now; what it left running may not); a thread still serving is
    /// left to end on its own, with the last of them.
    pub(crate) fn finish(self, wait: std::time::Duration) -> Vec<Refusal> {
        let _ = self.done.recv_timeout(wait);
        std::mem::take(&mut *self.refusals.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn serve(
    listener: Arc<OwnedFd>,
    diag: Arc<OwnedFd>,
    rules: SocketRules,
    refusals: Arc<Mutex<Vec<Refusal>>>,
) {
    loop {
        let mut poll = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut poll, 1, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if poll.revents & libc::POLLIN == 0 {
            // POLLHUP: every process under the filter is gone.
            return;
        }
        // SAFETY: the kernel fills the zeroed request.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                &mut req,
            )
        };
        if rc != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // The caller went away before we read it.
                Some(libc::ENOENT) | Some(libc::EINTR) => continue,
                _ => return,
            }
        }
        let call = Call {
            listener: listener.clone(),
            id: req.id,
            pid: req.pid,
            args: req.data.args,
        };
        call.handle(&rules, &diag, &refusals);
    }
}

/// One notified system call.
struct Call {
    listener: Arc<OwnedFd>,
    id: u64,
    pid: u32,
    args: [u64; 6],
}

/// `sizeof(struct sockaddr_storage)`: no longer address is accepted by the kernel either.
const MAX_ADDR: usize = 128;
/// `sizeof(sun_path)`.
const SUN_PATH: usize = 108;

impl Call {
    fn reply(&self, result: Result<i64, i32>) {
        let mut resp = libc::seccomp_notif_resp {
            id: self.id,
            val: 0,
            error: 0,
            flags: 0,
        };
        match result {
            Ok(v) => resp.val = v,
            Err(errno) => resp.error = -errno,
        }
        // SAFETY: a filled response for our own listener. ENOENT (the caller is gone, or a
        // signal interrupted it) needs nothing more.
        unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut resp,
            );
        }
    }

    /// Whether the request is still the one we read (the caller has not died and its pid
    /// been reused): checked after reading its memory and descriptors.
    fn still_valid(&self) -> bool {
        let mut id = self.id;
        // SAFETY: ID_VALID reads one u64.
        unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &mut id,
            ) == 0
        }
    }

    fn handle(self, rules: &SocketRules, diag: &OwnedFd, refusals: &Arc<Mutex<Vec<Refusal>>>) {
        let result = (|| -> Result<(OwnedFd, Vec<u8>, Option<OwnedFd>), i32> {
            // Everything about the caller is taken before the request is checked to be
            // still alive: after that check none of it can belong to a reused pid.
            let caller = Caller::of(self.pid)?;
            let socket = self.socket()?;
            let len = self.args[2] as usize;
            if len > MAX_ADDR {
                return Err(libc::EINVAL);
            }
            let addr = self.read_memory(self.args[1], len)?;
            if !self.still_valid() {
                return Err(libc::ESRCH);
            }
            let unix = domain(&socket) == Some(libc::AF_UNIX)
                && addr.len() >= 2
                && u16::from_ne_bytes([addr[0], addr[1]]) == libc::AF_UNIX as u16;
            if !unix {
                return Ok((socket, addr, None));
            }
            match self.judge(&caller, &addr, rules, diag) {
                Ok((target, held)) => Ok((socket, target, held)),
                Err(Deny { errno, report }) => {
                    if let Some(why) = report {
                        refusals.lock().unwrap_or_else(|e| e.into_inner()).push(why);
                    }
                    Err(errno)
                }
            }
        })();
        match result {
            Err(errno) => self.reply(Err(errno)),
            Ok((socket, addr, held)) => {
                if is_nonblocking(&socket) {
                    self.reply(connect(&socket, &addr));
                } else {
                    // A blocking connect (a slow host, a full backlog) must not hold up the
                    // other calls: it finishes on a thread of its own.
                    std::thread::spawn(move || {
                        let r = connect(&socket, &addr);
                        drop(held);
                        self.reply(r);
                    });
                }
            }
        }
    }

    /// The socket the call names, taken from the caller's descriptor table.
    fn socket(&self) -> Result<OwnedFd, i32> {
        let fd = self.args[0] as i32;
        // A thread's own descriptor table where the kernel can name the thread (6.9+),
        // else the process's.
        let pidfd = pidfd_open(self.pid, libc::O_EXCL)
            .or_else(|_| pidfd_open(self.pid, 0))
            .or_else(|_| {
                tgid(self.pid)
                    .ok_or(libc::ESRCH)
                    .and_then(|t| pidfd_open(t, 0))
            })?;
        // SAFETY: pidfd_getfd returns a new descriptor or an error.
        let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
        if got < 0 {
            return Err(errno());
        }
        // SAFETY: a new descriptor we own.
        Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
    }

    fn read_memory(&self, at: u64, len: usize) -> Result<Vec<u8>, i32> {
        let mut buf = vec![0u8; len];
        if len == 0 {
            return Ok(buf);
        }
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: len,
        };
        let remote = libc::iovec {
            iov_base: at as *mut libc::c_void,
            iov_len: len,
        };
        // SAFETY: reads `len` bytes of the caller's memory into our buffer.
        let n = unsafe { libc::process_vm_readv(self.pid as i32, &local, 1, &remote, 1, 0) };
        if n != len as isize {
            return Err(libc::EFAULT);
        }
        Ok(buf)
    }

    /// The address to connect to when the target may be reached: the socket file itself
    /// through a descriptor (never the path again; the descriptor is returned, to be held
    /// until the connect), or the abstract name as read.
    fn judge(
        &self,
        caller: &Caller,
        addr: &[u8],
        rules: &SocketRules,
        diag: &OwnedFd,
    ) -> Result<(Vec<u8>, Option<OwnedFd>), Deny> {
        let path = &addr[2..];
        if path.is_empty() {
            // No name: the kernel answers EINVAL.
            return Ok((addr.to_vec(), None));
        }
        if path[0] == 0 {
            let name = &path[1..];
            let shown = format!("@{}", String::from_utf8_lossy(name));
            // The command's own network namespace holds only names it bound.
            if rules.network.own_namespace() || rules.allow_all {
                return Ok((addr.to_vec(), None));
            }
            let listening = listeners(diag).map_err(|e| Deny::failed(e, &shown))?;
            let bound: Vec<u32> = listening
                .iter()
                .filter(|l| l.name.as_deref() == Some(name))
                .map(|l| l.ino)
                .collect();
            return match bound.is_empty() {
                true => Err(Deny::quiet(libc::ECONNREFUSED)),
                false if caller.holds_all(&bound) => Ok((addr.to_vec(), None)),
                false => Err(Deny::outside(&shown)),
            };
        }
        let path = until_nul(path);
        let shown = String::from_utf8_lossy(path).into_owned();
        // Missing, or not reachable as the caller sees it: the error connect would give.
        let target = caller.open(path).map_err(Deny::quiet)?;
        let (dev, ino) = stat_fd(&target).ok_or(Deny::quiet(libc::ECONNREFUSED))?;
        let allowed = rules.allow_all || rules.allowed.iter().any(|a| a.dev == dev && a.ino == ino);
        if !allowed {
            let listening = listeners(diag).map_err(|e| Deny::failed(e, &shown))?;
            // sock_diag reports the file's inode in 32 bits: every socket that could be the
            // one bound to it must be the sandbox's own.
            let bound: Vec<u32> = listening
                .iter()
                .filter(|l| l.vfs == Some((dev, ino as u32)))
                .map(|l| l.ino)
                .collect();
            // None listening on it in this namespace: an old file, or one a program outside
            // listens on (with network off, from another namespace).
            if bound.is_empty() || !caller.holds_all(&bound) {
                return Err(Deny::outside(&shown));
            }
        }
        let through = format!("/proc/self/fd/{}", target.as_raw_fd()).into_bytes();
        let (sun, len) = sockaddr_un(&through).ok_or(Deny::quiet(libc::ENAMETOOLONG))?;
        // SAFETY: the first `len` bytes of the sockaddr_un just built.
        let bytes = unsafe {
            std::slice::from_raw_parts(&sun as *const libc::sockaddr_un as *const u8, len as usize)
        }
        .to_vec();
        Ok((bytes, Some(target)))
    }
}

/// What the judgement needs of the calling process, taken while it is known to be alive.
struct Caller {
    root: OwnedFd,
    cwd: OwnedFd,
    /// Its PID namespace: the sandbox's processes are the ones in it.
    pid_ns: u64,
}

impl Caller {
    fn of(pid: u32) -> Result<Caller, i32> {
        let dir = |what: &str| {
            open_path(
                &format!("/proc/{pid}/{what}"),
                libc::O_PATH | libc::O_DIRECTORY,
            )
        };
        Ok(Caller {
            root: dir("root")?,
            cwd: dir("cwd")?,
            pid_ns: pid_namespace(pid).ok_or(libc::ESRCH)?,
        })
    }

    /// A file as the caller sees it: absolute paths inside its root (links cannot lead out
    /// of it), relative ones from its working directory with no link on the way.
    fn open(&self, path: &[u8]) -> Result<OwnedFd, i32> {
        let (base, resolve) = if path.first() == Some(&b'/') {
            (&self.root, libc::RESOLVE_IN_ROOT)
        } else {
            (
                &self.cwd,
                libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
            )
        };
        openat2(base, path, libc::O_PATH | libc::O_CLOEXEC, resolve)
    }

    /// Whether each of the sockets (by inode) is held open by a process of the caller's
    /// sandbox. Nothing outside can hand a socket in, so those were created inside.
    fn holds_all(&self, sockets: &[u32]) -> bool {
        let wanted: Vec<String> = sockets.iter().map(|i| format!("socket:[{i}]")).collect();
        let mut found = vec![false; wanted.len()];
        for pid in crate::process::pids().filter(|&pid| pid_namespace(pid) == Some(self.pid_ns)) {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue;
            };
            for fd in fds.flatten() {
                if let Ok(link) = std::fs::read_link(fd.path()) {
                    if let Some(i) = wanted.iter().position(|w| link.as_os_str() == w.as_str()) {
                        found[i] = true;
                    }
                }
            }
            if found.iter().all(|f| *f) {
                return true;
            }
        }
        false
    }
}

/// A connect that does not happen: the error the caller gets, and what to report after the
/// command (None for what connect itself would have said, a missing socket say).
struct Deny {
    errno: i32,
    report: Option<Refusal>,
}

impl Deny {
    fn quiet(errno: i32) -> Deny {
        Deny {
            errno,
            report: None,
        }
    }

    fn outside(shown: &str) -> Deny {
        Deny {
            errno: libc::EACCES,
            report: Some(Refusal {
                socket: shown.to_string(),
                message: format!(
                    "a connection to the unix socket {shown} was refused: it belongs to a program outside the sandbox (list it in network.allowUnixSockets to allow it)"
                ),
            }),
        }
    }

    /// The check itself failed: refused (fail closed), and said why.
    fn failed(e: std::io::Error, shown: &str) -> Deny {
        Deny {
            errno: libc::EACCES,
            report: Some(Refusal {
                socket: shown.to_string(),
                message: format!(
                    "a connection to the unix socket {shown} was refused: the sandbox could not tell whose it is ({e})"
                ),
            }),
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn sys_result(rc: libc::c_int) -> Result<i64, i32> {
    if rc < 0 {
        Err(errno())
    } else {
        Ok(rc as i64)
    }
}

fn connect(socket: &OwnedFd, addr: &[u8]) -> Result<i64, i32> {
    sys_result(unsafe {
        libc::connect(
            socket.as_raw_fd(),
            addr.as_ptr() as *const _,
            addr.len() as _,
        )
    })
}

fn domain(socket: &OwnedFd) -> Option<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_DOMAIN fills one int.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            &mut v as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then_some(v)
}

fn is_nonblocking(socket: &OwnedFd) -> bool {
    // SAFETY: F_GETFL on a valid descriptor.
    let flags = unsafe { libc::fcntl(socket.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_NONBLOCK != 0
}

fn pidfd_open(pid: u32, flags: i32) -> Result<OwnedFd, i32> {
    // SAFETY: pidfd_open returns a new descriptor or an error.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, flags) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn tgid(tid: u32) -> Option<u32> {
    status_field(tid, "Tgid:").and_then(|v| v.parse().ok())
}

fn status_field(pid: u32, key: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim().to_string())
}

fn open_path(path: &str, flags: i32) -> Result<OwnedFd, i32> {
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn openat2(dir: &OwnedFd, path: &[u8], flags: i32, resolve: u64) -> Result<OwnedFd, i32> {
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    crate::open::openat2(dir.as_raw_fd(), &c, flags, 0, resolve)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

fn stat_fd(fd: &OwnedFd) -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills the buffer on success.
    if unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return None;
    }
    let st = unsafe { st.assume_init() };
    (st.st_mode & libc::S_IFMT == libc::S_IFSOCK).then_some((st.st_dev, st.st_ino))
}

fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}

fn sockaddr_un(path: &[u8]) -> Option<(libc::sockaddr_un, libc::socklen_t)> {
    if path.len() >= SUN_PATH {
        return None;
    }
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in sun.sun_path.iter_mut().zip(path) {
        *d = *s as libc::c_char;
    }
    let len = (std::mem::size_of::<libc::sa_family_t>() + path.len() + 1) as libc::socklen_t;
    Some((sun, len))
}

/// `network.allowUnixSockets` entries that are sockets now, by inode (what connect compares).
pub(crate) fn resolve_allowed(paths: &[std::path::PathBuf]) -> Vec<AllowedSocket> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    paths
        .iter()
        .filter_map(|p| {
            let m = std::fs::metadata(p).ok()?;
            m.file_type().is_socket().then(|| AllowedSocket {
                path: p.clone(),
                dev: m.dev(),
                ino: m.ino(),
            })
        })
        .collect()
}

/// A listening unix socket of the namespace sock_diag looks at.
struct Listener {
    /// The socket's own inode (what `/proc/<pid>/fd` shows as `socket:[N]`).
    ino: u32,
    /// Its abstract name, without the leading NUL.
    name: Option<Vec<u8>>,
    /// The file it is bound to: `st_dev` and the low 32 bits of `st_ino`.
    vfs: Option<(u64, u32)>,
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const UDIAG_SHOW_NAME: u32 = 0x01;
const UDIAG_SHOW_VFS: u32 = 0x02;
const UNIX_DIAG_NAME: u16 = 0;
const UNIX_DIAG_VFS: u16 = 1;
const TCP_LISTEN: u32 = 10;

/// Asks sock_diag for every listening unix socket, their names and files; returns the
/// request's sequence number, which its replies carry.
fn send_dump_request(diag: &OwnedFd) -> std::io::Result<u32> {
    #[repr(C)]
    struct Request {
        nlh: libc::nlmsghdr,
        family: u8,
        protocol: u8,
        pad: u16,
        states: u32,
        ino: u32,
        show: u32,
        cookie: [u32; 2],
    }
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let req = Request {
        nlh: libc::nlmsghdr {
            nlmsg_len: std::mem::size_of::<Request>() as u32,
            nlmsg_type: SOCK_DIAG_BY_FAMILY,
            nlmsg_flags: (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16,
            nlmsg_seq: seq,
            nlmsg_pid: 0,
        },
        family: libc::AF_UNIX as u8,
        protocol: 0,
        pad: 0,
        states: 1 << TCP_LISTEN,
        ino: 0,
        show: UDIAG_SHOW_NAME | UDIAG_SHOW_VFS,
        cookie: [u32::MAX; 2],
    };
    // SAFETY: sends the request struct's bytes to the kernel.
    let sent = unsafe {
        libc::send(
            diag.as_raw_fd(),
            &req as *const Request as *const libc::c_void,
            std::mem::size_of::<Request>(),
            0,
        )
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(seq)
}

/// The listener one sock_diag reply (`body`, after its header) describes.
fn listener(body: &[u8]) -> Option<Listener> {
    if body.len() < 16 {
        return None;
    }
    let mut l = Listener {
        ino: u32::from_ne_bytes(body[4..8].try_into().unwrap()),
        name: None,
        vfs: None,
    };
    let mut attrs = &body[16..];
    while attrs.len() >= 4 {
        let alen = u16::from_ne_bytes(attrs[0..2].try_into().unwrap()) as usize;
        let atype = u16::from_ne_bytes(attrs[2..4].try_into().unwrap());
        if alen < 4 || alen > attrs.len() {
            break;
        }
        let data = &attrs[4..alen];
        match atype {
            UNIX_DIAG_NAME if data.first() == Some(&0) => {
                l.name = Some(data[1..].to_vec());
            }
            UNIX_DIAG_VFS if data.len() >= 8 => {
                let ino = u32::from_ne_bytes(data[0..4].try_into().unwrap());
                // The kernel's own dev_t (major << 20 | minor), not stat's encoding.
                let kdev = u32::from_ne_bytes(data[4..8].try_into().unwrap());
                let dev = libc::makedev(kdev >> 20, kdev & 0xf_ffff);
                l.vfs = Some((dev, ino));
            }
            _ => {}
        }
        attrs = &attrs[align4(alen).min(attrs.len())..];
    }
    Some(l)
}

/// Every listening unix socket in the namespace `diag` was opened in.
fn listeners(diag: &OwnedFd) -> std::io::Result<Vec<Listener>> {
    let seq = send_dump_request(diag)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receives into our buffer.
        let n = unsafe {
            libc::recv(
                diag.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                0,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut msgs = &buf[..n as usize];
        while msgs.len() >= 16 {
            let len = u32::from_ne_bytes(msgs[0..4].try_into().unwrap()) as usize;
            let kind = u16::from_ne_bytes(msgs[4..6].try_into().unwrap());
            let msg_seq = u32::from_ne_bytes(msgs[8..12].try_into().unwrap());
            if len < 16 || len > msgs.len() {
                return Err(std::io::Error::other("a malformed sock_diag reply"));
            }
            let body = &msgs[16..len];
            msgs = &msgs[align4(len).min(msgs.len())..];
            if msg_seq != seq {
                continue;
            }
            match kind as i32 {
                libc::NLMSG_DONE => return Ok(out),
                libc::NLMSG_ERROR => {
                    let code = body
                        .get(0..4)
                        .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
                        .unwrap_or(-libc::EIO);
                    return Err(std::io::Error::from_raw_os_error(-code));
                }
                _ => {}
            }
            if let Some(l) = listener(body) {
                out.push(l);
            }
        }
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}
