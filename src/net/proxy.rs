//! The proxy a filtered command's only way out goes through: HTTP (CONNECT, and plain
//! requests in absolute form) and SOCKS5 (CONNECT) on one listening TCP socket, told apart by
//! the first byte. On Linux that socket listens inside the command's own network namespace
//! (`pi-sandbox-init` opens it there and hands it over); on macOS on the host's loopback.
//! Each connection's host is canonicalised (`domains::parse_host`) and handed to `decide`,
//! which judges it, resolves it (the sandbox needs no DNS) and says at which addresses it may
//! be reached (the gate: where a name may lead is its rule, not the proxy's); the proxy
//! connects there from the host side, never to text a second parser could read differently.
//!
//! One thread per connection (from a pool of idle ones): blocking reads for the request head, then both directions on
//! that thread with `splice` through a pipe per direction, waiting in `poll` (Linux: the
//! bytes never enter this process; elsewhere a thread per direction copies through a buffer).
//! `Server::stop` ends everything a command opened: its listener and every connection still
//! open.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::domains::{parse_authority, Host};
use super::relay::relay;

/// What `decide` says about one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed: connect at these addresses, tried in order (resolved and checked by `decide`).
    Connect(Vec<SocketAddr>),
    /// Refused; the reason goes back to the client (and so to the model).
    Deny(String),
    /// Allowed, but there is nowhere to connect (the name does not resolve); why.
    Unreachable(String),
}

/// Judges a canonical host and port and says where it may be reached (filter, prompt,
/// resolution, log: the caller's). May block (a prompt, DNS): it runs on the connection's
/// own thread.
pub(crate) type Decide = Arc<dyn Fn(&Host, u16) -> Decision + Send + Sync>;
/// Resolves a canonical host to addresses (the system resolver; tests inject one).
pub(crate) type Resolve = Arc<dyn Fn(&Host, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// The system resolver.
pub(crate) fn system_resolver() -> Resolve {
    Arc::new(|host: &Host, port: u16| match host {
        Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) => Ok((name.as_str(), port).to_socket_addrs()?.collect()),
    })
}

/// A request head larger than this is refused (no client needs more for CONNECT).
const MAX_HEAD: usize = 64 * 1024;
/// A client that has not sent its whole request head by then is dropped.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// A failing `accept` (out of descriptors) is retried after this, not in a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections one command may hold open at once; more are closed at once (each costs two
/// threads and two pipes in pi's process).
pub(crate) const MAX_CONNECTIONS: usize = 256;

/// The sockets of the connections being served, to cut them all when the command ends.
struct Open {
    next: AtomicU64,
    /// None once stopped: nothing is added after the cut.
    sockets: Mutex<Option<HashMap<u64, Vec<TcpStream>>>>,
}

impl Open {
    fn new() -> Open {
        Open {
            next: AtomicU64::new(0),
            sockets: Mutex::new(Some(HashMap::new())),
        }
    }

