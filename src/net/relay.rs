//! The bytes of an allowed proxy connection, both directions, until each side is done: on
//! Linux spliced through a pipe per direction, waiting in `poll` (the bytes never enter this
//! process); elsewhere a thread per direction copies through a buffer.

use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, RawFd};

/// Copies both directions until each side is done: first what the reader holds already
/// (bytes the client sent after the head), then straight from socket to socket.
/// Relays between `client` and a registered `upstream` until both directions are done.
pub(crate) fn relay(
    client: TcpStream,
    reader: BufReader<TcpStream>,
    upstream: TcpStream,
) -> io::Result<()> {
    client.set_read_timeout(None)?;
    let _ = client.set_nodelay(true);
    (&upstream).write_all(reader.buffer())?;
    #[cfg(target_os = "linux")]
    if let Some(done) = splice_relay(&client, &upstream) {
        return done;
    }
    // Without splice: a thread per direction, through a buffer.
    let up_read = upstream.try_clone()?;
    let client_write = client.try_clone()?;
    let down = std::thread::Builder::new()
        .name("pi-sandbox-proxy-down".into())
        .spawn(move || {
            let _ = copy(&up_read, &client_write);
            let _ = client_write.shutdown(Shutdown::Write);
        })?;
    let _ = copy(&client, &upstream);
    let _ = upstream.shutdown(Shutdown::Write);
    let _ = down.join();
    Ok(())
}

/// Bytes moved per step (spliced).
#[cfg(target_os = "linux")]
const CHUNK: usize = 1 << 20;
/// The copy buffer where there is no splice.
const BUFFER: usize = 256 * 1024;
/// After this many bytes a direction counts as a bulk transfer, and its pipe grows to
/// `BULK_PIPE`.
#[cfg(target_os = "linux")]
const BULK: u64 = 4 << 20;
#[cfg(target_os = "linux")]
const BULK_PIPE: libc::c_int = 1 << 20;

/// Copies `from` to `to` through a buffer until `from` ends.
fn copy(from: &TcpStream, to: &TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; BUFFER];
    let (mut from, mut to) = (from, to);
    let mut total = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// One direction of a spliced relay: `from` → pipe → `to`.
#[cfg(target_os = "linux")]
struct Direction<'a> {
    from: &'a TcpStream,
    to: &'a TcpStream,
    pipe_r: std::os::fd::OwnedFd,
    pipe_w: std::os::fd::OwnedFd,
    /// Bytes in the pipe, not yet written to `to`.
    pending: usize,
    /// `from` has ended (or failed): nothing more to read.
    ended: bool,
    /// `to` is gone: what still comes from `from` is read and dropped (closing with unread
    /// data would reset the connection, and the other direction's last bytes with it).
    discarding: bool,
    moved: u64,
    grown: bool,
}

