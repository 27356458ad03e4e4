//! `pi-sandbox-init FILTER_FD LISTENER_FD [--proxy | --proxy-port PORT] -- PROGRAM ARGS...`
//! (and, for a session's background processes, `--pod` and `--join`: see `session.rs`)
//!
//! The first program inside each sandbox. bwrap cannot install a seccomp filter whose
//! decisions are made by another process (a user-notification filter needs its listener fd
//! from the `seccomp()` call that installs it), so this does, then steps aside:
//!
//! 1. reads the BPF programs (built by pi-sandbox, `src/platform/seccomp.rs`: each as its
//!    length in bytes, u32 little endian, then its instructions) from FILTER_FD;
//! 2. installs the first with `SECCOMP_FILTER_FLAG_NEW_LISTENER`, then the others (today
//!    there is one);
//! 3. sends the listener, and a sock_diag netlink socket opened here (so that it sees this
//!    sandbox's network namespace), over LISTENER_FD (a unix socket whose other end
//!    pi-sandbox's supervisor holds) and closes them;
//! 4. with `--proxy` (filtered network): opens a TCP socket listening on 127.0.0.1 in this
//!    sandbox's network namespace, sends it along (pi-sandbox's proxy accepts the command's
//!    connections from it: the namespace has no other way out), and points `HTTP_PROXY`,
//!    `HTTPS_PROXY` and `ALL_PROXY` (and their lower-case forms) at its port;
//!    With `--proxy-port PORT` the listener is the session's, opened by its pod: only the
//!    variables are set;
//! 5. execs PROGRAM (the fd it was itself started from, when bwrap ran it as
//!    `/proc/self/fd/N`, closes on the way).
//!
//! Any failure ends it with status 126 before PROGRAM runs: the command never runs without
//! its filter.
//!
//! It links no C library and no Rust `std` (`sys`): it starts for every command, and a
//! static glibc's start-up alone cost more than everything it does. PROGRAM is found on
//! `PATH` as `execvp` finds it (a file that is not an executable format runs under
//! `/bin/sh`).

#![cfg_attr(target_os = "linux", no_std, no_main)]

#[cfg(target_os = "linux")]
mod proxy_env;
#[cfg(target_os = "linux")]
mod session;
#[cfg(target_os = "linux")]
mod sys;

/// Only Linux sandboxes run it.
#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("pi-sandbox-init: only for Linux sandboxes");
    std::process::exit(126);
}

#[cfg(target_os = "linux")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    say(&[b"pi-sandbox-init: internal error"]);
    sys::exit(126)
}

/// The prebuilt `core` names it in its unwind tables; with `panic = "abort"` nothing unwinds,
/// so nothing calls it.
#[cfg(target_os = "linux")]
#[no_mangle]
extern "C" fn rust_eh_personality() {}

/// Writes `parts` and a newline to stderr.
#[cfg(target_os = "linux")]
fn say(parts: &[&[u8]]) {
    for p in parts {
        sys::write(2, p);
    }
    sys::write(2, b"\n");
}

/// Writes `parts`, what `errno` means, and a newline to stderr.
#[cfg(target_os = "linux")]
fn say_error(parts: &[&[u8]], errno: isize) {
    for p in parts {
        sys::write(2, p);
    }
    let mut digits = [0; 20];
    match describe(errno) {
        Some(text) => say(&[text]),
        None => say(&[b"error ", decimal(errno as u64, &mut digits)]),
    }
}

/// The text for an errno, as a C library would say it (the common ones).
#[cfg(target_os = "linux")]
fn describe(errno: isize) -> Option<&'static [u8]> {
    Some(match errno as i32 {
        libc::ENOENT => b"No such file or directory",
        libc::EACCES => b"Permission denied",
        libc::ENOEXEC => b"Exec format error",
        libc::E2BIG => b"Argument list too long",
        libc::ENOMEM => b"Cannot allocate memory",
        libc::ELOOP => b"Too many levels of symbolic links",
        libc::ENAMETOOLONG => b"File name too long",
        libc::ETXTBSY => b"Text file busy",
        libc::EISDIR => b"Is a directory",
        libc::ENOTDIR => b"Not a directory",
        libc::EPERM => b"Operation not permitted",
        libc::EINVAL => b"Invalid argument",
        libc::EBADF => b"Bad file descriptor",
        libc::EBUSY => b"Device or resource busy",
        libc::ENOSYS => b"Function not implemented",
        libc::EAFNOSUPPORT => b"Address family not supported by protocol",
        _ => return None,
    })
}

