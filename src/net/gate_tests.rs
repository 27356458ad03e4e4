use super::*;
use crate::net::domains::parse_host;
use std::sync::atomic::AtomicUsize;

fn rules(allowed: &[&str], denied: &[&str]) -> Rules {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Rules {
        filter: DomainFilter::new(&v(allowed), &v(denied)).unwrap(),
        granted: vec![],
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
    let gate = Arc::new(Gate::new(log.clone(), proxy::system_resolver()));
    gate.set_rules(r);
    Fixture {
        _dir: dir,
        gate,
        log,
    }
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
        Judgement::Allowed {
            rule: "granted".into(),
            exact: false
        }
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
        Decision::Allow(_)
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
            Decision::Allow(_)
        ));
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // The next command, and the rules loaded again (a config change), keep it.
    f.gate.set_rules(rules(&[], &[]));
    let next = CommandNet::new(f.gate.clone());
    assert!(matches!(
        next.decide(&host("registry.npmjs.org"), 80),
        Decision::Allow(_)
    ));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(matches!(
        f.gate.judge(&host("registry.npmjs.org")),
        Judgement::Allowed { rule, .. } if rule.contains("in memory only")
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
                    Decision::Allow(_)
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
fn the_end_of_the_command_withdraws_its_open_question() {
    let f = fixture(rules(&[], &[]));
    // An asker that waits for an answer that never comes, until withdrawn.
    let a: Asker = Arc::new(|q: &Question| {
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
    std::thread::sleep(std::time::Duration::from_millis(50));
    net.finish();
    match asking.join().unwrap() {
        Decision::Deny(r) => assert!(r.contains("over before the user answered"), "{r}"),
        d => panic!("{d:?}"),
    }
    // The gate is free for the next command's questions.
    let (yes, _) = asker(Reply::ForSession);
    f.gate.set_asker(Some(yes));
    let next = CommandNet::new(f.gate.clone());
    assert!(matches!(
        next.decide(&host("slow.org"), 443),
        Decision::Allow(_)
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
