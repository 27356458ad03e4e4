//! The proxy a filtered command's only way out goes through: HTTP (CONNECT, and plain
//! requests in absolute form) and SOCKS5 (CONNECT) on one listening unix socket, told apart by
//! the first byte. Each connection's host is canonicalised (`domains::parse_host`), judged by
//! `decide`, and, when allowed, connected to from the host side: the proxy resolves names
//! itself, so the sandbox needs no DNS, and it connects to the canonical host it judged, never
//! to text a second parser could read differently. A name that resolves to a loopback address
//! is refused unless the host asked for is the loopback itself (`localhost`, 127.0.0.1, ::1):
//! an allowed domain cannot be pointed at the user's local services by its DNS.
//!
//! One thread per connection, blocking I/O; the relay copies each direction on its own thread.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Arc;
use std::time::Duration;

use super::domains::{parse_authority, Host};

/// What `decide` says about one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused; the reason goes back to the client (and so to the model).
    Deny(String),
}

/// Judges a canonical host and port (filter, prompt, log: the caller's).
pub type Decide = Arc<dyn Fn(&Host, u16) -> Decision + Send + Sync>;
/// Resolves a canonical host to addresses (the system resolver; tests inject one).
pub type Resolve = Arc<dyn Fn(&Host, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// The system resolver.
pub fn system_resolver() -> Resolve {
    Arc::new(|host: &Host, port: u16| match host {
        Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) => Ok((name.as_str(), port).to_socket_addrs()?.collect()),
    })
}

/// A request head larger than this is refused (no client needs more for CONNECT).
const MAX_HEAD: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `listener` on a thread of its own until the process ends or the listener fails.
pub fn serve(listener: UnixListener, decide: Decide, resolve: Resolve) -> io::Result<()> {
    std::thread::Builder::new()
        .name("pi-sandbox-proxy".into())
        .spawn(move || {
            for client in listener.incoming().flatten() {
                let (decide, resolve) = (decide.clone(), resolve.clone());
                let _ = std::thread::Builder::new()
                    .name("pi-sandbox-proxy-conn".into())
                    .spawn(move || {
                        let _ = handle(client, &decide, &resolve);
                    });
            }
        })?;
    Ok(())
}

fn handle(client: UnixStream, decide: &Decide, resolve: &Resolve) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let first = reader.fill_buf()?.first().copied();
    match first {
        Some(5) => socks5(reader, client, decide, resolve),
        Some(_) => http(reader, client, decide, resolve),
        None => Ok(()),
    }
}