    fn sockets(&self) -> std::sync::MutexGuard<'_, Option<HashMap<u64, Vec<TcpStream>>>> {
        self.sockets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `client`; None when stopped or the command holds too many connections.
    fn add(&self, client: &TcpStream) -> Option<u64> {
        let copy = client.try_clone().ok()?;
        let mut guard = self.sockets();
        let open = guard.as_mut()?;
        if open.len() >= MAX_CONNECTIONS {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        open.insert(id, vec![copy]);
        Some(id)
    }

    /// Registers the upstream of connection `id`; false once stopped (then the caller drops
    /// both: a connect that finished after the cut must not live on).
    fn add_upstream(&self, id: u64, upstream: &TcpStream) -> bool {
        let Ok(copy) = upstream.try_clone() else {
            return false;
        };
        match self.sockets().as_mut().and_then(|open| open.get_mut(&id)) {
            Some(v) => {
                v.push(copy);
                true
            }
            None => false,
        }
    }

    fn remove(&self, id: u64) {
        if let Some(open) = self.sockets().as_mut() {
            open.remove(&id);
        }
    }

    /// Cuts every connection, and every one registered from now on.
    fn cut_all(&self) {
        let open = self.sockets().take().unwrap_or_default();
        for (_, socks) in open {
            for s in socks {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// A listener being served. Dropping it does not stop it: call `stop`.
pub(crate) struct Server {
    /// Written to (or closed) to wake the accept loop for good.
    wake: UnixStream,
    open: Arc<Open>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Stops accepting, closes the listener and cuts every connection still open.
    pub(crate) fn stop(mut self) {
        let _ = self.wake.write_all(b"x");
        let _ = self.wake.shutdown(Shutdown::Both);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.open.cut_all();
    }
}

/// Serves `listener` on a thread of its own until `Server::stop`.
pub(crate) fn serve(listener: TcpListener, decide: Decide) -> io::Result<Server> {
    let (wake, woken) = UnixStream::pair()?;
    let open = Arc::new(Open::new());
    let served = open.clone();
    let thread = std::thread::Builder::new()
        .name("pi-sandbox-proxy".into())
        .spawn(move || accept_loop(listener, woken, served, decide))?;
    Ok(Server {
        wake,
        open,
        thread: Some(thread),
    })
}

fn accept_loop(listener: TcpListener, woken: UnixStream, open: Arc<Open>, decide: Decide) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    loop {
        let mut fds = [
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: woken.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            return;
        }
        // Non-blocking: a connection reset between poll and accept must not leave this
        // thread blocked in accept, where stop could not reach it.
        let client = match listener.accept() {
            Ok((c, _)) => c,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(_) => {
                std::thread::sleep(ACCEPT_BACKOFF);
                continue;
            }
        };
        // Some systems hand the listener's O_NONBLOCK on to what it accepts.
        if client.set_nonblocking(false).is_err() {
            continue;
        }
        let Some(id) = open.add(&client) else {
            continue;
        };
        let (decide, served) = (decide.clone(), open.clone());
        let ran = WORKERS.run(Box::new(move || {
            // Unregistered however the handler ends, a panic included: the registry's copies
            // would otherwise keep the client's connection open.
            let _unregister = Unregister(id, served.clone());
            let _ = handle(client, &decide, id, &served);
        }));
        if !ran {
            open.remove(id);
        }
    }
}

/// Removes connection `.0` from the registry when dropped.
struct Unregister(u64, Arc<Open>);

impl Drop for Unregister {
    fn drop(&mut self) {
        self.1.remove(self.0);
    }
}

/// A job for a worker thread: one connection, from its request head to its end.
type Job = Box<dyn FnOnce() + Send>;

/// Threads that serve connections, kept a while after their connection ends: a new
/// connection goes to an idle one instead of paying for a thread start (under load, thread
/// starts and their stacks are much of what the proxy costs a connection). Busy ones never
/// hold a new connection back: with none idle, another starts.
struct Workers {
    /// Idle workers, each by its id, with where to send it a job.
    idle: Mutex<Vec<(u64, std::sync::mpsc::Sender<Job>)>>,
    next: AtomicU64,
}

/// How long an idle worker waits for another connection before it ends.
const WORKER_IDLE: Duration = Duration::from_secs(30);

static WORKERS: Workers = Workers {
    idle: Mutex::new(Vec::new()),
    next: AtomicU64::new(0),
};

impl Workers {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(u64, std::sync::mpsc::Sender<Job>)>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `job` on an idle worker or a new one; false if no thread could be started.
    fn run(&'static self, job: Job) -> bool {
        let idle = self.idle().pop();
        if let Some((_, worker)) = idle {
            // Popped, it waits for this send (see `start`): it does not fail.
            if let Err(std::sync::mpsc::SendError(job)) = worker.send(job) {
                return self.start(job);
            }
            return true;
        }
        self.start(job)
    }

    fn start(&'static self, job: Job) -> bool {
        std::thread::Builder::new()
            .name("pi-sandbox-proxy-conn".into())
            .spawn(move || {
                let mut job = job;
                loop {
                    job();
                    let id = self.next.fetch_add(1, Ordering::Relaxed);
                    let (tx, rx) = std::sync::mpsc::channel();
                    self.idle().push((id, tx));
                    job = match rx.recv_timeout(WORKER_IDLE) {
                        Ok(next) => next,
                        Err(_) => {
                            let mut idle = self.idle();
                            match idle.iter().position(|(i, _)| *i == id) {
                                // Still listed: no one will send; end.
                                Some(at) => {
                                    idle.remove(at);
                                    return;
                                }
                                // Popped meanwhile: its job is on the way.
                                None => {
                                    drop(idle);
                                    match rx.recv() {
                                        Ok(next) => next,
                                        Err(_) => return,
                                    }
                                }
                            }
                        }
                    };
                }
            })
            .is_ok()
    }
}

/// What one connection's handler needs besides the client.
struct Conn<'a> {
    decide: &'a Decide,
    id: u64,
    open: &'a Open,
    /// The whole request head must have arrived by then (not each read: a byte every few
    /// seconds would hold a thread for ever).
    deadline: std::time::Instant,
}

impl Conn<'_> {
    /// `upstream`, registered to be cut at stop before anything is written to it; None when
    /// stopped while it was connecting (then it is closed).
    fn registered(&self, upstream: TcpStream) -> Option<TcpStream> {
        if self.open.add_upstream(self.id, &upstream) {
            return Some(upstream);
        }
        let _ = upstream.shutdown(Shutdown::Both);
        None
    }

    /// Sets the client's read timeout to what is left before the deadline.
    fn before_deadline(&self, client: &TcpStream) -> io::Result<()> {
        let left = self
            .deadline
            .checked_duration_since(std::time::Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::from(io::ErrorKind::TimedOut))?;
        client.set_read_timeout(Some(left))
    }
}

fn handle(client: TcpStream, decide: &Decide, id: u64, open: &Open) -> io::Result<()> {
    let conn = Conn {
        decide,
        id,
        open,
        deadline: std::time::Instant::now() + HEAD_TIMEOUT,
    };
    client.set_read_timeout(Some(HEAD_TIMEOUT))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let first = reader.fill_buf()?.first().copied();
    match first {
        Some(5) => socks5(reader, client, &conn),
        Some(_) => http(reader, client, &conn),
        None => Ok(()),
    }
}

/// Connects to the first of `addrs` that answers.
fn connect(addrs: &[SocketAddr]) -> Result<TcpStream, String> {
    let mut last = "no address to connect to".to_string();
    for addr in addrs {
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

// ---- HTTP ------------------------------------------------------------------------------

/// The error response: the reason in the body, in `X-Pi-Sandbox-Reason`, and, for a refusal,
/// in the status line's text too, which is what clients print for a failed CONNECT (Python's
/// "Tunnel connection failed: 403 ...", so pip's error says why).
fn http_error(mut client: &TcpStream, status: &str, reason: &str) -> io::Result<()> {
    let body = format!("pi-sandbox: {reason}\n");
    // Header text is one line of visible ASCII: a host's or a path's other bytes become '?'.
    let line: String = reason
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    let status = if status.starts_with("403") {
        format!("{status} (pi-sandbox: {line})")
    } else {
        status.to_string()
    };
    write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Pi-Sandbox-Reason: {line}\r\n\r\n{body}",
        body.len(),
    )
}

/// Reads the request head (through the blank line), at most `MAX_HEAD` bytes, by the
/// connection's deadline.
fn read_head(reader: &mut BufReader<TcpStream>, conn: &Conn) -> io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        conn.before_deadline(reader.get_ref())?;
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take((MAX_HEAD - total) as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        total += n;
        if total > MAX_HEAD || !line.ends_with(b"\n") {
            return Ok(None);
        }
        let text = String::from_utf8(line)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "head is not UTF-8"))?;
        let text = text.trim_end_matches(['\r', '\n']).to_string();
        if text.is_empty() {
            return Ok(Some(lines));
        }
        lines.push(text);
    }
}

