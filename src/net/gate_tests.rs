use super::*;
use crate::net::domains::parse_host;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;

fn rules(allowed: &[&str], denied: &[&str]) -> Rules {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Rules {
        filter: DomainFilter::new(&v(allowed), &v(denied)).unwrap(),
        ..Rules::default()
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    gate: Arc<Gate>,
    log: ViolationLog,
}

fn fixture(r: Rules) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log = ViolationLog::in_agent_dir(dir.path());
    let gate = Arc::new(Gate::new(log.clone(), resolver()));
    gate.set_rules(r);
    Fixture {
        _dir: dir,
        gate,
        log,
    }
}

/// A resolver of the tests' own: `<a>-<b>-<c>-<d>.ip.test` is that IPv4 address, `v6-<x>.ip.test`
/// the IPv6 address with `-` for `:`, `two.ip.test` both 10.0.0.7 and 127.0.0.1; any other name
/// is 198.51.100.7; nothing is asked of a real DNS.
fn resolver() -> Resolve {
    Arc::new(|host: &Host, port: u16| {
        let ips: Vec<IpAddr> = match host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(n) if n == "localhost" => vec!["127.0.0.1".parse().unwrap()],
            Host::Name(n) if n == "two.ip.test" => {
                vec!["127.0.0.1".parse().unwrap(), "10.0.0.7".parse().unwrap()]
            }
            Host::Name(n) if n == "none.ip.test" => vec![],
            Host::Name(n) => match n.strip_suffix(".ip.test") {
                Some(v6) if v6.starts_with("v6-") => {
                    vec![v6[3..].replace('-', ":").parse().unwrap()]
                }
                Some(v4) => vec![v4.replace('-', ".").parse().unwrap()],
                None => vec!["198.51.100.7".parse().unwrap()],
            },
        };
        Ok(ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    })
}

fn host(s: &str) -> Host {
    parse_host(s).unwrap()
}

/// An asker that answers `reply` and counts the questions.
fn asker(reply: Reply) -> (Asker, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let a: Asker = Arc::new(move |_q: &Question| {
        c.fetch_add(1, Ordering::SeqCst);
        reply.clone()
    });
    (a, count)
}

fn declined() -> Reply {
    Reply::Declined("Blocked: the user declined".into())
}

#[test]
fn deny_wins_over_allow_and_over_grants() {
    let mut r = rules(&["*.example.com"], &["evil.example.com"]);
    r.granted.push((host("evil.example.com"), "granted".into()));
    assert!(matches!(
        r.judge(&host("EVIL.example.com.")),
        Judgement::Denied(_)
    ));
    assert!(matches!(
        r.judge(&host("www.example.com")),
        Judgement::Allowed { .. }
    ));
    assert_eq!(r.judge(&host("example.com")), Judgement::Unlisted);
    r.granted.push((host("example.com"), "granted".into()));
    assert_eq!(
        r.judge(&host("example.com")),
        Judgement::Allowed("granted".into())
    );
}

#[test]
fn no_proxy_keeps_the_sandboxs_loopback_unless_the_hosts_is_allowed() {
    assert_eq!(
        no_proxy(&rules(&["github.com"], &[])),
        "localhost,127.0.0.1,::1"
    );
    assert_eq!(no_proxy(&rules(&["localhost"], &[])), "");
    assert_eq!(no_proxy(&rules(&["127.0.0.1"], &[])), "");
    assert_eq!(no_proxy(&rules(&["::1"], &[])), "");
    assert_eq!(
        no_proxy(&rules(&["localhost"], &["localhost"])),
        "localhost,127.0.0.1,::1"
    );
}

#[test]
fn every_decision_is_logged_with_host_port_and_rule() {
    let f = fixture(rules(&["pypi.org"], &["evil.com"]));
    let net = CommandNet::new(f.gate.clone());
    assert!(matches!(
        net.decide(&host("PyPI.org."), 443),
        Decision::Connect(_)
    ));
    assert!(
        matches!(net.decide(&host("evil.com"), 80), Decision::Deny(r) if r.starts_with("Blocked: a connection to evil.com:80: ") && r.contains("deniedDomains \"evil.com\""))
    );
    assert!(
        matches!(net.decide(&host("other.org"), 443), Decision::Deny(r) if r.contains("no UI"))
    );
    let log = f.log.recent(10);
    let summary: Vec<(String, u16, String)> = log
        .iter()
        .map(|v| {
            (
                v.host.clone().unwrap(),
                v.port.unwrap(),
                v.decision.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("pypi.org".into(), 443, "allowed".into()),
            ("evil.com".into(), 80, "denied".into()),
            ("other.org".into(), 443, "denied".into())
        ]
    );
    assert!(
        log[0].rule.contains("allowedDomains \"pypi.org\""),
        "{}",
        log[0].rule
    );
    let notes = net.finish();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[1].contains("other.org:443"), "{notes:?}");
    assert!(
        notes[1].contains("add \"other.org\" to network.allowedDomains"),
        "{notes:?}"
    );
}

