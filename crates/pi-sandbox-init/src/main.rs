//! `pi-sandbox-init FILTER_FD LISTENER_FD [--proxy] -- PROGRAM ARGS...`
//!
//! The first program inside each sandbox. bwrap cannot install a seccomp filter whose
//! decisions are made by another process (a user-notification filter needs its listener fd
//! from the `seccomp()` call that installs it), so this does, then steps aside:
//!
//! 1. reads the BPF programs (built by pi-sandbox, `src/platform/seccomp.rs`: each as its
//!    length in bytes, u32 little endian, then its instructions) from FILTER_FD;
//! 2. installs the first with `SECCOMP_FILTER_FLAG_NEW_LISTENER`, then the others;
//! 3. sends the listener, and a sock_diag netlink socket opened here (so that it sees this
//!    sandbox's network namespace), over LISTENER_FD (a unix socket whose other end
//!    pi-sandbox's supervisor holds) and closes them;
//! 4. with `--proxy` (filtered network): opens a TCP socket listening on 127.0.0.1 in this
//!    sandbox's network namespace, sends it along (pi-sandbox's proxy accepts the command's
//!    connections from it: the namespace has no other way out), and points `HTTP_PROXY`,
//!    `HTTPS_PROXY` and `ALL_PROXY` (and their lower-case forms) at its port;
//! 5. execs PROGRAM (the fd it was itself started from, when bwrap ran it as
//!    `/proc/self/fd/N`, closes on the way).
//!
//! Any failure ends it with status 126 before PROGRAM runs: the command never runs without
//! its filter.

mod fd_passing;
mod proxy_env;

use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::ffi::OsStringExt;

fn fail(what: &str) -> ! {
    let e = std::io::Error::last_os_error();
    eprintln!("pi-sandbox-init: {what}: {e}");
    std::process::exit(126);
}

fn usage(what: &str) -> ! {
    eprintln!(
        "pi-sandbox-init: usage: pi-sandbox-init FILTER_FD LISTENER_FD [--proxy] -- PROGRAM ARGS... ({what})"
    );
    std::process::exit(126);
}

fn fd_arg(a: Option<OsString>, what: &str) -> RawFd {
    match a
        .and_then(|s| s.into_string().ok())
        .and_then(|s| s.parse().ok())
    {
        Some(fd) if fd > 2 => fd,
        _ => usage(what),
    }
}

/// The programs in `framed` (see the header).
fn programs(mut framed: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !framed.is_empty() {
        let Some((len, rest)) = framed.split_first_chunk::<4>() else {
            usage("a truncated filter file");
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > rest.len() {
            usage("a truncated filter file");
        }
        out.push(&rest[..len]);
        framed = &rest[len..];
    }
    out
}

/// Installs `filter`; with `listener`, returns the listener the kernel made for it.
fn install(filter: &[u8], listener: bool) -> RawFd {
    if filter.is_empty() || !filter.len().is_multiple_of(8) || filter.len() / 8 > u16::MAX as usize
    {
        eprintln!(
            "pi-sandbox-init: the filter is not a BPF program ({} bytes)",
            filter.len()
        );
        std::process::exit(126);
    }
    let prog = libc::sock_fprog {
        len: (filter.len() / 8) as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl and seccomp calls with a valid program that outlives them.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            fail("no_new_privs");
        }
        let flags = if listener {
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
        } else {
            0
        };
        let fd = libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        );
        if fd < 0 {
            fail("installing the socket filter");
        }
        fd as RawFd
    }
}

/// The proxy's door: a TCP socket listening on 127.0.0.1 (an ephemeral port) in this network
/// namespace. The proxy variables point at it; the descriptor goes to pi-sandbox, which
/// accepts from it and serves each connection as the proxy.
fn proxy_door() -> RawFd {
    // SAFETY: plain socket calls on a socket we own; the address is a zeroed sockaddr_in
    // with its family, address and port set.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            fail("opening the proxy's socket");
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len) != 0 {
            fail("binding the proxy's socket to 127.0.0.1");
        }
        if libc::listen(fd, libc::SOMAXCONN) != 0 {
            fail("listening on the proxy's socket");
        }
        let mut bound: libc::sockaddr_in = std::mem::zeroed();
        let mut bound_len = len;
        if libc::getsockname(
            fd,
            &mut bound as *mut _ as *mut libc::sockaddr,
            &mut bound_len,
        ) != 0
        {
            fail("reading the proxy's port");
        }
        let port = u16::from_be(bound.sin_port);
        for (name, value) in proxy_env::proxy_env(port) {
            std::env::set_var(name, value);
        }
        fd
    }
}

/// Started as `/proc/self/fd/N` (bwrap executes the executable it inherited on fd N): that
/// fd is not the command's to inherit.
fn keep_own_fd_from_the_command() {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let own_fd = argv0
        .to_str()
        .and_then(|a| a.strip_prefix("/proc/self/fd/"))
        .and_then(|n| n.parse::<RawFd>().ok());
    if let Some(fd) = own_fd.filter(|fd| *fd > 2) {
        // SAFETY: fcntl on a descriptor number; a wrong one only fails.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

fn main() {
    keep_own_fd_from_the_command();
    let mut args = std::env::args_os().skip(1);
    let filter_fd = fd_arg(args.next(), "FILTER_FD");
    let socket = fd_arg(args.next(), "LISTENER_FD");
    let mut next = args.next();
    let proxy = next.as_deref() == Some(std::ffi::OsStr::new("--proxy"));
    if proxy {
        next = args.next();
    }
    if next.as_deref() != Some(std::ffi::OsStr::new("--")) {
        usage("missing --");
    }
    let argv: Vec<CString> = args
        .map(|a| CString::new(a.into_vec()).unwrap_or_else(|_| usage("NUL in an argument")))
        .collect();
    if argv.is_empty() {
        usage("no PROGRAM");
    }
    let mut filter = Vec::new();
    // SAFETY: the fd was handed to us for this; File takes ownership and closes it.
    let mut file = unsafe { std::fs::File::from_raw_fd(filter_fd) };
    if file.read_to_end(&mut filter).is_err() {
        fail("reading the filter");
    }
    drop(file);
    // SAFETY: a plain socket call.
    let diag = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if diag < 0 {
        fail("opening a sock_diag socket");
    }
    let door = proxy.then(proxy_door);
    let programs = programs(&filter);
    let Some((first, rest)) = programs.split_first() else {
        usage("no filter");
    };
    let listener = install(first, true);
    for p in rest {
        install(p, false);
    }
    let mut handed = vec![listener, diag];
    handed.extend(door);
    if fd_passing::send_fds(socket, &handed).is_err() {
        fail("handing the listener to the supervisor");
    }
    // SAFETY: closing our own descriptors, then exec with NUL-terminated argv.
    unsafe {
        for fd in handed {
            libc::close(fd);
        }
        libc::close(socket);
        let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        libc::execvp(ptrs[0], ptrs.as_ptr());
    }
    // As a shell reports it: 127 when there is no such program, 126 when it cannot run.
    let e = std::io::Error::last_os_error();
    let program = argv[0].to_string_lossy();
    if e.raw_os_error() == Some(libc::ENOENT) {
        eprintln!("{program}: command not found");
        std::process::exit(127);
    }
    eprintln!("{program}: {e}");
    std::process::exit(126);
}
