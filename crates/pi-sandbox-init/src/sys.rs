//! The few system calls `pi-sandbox-init` makes, made directly: it links no C library (a
//! static glibc's own start-up cost every command a third of a millisecond here). Each
//! returns the kernel's answer: a value, or `-errno`.

use core::arch::asm;

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    "xor rbp, rbp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call {start}",
    "ud2",
    start = sym crate::start,
);

#[cfg(target_arch = "aarch64")]
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    "mov x29, #0",
    "mov x30, #0",
    "mov x0, sp",
    "and x1, x0, #-16",
    "mov sp, x1",
    "bl {start}",
    "brk #0",
    start = sym crate::start,
);

// The memory functions the compiler calls for copies and loops (no C library provides them
// here). Byte by byte through volatile accesses, which the compiler cannot turn back into a
// call to the function itself; what is copied here is a few hundred bytes.

/// # Safety
/// As C's `memcpy`.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    for i in 0..n {
        core::ptr::write_volatile(dest.add(i), core::ptr::read_volatile(src.add(i)));
    }
    dest
}

/// # Safety
/// As C's `memmove`.
#[no_mangle]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dest as usize) < (src as usize) {
        for i in 0..n {
            core::ptr::write_volatile(dest.add(i), core::ptr::read_volatile(src.add(i)));
        }
    } else {
        for i in (0..n).rev() {
            core::ptr::write_volatile(dest.add(i), core::ptr::read_volatile(src.add(i)));
        }
    }
    dest
}

/// # Safety
/// As C's `memset`.
#[no_mangle]
pub unsafe extern "C" fn memset(dest: *mut u8, c: i32, n: usize) -> *mut u8 {
    for i in 0..n {
        core::ptr::write_volatile(dest.add(i), c as u8);
    }
    dest
}

/// # Safety
/// As C's `memcmp`.
#[no_mangle]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        let (x, y) = (
            core::ptr::read_volatile(a.add(i)),
            core::ptr::read_volatile(b.add(i)),
        );
        if x != y {
            return x as i32 - y as i32;
        }
    }
    0
}

/// # Safety
/// As C's `bcmp`.
#[no_mangle]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    memcmp(a, b, n)
}

/// # Safety
/// As C's `strlen`.
#[no_mangle]
pub unsafe extern "C" fn strlen(s: *const u8) -> usize {
    let mut n = 0;
    while core::ptr::read_volatile(s.add(n)) != 0 {
        n += 1;
    }
    n
}

/// # Safety
/// The arguments must be what system call `n` expects.
#[cfg(target_arch = "x86_64")]
pub unsafe fn syscall(n: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    asm!(
        "syscall",
        inlateout("rax") n as isize => ret,
        in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
        in("r10") a[3], in("r8") a[4], in("r9") a[5],
        lateout("rcx") _, lateout("r11") _,
        options(nostack),
    );
    ret
}

/// # Safety
/// The arguments must be what system call `n` expects.
#[cfg(target_arch = "aarch64")]
pub unsafe fn syscall(n: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    asm!(
        "svc 0",
        inlateout("x0") a[0] as isize => ret,
        in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5],
        in("x8") n,
        options(nostack),
    );
    ret
}

pub fn write(fd: i32, bytes: &[u8]) {
    // SAFETY: the buffer is live for the call.
    unsafe {
        syscall(
            libc::SYS_write,
            [fd as usize, bytes.as_ptr() as usize, bytes.len(), 0, 0, 0],
        )
    };
}

pub fn exit(status: i32) -> ! {
    // SAFETY: ends the process.
    unsafe { syscall(libc::SYS_exit_group, [status as usize, 0, 0, 0, 0, 0]) };
    // exit_group does not return.
    unreachable!()
}

/// Wrappers whose pointer arguments come from the caller's live buffers.
pub fn read(fd: i32, buf: &mut [u8]) -> isize {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe {
        syscall(
            libc::SYS_read,
            [fd as usize, buf.as_mut_ptr() as usize, buf.len(), 0, 0, 0],
        )
    }
}

