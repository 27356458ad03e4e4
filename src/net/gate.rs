//! The session's network gate: what the proxy does with each connection a filtered command
//! asks for. deniedDomains refuses (never asked about), allowedDomains and the user's network
//! grants allow, any other host is asked about once per command when there is a UI and
//! refused when there is none. An allowed host is then resolved and reached only at addresses
//! its kind of host may lead to (`Rules::refusal`): a name anywhere a network reaches, but at
//! this machine's loopback, its link and cloud metadata services only when that address is
//! allowed itself. Decisions go to the violation log (each distinct host, port and decision
//! once per command, at most `MAX_LOGGED` per command).
//!
//! `Gate` lives as long as the session (its rules are replaced when the config is reloaded);
//! each filtered command gets a `CommandNet` that serves its proxy listener, remembers the
//! answers given for it ("allow for this command", a refusal) and, when the command ends,
//! stops its proxy, withdraws a question still open, and says which hosts were blocked and
//! how to allow them.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::addresses::{own_addresses, place_on, unwrapped, Local, Place};
use super::domains::{DomainFilter, Host, Verdict};
use super::proxy::{self, Decision, Resolve, Server};
use crate::violations::{Violation, ViolationLog};

/// Hosts one command may ask the user about; the rest are refused without asking.
pub(crate) const MAX_QUESTIONS: usize = 8;
/// Blocked hosts named after a command; the rest are counted.
const MAX_NOTES: usize = 10;
/// Network decisions logged per command; then one line says how many more there were.
const MAX_LOGGED: usize = 1000;

/// What the gate knows from the config and the approvals store.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) filter: DomainFilter,
    /// Hosts the user allowed from a prompt, each with how (for the log).
    pub(crate) granted: Vec<(Host, String)>,
    /// Where an entry added to allowedDomains takes effect, worded for a note
    /// (`network.allowedDomains in <the file that holds the list>`).
    pub(crate) allowed_in: String,
    /// Where the deniedDomains entries are, worded the same way.
    pub(crate) denied_in: String,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            filter: DomainFilter::default(),
            granted: vec![],
            allowed_in: "network.allowedDomains".into(),
            denied_in: "network.deniedDomains".into(),
        }
    }
}

/// The rules' answer for a host, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Judgement {
    /// The rule that allows it (an allowedDomains entry, or how the user allowed it).
    Allowed(String),
    /// The rule that refuses it.
    Denied(String),
    Unlisted,
}

/// Why an allowed host may not be connected to at one of its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The address is denied by this rule (deniedDomains lists it, or `localhost` when it is
    /// the loopback).
    Denied(String),
    /// A name leads to this machine or its link, and the address itself is not allowed: the
    /// DNS-rebinding guard.
    Local(Local),
    /// `0.0.0.0`, `::`: the loopback by another name.
    Unspecified,
    /// `localhost` resolves somewhere else than the loopback.
    NotLoopback,
}