/// Connects to what was judged; refuses a loopback address the host did not name itself.
fn connect(host: &Host, port: u16, resolve: &Resolve) -> Result<TcpStream, String> {
    let addrs = resolve(host, port).map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let loopback_asked = match host {
        Host::Ip(ip) => ip.is_loopback(),
        Host::Name(n) => n == "localhost",
    };
    let mut last = format!("{host} has no address");
    for addr in addrs {
        if is_local(addr.ip()) && !loopback_asked {
            last = format!(
                "{host} resolves to {}, a loopback address; only a host named as the loopback (localhost, 127.0.0.1) may reach it",
                addr.ip()
            );
            continue;
        }
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_loopback() || a.is_unspecified(),
        IpAddr::V6(a) => {
            a.is_loopback()
                || a.is_unspecified()
                || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Copies both directions until each side is done.
fn relay(
    client: UnixStream,
    mut reader: BufReader<UnixStream>,
    upstream: TcpStream,
) -> io::Result<()> {
    let mut up_write = upstream.try_clone()?;
    let client_write = client.try_clone()?;
    let up_read = upstream;
    let down = std::thread::spawn(move || {
        let mut up_read = up_read;
        let mut client_write = client_write;
        let _ = io::copy(&mut up_read, &mut client_write);
        let _ = client_write.shutdown(Shutdown::Write);
    });
    // What the reader holds already (bytes after the head) goes first.
    let _ = io::copy(&mut reader, &mut up_write);
    let _ = up_write.shutdown(Shutdown::Write);
    let _ = down.join();
    drop(client);
    Ok(())
}

// ---- HTTP ------------------------------------------------------------------------------

fn http_error(mut client: &UnixStream, status: &str, reason: &str) -> io::Result<()> {
    let body = format!("pi-sandbox: {reason}\n");
    write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nX-Pi-Sandbox-Reason: {}\r\n\r\n{body}",
        body.len(),
        reason.replace(['\r', '\n'], " ")
    )
}

/// Reads the request head (through the blank line), at most `MAX_HEAD` bytes.
fn read_head(reader: &mut BufReader<UnixStream>) -> io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
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
    client: &UnixStream,
    authority: &str,
    no_port: &str,
    decide: &Decide,
    resolve: &Resolve,
) -> io::Result<Option<TcpStream>> {
    let (host, port) = match parse_authority(authority) {
        Ok((h, Some(p))) => (h, p),
        Ok((_, None)) => return http_error(client, "400 Bad Request", no_port).map(|_| None),
        Err(e) => return http_error(client, "400 Bad Request", &e.to_string()).map(|_| None),
    };
    if let Decision::Deny(reason) = decide(&host, port) {
        return http_error(client, "403 Forbidden", &reason).map(|_| None);
    }
    match connect(&host, port, resolve) {
        Ok(s) => Ok(Some(s)),
        Err(e) => http_error(client, "502 Bad Gateway", &e).map(|_| None),
    }
}

fn http(
    mut reader: BufReader<UnixStream>,
    client: UnixStream,
    decide: &Decide,
    resolve: &Resolve,
) -> io::Result<()> {
    let head = match read_head(&mut reader) {
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
        let Some(upstream) =
            open_upstream(&client, target, "CONNECT needs host:port", decide, resolve)?
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
    let Some(mut upstream) =
        open_upstream(&client, &authority, "the URL has no port", decide, resolve)?
    else {
        return Ok(());
    };
    // Origin form upstream; the proxy's own headers are not forwarded.
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut out = format!("{method} {path} {version}\r\n");
    for line in &head[1..] {
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("proxy-connection")
            || name.eq_ignore_ascii_case("proxy-authorization")
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    upstream.write_all(out.as_bytes())?;
    relay(client, reader, upstream)
}

// ---- SOCKS5 (RFC 1928) -------------------------------------------------------------------

const SOCKS_REFUSED_BY_RULES: u8 = 0x02;
const SOCKS_HOST_UNREACHABLE: u8 = 0x04;
const SOCKS_COMMAND_UNSUPPORTED: u8 = 0x07;
const SOCKS_ADDRESS_UNSUPPORTED: u8 = 0x08;

fn socks_reply(mut client: &UnixStream, code: u8) -> io::Result<()> {
    client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0])
}

fn socks5(
    mut reader: BufReader<UnixStream>,
    client: UnixStream,
    decide: &Decide,
    resolve: &Resolve,
) -> io::Result<()> {
    let mut greeting = [0u8; 2];
    reader.read_exact(&mut greeting)?;
    let mut methods = vec![0u8; greeting[1] as usize];
    reader.read_exact(&mut methods)?;
    if !methods.contains(&0) {
        return (&client).write_all(&[5, 0xff]);
    }
    (&client).write_all(&[5, 0])?;
    let mut request = [0u8; 4];
    reader.read_exact(&mut request)?;
    if request[0] != 5 {
        return Ok(());
    }
    let raw_host = match request[3] {
        1 => {
            let mut a = [0u8; 4];
            reader.read_exact(&mut a)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            reader.read_exact(&mut a)?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        3 => {
            let mut len = [0u8; 1];
            reader.read_exact(&mut len)?;
            let mut name = vec![0u8; len[0] as usize];
            reader.read_exact(&mut name)?;
            match String::from_utf8(name) {
                Ok(n) => n,
                Err(_) => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
            }
        }
        _ => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
    };
    let mut port = [0u8; 2];
    reader.read_exact(&mut port)?;
    let port = u16::from_be_bytes(port);
    // Only CONNECT: BIND and UDP ASSOCIATE would open other ways out.
    if request[1] != 1 {
        return socks_reply(&client, SOCKS_COMMAND_UNSUPPORTED);
    }
    let host = match super::domains::parse_host(&raw_host) {
        Ok(h) if port != 0 => h,
        _ => return socks_reply(&client, SOCKS_ADDRESS_UNSUPPORTED),
    };
    if let Decision::Deny(_) = decide(&host, port) {
        return socks_reply(&client, SOCKS_REFUSED_BY_RULES);
    }
    let upstream = match connect(&host, port, resolve) {
        Ok(s) => s,
        Err(_) => return socks_reply(&client, SOCKS_HOST_UNREACHABLE),
    };
    socks_reply(&client, 0)?;
    relay(client, reader, upstream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::domains::{DomainFilter, Verdict};
    use std::net::TcpListener;
    use std::sync::Mutex;

    /// An upstream on 127.0.0.1 that answers each connection with what it received first
    /// (up to a blank line or 4 KiB), prefixed with "got:".
    fn upstream() -> (u16, Arc<Mutex<Vec<String>>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = vec![0u8; 4096];
                    let n = s.read(&mut buf).unwrap_or(0);
                    let text = String::from_utf8_lossy(&buf[..n]).to_string();
                    log.lock().unwrap().push(text.clone());
                    let _ = s.write_all(format!("got:{text}").as_bytes());
                });
            }
        });
        (port, seen)
    }

    struct Proxy {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
        asked: Arc<Mutex<Vec<String>>>,
    }

    /// A proxy deciding by `allowed`/`denied`; unlisted hosts are refused ("not listed").
    fn proxy(allowed: &[&str], denied: &[&str], resolve: Resolve) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("proxy.sock");
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let filter = DomainFilter::new(&v(allowed), &v(denied)).unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let decide: Decide = Arc::new(move |host: &Host, port: u16| {
            log.lock().unwrap().push(format!("{host}:{port}"));
            match filter.decide(host) {
                Verdict::Allowed(_) => Decision::Allow,
                Verdict::Denied(e) => {
                    Decision::Deny(format!("{host} is denied by deniedDomains entry {e:?}"))
                }
                Verdict::Unlisted => Decision::Deny(format!("{host} is not in allowedDomains")),
            }
        });
        serve(UnixListener::bind(&path).unwrap(), decide, resolve).unwrap();
        Proxy {
            _dir: dir,
            path,
            asked,
        }
    }

    fn exchange(p: &Proxy, send: &[u8]) -> String {
        let mut s = UnixStream::connect(&p.path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(send).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).to_string()
    }

    #[test]
    fn connect_to_an_allowed_host_relays_and_a_denied_one_gets_the_reason() {
        let (port, _) = upstream();
        let p = proxy(&["localhost"], &[], system_resolver());
        let out = exchange(
            &p,
            format!("CONNECT 127.1:{port} HTTP/1.1\r\nHost: x\r\n\r\nhello").as_bytes(),
        );
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(out.ends_with("got:hello"), "{out}");
        assert_eq!(
            p.asked.lock().unwrap()[0],
            format!("127.0.0.1:{port}"),
            "judged canonical"
        );

        let out = exchange(&p, b"CONNECT example.com:443 HTTP/1.1\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 403"), "{out}");
        assert!(
            out.contains("example.com is not in allowedDomains"),
            "{out}"
        );
        let denied = proxy(&["*.example.com"], &["evil.example.com"], system_resolver());
        let out = exchange(&denied, b"CONNECT EVIL.example.com.:443 HTTP/1.1\r\n\r\n");
        assert!(out.contains("denied by deniedDomains"), "{out}");
    }

    #[test]
    fn plain_http_goes_upstream_in_origin_form_without_proxy_headers() {
        let (port, seen) = upstream();
        let p = proxy(&["127.0.0.1"], &[], system_resolver());
        let req = format!("GET http://localhost:{port}/a/b?c=1 HTTP/1.1\r\nHost: localhost:{port}\r\nProxy-Authorization: Basic x\r\n\r\n");
        let out = exchange(&p, req.as_bytes());
        assert!(out.starts_with("got:GET /a/b?c=1 HTTP/1.1\r\n"), "{out}");
        assert!(!seen.lock().unwrap()[0].contains("Proxy-Authorization"));
        let out = exchange(&p, b"GET https://localhost/ HTTP/1.1\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 400"), "{out}");
        let out = exchange(&p, b"GET /relative HTTP/1.1\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    }

    #[test]
    fn bad_requests_are_refused_before_anything_is_judged() {
        let p = proxy(&["localhost"], &[], system_resolver());
        for bad in [
            "CONNECT localhost HTTP/1.1\r\n\r\n".to_string(),
            "CONNECT local\u{1}host:80 HTTP/1.1\r\n\r\n".to_string(),
            "CONNECT localhost:99999 HTTP/1.1\r\n\r\n".to_string(),
            "NONSENSE\r\n\r\n".to_string(),
            format!(
                "CONNECT localhost:80 HTTP/1.1\r\nX: {}\r\n\r\n",
                "a".repeat(MAX_HEAD)
            ),
        ] {
            let out = exchange(&p, bad.as_bytes());
            assert!(out.starts_with("HTTP/1.1 400"), "{bad:.60?} -> {out:.80}");
        }
        assert!(p.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn socks5_connects_allowed_hosts_only() {
        let (port, _) = upstream();
        let p = proxy(&["localhost"], &[], system_resolver());
        let name = b"LocalHost.";
        let mut req = vec![5, 1, 0, 5, 1, 0, 3, name.len() as u8];
        req.extend_from_slice(name);
        req.extend_from_slice(&port.to_be_bytes());
        req.extend_from_slice(b"hi");
        let out = exchange(&p, &req);
        assert_eq!(&out.as_bytes()[..2], &[5, 0], "method chosen");
        assert_eq!(&out.as_bytes()[2..4], &[5, 0], "connected");
        assert!(out.ends_with("got:hi"), "{out:?}");
        // A host not listed: refused by the rules.
        let mut req = vec![5, 1, 0, 5, 1, 0, 1, 10, 0, 0, 1];
        req.extend_from_slice(&port.to_be_bytes());
        let out = exchange(&p, &req);
        assert_eq!(&out.as_bytes()[2..4], &[5, SOCKS_REFUSED_BY_RULES]);
        // UDP ASSOCIATE is not offered.
        let mut req = vec![5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1];
        req.extend_from_slice(&port.to_be_bytes());
        let out = exchange(&p, &req);
        assert_eq!(&out.as_bytes()[2..4], &[5, SOCKS_COMMAND_UNSUPPORTED]);
    }

    #[test]
    fn an_allowed_name_cannot_be_pointed_at_the_loopback_by_its_dns() {
        let (port, seen) = upstream();
        // "rebind.test" is allowed, and its DNS answers 127.0.0.1.
        let resolve: Resolve = Arc::new(|host: &Host, port: u16| match host {
            Host::Name(n) if n == "rebind.test" => {
                Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
            }
            _ => system_resolver()(host, port),
        });
        let p = proxy(&["rebind.test", "localhost"], &[], resolve);
        let out = exchange(
            &p,
            format!("CONNECT rebind.test:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
        );
        assert!(out.starts_with("HTTP/1.1 502"), "{out}");
        assert!(out.contains("loopback"), "{out}");
        assert!(
            seen.lock().unwrap().is_empty(),
            "nothing reached the local service"
        );
        // Named as the loopback, it may.
        let out = exchange(
            &p,
            format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
        );
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    }
}