/// `n` in decimal, in `buf`.
#[cfg(target_os = "linux")]
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

/// Ends with status 126, saying what failed and why (`ret` is `-errno`).
#[cfg(target_os = "linux")]
fn fail(what: &str, ret: isize) -> ! {
    say_error(&[b"pi-sandbox-init: ", what.as_bytes(), b": "], -ret);
    sys::exit(126)
}

#[cfg(target_os = "linux")]
fn usage(what: &str) -> ! {
    say(&[
        b"pi-sandbox-init: usage: pi-sandbox-init FILTER_FD LISTENER_FD [--proxy | --proxy-port PORT] -- PROGRAM ARGS... (",
        what.as_bytes(),
        b")",
    ]);
    sys::exit(126)
}

/// The bytes of the NUL-terminated string at `p`.
///
/// # Safety
/// `p` must point at a NUL-terminated string that outlives the result.
#[cfg(target_os = "linux")]
unsafe fn c_str<'a>(p: *const u8) -> &'a [u8] {
    let mut len = 0;
    while *p.add(len) != 0 {
        len += 1;
    }
    core::slice::from_raw_parts(p, len)
}

#[cfg(target_os = "linux")]
fn fd_arg(a: Option<&[u8]>, what: &str) -> i32 {
    let Some(a) = a.filter(|a| !a.is_empty() && a.len() < 10) else {
        usage(what)
    };
    let mut n: i32 = 0;
    for &c in a {
        if !c.is_ascii_digit() {
            usage(what);
        }
        n = n * 10 + (c - b'0') as i32;
    }
    if n <= 2 {
        usage(what);
    }
    n
}

/// A TCP port number.
#[cfg(target_os = "linux")]
fn port_arg(a: Option<&[u8]>) -> u16 {
    let Some(a) = a.filter(|a| !a.is_empty() && a.len() <= 5) else {
        usage("--proxy-port PORT")
    };
    let mut n: u32 = 0;
    for &c in a {
        if !c.is_ascii_digit() {
            usage("--proxy-port PORT");
        }
        n = n * 10 + (c - b'0') as u32;
    }
    if n == 0 || n > u16::MAX as u32 {
        usage("--proxy-port PORT");
    }
    n as u16
}

/// The programs in the filter file: each as its length in bytes (u32, little endian), then
/// its instructions.
#[cfg(target_os = "linux")]
fn next_program<'a>(framed: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, rest) = framed.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    if len > rest.len() || len == 0 || !len.is_multiple_of(8) || len / 8 > u16::MAX as usize {
        usage("a filter file that is not BPF programs");
    }
    *framed = &rest[len..];
    Some(&rest[..len])
}

/// The filter file, the environment with the proxy variables, the path being tried: kept
/// in static buffers (there is no allocator).
#[cfg(target_os = "linux")]
mod buffers {
    pub const FILTER: usize = 1 << 16;
    pub const ENV: usize = 1 << 14;
    pub const PATH: usize = 4096;
    pub static mut FILTER_BYTES: [u8; FILTER] = [0; FILTER];
    pub static mut ENVP: [*const u8; ENV] = [core::ptr::null(); ENV];
    pub static mut PROXY_VALUES: [[u8; 64]; 8] = [[0; 64]; 8];
    pub static mut CANDIDATE: [u8; PATH] = [0; PATH];
    pub static mut SH_ARGV: [*const u8; 4096] = [core::ptr::null(); 4096];
}

