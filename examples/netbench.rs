//! A native client and echo server for `bench/network-bench.mjs`, so that what the latency
//! benchmark measures is the proxies, not a JavaScript client's event loop.
//!
//!   netbench echo
//!       listens on 127.0.0.1 (an ephemeral port, printed), echoes every byte, until stdin ends
//!   netbench latency TARGET_PORT CONCURRENCY PER_THREAD [PROXY_PORT [USER:PASSWORD]]
//!       CONCURRENCY threads each make PER_THREAD connections one after the other: connect
//!       (to the proxy, then `CONNECT 127.0.0.1:TARGET_PORT` and its 200), one byte out and
//!       back. Prints each connection's time in microseconds, one per line.
//!   netbench held TARGET_PORT HELD NEW [PROXY_PORT [USER:PASSWORD]]
//!       HELD connections opened (like `latency`'s) and kept open, each echoing a byte every
//!       100 ms; meanwhile NEW connections made one at a time, 5 ms apart. Prints each new
//!       connection's time in microseconds.
//!   netbench floor
//!       the least any CONNECT proxy can do, as a reference for ours: a thread per connection
//!       reads the head, connects to the `CONNECT` target, answers 200 and moves the bytes
//!       with `splice` (a blocking thread per direction, 1 MiB pipes) — no judging, no
//!       logging, no limits. Listens and prints its port like `echo`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

fn serve_until_stdin_ends(listener: TcpListener, handle: fn(TcpStream)) {
    println!("{}", listener.local_addr().expect("addr").port());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || handle(conn));
        }
    });
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
}

fn echo_one(mut conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut buf = [0u8; 4096];
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 || conn.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// `from` → pipe → `to` until `from` ends, then half-closes `to`.
fn splice_one_way(from: &TcpStream, to: &TcpStream) {
    let mut fds = [0; 2];
    // SAFETY: a fresh pipe; its ends are closed below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return;
    }
    // SAFETY: the pipe's write end, just made.
    unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1 << 20) };
    'moving: loop {
        // SAFETY: descriptors we hold, no offsets.
        let n = unsafe {
            libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                fds[1],
                std::ptr::null_mut(),
                1 << 20,
                libc::SPLICE_F_MOVE,
            )
        };
        if n <= 0 {
            break;
        }
        let mut left = n as usize;
        while left > 0 {
            // SAFETY: as above.
            let m = unsafe {
                libc::splice(
                    fds[0],
                    std::ptr::null_mut(),
                    to.as_raw_fd(),
                    std::ptr::null_mut(),
                    left,
                    libc::SPLICE_F_MOVE,
                )
            };
            if m <= 0 {
                break 'moving;
            }
            left -= m as usize;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    // SAFETY: the pipe's two ends, not used after this.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

fn floor_one(client: TcpStream) {
    let _ = client.set_nodelay(true);
    let mut reader = BufReader::new(&client);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let Some(target) = request.split(' ').nth(1) else {
        return;
    };
    let Ok(upstream) = TcpStream::connect(target) else {
        return;
    };
    let _ = upstream.set_nodelay(true);
    if (&client)
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let (c, u) = (
        client.try_clone().expect("clone"),
        upstream.try_clone().expect("clone"),
    );
    let up = std::thread::spawn(move || splice_one_way(&c, &u));
    splice_one_way(&upstream, &client);
    let _ = up.join();
}

fn echo() {
    serve_until_stdin_ends(TcpListener::bind("127.0.0.1:0").expect("bind"), echo_one);
}

fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A connection to `target`, directly or through `proxy` (`CONNECT` answered 200).
fn open_through(target: u16, proxy: Option<(u16, Option<&str>)>) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", proxy.map_or(target, |p| p.0))).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    if let Some((_, auth)) = proxy {
        let credential = auth
            .map(|a| format!("Proxy-Authorization: Basic {}\r\n", base64(a.as_bytes())))
            .unwrap_or_default();
        write!(
            &s,
            "CONNECT 127.0.0.1:{target} HTTP/1.1\r\nHost: 127.0.0.1:{target}\r\n{credential}\r\n"
        )
        .expect("CONNECT");
        let mut reader = BufReader::new(&s);
        let mut status = String::new();
        reader.read_line(&mut status).expect("status");
        assert!(status.contains(" 200"), "{status}");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("head");
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        assert!(reader.buffer().is_empty());
    }
    s
}

/// One byte out and back.
fn echo_byte(mut s: &TcpStream) {
    s.write_all(b"x").expect("write");
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("echo");
}

fn one(target: u16, proxy: Option<(u16, Option<&str>)>) -> u128 {
    let t0 = Instant::now();
    echo_byte(&open_through(target, proxy));
    t0.elapsed().as_micros()
}

/// A connection like `one`'s, kept open and used every 100 ms until `stop`.
fn held_open(
    target: u16,
    proxy: Option<(u16, Option<&str>)>,
    stop: &std::sync::atomic::AtomicBool,
) {
    let s = open_through(target, proxy);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        echo_byte(&s);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("echo") => echo(),
        Some("held") => {
            let num = |i: usize| args[i].parse::<u64>().expect("a number");
            let (target, held, new) = (num(1) as u16, num(2), num(3));
            let proxy_port = args.get(4).map(|p| p.parse::<u16>().expect("a port"));
            let auth = args.get(5).cloned();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let holders: Vec<_> = (0..held)
                .map(|_| {
                    let (auth, stop, ready) = (auth.clone(), stop.clone(), ready_tx.clone());
                    std::thread::spawn(move || {
                        let proxy = proxy_port.map(|p| (p, auth.as_deref()));
                        let _ = ready.send(());
                        held_open(target, proxy, &stop)
                    })
                })
                .collect();
            for _ in 0..held {
                ready_rx.recv().expect("a holder");
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let mut out = String::new();
            for _ in 0..new {
                let t = one(target, proxy_port.map(|p| (p, auth.as_deref())));
                out.push_str(&format!("{t}\n"));
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for h in holders {
                h.join().expect("a holder");
            }
            print!("{out}");
        }
        Some("floor") => {
            serve_until_stdin_ends(TcpListener::bind("127.0.0.1:0").expect("bind"), floor_one)
        }
        Some("latency") => {
            let num = |i: usize| args[i].parse::<u64>().expect("a number");
            let (target, threads, per) = (num(1) as u16, num(2), num(3));
            let proxy_port = args.get(4).map(|p| p.parse::<u16>().expect("a port"));
            let auth = args.get(5).cloned();
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let auth = auth.clone();
                    std::thread::spawn(move || {
                        (0..per)
                            .map(|_| one(target, proxy_port.map(|p| (p, auth.as_deref()))))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut out = String::new();
            for h in handles {
                for t in h.join().expect("a client thread") {
                    out.push_str(&format!("{t}\n"));
                }
            }
            print!("{out}");
        }
        _ => {
            eprintln!("usage: netbench echo | netbench floor | netbench latency TARGET CONCURRENCY PER_THREAD [PROXY [USER:PASS]]");
            std::process::exit(2);
        }
    }
}