pub fn close(fd: i32) {
    // SAFETY: closing a descriptor number.
    unsafe { syscall(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0]) };
}

pub fn fcntl_setfd(fd: i32, flags: i32) {
    // SAFETY: integers only.
    unsafe {
        syscall(
            libc::SYS_fcntl,
            [fd as usize, libc::F_SETFD as usize, flags as usize, 0, 0, 0],
        )
    };
}

pub fn socket(domain: i32, kind: i32, protocol: i32) -> isize {
    // SAFETY: integers only.
    unsafe {
        syscall(
            libc::SYS_socket,
            [domain as usize, kind as usize, protocol as usize, 0, 0, 0],
        )
    }
}

pub fn no_new_privs() -> isize {
    // SAFETY: integers only.
    unsafe {
        syscall(
            libc::SYS_prctl,
            [libc::PR_SET_NO_NEW_PRIVS as usize, 1, 0, 0, 0, 0],
        )
    }
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, prog)` for the BPF instructions in `filter`.
pub fn install_filter(filter: &[u8], flags: u32) -> isize {
    let prog = libc::sock_fprog {
        len: (filter.len() / 8) as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` and the instructions it points at are live for the call; the kernel
    // copies them.
    unsafe {
        syscall(
            libc::SYS_seccomp,
            [
                libc::SECCOMP_SET_MODE_FILTER as usize,
                flags as usize,
                &prog as *const _ as usize,
                0,
                0,
                0,
            ],
        )
    }
}

/// A socket bound to 127.0.0.1 on a port the kernel picks, listening; (fd, port).
pub fn listen_on_loopback() -> Result<(i32, u16), (&'static str, isize)> {
    let fd = socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if fd < 0 {
        return Err(("opening the proxy's socket", fd));
    }
    let mut addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    let mut len = core::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `addr` and `len` are live for each call; the kernel reads or fills them.
    unsafe {
        let r = syscall(
            libc::SYS_bind,
            [
                fd as usize,
                &addr as *const _ as usize,
                len as usize,
                0,
                0,
                0,
            ],
        );
        if r < 0 {
            return Err(("binding the proxy's socket to 127.0.0.1", r));
        }
        let r = syscall(
            libc::SYS_listen,
            [fd as usize, libc::SOMAXCONN as usize, 0, 0, 0, 0],
        );
        if r < 0 {
            return Err(("listening on the proxy's socket", r));
        }
        let r = syscall(
            libc::SYS_getsockname,
            [
                fd as usize,
                &mut addr as *mut _ as usize,
                &mut len as *mut _ as usize,
                0,
                0,
                0,
            ],
        );
        if r < 0 {
            return Err(("reading the proxy's port", r));
        }
    }
    Ok((fd as i32, u16::from_be(addr.sin_port)))
}

/// Sends `fds` (with one byte of data) over the unix socket `socket` (`SCM_RIGHTS`).
pub fn send_fds(socket: i32, fds: &[i32]) -> isize {
    const MAX: usize = 4;
    if fds.len() > MAX {
        return -(libc::EINVAL as isize);
    }
    let size = core::mem::size_of_val(fds);
    let header = core::mem::size_of::<libc::cmsghdr>();
    // A cmsghdr, then the descriptors; u64s keep the header aligned.
    let mut control = [0u64; (16 + MAX * 4).div_ceil(8) + 1];
    let space = (header + size).next_multiple_of(8);
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: an all-zero msghdr is valid; every pointer set below points into this frame's
    // buffers, which outlive the call; the header and data are written inside `control`.
    unsafe {
        let cmsg = control.as_mut_ptr() as *mut libc::cmsghdr;
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = (header + size) as _;
        core::ptr::copy_nonoverlapping(
            fds.as_ptr() as *const u8,
            (cmsg as *mut u8).add(header),
            size,
        );
        let mut msg: libc::msghdr = core::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        syscall(
            libc::SYS_sendmsg,
            [
                socket as usize,
                &msg as *const _ as usize,
                libc::MSG_NOSIGNAL as usize,
                0,
                0,
                0,
            ],
        )
    }
}