impl Rules {
    /// deniedDomains first (deny wins, over grants too), then allowedDomains, then the user's
    /// grants.
    pub(crate) fn judge(&self, host: &Host) -> Judgement {
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

    /// Why `host`, allowed, may not be connected to at `ip`, one of its addresses (None: it
    /// may), `own` being this machine's addresses. Whatever rule allowed the host, an exact
    /// entry, a wildcard or the user's answer: the answer depends on the address alone (see
    /// `addresses`). An address deniedDomains lists is refused to every host; the unspecified
    /// addresses to all; `localhost` reaches only the loopback; an IP address asked for is
    /// reached as judged; a name reaches a network anywhere, and this machine or its link only
    /// where the rules allow that address itself, so a name's DNS cannot hand it what the user
    /// did not allow.
    pub(crate) fn refusal(&self, host: &Host, ip: IpAddr, own: &[IpAddr]) -> Option<Refusal> {
        let judge_ip = |ip: IpAddr| {
            let inner = unwrapped(ip);
            match (self.judge(&Host::Ip(inner)), self.judge(&Host::Ip(ip))) {
                (Judgement::Denied(r), _) | (_, Judgement::Denied(r)) => Judgement::Denied(r),
                (Judgement::Allowed(r), _) | (_, Judgement::Allowed(r)) => Judgement::Allowed(r),
                _ => Judgement::Unlisted,
            }
        };
        let address = judge_ip(ip);
        if let Judgement::Denied(rule) = address {
            return Some(Refusal::Denied(rule));
        }
        match (place_on(ip, own), host) {
            (Place::Unspecified, _) => Some(Refusal::Unspecified),
            (Place::Local(Local::Loopback), Host::Name(n)) if n == "localhost" => None,
            (_, Host::Name(n)) if n == "localhost" => Some(Refusal::NotLoopback),
            (Place::Network, _) | (_, Host::Ip(_)) => None,
            (Place::Local(kind), Host::Name(_)) => match address {
                Judgement::Allowed(_) => None,
                _ => Some(Refusal::Local(kind)),
            },
        }
    }

    /// The sentence after "Blocked: a connection to host:port: " for a refusal at `ip`:
    /// why, and the one thing that changes it.
    fn refused(&self, host: &Host, ip: IpAddr, refusal: &Refusal) -> (String, String) {
        let at = Host::Ip(ip);
        match refusal {
            Refusal::Denied(rule) => (
                format!("{host} resolves to {at}, which {rule} denies"),
                format!("only removing that entry from {} allows it", self.denied_in),
            ),
            Refusal::Local(kind) => (
                format!(
                    "{host} resolves to {at}, {}: a name leads there only if that address is allowed itself (DNS-rebinding guard)",
                    kind.describe()
                ),
                format!("add \"{at}\" to {}", self.allowed_in),
            ),
            Refusal::Unspecified => (
                format!("{host} resolves to {at}, which leads to this machine's loopback and is never connected to"),
                format!("to reach the loopback, connect to 127.0.0.1, listed in {}", self.allowed_in),
            ),
            Refusal::NotLoopback => (
                format!("localhost resolves to {at}, not a loopback address"),
                "connect to 127.0.0.1 instead".to_string(),
            ),
        }
    }

    /// Whether the host's own loopback is allowed (`localhost`, 127.0.0.1 or ::1 listed):
    /// then a request for it must reach the proxy, not the sandbox's empty loopback.
    pub(crate) fn allows_host_loopback(&self) -> bool {
        matches!(
            self.judge(&Host::Name("localhost".into())),
            Judgement::Allowed(_)
        )
    }
}

/// The value of `NO_PROXY` for a filtered command: the sandbox's own loopback (servers the
/// command starts itself), unless the host's loopback is allowed, which only the proxy reaches.
pub(crate) fn no_proxy(rules: &Rules) -> &'static str {
    if rules.allows_host_loopback() {
        ""
    } else {
        "localhost,127.0.0.1,::1"
    }
}

/// Whether `host` is on this machine or its local network: the loopback, an IP that is not
/// public, or one of this machine's own (a cloud machine's public address). A prompt about
/// one says so.
fn is_local(host: &Host) -> bool {
    match host {
        Host::Name(n) => n == "localhost",
        Host::Ip(ip) => {
            !super::addresses::is_public(*ip)
                || own_addresses()
                    .map_or(true, |own| matches!(place_on(*ip, &own), Place::Local(_)))
        }
    }
}

/// A question for the user about one host, as plain data: the session words the prompt
/// (it knows the config files an answer writes to).
#[derive(Debug, Clone)]
pub(crate) struct Question {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The host is on this machine or its local network (`is_local`): the prompt says so.
    pub(crate) local: bool,
    /// Set when the command is over: the question is withdrawn (answered at once).
    pub(crate) withdrawn: Arc<AtomicBool>,
}

/// The user's answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Allowed for good: the config file holds the host now (grantDomain).
    Saved,
    /// Allowed for the rest of this session, in memory only.
    ForSession,
    /// Declined (or an answer the question did not offer), with what the connection is told.
    Declined(String),
    /// No one answered: no one to ask, or the question was withdrawn. With what the
    /// connection is told when there is no one to ask.
    Unanswered(String),
}

/// Asks the user and waits for the answer.
pub(crate) type Asker = Arc<dyn Fn(&Question) -> Reply + Send + Sync>;

