//! The two roles `pi-sandbox-init` plays for a session's background processes (see
//! `src/platform/linux/pod.rs` in pi-sandbox):
//!
//! - `--pod LIFELINE_FD SOCKET_FD [--proxy]`: pid 1 of the session's pod (a user, pid and
//!   usually network namespace that outlive each command), sends pi-sandbox the pod's
//!   network and pid namespaces and, with `--proxy`, a socket listening on 127.0.0.1
//!   there (the proxy's door, shared by the session's commands); then waits until LIFELINE_FD
//!   ends (pi-sandbox closed its end, or pi is gone) and exits: the pod's pid namespace, and
//!   every process a command left in it, goes with it. Meanwhile the kernel reaps what is
//!   left to it (a command's namespace, once empty).
//! - `--join USERNS NETNS|- PIDNS -- PROGRAM ARGS...`: enters the pod's namespaces (the user
//!   namespace first: it gives the rights to enter the others) and runs PROGRAM (bwrap, by
//!   absolute path) as its child, so that the command's own namespaces nest in the pod's; ends
//!   as PROGRAM ends (128 + N for signal N, as a shell says it). A child, not an exec: a
//!   process that entered a pid namespace cannot make a new one itself (the kernel refuses
//!   it until it has forked into it). The child gets a /proc of the pod's pid namespace, in a
//!   mount namespace of its own: bwrap names its own children by pid there.

use crate::{c_str, fail, fd_arg, sys, usage};

/// `--pod`: see the module. Never returns.
///
/// # Safety
/// `arg` yields NUL-terminated strings from the initial stack.
pub unsafe fn pod(arg: &dyn Fn(usize) -> Option<&'static [u8]>) -> ! {
    let lifeline = fd_arg(arg(2), "LIFELINE_FD");
    let socket = fd_arg(arg(3), "SOCKET_FD");
    let proxy = arg(4) == Some(b"--proxy");
    // Not its user namespace: an unprivileged bwrap runs its command in a second one, nested
    // in the one that owns these, and only pi-sandbox (outside) can name that owner.
    let mut handed = [-1i32; 3];
    for (i, path) in [b"/proc/self/ns/net\0", b"/proc/self/ns/pid\0"]
        .iter()
        .enumerate()
    {
        let fd = sys::open(*path, libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            fail("opening the pod's namespaces", fd);
        }
        handed[i] = fd as i32;
    }
    let mut count = 2;
    if proxy {
        let (door, _) = sys::listen_on_loopback().unwrap_or_else(|(what, r)| fail(what, r));
        handed[2] = door;
        count = 3;
    }
    let r = sys::send_fds(socket, &handed[..count]);
    if r != 1 {
        fail("handing the pod's namespaces over", r.min(-1));
    }
    for fd in &handed[..count] {
        sys::close(*fd);
    }
    sys::close(socket);
    let r = sys::reap_children_automatically();
    if r < 0 {
        fail("ignoring SIGCHLD", r);
    }
    let mut byte = [0u8; 1];
    loop {
        let n = sys::read(lifeline, &mut byte);
        if n == -(libc::EINTR as isize) || n > 0 {
            continue;
        }
        sys::exit(0);
    }
}

/// `--join`: see the module. Returns only to fail.
///
/// # Safety
/// `argv` is the initial stack's argv, `envp` its environment.
pub unsafe fn join(
    arg: &dyn Fn(usize) -> Option<&'static [u8]>,
    argv: *const *const u8,
    argc: usize,
    envp: *const *const u8,
) -> ! {
    // In `ps`, between pi and bwrap (its name would be the fd it runs from).
    sys::set_name(b"pi-sandbox\0");
    let user = fd_arg(arg(2), "USERNS");
    let net = match arg(3) {
        Some(b"-") => None,
        a => Some(fd_arg(a, "NETNS")),
    };
    let pid = fd_arg(arg(4), "PIDNS");
    if arg(5) != Some(b"--") || argc < 7 {
        usage("--join USERNS NETNS|- PIDNS -- PROGRAM ARGS...");
    }
    for (fd, kind, what) in [
        (
            Some(user),
            libc::CLONE_NEWUSER,
            "entering the session's user namespace",
        ),
        (
            net,
            libc::CLONE_NEWNET,
            "entering the session's network namespace",
        ),
    ] {
        let Some(fd) = fd else { continue };
        let r = sys::setns(fd, kind);
        if r < 0 {
            fail(what, r);
        }
        sys::close(fd);
    }
    let r = sys::unshare(libc::CLONE_NEWNS);
    if r < 0 {
        fail("making a mount namespace for the sandbox", r);
    }
    // Nothing mounted here reaches another namespace.
    let r = sys::mount(b"none\0", b"/\0", b"\0", libc::MS_REC | libc::MS_SLAVE);
    if r < 0 {
        fail("making the mount namespace private", r);
    }
    let r = sys::setns(pid, libc::CLONE_NEWPID);
    if r < 0 {
        fail("entering the session's pid namespace", r);
    }
    sys::close(pid);
    let program = argv.add(6);
    let path = c_str(*program);
    if path.first() != Some(&b'/') {
        usage("--join runs PROGRAM by absolute path");
    }
    // The path's own NUL follows it on the stack.
    let with_nul = core::slice::from_raw_parts(path.as_ptr(), path.len() + 1);
    let child = sys::fork();
    if child < 0 {
        fail("starting the sandbox", child);
    }
    if child == 0 {
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        let r = sys::mount(b"proc\0", b"/proc\0", b"proc\0", flags);
        if r < 0 {
            fail("mounting the session's /proc", r);
        }
        let r = sys::execve(with_nul, program, envp);
        fail("running the sandbox", r)
    }
    loop {
        match sys::wait(child as i32) {
            Ok(status) if status & 0x7f == 0 => sys::exit((status >> 8) & 0xff),
            Ok(status) if (status & 0x7f) != 0x7f => sys::exit(128 + (status & 0x7f)),
            Ok(_) => {}
            Err(r) if r == -(libc::EINTR as isize) => {}
            Err(r) => fail("waiting for the sandbox", r),
        }
    }
}