/// The upstream connection for `authority` (`host:port`) if it parses, is allowed and
/// answers; otherwise the client gets the HTTP error saying which (`no_port` when the port is
/// missing) and the result is None.
fn open_upstream(
    client: &TcpStream,
    authority: &str,
    no_port: &str,
    conn: &Conn,
) -> io::Result<Option<TcpStream>> {
    let (host, port) = match parse_authority(authority) {
        Ok((h, Some(p))) => (h, p),
        Ok((_, None)) => return http_error(client, "400 Bad Request", no_port).map(|_| None),
        Err(e) => return http_error(client, "400 Bad Request", &e.to_string()).map(|_| None),
    };
    let addrs = match (conn.decide)(&host, port) {
        Decision::Connect(addrs) => addrs,
        Decision::Deny(reason) => {
            return http_error(client, "403 Forbidden", &reason).map(|_| None)
        }
        Decision::Unreachable(why) => {
            return http_error(client, "502 Bad Gateway", &why).map(|_| None)
        }
    };
    match connect(&addrs) {
        Ok(s) => Ok(conn.registered(s)),
        Err(e) => http_error(client, "502 Bad Gateway", &e).map(|_| None),
    }
}

fn http(mut reader: BufReader<TcpStream>, client: TcpStream, conn: &Conn) -> io::Result<()> {
    let head = match read_head(&mut reader, conn) {
        Ok(Some(h)) if !h.is_empty() => h,
        _ => return http_error(&client, "400 Bad Request", "unreadable request head"),
    };
    let mut parts = head[0].split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return http_error(&client, "400 Bad Request", "malformed request line");
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some(upstream) = open_upstream(&client, target, "CONNECT needs host:port", conn)?
        else {
            return Ok(());
        };
        (&client).write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        return relay(client, reader, upstream);
    }
    // A plain request in absolute form: `GET http://host[:port]/path HTTP/1.1`.
    let Ok(url) = url::Url::parse(target) else {
        return http_error(
            &client,
            "400 Bad Request",
            "a proxy request needs an absolute http:// URL",
        );
    };
    if url.scheme() != "http" {
        return http_error(
            &client,
            "400 Bad Request",
            "only http:// URLs go through as plain requests; use CONNECT for https",
        );
    }
    let authority = match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{}:{p}", h),
        _ => return http_error(&client, "400 Bad Request", "the URL has no host"),
    };
    let Some(mut upstream) = open_upstream(&client, &authority, "the URL has no port", conn)?
    else {
        return Ok(());
    };
    upstream.write_all(origin_form(method, &url, version, &head[1..]).as_bytes())?;
    relay(client, reader, upstream)
}

