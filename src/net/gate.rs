//! The session's network gate: what the proxy does with each connection a filtered command
//! asks for. deniedDomains refuses (never asked about), allowedDomains and the user's network
//! grants allow, any other host is asked about once per command when there is a UI and
//! refused when there is none. Every decision goes to the violation log.
//!
//! `Gate` lives as long as the session (its rules are replaced when the config is reloaded);
//! each filtered command gets a `CommandNet` that serves its proxy listener, remembers the
//! answers given for it ("allow for this command", a refusal) and, when the command ends,
//! stops its proxy and says which hosts were blocked and how to allow them.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::domains::{DomainFilter, Host, Verdict};
use super::proxy::{self, Decision, Resolve, Server};
use crate::approvals::{Grant, Scope, Store};
use crate::prompts::{self, Prompt};
use crate::violations::{Violation, ViolationLog};

/// What the gate knows from the config and the approvals store.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    pub filter: DomainFilter,
    /// Hosts the user allowed from a prompt, each with how (for the log).
    pub granted: Vec<(Host, String)>,
    /// The config files a domain is added to for good, for the prompt and messages.
    pub project_file: PathBuf,
    pub global_file: PathBuf,
}

/// The rules' answer for a host, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The rule that allows it.
    Allowed(String),
    /// The rule that refuses it.
    Denied(String),
    Unlisted,
}

impl Rules {
    /// deniedDomains first (deny wins, over grants too), then allowedDomains, then the user's
    /// grants.
    pub fn judge(&self, host: &Host) -> Judgement {
        match self.filter.decide(host) {
            Verdict::Denied(entry) => Judgement::Denied(format!("network.deniedDomains {entry:?}")),
            Verdict::Allowed(entry) => {
                Judgement::Allowed(format!("network.allowedDomains {entry:?}"))
            }
            Verdict::Unlisted => match self.granted.iter().find(|(h, _)| h == host) {
                Some((_, how)) => Judgement::Allowed(how.clone()),
                None => Judgement::Unlisted,
            },
        }
    }

    /// Whether the host's own loopback is allowed (`localhost`, 127.0.0.1 or ::1 listed):
    /// then a request for it must reach the proxy, not the sandbox's empty loopback.
    pub fn allows_host_loopback(&self) -> bool {
        matches!(
            self.judge(&Host::Name("localhost".into())),
            Judgement::Allowed(_)
        )
    }
}

/// The value of `NO_PROXY` for a filtered command: the sandbox's own loopback (servers the
/// command starts itself), unless the host's loopback is allowed, which only the proxy reaches.
pub fn no_proxy(rules: &Rules) -> &'static str {
    if rules.allows_host_loopback() {
        ""
    } else {
        "localhost,127.0.0.1,::1"
    }
}

/// A question for the user about one host.
#[derive(Debug, Clone)]
pub struct Question {
    pub host: String,
    pub port: u16,
    pub prompt: Prompt,
}

/// Asks the user and waits for the answer: a choice id (`abort`, `once`, `session`,
/// `always`, or `project` / `global` once the config file holds the host), or None when
/// there is no one to ask.
pub type Asker = Arc<dyn Fn(&Question) -> Option<String> + Send + Sync>;

pub struct Gate {
    rules: RwLock<Rules>,
    asker: RwLock<Option<Asker>>,
    /// One question at a time: dialogs do not pile up.
    asking: Mutex<()>,
    log: ViolationLog,
    /// Where "for this session" and "always" answers are stored, and the session's id.
    store: Option<(Store, String)>,
    resolve: Resolve,
}

impl Gate {
    pub fn new(log: ViolationLog, store: Option<(Store, String)>, resolve: Resolve) -> Gate {
        Gate {
            rules: RwLock::new(Rules::default()),
            asker: RwLock::new(None),
            asking: Mutex::new(()),
            log,
            store,
            resolve,
        }
    }

    pub fn set_rules(&self, rules: Rules) {
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = rules;
    }