#[test]
fn a_denied_host_is_refused_without_asking_whatever_the_user_would_say() {
    let f = fixture(rules(&["*.example.com"], &["evil.example.com", "10.1.2.3"]));
    let (yes, asked) = asker(Reply::ForSession);
    f.gate.set_asker(Some(yes));
    let net = CommandNet::new(f.gate.clone());
    for h in ["evil.example.com", "EVIL.example.com.", "10.1.2.3"] {
        assert!(
            matches!(net.decide(&host(h), 443), Decision::Deny(r) if r.contains("deniedDomains")),
            "{h}"
        );
    }
    assert_eq!(asked.load(Ordering::SeqCst), 0, "a hard block never asks");
}

#[test]
fn a_session_answer_is_asked_once_and_holds_in_memory_across_commands_and_reloads() {
    let f = fixture(rules(&[], &[]));
    let (session, asked) = asker(Reply::ForSession);
    f.gate.set_asker(Some(session));
    let net = CommandNet::new(f.gate.clone());
    for _ in 0..3 {
        assert!(matches!(
            net.decide(&host("Registry.NPMjs.org."), 443),
            Decision::Connect(_)
        ));
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // The next command, and the rules loaded again (a config change), keep it.
    f.gate.set_rules(rules(&[], &[]));
    let next = CommandNet::new(f.gate.clone());
    assert!(matches!(
        next.decide(&host("registry.npmjs.org"), 80),
        Decision::Connect(_)
    ));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(matches!(
        f.gate.judge(&host("registry.npmjs.org")),
        Judgement::Allowed(rule) if rule.contains("in memory only")
    ));
    // Nothing on disk: another gate (a restarted pi) asks again.
    let restarted = fixture(rules(&[], &[]));
    assert!(matches!(
        restarted.gate.judge(&host("registry.npmjs.org")),
        Judgement::Unlisted
    ));
    // A refusal holds for the rest of the command without asking again.
    let (no, refused) = asker(declined());
    f.gate.set_asker(Some(no));
    let third = CommandNet::new(f.gate.clone());
    for _ in 0..2 {
        assert!(
            matches!(third.decide(&host("x.org"), 443), Decision::Deny(r) if r.contains("declined"))
        );
    }
    assert_eq!(refused.load(Ordering::SeqCst), 1);
}

#[test]
fn concurrent_connections_to_one_host_share_one_question() {
    let f = fixture(rules(&[], &[]));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let slow: Asker = Arc::new(move |_q: &Question| {
        c.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(100));
        Reply::ForSession
    });
    f.gate.set_asker(Some(slow));
    let net = CommandNet::new(f.gate.clone());
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                assert!(matches!(
                    net.decide(&host("a.org"), 443),
                    Decision::Connect(_)
                ))
            });
        }
    });
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn the_question_names_the_host_and_port() {
    let f = fixture(rules(&[], &[]));
    let seen = Arc::new(Mutex::new(None));
    let s2 = seen.clone();
    let a: Asker = Arc::new(move |q: &Question| {
        *s2.lock().unwrap() = Some(q.clone());
        Reply::Unanswered("no UI".into())
    });
    f.gate.set_asker(Some(a));
    let net = CommandNet::new(f.gate.clone());
    assert!(matches!(
        net.decide(&host("xn--bcher-kva.de"), 8443),
        Decision::Deny(_)
    ));
    let q = seen.lock().unwrap().clone().unwrap();
    assert_eq!((q.host.as_str(), q.port), ("xn--bcher-kva.de", 8443));
    assert!(!q.local);
}