/// A plain proxy request as it goes upstream: origin form; `Host` from the URL that was
/// judged (never the client's own, which could name another site behind the same server);
/// the proxy's and hop-by-hop headers left out; `Connection: close`, so that the client's
/// next request, maybe for another host, comes on a new connection and is judged (a
/// protocol upgrade keeps its `Connection: Upgrade`).
fn origin_form(method: &str, url: &url::Url, version: &str, headers: &[String]) -> String {
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let name_of = |line: &str| {
        line.split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let value_of = |line: &str| line.split_once(':').map(|(_, v)| v.trim().to_string());
    // Headers the client's `Connection` names are hop-by-hop too.
    let mut hop: Vec<String> = [
        "proxy-connection",
        "proxy-authorization",
        "host",
        "connection",
        "keep-alive",
    ]
    .map(String::from)
    .to_vec();
    for line in headers.iter().filter(|l| name_of(l) == "connection") {
        if let Some(v) = value_of(line) {
            hop.extend(v.split(',').map(|t| t.trim().to_ascii_lowercase()));
        }
    }
    let upgrade = headers.iter().any(|l| name_of(l) == "upgrade");
    hop.retain(|h| !(upgrade && h == "upgrade"));
    let host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut out = format!("{method} {path} {version}\r\nHost: {host}\r\n");
    for line in headers {
        if !hop.contains(&name_of(line)) {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str(if upgrade {
        "Connection: Upgrade\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    out
}

// ---- SOCKS5 (RFC 1928) -------------------------------------------------------------------

/// A reader that gives up at the connection's deadline.
struct Deadlined<'a, 'c> {
    inner: &'a mut BufReader<TcpStream>,
    conn: &'a Conn<'c>,
}

impl Read for Deadlined<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.conn.before_deadline(self.inner.get_ref())?;
        self.inner.read(buf)
    }
}

const SOCKS_REFUSED_BY_RULES: u8 = 0x02;
const SOCKS_HOST_UNREACHABLE: u8 = 0x04;
const SOCKS_COMMAND_UNSUPPORTED: u8 = 0x07;
const SOCKS_ADDRESS_UNSUPPORTED: u8 = 0x08;

fn socks_reply(mut client: &TcpStream, code: u8) -> io::Result<()> {
    client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0])
}

fn socks5(mut reader: BufReader<TcpStream>, client: TcpStream, conn: &Conn) -> io::Result<()> {
    // Short reads, one deadline for all of them.
    let mut input = Deadlined {
        inner: &mut reader,
        conn,
    };
    let mut greeting = [0u8; 2];
    input.read_exact(&mut greeting)?;
    let mut methods = vec![0u8; greeting[1] as usize];
    input.read_exact(&mut methods)?;
    if !methods.contains(&0) {
        return (&client).write_all(&[5, 0xff]);
    }
    (&client).write_all(&[5, 0])?;
    let mut request = [0u8; 4];
    input.read_exact(&mut request)?;
    if request[0] != 5 {
        return Ok(());
    }
    let raw_host = match request[3] {
        1 => {
            let mut a = [0u8; 4];
            input.read_exact(&mut a)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            input.read_exact(&mut a)?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        3 => {
            let mut len = [0u8; 1];
            input.read_exact(&mut len)?;
            let mut name = vec![0u8; len[0] as usize];
            input.read_exact(&mut name)?;
            match String::from_utf8(name) {
                Ok(n) => n,
                Err(_) => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
            }
        }
        _ => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
    };
    let mut port = [0u8; 2];
    input.read_exact(&mut port)?;
    let port = u16::from_be_bytes(port);
    // Only CONNECT: BIND and UDP ASSOCIATE would open other ways out.
    if request[1] != 1 {
        return socks_reply(&client, SOCKS_COMMAND_UNSUPPORTED);
    }
    let host = match super::domains::parse_host(&raw_host) {
        Ok(h) if port != 0 => h,
        _ => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
    };
    let addrs = match (conn.decide)(&host, port) {
        Decision::Connect(addrs) => addrs,
        Decision::Deny(_) => return socks_reply(&client, SOCKS_REFUSED_BY_RULES),
        Decision::Unreachable(_) => return socks_reply(&client, SOCKS_HOST_UNREACHABLE),
    };
    let upstream = match connect(&addrs).map(|s| conn.registered(s)) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(()),
        Err(_) => return socks_reply(&client, SOCKS_HOST_UNREACHABLE),
    };
    socks_reply(&client, 0)?;
    relay(client, reader, upstream)
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