    pub fn rules(&self) -> Rules {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Who answers questions from now on (None: nobody; unlisted hosts are refused).
    pub fn set_asker(&self, asker: Option<Asker>) {
        *self.asker.write().unwrap_or_else(|e| e.into_inner()) = asker;
    }

    /// Records the user's "for this session" / "always" answer: in memory at once, and in
    /// the approvals store (so that a reload keeps it). A store that cannot be written is
    /// reported; the host stays allowed for this process.
    fn grant(&self, host: &Host, scope: Scope) -> Result<(), String> {
        let how = match scope {
            Scope::Session => "allowed by the user for this session",
            Scope::Always => "allowed by the user for good",
        };
        self.rules
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .granted
            .push((host.clone(), how.into()));
        match &self.store {
            None => Err("no approvals store".into()),
            Some((store, session)) => store
                .grant(
                    scope,
                    Grant::NetworkHost {
                        host: host.to_string(),
                    },
                    session,
                    "user: network prompt",
                )
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

/// One answer of the user, kept for the rest of the command.
type Answer = Result<(), String>;
/// Where the connections waiting on a question get its answer.
type Waiter = Arc<(Mutex<Option<Answer>>, Condvar)>;

/// A host blocked during a command, for the note after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub host: String,
    /// A whole sentence: what was blocked, why, and how to allow it.
    pub reason: String,
}

/// One filtered command's side of the gate.
pub struct CommandNet {
    gate: Arc<Gate>,
    answers: Mutex<HashMap<Host, Answer>>,
    /// Questions being asked, for the other connections to the same host to wait on.
    pending: Mutex<HashMap<Host, Waiter>>,
    blocked: Mutex<Vec<Blocked>>,
    server: Mutex<Option<Server>>,
    finished: AtomicBool,
}

impl std::fmt::Debug for CommandNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandNet")
            .field("finished", &self.finished.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl CommandNet {
    pub fn new(gate: Arc<Gate>) -> Arc<CommandNet> {
        Arc::new(CommandNet {
            gate,
            answers: Mutex::default(),
            pending: Mutex::default(),
            blocked: Mutex::default(),
            server: Mutex::default(),
            finished: AtomicBool::new(false),
        })
    }

    /// Serves `listener` (the command's way out) as the proxy, judged by this command's gate.
    pub fn serve(self: &Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        if self.finished.load(Ordering::SeqCst) {
            return Ok(());
        }
        let me = self.clone();
        let decide: proxy::Decide = Arc::new(move |host: &Host, port: u16| me.decide(host, port));
        let server = proxy::serve(listener, decide, self.gate.resolve.clone())?;
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = Some(server);
        Ok(())
    }

    /// The decision about one connection to `host:port`; logged.
    pub fn decide(&self, host: &Host, port: u16) -> Decision {
        let (allowed, rule) = match self.gate.rules.read().map(|r| r.judge(host)) {
            Ok(Judgement::Allowed(rule)) => (Ok(()), rule),
            Ok(Judgement::Denied(rule)) => {
                let reason = format!(
                    "Blocked: a connection to {host}:{port}: {host} is denied by {rule}; only removing that entry from the config allows it"
                );
                (Err(reason), rule)
            }
            Ok(Judgement::Unlisted) => {
                let answer = self.answer_for(host, port);
                let rule = match &answer {
                    Ok(()) => "allowed by the user".to_string(),
                    Err(_) => "not in network.allowedDomains".to_string(),
                };
                (answer, rule)
            }
            Err(_) => (
                Err(format!(
                    "Blocked: a connection to {host}:{port}: the network rules are unreadable"
                )),
                String::new(),
            ),
        };
        let shown = host.to_string();
        self.gate
            .log
            .append(&Violation::network(&shown, port, allowed.is_ok(), &rule));
        match allowed {
            Ok(()) => Decision::Allow,
            Err(reason) => {
                let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
                if !blocked.iter().any(|b| b.host == shown) {
                    blocked.push(Blocked {
                        host: shown,
                        reason: reason.clone(),
                    });
                }
                Decision::Deny(reason)
            }
        }
    }

    /// The user's answer about an unlisted host for this command: given already, being
    /// asked (waited for), or asked now.
    fn answer_for(&self, host: &Host, port: u16) -> Answer {
        if let Some(a) = self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(host)
        {
            return a.clone();
        }
        let (slot, first) = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            match pending.get(host) {
                Some(slot) => (slot.clone(), false),
                None => {
                    let slot = Arc::new((Mutex::new(None), Condvar::new()));
                    pending.insert(host.clone(), slot.clone());
                    (slot, true)
                }
            }
        };
        if !first {
            let (lock, ready) = &*slot;
            let mut got = lock.lock().unwrap_or_else(|e| e.into_inner());
            while got.is_none() {
                got = ready.wait(got).unwrap_or_else(|e| e.into_inner());
            }
            return got.clone().unwrap_or(Err(String::new()));
        }
        let answer = self.ask(host, port);
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host.clone(), answer.clone());
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(host);
        let (lock, ready) = &*slot;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer.clone());
        ready.notify_all();
        answer
    }

    fn ask(&self, host: &Host, port: u16) -> Answer {
        let _one_at_a_time = self.gate.asking.lock().unwrap_or_else(|e| e.into_inner());
        let rules = self.gate.rules();
        // Allowed while the question waited its turn (another command's "for this session").
        if let Judgement::Allowed(_) = rules.judge(host) {
            return Ok(());
        }
        let shown = host.to_string();
        let prompt = prompts::network_host(&shown, port, &rules.project_file, &rules.global_file);
        let asker = self
            .gate
            .asker
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let question = Question {
            host: shown,
            port,
            prompt,
        };
        let answer = match (&asker, self.finished.load(Ordering::SeqCst)) {
            (Some(ask), false) => ask(&question),
            _ => None,
        };
        match answer.as_deref() {
            None => Err(question.prompt.no_ui),
            // "project" / "global": the extension wrote the config file (grantDomain).
            Some("once" | "project" | "global") => Ok(()),
            Some(scope @ ("session" | "always")) => {
                let scope = if scope == "session" {
                    Scope::Session
                } else {
                    Scope::Always
                };
                // Allowed as the user said, even if the store cannot keep it.
                let _ = self.gate.grant(host, scope);
                Ok(())
            }
            Some(_) => Err(question.prompt.declined),
        }
    }

    /// After the command: stops its proxy (the listener and every connection still open)
    /// and returns a sentence per host that was blocked, with how to allow it.
    pub fn finish(&self) -> Vec<String> {
        self.finished.store(true, Ordering::SeqCst);
        if let Some(server) = self.server.lock().unwrap_or_else(|e| e.into_inner()).take() {
            server.stop();
        }
        let blocked = std::mem::take(&mut *self.blocked.lock().unwrap_or_else(|e| e.into_inner()));
        blocked.into_iter().map(|b| b.reason).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::domains::parse_host;
    use std::sync::atomic::AtomicUsize;

    fn rules(allowed: &[&str], denied: &[&str]) -> Rules {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Rules {
            filter: DomainFilter::new(&v(allowed), &v(denied)).unwrap(),
            granted: vec![],
            project_file: "/w/p/.pi/sandbox.json".into(),
            global_file: "/home/u/.pi/agent/extensions/sandbox.json".into(),
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        gate: Arc<Gate>,
        log: ViolationLog,
        store: Store,
    }

    fn fixture(r: Rules) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let log = ViolationLog::in_agent_dir(dir.path());
        let store = Store::in_agent_dir(dir.path()).unwrap();
        let gate = Arc::new(Gate::new(
            log.clone(),
            Some((store.clone(), "s1".into())),
            proxy::system_resolver(),
        ));
        gate.set_rules(r);
        Fixture {
            _dir: dir,
            gate,
            log,
            store,
        }
    }

    fn host(s: &str) -> Host {
        parse_host(s).unwrap()
    }

    /// An asker that answers `answer` and counts the questions.
    fn asker(answer: Option<&str>) -> (Asker, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let answer = answer.map(str::to_string);
        let a: Asker = Arc::new(move |_q: &Question| {
            c.fetch_add(1, Ordering::SeqCst);
            answer.clone()
        });
        (a, count)
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
            Judgement::Allowed(_)
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
        assert_eq!(net.decide(&host("PyPI.org."), 443), Decision::Allow);
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
    fn an_unlisted_host_is_asked_about_once_per_command() {
        let f = fixture(rules(&[], &[]));
        let (once, asked) = asker(Some("once"));
        f.gate.set_asker(Some(once));
        let net = CommandNet::new(f.gate.clone());
        for _ in 0..3 {
            assert_eq!(
                net.decide(&host("registry.npmjs.org"), 443),
                Decision::Allow
            );
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // "Once" is this command's: the next one asks again, and nothing was stored.
        let next = CommandNet::new(f.gate.clone());
        assert_eq!(
            next.decide(&host("registry.npmjs.org"), 443),
            Decision::Allow
        );
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        assert!(f.store.load("s1").unwrap().entries.is_empty());
        // A refusal holds for the rest of the command without asking again.
        let (no, refused) = asker(Some("abort"));
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
    fn session_and_always_answers_are_stored_and_asked_no_more() {
        let f = fixture(rules(&[], &[]));
        let (session, asked) = asker(Some("session"));
        f.gate.set_asker(Some(session));
        let net = CommandNet::new(f.gate.clone());
        assert_eq!(
            net.decide(&host("Files.PythonHosted.org"), 443),
            Decision::Allow
        );
        let later = CommandNet::new(f.gate.clone());
        assert_eq!(
            later.decide(&host("files.pythonhosted.org"), 80),
            Decision::Allow
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        let (always, _) = asker(Some("always"));
        f.gate.set_asker(Some(always));
        assert_eq!(later.decide(&host("[::2]"), 443), Decision::Allow);
        let stored: Vec<(String, Scope)> = f
            .store
            .load("s1")
            .unwrap()
            .network_grants()
            .map(|(h, e)| (h.to_string(), e.scope))
            .collect();
        assert_eq!(
            stored,
            [
                ("files.pythonhosted.org".into(), Scope::Session),
                ("[::2]".into(), Scope::Always)
            ]
        );
    }

    #[test]
    fn concurrent_connections_to_one_host_share_one_question() {
        let f = fixture(rules(&[], &[]));
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let slow: Asker = Arc::new(move |_q: &Question| {
            c.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(100));
            Some("once".into())
        });
        f.gate.set_asker(Some(slow));
        let net = CommandNet::new(f.gate.clone());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| assert_eq!(net.decide(&host("a.org"), 443), Decision::Allow));
            }
        });
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_question_names_the_host_and_offers_every_scope() {
        let f = fixture(rules(&[], &[]));
        let seen = Arc::new(Mutex::new(None));
        let s2 = seen.clone();
        let a: Asker = Arc::new(move |q: &Question| {
            *s2.lock().unwrap() = Some(q.clone());
            None
        });
        f.gate.set_asker(Some(a));
        let net = CommandNet::new(f.gate.clone());
        assert!(matches!(
            net.decide(&host("xn--bcher-kva.de"), 8443),
            Decision::Deny(_)
        ));
        let q = seen.lock().unwrap().clone().unwrap();
        assert_eq!((q.host.as_str(), q.port), ("xn--bcher-kva.de", 8443));
        let ids: Vec<&str> = q.prompt.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "once", "session", "project", "global"]);
        assert!(q.prompt.title.contains("xn--bcher-kva.de"));
    }

    #[test]
    fn after_the_command_nothing_is_asked() {
        let f = fixture(rules(&[], &[]));
        let (yes, asked) = asker(Some("once"));
        f.gate.set_asker(Some(yes));
        let net = CommandNet::new(f.gate.clone());
        net.finish();
        assert!(matches!(
            net.decide(&host("late.org"), 443),
            Decision::Deny(_)
        ));
        assert_eq!(asked.load(Ordering::SeqCst), 0);
    }
}