#[test]
fn after_the_command_nothing_is_asked() {
    let f = fixture(rules(&[], &[]));
    let (yes, asked) = asker(Reply::ForSession);
    f.gate.set_asker(Some(yes));
    let net = CommandNet::new(f.gate.clone());
    net.finish();
    assert!(matches!(
        net.decide(&host("late.org"), 443),
        Decision::Deny(_)
    ));
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[test]
fn a_local_host_is_asked_about_as_this_machine() {
    let f = fixture(rules(&[], &[]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let a: Asker = Arc::new(move |q: &Question| {
        s2.lock().unwrap().push(q.local);
        declined()
    });
    f.gate.set_asker(Some(a));
    let net = CommandNet::new(f.gate.clone());
    for h in [
        "localhost",
        "10.0.0.5",
        "[fe80::1]",
        "169.254.169.254",
        "example.org",
    ] {
        assert!(matches!(net.decide(&host(h), 80), Decision::Deny(_)), "{h}");
    }
    assert_eq!(*seen.lock().unwrap(), [true, true, true, true, false]);
}

#[test]
fn a_command_asks_about_a_bounded_number_of_hosts() {
    let f = fixture(rules(&[], &[]));
    let (no, asked) = asker(declined());
    f.gate.set_asker(Some(no));
    let net = CommandNet::new(f.gate.clone());
    for i in 0..50 {
        assert!(matches!(
            net.decide(&host(&format!("h{i}.org")), 443),
            Decision::Deny(_)
        ));
    }
    assert_eq!(asked.load(Ordering::SeqCst), MAX_QUESTIONS);
    let notes = net.finish();
    assert_eq!(notes.len(), MAX_NOTES + 1, "{notes:?}");
    assert!(notes.last().unwrap().contains("40 more hosts"), "{notes:?}");
    assert!(
        notes[MAX_NOTES - 1].contains("already asked about"),
        "{notes:?}"
    );
}

#[test]
fn the_end_of_the_command_withdraws_its_open_question_and_says_so() {
    let f = fixture(rules(&[], &[]));
    // An asker that says when it is asked, then waits for an answer that never comes, until
    // withdrawn.
    let (asked_tx, asked_rx) = std::sync::mpsc::channel();
    let asked_tx = Mutex::new(asked_tx);
    let a: Asker = Arc::new(move |q: &Question| {
        lock(&asked_tx).send(()).unwrap();
        while !q.withdrawn.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Reply::Unanswered("no UI".into())
    });
    f.gate.set_asker(Some(a));
    let net = CommandNet::new(f.gate.clone());
    let asking = {
        let net = net.clone();
        std::thread::spawn(move || net.decide(&host("slow.org"), 443))
    };
    asked_rx.recv().unwrap();
    // The note is in what the command's end returns, not in what the connection hears later.
    let notes = net.finish();
    assert_eq!(
        notes,
        ["Blocked: a connection to slow.org:443: the command ended before the question about slow.org was answered; run it again and answer the dialog."]
    );
    match asking.join().unwrap() {
        Decision::Deny(r) => assert!(r.contains("ended before the question"), "{r}"),
        d => panic!("{d:?}"),
    }
    let log = f.log.recent(5);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].decision.as_deref(), Some("denied"));
    // The gate is free for the next command's questions.
    let (yes, _) = asker(Reply::ForSession);
    f.gate.set_asker(Some(yes));
    let next = CommandNet::new(f.gate.clone());
    assert!(matches!(
        next.decide(&host("slow.org"), 443),
        Decision::Connect(_)
    ));
}

#[test]
fn repeated_decisions_are_logged_once_per_command() {
    let f = fixture(rules(&["pypi.org"], &[]));
    let net = CommandNet::new(f.gate.clone());
    for _ in 0..20 {
        net.decide(&host("pypi.org"), 443);
    }
    net.decide(&host("pypi.org"), 80);
    assert_eq!(f.log.recent(100).len(), 2);
    let next = CommandNet::new(f.gate.clone());
    next.decide(&host("pypi.org"), 443);
    assert_eq!(f.log.recent(100).len(), 3);
}

#[test]
fn a_question_that_fails_still_answers_the_connections_waiting_on_it() {
    let f = fixture(rules(&[], &[]));
    let a: Asker = Arc::new(|_q: &Question| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        panic!("the asker failed");
    });
    f.gate.set_asker(Some(a));
    let net = CommandNet::new(f.gate.clone());
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| net.decide(&host("a.org"), 443)))
            .collect();
        hs.into_iter().map(|h| h.join()).collect()
    });
    // The one that asked panicked; the others were told, not left waiting.
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
    for r in results.into_iter().flatten() {
        assert!(
            matches!(r, Decision::Deny(ref m) if m.contains("could not be asked")),
            "{r:?}"
        );
    }
}

