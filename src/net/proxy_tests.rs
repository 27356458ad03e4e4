use super::*;
use crate::net::domains::DomainFilter;
use crate::net::gate::{CommandNet, Gate, Rules};
use crate::violations::ViolationLog;
use std::net::IpAddr;

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
    addr: SocketAddr,
    asked: Arc<Mutex<Vec<String>>>,
    server: Option<Server>,
    _log: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

/// A proxy deciding as the session's gate does, by `allowed`/`denied` (no one to ask:
/// unlisted hosts are refused), resolving with `resolve`.
fn proxy(allowed: &[&str], denied: &[&str], resolve: Resolve) -> Proxy {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::new(ViolationLog::in_agent_dir(dir.path()), resolve));
    gate.set_rules(Rules {
        filter: DomainFilter::new(&v(allowed), &v(denied)).unwrap(),
        ..Rules::default()
    });
    let net = CommandNet::new(gate);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let decide: Decide = Arc::new(move |host: &Host, port: u16| {
        log.lock().unwrap().push(format!("{host}:{port}"));
        net.decide(host, port)
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = serve(listener, decide).unwrap();
    Proxy {
        addr,
        asked,
        server: Some(server),
        _log: dir,
    }
}

fn exchange(p: &Proxy, send: &[u8]) -> String {
    let mut s = TcpStream::connect(p.addr).unwrap();
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
        out.contains("example.com is not in network.allowedDomains"),
        "{out}"
    );
    let denied = proxy(&["*.example.com"], &["evil.example.com"], system_resolver());
    let out = exchange(&denied, b"CONNECT EVIL.example.com.:443 HTTP/1.1\r\n\r\n");
    assert!(out.contains("denied by network.deniedDomains"), "{out}");
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
fn a_name_cannot_be_pointed_at_local_addresses_by_its_dns() {
    let (port, seen) = upstream();
    // Names whose DNS (the attacker's) answers this machine's addresses.
    let resolve: Resolve = Arc::new(|host: &Host, port: u16| {
        let ip: IpAddr = match host.to_string().as_str() {
            "a.rebind.test" | "rebind.test" => "127.0.0.1".parse().unwrap(),
            "zero.rebind.test" => "::ffff:0.0.0.0".parse().unwrap(),
            "mapped.rebind.test" => "::ffff:127.0.0.1".parse().unwrap(),
            "nat64.rebind.test" => "64:ff9b::7f00:1".parse().unwrap(),
            "sixtofour.rebind.test" => "2002:7f00:1::1".parse().unwrap(),
            "meta.rebind.test" => "169.254.169.254".parse().unwrap(),
            "meta6.rebind.test" => "fd00:ec2::254".parse().unwrap(),
            _ => return system_resolver()(host, port),
        };
        Ok(vec![SocketAddr::new(ip, port)])
    });
    // Exact entry or wildcard: the same answer, a refusal with the reason in the status
    // line a client prints, the header and the body.
    for allowed in [
        &["*.rebind.test"][..],
        &[
            "a.rebind.test",
            "zero.rebind.test",
            "mapped.rebind.test",
            "nat64.rebind.test",
            "sixtofour.rebind.test",
            "meta.rebind.test",
            "meta6.rebind.test",
        ],
    ] {
        let p = proxy(allowed, &[], resolve.clone());
        for name in ["a", "zero", "mapped", "nat64", "sixtofour", "meta", "meta6"] {
            let out = exchange(
                &p,
                format!("CONNECT {name}.rebind.test:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
            );
            assert!(
                out.starts_with(&format!("HTTP/1.1 403 Forbidden (pi-sandbox: Blocked: a connection to {name}.rebind.test:{port}: {name}.rebind.test resolves to ")),
                "{allowed:?} {name}: {out}"
            );
            assert!(out.contains("\r\nX-Pi-Sandbox-Reason: Blocked: "), "{out}");
            assert!(out.contains("\r\n\r\npi-sandbox: Blocked: "), "{out}");
        }
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing reached the local service"
    );
    // The loopback allowed itself (as `localhost` or its address), it is reached as
    // `localhost` and by a name that leads there: nothing the command could not reach anyway.
    for loopback in ["localhost", "127.0.0.1"] {
        let named = proxy(&["*.rebind.test", loopback], &[], resolve.clone());
        for asked in ["localhost", "a.rebind.test", "mapped.rebind.test"] {
            let out = exchange(
                &named,
                format!("CONNECT {asked}:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
            );
            assert!(out.starts_with("HTTP/1.1 200"), "{loopback} {asked}: {out}");
        }
        // The metadata service is still not the loopback.
        let out = exchange(
            &named,
            format!("CONNECT meta.rebind.test:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
        );
        assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    }
    // But never to an address deniedDomains lists.
    let denied = proxy(&["*.rebind.test", "localhost"], &["127.0.0.1"], resolve);
    let out = exchange(
        &denied,
        format!("CONNECT a.rebind.test:{port} HTTP/1.1\r\n\r\nx").as_bytes(),
    );
    assert!(
        out.contains("which network.deniedDomains \"127.0.0.1\" denies"),
        "{out}"
    );
}

#[test]
fn plain_requests_go_upstream_with_the_judged_host_and_connection_close() {
    let url = url::Url::parse("http://example.com:8080/p?q=1").unwrap();
    let head: Vec<String> = [
        "Host: evil.example",
        "Connection: keep-alive, X-Hop",
        "X-Hop: 1",
        "Keep-Alive: timeout=5",
        "Proxy-Connection: keep-alive",
        "Accept: */*",
    ]
    .map(String::from)
    .to_vec();
    let out = origin_form("GET", &url, "HTTP/1.1", &head);
    assert_eq!(
        out,
        "GET /p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    let ws: Vec<String> = ["Connection: Upgrade", "Upgrade: websocket"]
        .map(String::from)
        .to_vec();
    let out = origin_form(
        "GET",
        &url::Url::parse("http://a.b/").unwrap(),
        "HTTP/1.1",
        &ws,
    );
    assert_eq!(
        out,
        "GET / HTTP/1.1\r\nHost: a.b\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    );
}

#[test]
fn a_slow_head_is_cut_at_the_deadline_not_per_read() {
    // Not timed: the deadline is checked before each read; once passed, the read fails.
    let p = proxy(&["localhost"], &[], system_resolver());
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.write_all(b"CONNECT localhost:1 HTTP/1.1\r\n").unwrap();
    let conn_deadline = std::time::Instant::now() - Duration::from_secs(1);
    let open = Open::new();
    let decide: Decide = Arc::new(|_: &Host, _| Decision::Deny("x".into()));
    let conn = Conn {
        decide: &decide,
        id: 0,
        open: &open,
        deadline: conn_deadline,
    };
    let e = conn.before_deadline(&s).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    drop(p);
}

#[test]
fn nothing_is_registered_after_stop() {
    let open = Open::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let id = open.add(&a).unwrap();
    open.cut_all();
    assert!(open.add(&a).is_none(), "no new client after the cut");
    assert!(!open.add_upstream(id, &a), "no upstream after the cut");
}

#[test]
fn bytes_go_through_intact_both_ways() {
    // An upstream that sends back everything it gets.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut r = s.try_clone().unwrap();
        let mut w = s;
        std::io::copy(&mut r, &mut w).unwrap();
    });
    let p = proxy(&["localhost"], &[], system_resolver());
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = [0u8; 39];
    s.read_exact(&mut reply).unwrap();
    assert!(reply.starts_with(b"HTTP/1.1 200"));
    let data: Vec<u8> = (0..8 << 20)
        .map(|i: u32| (i * 7 + i / 4096) as u8)
        .collect();
    let mut w = s.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || {
        w.write_all(&sent).unwrap();
        w.shutdown(Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    writer.join().unwrap();
    assert!(
        back == data,
        "{} of {} bytes came back",
        back.len(),
        data.len()
    );
}

#[test]
fn stop_cuts_every_open_connection() {
    // An upstream that accepts and then says nothing.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<TcpStream> = l.incoming().flatten().collect();
        drop(held);
    });
    let mut p = proxy(&["localhost"], &[], system_resolver());
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = [0u8; 39];
    s.read_exact(&mut reply).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    p.server.take().unwrap().stop();
    let mut rest = Vec::new();
    // EOF (or a reset), not a timeout.
    match s.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert_ne!(e.kind(), io::ErrorKind::WouldBlock, "{e}"),
    }
    // The listener is closed too.
    assert!(TcpStream::connect(p.addr).is_err());
}

/// A CONNECT tunnel to a fresh upstream that runs `serve` on its one connection.
fn tunnel(serve: impl FnOnce(TcpStream) + Send + 'static) -> (Proxy, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || serve(l.accept().unwrap().0));
    let p = proxy(&["localhost"], &[], system_resolver());
    let mut s = TcpStream::connect(p.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut reply = [0u8; 39];
    s.read_exact(&mut reply).unwrap();
    assert!(reply.starts_with(b"HTTP/1.1 200"));
    (p, s)
}

#[test]
fn urgent_data_goes_through_in_order_without_a_stall() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (_p, s) = tunnel(move |mut up| {
        let mut got = Vec::new();
        let _ = up.read_to_end(&mut got);
        tx.send(got).unwrap();
    });
    let send = |data: &[u8], flags: libc::c_int| {
        // SAFETY: send of our buffer on our socket.
        let n = unsafe {
            libc::send(
                s.as_raw_fd(),
                data.as_ptr() as *const libc::c_void,
                data.len(),
                flags,
            )
        };
        assert_eq!(n, data.len() as isize);
    };
    send(b"before", 0);
    send(b"!", libc::MSG_OOB);
    std::thread::sleep(Duration::from_millis(50));
    send(b"after", 0);
    s.shutdown(Shutdown::Write).unwrap();
    let got = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the upstream got it all");
    assert_eq!(got, b"before!after");
}

#[test]
fn an_upstream_that_answers_and_closes_early_is_heard_whole() {
    let response = vec![b'r'; 2 << 20];
    let sent = response.clone();
    let (_p, mut s) = tunnel(move |mut up| {
        let mut first = [0u8; 1];
        let _ = up.read_exact(&mut first);
        up.write_all(&sent).unwrap();
        // It closes with the client's upload still coming (unread data: a reset). The
        // proxy must not reset the client before the client has read the response.
        std::thread::sleep(Duration::from_millis(100));
    });
    let mut w = s.try_clone().unwrap();
    let uploader = std::thread::spawn(move || {
        let chunk = vec![b'u'; 65536];
        for _ in 0..256 {
            if w.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = w.shutdown(Shutdown::Write);
    });
    // A slow reader: much of the response still waits in the proxy's buffers when the
    // upstream is gone.
    std::thread::sleep(Duration::from_millis(600));
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let _ = uploader.join();
    assert_eq!(
        got.len(),
        response.len(),
        "the whole response, not cut by a reset"
    );
}
