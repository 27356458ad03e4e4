//! A native client and echo server for `bench/network-bench.mjs`, so that what the latency
//! benchmark measures is the proxies, not a JavaScript client's event loop.
//!
//!   netbench echo
//!       listens on 127.0.0.1 (an ephemeral port, printed), echoes every byte, until stdin ends
//!   netbench latency TARGET_PORT CONCURRENCY PER_THREAD [PROXY_PORT [USER:PASSWORD]]
//!       CONCURRENCY threads each make PER_THREAD connections one after the other: connect
//!       (to the proxy, then `CONNECT 127.0.0.1:TARGET_PORT` and its 200), one byte out and
//!       back. Prints each connection's time in microseconds, one per line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

fn echo() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("addr").port());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = conn.set_nodelay(true);
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 || conn.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
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

fn one(target: u16, proxy: Option<(u16, Option<&str>)>) -> u128 {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", proxy.map_or(target, |p| p.0))).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    if let Some((_, auth)) = proxy {
        let credential = auth
            .map(|a| format!("Proxy-Authorization: Basic {}\r\n", base64(a.as_bytes())))
            .unwrap_or_default();
        write!(
            s,
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
    s.write_all(b"x").expect("write");
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("echo");
    t0.elapsed().as_micros()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("echo") => echo(),
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
            eprintln!("usage: netbench echo | netbench latency TARGET CONCURRENCY PER_THREAD [PROXY [USER:PASS]]");
            std::process::exit(2);
        }
    }
}