// ---- Where an allowed host may lead: the decision table (see `addresses`) ------------------

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Private, shared, reserved, documentation, benchmarking: what corporate mirrors and
/// split-horizon DNS answer. An allowed name reaches them.
const NETWORK: [&str; 12] = [
    "198.51.100.7",
    "10.1.2.3",
    "172.16.5.4",
    "192.168.1.1",
    "100.64.0.1",
    "198.18.0.1",
    "203.0.113.80",
    "240.0.0.1",
    "fd00::2",
    "fc00::1",
    "2001:db8::1",
    "::ffff:10.0.0.1",
];

/// This machine and its link, in the IPv6 forms that carry an IPv4 address too.
const LOCAL: [(&str, Local); 14] = [
    ("127.0.0.1", Local::Loopback),
    ("127.0.0.53", Local::Loopback),
    ("::1", Local::Loopback),
    ("::ffff:127.0.0.1", Local::Loopback),
    ("::ffff:0:127.0.0.1", Local::Loopback),
    ("64:ff9b::7f00:1", Local::Loopback),
    ("2002:7f00:1::1", Local::Loopback),
    ("169.254.1.1", Local::Link),
    ("fe80::1", Local::Link),
    ("169.254.169.254", Local::Metadata),
    ("64:ff9b::a9fe:a9fe", Local::Metadata),
    ("fd00:ec2::254", Local::Metadata),
    ("100.100.100.200", Local::Metadata),
    ("224.0.0.1", Local::Multicast),
];

#[test]
fn an_exact_entry_a_wildcard_and_the_users_answer_give_the_same_answer_at_every_address() {
    let name = host("registry.corp.test");
    let mut answered = rules(&[], &[]);
    answered
        .granted
        .push((name.clone(), "allowed by the user".into()));
    let both_orders = [
        rules(&["registry.corp.test"], &[]),
        rules(&["*.corp.test"], &[]),
        // The wildcard matched first, then the exact entry: the order does not matter.
        rules(&["*.corp.test", "registry.corp.test"], &[]),
        rules(&["registry.corp.test", "*.corp.test"], &[]),
        answered,
    ];
    for r in &both_orders {
        assert!(matches!(r.judge(&name), Judgement::Allowed(_)));
        for a in NETWORK {
            assert_eq!(r.refusal(&name, ip(a), &[]), None, "{a}");
        }
        for (a, kind) in LOCAL {
            assert_eq!(
                r.refusal(&name, ip(a), &[]),
                Some(Refusal::Local(kind)),
                "{a}"
            );
        }
        for a in ["0.0.0.0", "::", "::ffff:0.0.0.0", "0.1.2.3"] {
            assert_eq!(
                r.refusal(&name, ip(a), &[]),
                Some(Refusal::Unspecified),
                "{a}"
            );
        }
    }
}

#[test]
fn a_local_address_is_reached_when_it_is_named_itself() {
    // Asked for by its address (allowed by an entry or the user's answer): as judged.
    let r = rules(&["*.corp.test", "169.254.169.254", "localhost"], &[]);
    for a in ["127.0.0.1", "169.254.169.254", "fe80::1"] {
        assert_eq!(r.refusal(&Host::Ip(ip(a)), ip(a), &[]), None, "{a}");
    }
    assert_eq!(
        r.refusal(&Host::Ip(ip("0.0.0.0")), ip("0.0.0.0"), &[]),
        Some(Refusal::Unspecified)
    );
    // `localhost` reaches the loopback only.
    let localhost = host("localhost");
    assert_eq!(r.refusal(&localhost, ip("127.0.0.1"), &[]), None);
    assert_eq!(r.refusal(&localhost, ip("::1"), &[]), None);
    assert_eq!(
        r.refusal(&localhost, ip("10.0.0.1"), &[]),
        Some(Refusal::NotLoopback)
    );
    // A name reaches a local address the rules allow itself, and no other: the loopback is
    // allowed (`localhost` stands for 127.0.0.1 and ::1, not 127.0.0.2), the metadata
    // address is listed, fd00:ec2::254 is not.
    let name = host("a.corp.test");
    for a in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254"] {
        assert_eq!(r.refusal(&name, ip(a), &[]), None, "{a}");
    }
    assert_eq!(
        r.refusal(&name, ip("127.0.0.2"), &[]),
        Some(Refusal::Local(Local::Loopback))
    );
    assert_eq!(
        r.refusal(&name, ip("fd00:ec2::254"), &[]),
        Some(Refusal::Local(Local::Metadata))
    );
    // This machine's own address on another interface: the loopback by another name for
    // services bound to every interface, unless that address is allowed itself.
    let own = [ip("127.0.0.1"), ip("10.0.0.9")];
    for a in ["10.0.0.9", "::ffff:10.0.0.9"] {
        assert_eq!(
            r.refusal(&name, ip(a), &own),
            Some(Refusal::Local(Local::ThisMachine)),
            "{a}"
        );
    }
    assert_eq!(r.refusal(&name, ip("10.0.0.10"), &own), None);
    let listed = rules(&["*.corp.test", "10.0.0.9"], &[]);
    assert_eq!(listed.refusal(&name, ip("10.0.0.9"), &own), None);
}

