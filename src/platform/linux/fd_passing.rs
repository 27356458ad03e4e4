//! Descriptors over a unix socket (`SCM_RIGHTS`): `pi-sandbox-init` sends the filter's
//! listener out of the sandbox (its own, libc-free `send_fds`), the supervisor receives it.
//! `send_fds` here is the same message, for the tests.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A control buffer with room for `count` descriptors, aligned for `cmsghdr` by its u64s.
fn control(count: usize) -> (Vec<u64>, usize, u32) {
    let size = (count * std::mem::size_of::<RawFd>()) as u32;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size) } as usize;
    (vec![0u64; space.div_ceil(8)], space, size)
}

/// A message of one data byte (`iov`) and the control buffer `buf` of `space` bytes.
fn message(iov: &mut libc::iovec, buf: &mut [u64], space: usize) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is valid; the fields set point at the caller's buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = space as _;
    msg
}

/// Sends `fds` (with one byte of data) over `socket`.
#[cfg(test)]
pub(crate) fn send_fds(socket: RawFd, fds: &[RawFd]) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let (mut buf, space, size) = control(fds.len());
    // SAFETY: the message points at live buffers; the header is written inside `buf`.
    unsafe {
        let msg = message(&mut iov, &mut buf, space);
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr() as *const u8,
            libc::CMSG_DATA(cmsg),
            size as usize,
        );
        if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives exactly `N` descriptors sent by `send_fds`; None when the other end closed, or
/// sent something else.
pub(crate) fn receive_fds<const N: usize>(socket: RawFd) -> Option<[OwnedFd; N]> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let (mut buf, space, size) = control(N);
    // SAFETY: the message points at live buffers; descriptors read from the header the
    // kernel wrote are new and ours.
    unsafe {
        let mut msg = message(&mut iov, &mut buf, space);
        if libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
            || ((*cmsg).cmsg_len as usize) < libc::CMSG_LEN(size) as usize
        {
            return None;
        }
        let mut raw = [0 as RawFd; N];
        std::ptr::copy_nonoverlapping(
            libc::CMSG_DATA(cmsg),
            raw.as_mut_ptr() as *mut u8,
            size as usize,
        );
        Some(raw.map(|fd| OwnedFd::from_raw_fd(fd)))
    }
}

/// A connected pair of `SOCK_SEQPACKET` unix sockets (close-on-exec).
pub(crate) fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two new descriptors on success.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn descriptors_arrive_as_sent() {
        let mut pair = [0; 2];
        // SAFETY: socketpair fills two descriptors.
        assert_eq!(
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, pair.as_mut_ptr()) },
            0
        );
        let file = tempfile::tempfile().unwrap();
        send_fds(pair[0], &[file.as_raw_fd(), pair[0]]).unwrap();
        let [got, _] = receive_fds::<2>(pair[1]).unwrap();
        let same = |a: RawFd, b: RawFd| {
            let st = |fd| {
                let mut s = std::mem::MaybeUninit::<libc::stat>::uninit();
                // SAFETY: fstat fills the buffer on success.
                assert_eq!(unsafe { libc::fstat(fd, s.as_mut_ptr()) }, 0);
                let s = unsafe { s.assume_init() };
                (s.st_dev, s.st_ino)
            };
            st(a) == st(b)
        };
        assert!(same(got.as_raw_fd(), file.as_raw_fd()));
        // SAFETY: closing the sending end; the receiver then sees the end of the stream.
        unsafe { libc::close(pair[0]) };
        assert!(receive_fds::<2>(pair[1]).is_none());
    }
}