/// Called by `_start` with the initial stack: argc, argv..., NULL, envp..., NULL.
///
/// # Safety
/// Only `_start` calls it, once, with the stack the kernel set up.
#[cfg(target_os = "linux")]
#[no_mangle]
unsafe extern "C" fn start(sp: *const usize) -> ! {
    let argc = *sp;
    let argv = sp.add(1) as *const *const u8;
    let mut envp = argv.add(argc + 1);
    let arg = |i: usize| -> Option<&'static [u8]> { (i < argc).then(|| c_str(*argv.add(i))) };

    // bwrap ran this from an inherited fd (`/proc/self/fd/N`): the command must not get it.
    if let Some(n) = arg(0).and_then(|a| a.strip_prefix(b"/proc/self/fd/")) {
        let fd = fd_arg(Some(n), "own fd");
        sys::fcntl_setfd(fd, libc::FD_CLOEXEC);
    }
    match arg(1) {
        Some(b"--pod") => session::pod(&arg),
        Some(b"--join") => session::join(&arg, argv, argc, envp),
        _ => {}
    }
    let filter_fd = fd_arg(arg(1), "FILTER_FD");
    let socket = fd_arg(arg(2), "LISTENER_FD");
    let mut next = 3;
    let proxy = arg(next) == Some(b"--proxy");
    if proxy {
        next += 1;
    }
    // The session's door, opened by its pod: only the variables to set.
    let door_port = if arg(next) == Some(b"--proxy-port") {
        next += 2;
        Some(port_arg(arg(next - 1)))
    } else {
        None
    };
    if arg(next) != Some(b"--") {
        usage("missing --");
    }
    let program_at = next + 1;
    if program_at >= argc {
        usage("no PROGRAM");
    }

    #[allow(static_mut_refs)]
    let filter = &mut buffers::FILTER_BYTES;
    let mut len = 0;
    loop {
        if len == filter.len() {
            usage("a filter file larger than 64 KiB");
        }
        let n = sys::read(filter_fd, &mut filter[len..]);
        if n < 0 {
            fail("reading the filter", n);
        }
        if n == 0 {
            break;
        }
        len += n as usize;
    }
    sys::close(filter_fd);
    let diag = sys::socket(
        libc::AF_NETLINK,
        libc::SOCK_RAW | libc::SOCK_CLOEXEC,
        libc::NETLINK_SOCK_DIAG,
    );
    if diag < 0 {
        fail("opening a sock_diag socket", diag);
    }
    let mut handed = [diag as i32, -1, -1];
    let mut count = 2;
    if proxy {
        let (door, port) = sys::listen_on_loopback().unwrap_or_else(|(what, r)| fail(what, r));
        handed[2] = door;
        count = 3;
        envp = with_proxy_env(envp, port);
    }
    if let Some(port) = door_port {
        envp = with_proxy_env(envp, port);
    }
    let mut framed: &[u8] = &filter[..len];
    let Some(first) = next_program(&mut framed) else {
        usage("no filter")
    };
    let r = sys::no_new_privs();
    if r < 0 {
        fail("no_new_privs", r);
    }
    let listener = sys::install_filter(first, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u32);
    if listener < 0 {
        fail("installing the socket filter", listener);
    }
    while let Some(p) = next_program(&mut framed) {
        let r = sys::install_filter(p, 0);
        if r < 0 {
            fail("installing the socket filter", r);
        }
    }
    if !framed.is_empty() {
        usage("a filter file that is not BPF programs");
    }
    handed[1] = handed[0];
    handed[0] = listener as i32;
    let r = sys::send_fds(socket, &handed[..count]);
    if r != 1 {
        fail("handing the listener to the supervisor", r.min(-1));
    }
    for fd in &handed[..count] {
        sys::close(*fd);
    }
    sys::close(socket);
    exec_program(argv.add(program_at), envp)
}

/// `envp` with the proxy variables for `port` in place of any it had.
///
/// # Safety
/// `envp` is the NULL-terminated environment from the initial stack.
#[cfg(target_os = "linux")]
unsafe fn with_proxy_env(envp: *const *const u8, port: u16) -> *const *const u8 {
    #[allow(static_mut_refs)]
    let (out, values) = (&mut buffers::ENVP, &mut buffers::PROXY_VALUES);
    let mut n = 0;
    let mut at = envp;
    while !(*at).is_null() {
        let entry = c_str(*at);
        let replaced = proxy_env::PROXY_VARS.iter().any(|(name, _)| {
            entry.len() > name.len()
                && entry.starts_with(name.as_bytes())
                && entry[name.len()] == b'='
        });
        if !replaced {
            if n + proxy_env::PROXY_VARS.len() + 1 >= out.len() {
                usage("an environment too large");
            }
            out[n] = *at;
            n += 1;
        }
        at = at.add(1);
    }
    let mut digits = [0; 20];
    let port = decimal(port as u64, &mut digits);
    for ((name, scheme), value) in proxy_env::PROXY_VARS.iter().zip(values.iter_mut()) {
        let mut w = 0;
        for part in [
            name.as_bytes(),
            b"=",
            scheme.as_bytes(),
            b"://127.0.0.1:",
            port,
            b"\0",
        ] {
            value[w..w + part.len()].copy_from_slice(part);
            w += part.len();
        }
        out[n] = value.as_ptr();
        n += 1;
    }
    out[n] = core::ptr::null();
    out.as_ptr()
}