#[test]
fn an_address_denied_domains_lists_is_refused_to_every_host_in_every_form() {
    let r = rules(
        &["*.corp.test", "10.0.0.7", "localhost"],
        &["10.0.0.8", "::1"],
    );
    let name = host("a.corp.test");
    for a in ["10.0.0.8", "::ffff:10.0.0.8", "64:ff9b::a00:8"] {
        assert!(
            matches!(r.refusal(&name, ip(a), &[]), Some(Refusal::Denied(rule)) if rule.contains("\"10.0.0.8\"")),
            "{a}"
        );
    }
    // ::1 denied is the loopback denied (`localhost` and 127.0.0.1 name the same place),
    // whatever allowedDomains says.
    for a in ["127.0.0.1", "::1"] {
        assert!(
            matches!(r.refusal(&name, ip(a), &[]), Some(Refusal::Denied(_))),
            "{a}"
        );
    }
    assert_eq!(r.refusal(&name, ip("10.0.0.7"), &[]), None);
}

#[test]
fn a_refused_address_is_a_note_and_a_refusal_in_the_log_not_an_allowed_connection() {
    let mut r = rules(&["*.ip.test", "exact.test"], &[]);
    r.allowed_in = "network.allowedDomains in /home/u/.pi/agent/extensions/sandbox.json".into();
    let f = fixture(r);
    let net = CommandNet::new(f.gate.clone());
    let expected = "Blocked: a connection to 127-0-0-1.ip.test:8080: 127-0-0-1.ip.test resolves to 127.0.0.1, this machine's loopback: a name leads there only if that address is allowed itself (DNS-rebinding guard); add \"127.0.0.1\" to network.allowedDomains in /home/u/.pi/agent/extensions/sandbox.json.";
    match net.decide(&host("127-0-0-1.ip.test"), 8080) {
        Decision::Deny(reason) => assert_eq!(reason, expected),
        d => panic!("{d:?}"),
    }
    match net.decide(&host("v6-fd00-ec2--254.ip.test"), 80) {
        Decision::Deny(reason) => assert!(
            reason.contains("resolves to [fd00:ec2::254], a cloud metadata service")
                && reason.contains("add \"[fd00:ec2::254]\" to network.allowedDomains"),
            "{reason}"
        ),
        d => panic!("{d:?}"),
    }
    // A private address: reached, however the name was allowed.
    assert_eq!(
        net.decide(&host("10-1-2-3.ip.test"), 443),
        Decision::Connect(vec!["10.1.2.3:443".parse().unwrap()])
    );
    // One of two addresses refused: the other is connected to, nothing is said.
    assert_eq!(
        net.decide(&host("two.ip.test"), 443),
        Decision::Connect(vec!["10.0.0.7:443".parse().unwrap()])
    );
    assert!(matches!(
        net.decide(&host("none.ip.test"), 443),
        Decision::Unreachable(why) if why == "none.ip.test has no address"
    ));
    let log: Vec<(String, String, String)> = f
        .log
        .recent(10)
        .into_iter()
        .map(|v| (v.target, v.decision.unwrap(), v.rule))
        .collect();
    assert_eq!(log[0].0, "127-0-0-1.ip.test:8080");
    assert_eq!(log[0].1, "denied");
    assert!(log[0].2.contains("DNS-rebinding guard"), "{:?}", log[0]);
    assert_eq!(log[1].1, "denied");
    assert!(log[2..].iter().all(|(_, d, _)| d == "allowed"), "{log:?}");
    let notes = net.finish();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0], expected);
}