pub(crate) struct Gate {
    rules: RwLock<Rules>,
    asker: RwLock<Option<Asker>>,
    /// One question at a time: dialogs do not pile up.
    asking: Mutex<()>,
    log: ViolationLog,
    /// Hosts the user allowed for this session: in memory only (gone on restart), kept
    /// across reloads of the rules.
    session_hosts: Mutex<Vec<Host>>,
    resolve: Resolve,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gate {
    pub(crate) fn new(log: ViolationLog, resolve: Resolve) -> Gate {
        Gate {
            rules: RwLock::new(Rules::default()),
            asker: RwLock::new(None),
            asking: Mutex::new(()),
            log,
            session_hosts: Mutex::default(),
            resolve,
        }
    }

    pub(crate) fn set_rules(&self, mut rules: Rules) {
        // Held until the rules are in place: a host allowed meanwhile is not lost with the
        // rules it was added to.
        let session_hosts = lock(&self.session_hosts);
        for host in session_hosts.iter() {
            rules.granted.push((host.clone(), SESSION_GRANT.into()));
        }
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = rules;
    }

    pub(crate) fn rules(&self) -> Rules {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn judge(&self, host: &Host) -> Judgement {
        self.rules
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .judge(host)
    }

    /// `NO_PROXY` for a filtered command under the rules as they are now (see `no_proxy`).
    pub(crate) fn no_proxy(&self) -> &'static str {
        no_proxy(&self.rules.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Who answers questions from now on (None: nobody; unlisted hosts are refused).
    pub(crate) fn set_asker(&self, asker: Option<Asker>) {
        *self.asker.write().unwrap_or_else(|e| e.into_inner()) = asker;
    }

    /// Allows `host` for the rest of this session, in memory only (as a write allowed for
    /// this session is): the next command and every reload of the rules keep it.
    pub(crate) fn allow_for_session(&self, host: &Host) {
        let mut hosts = lock(&self.session_hosts);
        if !hosts.contains(host) {
            hosts.push(host.clone());
        }
        self.rules
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .granted
            .push((host.clone(), SESSION_GRANT.into()));
    }
}

/// Where an allowed host may be reached.
enum Route {
    /// At these of its addresses, in the resolver's order.
    To(Vec<SocketAddr>),
    /// It does not resolve: why.
    Unresolved(String),
    /// At none: why (the first address's refusal) and what would allow it.
    Refused { why: String, fix: String },
}

impl Gate {
    /// Resolves an allowed host and keeps the addresses the rules let it reach
    /// (`Rules::refusal`). A name that also resolves to addresses it may not reach is
    /// connected at the others.
    fn route(&self, host: &Host, port: u16) -> Route {
        let addrs = match (self.resolve)(host, port) {
            Ok(a) if a.is_empty() => return Route::Unresolved(format!("{host} has no address")),
            Ok(a) => a,
            Err(e) => return Route::Unresolved(format!("cannot resolve {host}: {e}")),
        };
        // Asked each time (interfaces come and go: a VPN, a container bridge), and only for a
        // name: an address asked for, or `localhost`, gets the same answer without them.
        let own = match host {
            Host::Name(n) if n != "localhost" => match own_addresses() {
                Ok(own) => own,
                Err(e) => {
                    return Route::Refused {
                        why: format!("this machine's own addresses could not be listed ({e})"),
                        fix: "run it again".into(),
                    }
                }
            },
            _ => vec![],
        };
        let rules = self.rules.read().unwrap_or_else(|e| e.into_inner());
        let mut refused = None;
        let mut reachable = Vec::new();
        for addr in addrs {
            match rules.refusal(host, addr.ip(), &own) {
                None => reachable.push(addr),
                Some(r) => {
                    refused.get_or_insert((addr.ip(), r));
                }
            }
        }
        match refused {
            Some((ip, r)) if reachable.is_empty() => {
                let (why, fix) = rules.refused(host, ip, &r);
                Route::Refused { why, fix }
            }
            _ => Route::To(reachable),
        }
    }
}

/// The rule a host allowed "for this session" is logged under.
const SESSION_GRANT: &str = "allowed by the user for this session (in memory only)";

/// One answer of the user, kept for the rest of the command.
type Answer = Result<(), String>;
/// Where the connections waiting on a question get its answer.
type Waiter = Arc<(Mutex<Option<Answer>>, Condvar)>;

/// A host's state in one command.
enum Slot {
    Answered(Answer),
    /// Being asked (about this port): wait for the answer here.
    Asking(Waiter, u16),
}

/// What a command's connections have met so far.
#[derive(Default)]
struct Seen {
    slots: HashMap<Host, Slot>,
    questions: usize,
    /// Blocked hosts (each once), with the sentence that says why and how to allow them.
    blocked: Vec<(String, String)>,
    more_blocked: usize,
    logged: HashSet<(String, u16, bool)>,
    unlogged: usize,
}

/// Publishes the answer about `host` to the command and to the connections waiting for it,
/// when dropped.
struct Answered<'a> {
    net: &'a CommandNet,
    host: &'a Host,
    waiter: Waiter,
    answer: Answer,
}

impl Drop for Answered<'_> {
    fn drop(&mut self) {
        lock(&self.net.seen)
            .slots
            .insert(self.host.clone(), Slot::Answered(self.answer.clone()));
        let (slot, ready) = &*self.waiter;
        *lock(slot) = Some(self.answer.clone());
        ready.notify_all();
    }
}

/// One filtered command's side of the gate.
pub(crate) struct CommandNet {
    gate: Arc<Gate>,
    seen: Mutex<Seen>,
    server: Mutex<Option<Server>>,
    finished: Arc<AtomicBool>,
}

impl std::fmt::Debug for CommandNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandNet")
            .field("finished", &self.finished.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl CommandNet {
    pub(crate) fn new(gate: Arc<Gate>) -> Arc<CommandNet> {
        Arc::new(CommandNet {
            gate,
            seen: Mutex::default(),
            server: Mutex::default(),
            finished: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Serves `listener` (the command's way out) as the proxy, judged by this command's gate.
    /// After `finish` the listener is just closed.
    pub(crate) fn serve(self: &Arc<Self>, listener: TcpListener) -> std::io::Result<()> {
        // Under the lock `finish` takes the server with: either it stops this one, or this
        // one sees that it came too late.
        let mut server = lock(&self.server);
        if self.finished.load(Ordering::SeqCst) {
            return Ok(());
        }
        let me = self.clone();
        let decide: proxy::Decide = Arc::new(move |host: &Host, port: u16| me.decide(host, port));
        match proxy::serve(listener, decide) {
            Ok(s) => {
                *server = Some(s);
                Ok(())
            }
            Err(e) => {
                // The listener is closed: the command has no network, and is told why.
                lock(&self.seen).blocked.push((
                    String::new(),
                    format!("Blocked: the network proxy could not start ({e}); this command had no network. Run it again."),
                ));
                Err(e)
            }
        }
    }

    /// Serves a new listener on the host's 127.0.0.1 (an ephemeral port, returned): the way
    /// out where there are no network namespaces (macOS, where the profile allows only this
    /// port), and for tools and benchmarks.
    pub(crate) fn serve_loopback(self: &Arc<Self>) -> std::io::Result<u16> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        self.serve(listener)?;
        Ok(port)
    }

    /// The decision about one connection to `host:port`; logged.
    pub(crate) fn decide(&self, host: &Host, port: u16) -> Decision {
        let judged = match self.gate.judge(host) {
            Judgement::Allowed(rule) => Ok(rule),
            Judgement::Denied(rule) => {
                let denied_in = self.gate.rules().denied_in;
                Err((
                    format!(
                        "Blocked: a connection to {host}:{port}: {host} is denied by {rule}; only removing that entry from {denied_in} allows it"
                    ),
                    rule,
                ))
            }
            Judgement::Unlisted => match self.answer_for(host, port) {
                Ok(()) => Ok("allowed by the user".to_string()),
                Err(e) => Err((e, "not in network.allowedDomains".to_string())),
            },
        };
        let outcome = judged.and_then(|rule| match self.gate.route(host, port) {
            Route::To(addrs) => Ok((rule, Decision::Connect(addrs))),
            Route::Unresolved(why) => Ok((rule, Decision::Unreachable(why))),
            Route::Refused { why, fix } => Err((
                format!("Blocked: a connection to {host}:{port}: {why}; {fix}."),
                why,
            )),
        });
        let shown = host.to_string();
        match outcome {
            Ok((rule, decision)) => {
                self.log(&shown, port, true, &rule);
                decision
            }
            Err((reason, rule)) => {
                self.log(&shown, port, false, &rule);
                let mut seen = lock(&self.seen);
                if !seen.blocked.iter().any(|(h, _)| *h == shown) {
                    if seen.blocked.len() < MAX_NOTES {
                        seen.blocked.push((shown, reason.clone()));
                    } else {
                        seen.more_blocked += 1;
                    }
                }
                Decision::Deny(reason)
            }
        }
    }

    /// Logs a decision: each distinct one once per command, at most `MAX_LOGGED`.
    fn log(&self, host: &str, port: u16, allowed: bool, rule: &str) {
        let mut seen = lock(&self.seen);
        let key = (host.to_string(), port, allowed);
        if seen.logged.contains(&key) {
            return;
        }
        if seen.logged.len() >= MAX_LOGGED {
            seen.unlogged += 1;
            return;
        }
        seen.logged.insert(key);
        drop(seen);
        self.gate
            .log
            .append(&Violation::network(host, port, allowed, rule));
    }

    /// The user's answer about an unlisted host for this command: given already, being
    /// asked (waited for), or asked now.
    fn answer_for(&self, host: &Host, port: u16) -> Answer {
        let slot = {
            let mut seen = lock(&self.seen);
            match seen.slots.get(host) {
                Some(Slot::Answered(a)) => return a.clone(),
                Some(Slot::Asking(w, _)) => Err(w.clone()),
                None if seen.questions >= MAX_QUESTIONS => {
                    let a: Answer = Err(format!(
                        "Blocked: a connection to {host}:{port}: {host} is not in network.allowedDomains, and this command already asked about {MAX_QUESTIONS} hosts; list the hosts it needs in network.allowedDomains"
                    ));
                    seen.slots.insert(host.clone(), Slot::Answered(a.clone()));
                    return a;
                }
                None => {
                    seen.questions += 1;
                    let w: Waiter = Arc::default();
                    seen.slots
                        .insert(host.clone(), Slot::Asking(w.clone(), port));
                    Ok(w)
                }
            }
        };
        let waiter = match slot {
            // Another connection asks: wait for its answer.
            Err(w) => {
                let (lock_, ready) = &*w;
                let mut got = lock(lock_);
                while got.is_none() {
                    got = ready.wait(got).unwrap_or_else(|e| e.into_inner());
                }
                return got.clone().unwrap_or(Err(String::new()));
            }
            Ok(w) => w,
        };
        // Whatever happens in `ask` (a panic included), the waiters get an answer.
        let mut answered = Answered {
            net: self,
            host,
            waiter,
            answer: Err(format!(
                "Blocked: a connection to {host}:{port}: the question could not be asked"
            )),
        };
        answered.answer = self.ask(host, port);
        answered.answer.clone()
    }

    fn ask(&self, host: &Host, port: u16) -> Answer {
        let _one_at_a_time = lock(&self.gate.asking);
        // Allowed while the question waited its turn (another command's "for this session").
        if let Judgement::Allowed(_) = self.gate.judge(host) {
            return Ok(());
        }
        if self.finished.load(Ordering::SeqCst) {
            return Err(format!(
                "Blocked: a connection to {host}:{port}: the command ended before the question about {host} was asked; run it again and answer the dialog."
            ));
        }
        let asker = self
            .gate
            .asker
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let question = Question {
            host: host.to_string(),
            port,
            local: is_local(host),
            withdrawn: self.finished.clone(),
        };
        // The session always sets an asker (it says which config files allow the host);
        // without one, the gate's own words.
        let reply = match asker {
            Some(ask) => ask(&question),
            None => Reply::Unanswered(format!(
                "Blocked: a connection to {host}:{port}: {host} is not in network.allowedDomains, and there is no UI to ask the user. To allow it, add \"{host}\" to network.allowedDomains."
            )),
        };
        match reply {
            Reply::Unanswered(_) if self.finished.load(Ordering::SeqCst) => Err(format!(
                "Blocked: a connection to {host}:{port}: the command ended before the question about {host} was answered; run it again and answer the dialog."
            )),
            Reply::Unanswered(reason) | Reply::Declined(reason) => Err(reason),
            Reply::Saved => Ok(()),
            Reply::ForSession => {
                self.gate.allow_for_session(host);
                Ok(())
            }
        }
    }

    /// The questions of this command still open: host, port and the note that says so.
    fn open_questions(&self) -> Vec<(String, u16, String)> {
        let mut open: Vec<(String, u16, String)> = lock(&self.seen)
            .slots
            .iter()
            .filter_map(|(host, slot)| match slot {
                Slot::Asking(_, port) => Some((
                    host.to_string(),
                    *port,
                    format!("Blocked: a connection to {host}:{port}: the command ended before the question about {host} was answered; run it again and answer the dialog."),
                )),
                Slot::Answered(_) => None,
            })
            .collect();
        open.sort();
        open
    }

    /// After the command: stops its proxy (the listener and every connection still open),
    /// withdraws a question still being asked, and returns a sentence per host that was
    /// blocked, with how to allow it.
    pub(crate) fn finish(&self) -> Vec<String> {
        self.finished.store(true, Ordering::SeqCst);
        if let Some(server) = lock(&self.server).take() {
            server.stop();
        }
        // A question still open now is answered by no one: its connection is refused after
        // this, when no note is read any more. Said (and logged) here instead.
        let open = self.open_questions();
        for (host, port, _) in &open {
            self.log(
                host,
                *port,
                false,
                "the command ended before the user answered",
            );
        }
        let mut seen = lock(&self.seen);
        let open: Vec<(String, String)> = open
            .into_iter()
            .filter(|(h, _, _)| !seen.blocked.iter().any(|(b, _)| b == h))
            .map(|(h, _, note)| (h, note))
            .collect();
        let mut notes: Vec<String> = std::mem::take(&mut seen.blocked)
            .into_iter()
            .chain(open)
            .map(|(_, reason)| reason)
            .collect();
        if seen.more_blocked > 0 {
            notes.push(format!(
                "Blocked connections to {} more hosts (see /sandbox log).",
                seen.more_blocked
            ));
        }
        if seen.unlogged > 0 {
            let n = std::mem::take(&mut seen.unlogged);
            drop(seen);
            self.gate.log.append(&Violation::now(
                "network",
                "connect",
                "(more hosts)",
                &format!("{n} more network decisions of one command were not logged (at most {MAX_LOGGED} each)"),
                "",
            ));
        }
        notes
    }
}

/// The proxy's door of a session's pod: one listener on the pod's 127.0.0.1 for every command
/// run there and every process they leave running, served until the pod goes. Each
/// connection is judged by the command running now (its notes, its questions), or between
/// commands by the last one, whose questions are over: an unlisted host is refused then, and
/// logged.
pub(crate) struct SessionDoor {
    current: Arc<Mutex<Arc<CommandNet>>>,
    server: Option<Server>,
}

impl SessionDoor {
    pub(crate) fn serve(gate: Arc<Gate>, listener: TcpListener) -> std::io::Result<SessionDoor> {
        let idle = CommandNet::new(gate);
        idle.finished.store(true, Ordering::SeqCst);
        let current = Arc::new(Mutex::new(idle));
        let judge = current.clone();
        let decide: proxy::Decide = Arc::new(move |host: &Host, port: u16| {
            let net = lock(&judge).clone();
            net.decide(host, port)
        });
        let server = proxy::serve(listener, decide)?;
        Ok(SessionDoor {
            current,
            server: Some(server),
        })
    }

    /// From now on, connections are `net`'s.
    pub(crate) fn attach(&self, net: Arc<CommandNet>) {
        *lock(&self.current) = net;
    }
}

impl Drop for SessionDoor {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