/// Runs `argv[0]` as `execvp` would: a name with a slash as it is, another looked up on
/// `PATH` (default `/bin:/usr/bin`); a file the kernel cannot execute (ENOEXEC) runs under
/// `/bin/sh`. Returns only to fail: 127 when nothing was found, 126 else.
///
/// # Safety
/// `argv` and `envp` are NULL-terminated arrays of NUL-terminated strings.
#[cfg(target_os = "linux")]
unsafe fn exec_program(argv: *const *const u8, envp: *const *const u8) -> ! {
    let program = c_str(*argv);
    let mut error = -(libc::ENOENT as isize);
    if program.contains(&b'/') {
        error = match set_candidate(&[program]) {
            Some(len) => try_exec(len, argv, envp),
            None => -(libc::ENAMETOOLONG as isize),
        };
    } else if !program.is_empty() {
        let mut path: &[u8] = b"/bin:/usr/bin";
        let mut at = envp;
        while !(*at).is_null() {
            if let Some(p) = c_str(*at).strip_prefix(b"PATH=") {
                path = p;
                break;
            }
            at = at.add(1);
        }
        let mut denied = false;
        for dir in path.split(|c| *c == b':') {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            let Some(len) = set_candidate(&[dir, b"/", program]) else {
                continue;
            };
            let r = try_exec(len, argv, envp);
            match -r as i32 {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => {
                    error = r;
                    break;
                }
            }
        }
        if denied && -error as i32 == libc::ENOENT {
            error = -(libc::EACCES as isize);
        }
    }
    if -error as i32 == libc::ENOENT {
        say(&[program, b": command not found"]);
        sys::exit(127);
    }
    say_error(&[program, b": "], -error);
    sys::exit(126)
}

/// Puts `parts` one after the other into the candidate buffer; their length, or None when
/// they do not fit with a NUL after them.
#[cfg(target_os = "linux")]
fn set_candidate(parts: &[&[u8]]) -> Option<usize> {
    // SAFETY: the only reference to the buffer while this runs (nothing else runs).
    #[allow(static_mut_refs)]
    let candidate = unsafe { &mut buffers::CANDIDATE };
    let mut len = 0;
    for part in parts {
        if len + part.len() + 1 > candidate.len() {
            return None;
        }
        candidate[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    Some(len)
}

/// execve of the first `len` bytes of the candidate buffer, and under `/bin/sh` if it is
/// no executable format; returns the error.
///
/// # Safety
/// As `exec_program`; no reference into the candidate buffer is live.
#[cfg(target_os = "linux")]
unsafe fn try_exec(len: usize, argv: *const *const u8, envp: *const *const u8) -> isize {
    #[allow(static_mut_refs)]
    let candidate = &mut buffers::CANDIDATE;
    if len + 1 > candidate.len() {
        return -(libc::ENAMETOOLONG as isize);
    }
    candidate[len] = 0;
    let with_nul = &candidate[..len + 1];
    let r = sys::execve(with_nul, argv, envp);
    if -r as i32 != libc::ENOEXEC {
        return r;
    }
    #[allow(static_mut_refs)]
    let sh_argv = &mut buffers::SH_ARGV;
    sh_argv[0] = c"/bin/sh".as_ptr() as *const u8;
    sh_argv[1] = with_nul.as_ptr();
    let mut n = 2;
    let mut at = argv.add(1);
    while !(*at).is_null() {
        if n + 1 >= sh_argv.len() {
            return -(libc::E2BIG as isize);
        }
        sh_argv[n] = *at;
        n += 1;
        at = at.add(1);
    }
    sh_argv[n] = core::ptr::null();
    sys::execve(c"/bin/sh".to_bytes_with_nul(), sh_argv.as_ptr(), envp);
    r
}