#[cfg(target_os = "linux")]
impl<'a> Direction<'a> {
    fn new(from: &'a TcpStream, to: &'a TcpStream) -> Option<Direction<'a>> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two new descriptors on success.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return None;
        }
        // SAFETY: both are new descriptors we own.
        let (pipe_r, pipe_w) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Some(Direction {
            from,
            to,
            pipe_r,
            pipe_w,
            pending: 0,
            ended: false,
            discarding: false,
            moved: 0,
            grown: false,
        })
    }

    fn done(&self) -> bool {
        self.ended && self.pending == 0
    }

    /// A plain read of what splice will not take (it stops at TCP urgent data, which
    /// `SO_OOBINLINE` keeps in the stream), written into the empty pipe.
    fn read_plain(&mut self) {
        let mut buf = [0u8; 4096];
        let n = match (&mut &*self.from).read(&mut buf) {
            Ok(0) => {
                self.ended = true;
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(_) => {
                self.ended = true;
                return;
            }
        };
        // SAFETY: a write of our buffer into our own empty pipe (64 KiB or more): it takes
        // all of it.
        let w = unsafe {
            libc::write(
                self.pipe_w.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                n,
            )
        };
        if w == n as isize {
            self.pending = n;
        } else {
            self.ended = true;
        }
    }

    /// What to wait for: `to` writable while bytes are pending, else `from` readable.
    fn wanted(&self) -> Option<libc::pollfd> {
        if self.done() {
            return None;
        }
        let (fd, events) = if self.pending > 0 && !self.discarding {
            (self.to.as_raw_fd(), libc::POLLOUT)
        } else {
            (self.from.as_raw_fd(), libc::POLLIN)
        };
        Some(libc::pollfd {
            fd,
            events,
            revents: 0,
        })
    }

    /// Moves what can move now without blocking: reads into the pipe when it is empty, and
    /// writes what it holds. Ends the direction on end of input or any failure.
    fn step(&mut self) {
        let splice = |from: RawFd, to: RawFd, len: usize| {
            // SAFETY: splice between descriptors we hold, no offsets.
            let n = unsafe {
                libc::splice(
                    from,
                    std::ptr::null_mut(),
                    to,
                    std::ptr::null_mut(),
                    len,
                    libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        };
        if self.discarding {
            let mut scratch = [0u8; 16384];
            match (&mut &*self.from).read(&mut scratch) {
                Ok(0) => self.ended = true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.ended = true,
            }
            return;
        }
        if self.pending == 0 && !self.ended {
            match splice(self.from.as_raw_fd(), self.pipe_w.as_raw_fd(), CHUNK) {
                Ok(0) => self.ended = true,
                Ok(n) => self.pending = n,
                // Nothing, or TCP urgent data, where splice stops (and poll still says
                // readable): read past it the ordinary way, into the empty pipe.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.read_plain(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => self.ended = true,
            }
        }
        while self.pending > 0 {
            match splice(self.pipe_r.as_raw_fd(), self.to.as_raw_fd(), self.pending) {
                Ok(0) => break,
                Ok(n) => {
                    self.pending -= n;
                    self.moved += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // `to` is gone: nothing more goes this way.
                    self.pending = 0;
                    self.discarding = !self.ended;
                }
            }
        }
        if !self.grown && self.moved >= BULK {
            self.grown = true;
            // SAFETY: fcntl on our own pipe; a refusal (the user's pipe budget) keeps the
            // default 64 KiB, which the many small connections stay at.
            unsafe { libc::fcntl(self.pipe_w.as_raw_fd(), libc::F_SETPIPE_SZ, BULK_PIPE) };
        }
        if self.done() {
            let _ = self.to.shutdown(Shutdown::Write);
        }
    }
}

/// Both directions on this thread, socket to pipe to socket with `splice` (the bytes never
/// enter this process), waiting in `poll`. None when no pipe could be made (nothing was moved
/// then; the caller copies instead).
#[cfg(target_os = "linux")]
fn splice_relay(client: &TcpStream, upstream: &TcpStream) -> Option<io::Result<()>> {
    let mut up = Direction::new(client, upstream)?;
    let mut down = Direction::new(upstream, client)?;
    for s in [client, upstream] {
        let on: libc::c_int = 1;
        // SAFETY: setsockopt with an int on our own socket. Urgent data stays in the stream
        // (read_plain), never a stall before it.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_OOBINLINE,
                &on as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    if let Err(e) = client
        .set_nonblocking(true)
        .and_then(|_| upstream.set_nonblocking(true))
    {
        return Some(Err(e));
    }
    // First try each direction at once: data may be waiting already.
    up.step();
    down.step();
    loop {
        let wanted: Vec<(usize, libc::pollfd)> = [&up, &down]
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.wanted().map(|p| (i, p)))
            .collect();
        if wanted.is_empty() {
            return Some(Ok(()));
        }
        let mut fds: Vec<libc::pollfd> = wanted.iter().map(|(_, p)| *p).collect();
        // SAFETY: valid pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Some(Err(e));
        }
        for ((i, _), p) in wanted.iter().zip(&fds) {
            if p.revents != 0 {
                if *i == 0 {
                    up.step();
                } else {
                    down.step();
                }
            }
        }
    }
}