/// `execve(path, argv, envp)`: returns only on failure (`-errno`).
///
/// # Safety
/// `path` must end with NUL; `argv` and `envp` must be NULL-terminated arrays of pointers
/// to NUL-terminated strings.
pub unsafe fn execve(path: &[u8], argv: *const *const u8, envp: *const *const u8) -> isize {
    syscall(
        libc::SYS_execve,
        [
            path.as_ptr() as usize,
            argv as usize,
            envp as usize,
            0,
            0,
            0,
        ],
    )
}

/// `openat(AT_FDCWD, path, flags)`; `path` must end with NUL.
pub fn open(path: &[u8], flags: i32) -> isize {
    // SAFETY: a NUL-terminated path, live for the call.
    unsafe {
        syscall(
            libc::SYS_openat,
            [
                libc::AT_FDCWD as usize,
                path.as_ptr() as usize,
                flags as usize,
                0,
                0,
                0,
            ],
        )
    }
}

/// `setns(fd, nstype)`.
pub fn setns(fd: i32, nstype: i32) -> isize {
    // SAFETY: integers only.
    unsafe { syscall(libc::SYS_setns, [fd as usize, nstype as usize, 0, 0, 0, 0]) }
}

/// `fork()` (as `clone(SIGCHLD)`): 0 in the child, the child's pid in the parent, or `-errno`.
pub fn fork() -> isize {
    // SAFETY: no threads and no library state here: the child continues on a copy of this
    // process's memory, as after fork(2).
    unsafe { syscall(libc::SYS_clone, [libc::SIGCHLD as usize, 0, 0, 0, 0, 0]) }
}

/// `wait4(pid, &status, 0, NULL)`: the child's wait status, or `-errno`.
pub fn wait(pid: i32) -> Result<i32, isize> {
    let mut status: i32 = 0;
    // SAFETY: `status` is live for the call; the kernel fills it.
    let r = unsafe {
        syscall(
            libc::SYS_wait4,
            [pid as usize, &mut status as *mut i32 as usize, 0, 0, 0, 0],
        )
    };
    if r < 0 {
        Err(r)
    } else {
        Ok(status)
    }
}

/// `unshare(flags)`.
pub fn unshare(flags: i32) -> isize {
    // SAFETY: integers only.
    unsafe { syscall(libc::SYS_unshare, [flags as usize, 0, 0, 0, 0, 0]) }
}

/// `mount(source, target, fstype, flags, NULL)`; the strings must end with NUL.
pub fn mount(source: &[u8], target: &[u8], fstype: &[u8], flags: libc::c_ulong) -> isize {
    // SAFETY: NUL-terminated strings, live for the call.
    unsafe {
        syscall(
            libc::SYS_mount,
            [
                source.as_ptr() as usize,
                target.as_ptr() as usize,
                fstype.as_ptr() as usize,
                flags as usize,
                0,
                0,
            ],
        )
    }
}

/// SIGCHLD ignored: the kernel reaps this process's children itself (no zombies).
pub fn reap_children_automatically() -> isize {
    // The kernel's `struct sigaction`: handler (SIG_IGN), flags, restorer, mask.
    let action: [usize; 4] = [1, 0, 0, 0];
    // SAFETY: `action` is live for the call; the kernel reads it.
    unsafe {
        syscall(
            libc::SYS_rt_sigaction,
            [libc::SIGCHLD as usize, action.as_ptr() as usize, 0, 8, 0, 0],
        )
    }
}

/// `prctl(PR_SET_NAME, name)`: what `ps` shows as the process's name; `name` ends with NUL.
pub fn set_name(name: &[u8]) {
    // SAFETY: a NUL-terminated string of at most 16 bytes, live for the call.
    unsafe {
        syscall(
            libc::SYS_prctl,
            [
                libc::PR_SET_NAME as usize,
                name.as_ptr() as usize,
                0,
                0,
                0,
                0,
            ],
        )
    };
}
