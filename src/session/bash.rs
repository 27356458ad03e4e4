//! pi's bash: how a command runs (sandboxed, unsandboxed, asked about, refused), the launch
//! of a sandboxed one, and the audit and notes after it.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use super::commands::{Commands, Prepared, Ticket};
use super::prompts;
use super::servers;
use super::{env_aliases, granted_how, Session};
use crate::net::gate::CommandNet;
use crate::platform::detect;
use crate::platform::launch::{self, Command, Launch, LaunchError};
use crate::policy::bash::{
    self as bash_policy, Adapter, BashDecision, BashRequest, Capability, Network,
};
use crate::policy::environment;
use crate::policy::guard::{Guard, Op, Verdict};
use crate::shown;
use crate::surface::audit::Finding;
use crate::surface::scan::Scan;
use crate::violations::Violation;

fn built(launch: Result<Launch, LaunchError>) -> Prepared {
    match launch {
        Ok(l) => Prepared::Sandboxed(Box::new(l)),
        Err(e) => Prepared::Denied(format!(
            "Blocked: the sandbox for this command could not be set up: {e}"
        )),
    }
}

fn blocked_reason(findings: &[Finding]) -> String {
    let mut out = String::from(
        "Blocked: an earlier sandboxed command left files on pi's control surface that the sandbox could not move aside, so no command runs until they are gone:",
    );
    for f in findings {
        let _ = write!(out, "\n- {f}");
    }
    out
}

/// The paths an error line names: quoted ones, and the word before `: <error>` (the form of
/// bash, git, coreutils and Python messages).
fn paths_in_error_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in ['\'', '"', '`'] {
        let parts: Vec<&str> = line.split(q).collect();
        out.extend(parts.iter().skip(1).step_by(2).map(|s| s.to_string()));
    }
    for error in [
        ": Read-only file system",
        ": Device or resource busy",
        ": No such file or directory",
        ": Permission denied",
    ] {
        if let Some(i) = line.find(error) {
            let before = &line[..i];
            let word = before.rsplit([' ', '\t']).next().unwrap_or("");
            out.push(word.trim_matches(|c| "'\"`:,".contains(c)).to_string());
        }
    }
    out.retain(|p| !p.is_empty() && !p.contains('\0'));
    out
}

/// Passes of the audit's structural step before it gives up and blocks bash.
const MAX_STRUCTURAL_PASSES: usize = 64;

/// The sandbox program runs on the host, outside every sandbox: one the agent could have
/// replaced (in or below a directory it may write) is refused, whatever found it.
fn program_in_reach(guard: &Guard, capability: &Capability) -> Option<String> {
    let program = match capability {
        Capability::Bwrap { program, .. } | Capability::SandboxExec { program } => program,
        Capability::Unavailable { .. } => return None,
    };
    let real = crate::paths::canonicalize(program).unwrap_or_else(|_| program.clone());
    let root = guard.allow_write_paths().find(|root| {
        [program, &real]
            .iter()
            .any(|p| crate::policy::protected::is_under(p, root))
    })?;
    Some(format!(
        "Blocked: the sandbox program {} lies in {}, which the agent may write; a program there could have been replaced, and it runs outside the sandbox. Install it in a system directory, or point {} elsewhere.",
        program.display(),
        root.display(),
        crate::process::SYSTEM_DIRS_VAR
    ))
}

impl Session {
    /// `network.allowUnixSockets` as it stands now (each entry resolved like a path rule; one
    /// that is no socket yet is left out), and `allowAllUnixSockets`.
    fn sockets(&self) -> launch::Sockets {
        let Ok(l) = &self.state else {
            return launch::Sockets::default();
        };
        let env = &self.options.env;
        let paths: Vec<PathBuf> = l
            .config
            .allow_unix_sockets
            .value
            .iter()
            .filter_map(|raw| crate::paths::resolve(raw, &env.home, &env.cwd).ok())
            .collect();
        launch::Sockets {
            #[cfg(target_os = "linux")]
            allowed: crate::platform::linux::supervisor::resolve_allowed(&paths),
            #[cfg(not(target_os = "linux"))]
            allowed: {
                let _ = paths;
                vec![]
            },
            allow_all: l.config.allow_all_unix_sockets.value,
        }
    }

    /// How a shell command runs: the policy's decision, and for a sandboxed run the launch.
    /// `network`: what the user asked for (`--sandbox-network`), None for the default.
    pub(crate) fn prepare_bash(&self, command: &str, network: Option<Network>) -> Prepared {
        self.prepare(Command::Shell(command), network)
    }

    /// Like `prepare_bash` for an argv run without a shell (the CLI's `run -- CMD ARGS`).
    pub(crate) fn prepare_argv(
        &self,
        argv: &[std::ffi::OsString],
        network: Option<Network>,
    ) -> Prepared {
        self.prepare(Command::Argv(argv), network)
    }

    fn prepare(&self, command: Command, network: Option<Network>) -> Prepared {
        self.prepare_with(command, network, &detect::detect())
    }

    /// `prepare` with the OS sandbox found here, `capability` (tests choose one).
    pub(crate) fn prepare_with(
        &self,
        command: Command,
        network: Option<Network>,
        capability: &Capability,
    ) -> Prepared {
        let guard = match self.guard() {
            Some(g) => g,
            None => {
                return Prepared::Denied(self.refused(Op::Write, &self.options.env.cwd).reason);
            }
        };
        let network = network.unwrap_or_else(|| self.default_network());
        let text = match &command {
            Command::Shell(text) => Some(*text),
            Command::Argv(_) => None,
        };
        let approved = text
            .and_then(|t| self.granted.command_grant(t))
            .map(granted_how);
        let decision = bash_policy::decide(&BashRequest {
            capability,
            enabled: guard.enabled().value,
            mode: guard.mode().value,
            network,
            approval: guard.approval_mode(),
            approved,
        });
        let (adapter, network) = match decision {
            BashDecision::Sandboxed { adapter, network } => (adapter, network),
            BashDecision::Unsandboxed { reason } => return Prepared::Unsandboxed(reason),
            BashDecision::NeedsApproval { reason } => {
                return match text {
                    Some(t) => {
                        Prepared::NeedsApproval(Box::new(prompts::unsandboxed_command(t, &reason)))
                    }
                    None => Prepared::Denied(prompts::unsandboxed_command("", &reason).no_ui),
                }
            }
            BashDecision::Denied { reason } => return Prepared::Denied(reason),
        };
        if let Some(reason) = program_in_reach(guard, capability) {
            return Prepared::Denied(reason);
        }
        self.launch(guard, command, (adapter, network), capability)
    }

    /// The launch of a command the policy sandboxes: the audit's baseline taken, the OS
    /// layer set up with what the command may see and reach.
    fn launch(
        &self,
        guard: &Guard,
        command: Command,
        (adapter, network): (Adapter, Network),
        capability: &Capability,
    ) -> Prepared {
        let mut auditor = self.auditor.borrow_mut();
        // Fail closed: what an earlier command left that could not be neutralised blocks
        // every command until it is gone or safe.
        let blocking = auditor.retry_blocked();
        if !blocking.is_empty() {
            return Prepared::Denied(blocked_reason(&blocking));
        }
        // The baseline of the audit after the command, whichever OS layer runs it.
        let scan = match self.scan_before_command(guard) {
            Ok(scan) => scan,
            Err(why) => return Prepared::Denied(why),
        };
        auditor.baseline(&scan);
        self.remember(&scan);
        self.env_aliases.borrow_mut().elsewhere = env_aliases(scan.hidden_env_files.iter());
        *self.hidden_env.borrow_mut() = (scan.protected.iter())
            .filter(|f| matches!(f.why, crate::policy::guard::Protection::EnvFile { .. }))
            .map(|f| f.path.clone())
            .chain(scan.hidden_env_files.iter().cloned())
            .collect();
        let tmp = std::env::temp_dir();
        let unset_env: Vec<String> = self.dropped_env().into_iter().map(|d| d.name).collect();
        let set_env = self.set_env(guard, network);
        let sockets = self.sockets();
        let net = (network == Network::Filtered).then(|| CommandNet::new(self.gate.clone()));
        let mut servers = self.servers.borrow_mut();
        let pod = match (adapter, capability) {
            #[cfg(target_os = "linux")]
            (Adapter::Bwrap, Capability::Bwrap { program, .. }) if pods_wanted() => {
                servers.pod_for(network, program, &self.gate)
            }
            _ => None,
        };
        let setup = |program, features| launch::Setup {
            net: net.as_ref(),
            guard,
            program,
            features,
            unset_env: &unset_env,
            set_env: &set_env,
            sockets: &sockets,
            network,
            tmp_dir: &tmp,
            scan: &scan,
            pod,
        };
        let launch = match (adapter, capability, command) {
            (Adapter::Bwrap, Capability::Bwrap { program, features }, _) => {
                launch::bwrap(&setup(program, *features), command)
            }
            (Adapter::Seatbelt, Capability::SandboxExec { program }, Command::Shell(text)) => {
                launch::seatbelt(&setup(program, launch::NO_BWRAP_FEATURES), text)
            }
            (Adapter::Seatbelt, _, Command::Argv(_)) => return Prepared::Denied(
                "Blocked: on macOS, `pi-sandbox run` takes a shell command: pi-sandbox run -- bash -c '...'".into(),
            ),
            _ => {
                return Prepared::Denied(
                    "Blocked: the sandbox adapter does not match this platform.".into(),
                )
            }
        };
        // Placeholders are ours: the audit must not take them for the command's work.
        if let Ok(l) = &launch {
            auditor.baseline_paths(&l.placeholders);
            if let (true, Some(net)) = (l.in_pod, &l.net) {
                servers.attach(network, net);
            }
        }
        built(launch)
    }

    /// After a command run in a pod: what commands left running that was not running before
    /// (for the note), and whether anything runs at all.
    pub(crate) fn left_running(&self) -> (Vec<servers::Background>, bool) {
        self.servers.borrow_mut().left_running()
    }

    /// `/sandbox stop`: ends what commands left running; how many processes ran.
    pub(crate) fn stop_background(&self) -> usize {
        let stopped = self.servers.borrow_mut().stop();
        if stopped > 0 {
            self.audit_after_command();
        }
        stopped
    }

    /// Why what commands leave running ends with them here, once.
    pub(crate) fn background_failure_note(&self) -> Option<String> {
        self.servers.borrow_mut().failure_note()
    }

    /// What commands left running now (`/sandbox`).
    pub(crate) fn background(&self) -> Vec<servers::Background> {
        self.servers.borrow().background()
    }

    /// What the guard keeps read-only in bash's writable trees before a command, with the
    /// env files it hides; or why bash cannot know what to hide.
    fn scan_before_command(&self, guard: &Guard) -> Result<Scan, String> {
        // A repository whose hooks directory was not known: what lies there is protected
        // from this command on.
        let mut scan = self.with_hooks_of(guard, self.scan(guard));
        scan.hidden_env_files =
            crate::surface::scan::env_files_around(guard, &mut self.env_listings.borrow_mut());
        if guard.hides_env_files() {
            // Fail closed: without the search's answer bash cannot know what to hide.
            let elsewhere = match &self.env_search {
                Some(search) => search.found()?,
                None => {
                    return Err(
                        "the search for env files in the home directory is not running".into(),
                    )
                }
            };
            let known: HashSet<PathBuf> = scan.hidden_env_files.iter().cloned().collect();
            scan.hidden_env_files.extend(
                elsewhere
                    .iter()
                    .filter_map(|p| crate::surface::scan::env_file_to_mask(guard, p))
                    .filter(|p| !known.contains(p)),
            );
            // What git already holds hides nothing, and a mask would only break git. (Not
            // in approval mode deny: the user keeps env files away whatever they hold.)
            if guard.approval_mode() == crate::policy::guard::ApprovalMode::Ask {
                self.committed_env.unhide(&mut scan, guard);
            }
        }
        Ok(scan)
    }

    /// The variables a sandboxed command gets set: caches redirected where it may write,
    /// and with a filtered network what keeps the proxy's own hosts off it.
    fn set_env(&self, guard: &Guard, network: Network) -> Vec<(String, String)> {
        let mut set_env = environment::cache_redirects(
            |name| std::env::var(name).ok(),
            &self.options.env.home,
            |p| guard.check(Op::Write, p).allowed(),
        );
        if network == Network::Filtered {
            let no_proxy = self.gate.no_proxy();
            for name in ["NO_PROXY", "no_proxy", "npm_config_noproxy"] {
                set_env.push((name.into(), no_proxy.into()));
            }
            // Node's own fetch and http honour the proxy variables only when told to (22.21+).
            set_env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        }
        set_env
    }

    /// The network mode when the user chose none: filtered when the config lists domains.
    pub(crate) fn default_network(&self) -> Network {
        match &self.state {
            Ok(l) => Network::default_for(
                !l.config.allowed_domains.value.is_empty()
                    || !l.config.denied_domains.value.is_empty(),
            ),
            Err(_) => Network::Off,
        }
    }

    /// After a sandboxed command: neutralises control-surface paths it created (a `.pi`
    /// directory, a new repository's live hooks or command-running config) and reports them,
    /// with new denyWrite matches.
    pub(crate) fn audit_after_command(&self) -> Vec<Finding> {
        let Some(guard) = self.guard() else {
            return vec![];
        };
        if !guard.active() {
            return vec![];
        }
        let mut auditor = self.auditor.borrow_mut();
        let mut now = self.scan(guard);
        // First what changes which directories are git dirs; then, on the tree as it is
        // without those, everything else: a new `commondir` would otherwise make the new
        // files beside it git's data (exempt from denyWrite) or git config to judge.
        let mut findings = Vec::new();
        // Each pass can uncover more (a commondir inside a directory that was git's data).
        // Every pass that goes on has moved a path off the tree, so it ends; a bound keeps a
        // path that keeps coming back from stalling pi (then bash is blocked: fail closed).
        for pass in 0.. {
            let structural = auditor.after_structural(&now);
            let moved: Vec<PathBuf> = structural
                .iter()
                .filter(|f| f.moved_to.is_some())
                .map(|f| f.path.clone())
                .collect();
            findings.extend(structural);
            if moved.is_empty() {
                break;
            }
            if pass == MAX_STRUCTURAL_PASSES {
                findings.push(auditor.block(
                    &moved[0],
                    "it came back each time it was moved aside; the sandbox cannot tell what the command left here",
                ));
                break;
            }
            now = self.scan(guard);
        }
        // A hooks directory the command made git look at (a submodule's `core.worktree`
        // changed, say): what it put there is judged as a hook.
        let now = self.with_hooks_of(guard, now);
        // An env file git checked out (`worktree add`, `checkout`) whose content git held
        // before: what denyWrite keeps the agent from writing is what the user committed.
        let committed = self.committed_env.clone();
        let checked_out = |f: &crate::surface::scan::Found| {
            use crate::policy::guard::Protection::{DenyWrite, EnvFile};
            let plain = match &f.why {
                DenyWrite(_) | EnvFile { also: None } => true,
                EnvFile { also: Some(also) } => matches!(**also, DenyWrite(_)),
                _ => false,
            };
            plain
                && guard.approval_mode() == crate::policy::guard::ApprovalMode::Ask
                && crate::policy::guard::is_env_file(&f.path)
                && committed.hides_nothing(&f.path, guard)
        };
        let rest = auditor.after_accepting(&now, &checked_out);
        let moved = rest.iter().any(|f| f.moved_to.is_some());
        findings.extend(rest);
        // What the audit moved aside is gone: scan again only if it moved anything.
        self.remember(&if moved { self.scan(guard) } else { now });
        for f in &findings {
            let operation = match (&f.moved_to, f.blocking) {
                (_, true) => "left by a command (bash blocked)".to_string(),
                (Some(to), _) => format!("left by a command, moved to {}", to.display()),
                (None, _) => "left by a command".to_string(),
            };
            self.log.append(&Violation::now(
                "audit",
                &operation,
                &f.path.display().to_string(),
                &f.why,
                "",
            ));
        }
        findings
    }

    /// Records the unix-socket connections the supervisor refused during a command.
    pub(crate) fn log_socket_refusals(&self, refused: &[launch::Refusal]) {
        for r in refused {
            self.log.append(&Violation::now(
                "sockets",
                "connect",
                &r.socket,
                "a unix socket outside the sandbox (network.allowUnixSockets)",
                "",
            ));
        }
    }

    /// The paths an error line of a command's output names, as the command named them: `~`
    /// and relative names expanded, `/tmp/...` the session's own (`Guard::session_path`).
    pub(crate) fn paths_in_output_line(&self, guard: &Guard, line: &str) -> Vec<PathBuf> {
        let env = &self.options.env;
        paths_in_error_line(line)
            .iter()
            .filter_map(|c| crate::paths::expand(c, &env.home, &env.cwd).ok())
            .map(|p| guard.session_path(&p))
            .collect()
    }

    /// Notes for a sandboxed command's output: each path an error line says could not be
    /// written because the file system is read-only or busy (the sandbox's mounts), and each
    /// path it could not find or open that denyRead hides in the sandbox, with the rule.
    /// Without them the model sees only "Read-only file system" or "No such file or
    /// directory", and no word that the sandbox did it.
    pub(crate) fn explain_write_failures(&self, output: &str) -> Vec<String> {
        let Some(guard) = self.guard() else {
            return vec![];
        };
        let mut notes: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for line in output.lines() {
            let op = if line.contains("Read-only file system")
                || line.contains("Device or resource busy")
            {
                Op::Write
            } else if line.contains("No such file or directory")
                || line.contains("Permission denied")
            {
                Op::Read
            } else {
                continue;
            };
            for p in self.paths_in_output_line(guard, line) {
                let d = match op {
                    Op::Write => env_file_kept(
                        guard,
                        self.second_name_check(guard, guard.check(Op::Write, &p)),
                    ),
                    Op::Read => guard.check(Op::Read, &p),
                };
                if d.verdict != Verdict::Deny || !seen.insert((op, d.path.clone())) {
                    continue;
                }
                // The path once: the reason's own "Blocked write to <path>: " is left out.
                let why = d
                    .reason
                    .strip_prefix(&format!(
                        "Blocked {} {} {}: ",
                        op.as_str(),
                        if op == Op::Write { "to" } else { "of" },
                        shown::path(&d.path)
                    ))
                    .unwrap_or(&d.reason);
                notes.push(match op {
                    Op::Write => format!("{} is read-only in the sandbox: {why}", d.path.display()),
                    Op::Read => format!(
                        "{} is hidden in the sandbox (commands see it missing or empty): {why}",
                        d.path.display()
                    ),
                });
            }
            if notes.len() >= 5 {
                break;
            }
        }
        // An env file the notes above named already (approval mode deny) is said once.
        let hidden = self.explain_hidden_env_files(guard, output);
        notes.extend(
            hidden
                .into_iter()
                .filter(|(p, _)| !seen.contains(&(Op::Read, p.clone())))
                .map(|(_, note)| note),
        );
        notes
    }

    /// Notes for the env files the last command's error lines name that the sandbox hid from
    /// it (a mask: git cannot hash, add or stash a character device): each names the file
    /// and the one answer that shows it to commands.
    fn explain_hidden_env_files(&self, guard: &Guard, output: &str) -> Vec<(PathBuf, String)> {
        let hidden = self.hidden_env.borrow();
        if hidden.is_empty() {
            return vec![];
        }
        let cwd = &self.options.env.cwd;
        let mut named: Vec<&PathBuf> = Vec::new();
        for line in output.lines() {
            for word in line.split(|c: char| c.is_whitespace() || "'\"`:,()".contains(c)) {
                let Some(file) = hidden_env_file_named(&hidden, cwd, word) else {
                    continue;
                };
                if !named.contains(&file) {
                    named.push(file);
                }
            }
            if named.len() >= 5 {
                break;
            }
        }
        named
            .into_iter()
            .map(|p| (p.clone(), self.hidden_env_note(guard, p)))
            .collect()
    }

    fn hidden_env_note(&self, guard: &Guard, path: &std::path::Path) -> String {
        let shown_path = shown::path(path);
        let head = format!(
            "{shown_path} is hidden from commands in the sandbox (an env file, which may hold secrets): git and other programs find an empty character device there, so they cannot read, hash, add or stash it."
        );
        let answer = match guard.approval_mode() {
            crate::policy::guard::ApprovalMode::Deny => {
                "PI_SANDBOX_APPROVAL_MODE=deny hides env files for good; unset it (or set ask) to be asked instead.".to_string()
            }
            _ => "To show it to commands for the rest of this session, read it with the read tool and answer \"Allow for this session\".".to_string(),
        };
        let why_template = match &self.state {
            Ok(l) if crate::policy::guard::is_env_template(path) => format!(
                " Env templates are hidden because filesystem.envTemplatesSecret is true in {}.",
                l.config.env_templates_secret.source
            ),
            _ => String::new(),
        };
        format!("{head} {answer}{why_template}")
    }
}

/// A write the guard would ask about, of an env file bash shows (its content is git's, see
/// `CommittedEnv::hides_nothing`) but keeps read-only for a denyWrite match: refused in bash,
/// so said as the denyWrite rule's.
fn env_file_kept(
    guard: &Guard,
    d: crate::policy::guard::Decision,
) -> crate::policy::guard::Decision {
    if d.verdict != Verdict::Prompt || d.rule != crate::policy::guard::ENV_FILE_RULE {
        return d;
    }
    let mut cache = crate::policy::protected::GitDirCache::default();
    let mut is_git_dir = |p: &std::path::Path| guard.is_git_dir_for_writes(p, &mut cache);
    match guard.write_protection(&d.path, &mut is_git_dir) {
        Some(crate::policy::guard::Protection::DenyWrite(label)) => crate::policy::guard::Decision {
            verdict: Verdict::Deny,
            reason: format!(
                "Commands may not change or remove it: remove the pattern from filesystem.denyWrite if git must (a checkout or rebase that changes {}).",
                shown::path(&d.path)
            ),
            rule: label,
            ..d
        },
        _ => d,
    }
}

/// The hidden env file `word` (a word of an error line: a path relative to the session's
/// directory, or to a directory below it, as git prints them) names, if any.
fn hidden_env_file_named<'a>(
    hidden: &'a [PathBuf],
    cwd: &std::path::Path,
    word: &str,
) -> Option<&'a PathBuf> {
    let path = std::path::Path::new(word);
    if word.is_empty() || !crate::policy::guard::is_env_file(path) {
        return None;
    }
    let exact = crate::paths::lexical_normalize(&cwd.join(path));
    if let Some(p) = hidden.iter().find(|p| **p == exact) {
        return Some(p);
    }
    // Relative to where the command had gone: its last names match, in the session's tree
    // only (output is the command's to write: a bare `.env` must not name another
    // project's hidden file to it).
    let tail: PathBuf = path
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect();
    hidden
        .iter()
        .find(|p| p.starts_with(cwd) && p.ends_with(&tail))
}

/// `PI_SANDBOX_BACKGROUND=command`: what a command leaves running ends with it (no pods).
#[cfg(target_os = "linux")]
fn pods_wanted() -> bool {
    std::env::var_os("PI_SANDBOX_BACKGROUND").is_none_or(|v| v != "command")
}

/// What of a launch outlives it until the command is over.
#[derive(Default)]
pub(crate) struct Ended {
    supervisor: Option<launch::Supervisor>,
    pub(crate) net: Option<Arc<CommandNet>>,
    /// It ran in the session's pod: what it left may still run.
    in_pod: bool,
}

impl Ended {
    /// Drops `launch` (its fds, its temp files); its socket supervisor and its proxy, if
    /// any, are kept for what they refused.
    pub(crate) fn of(mut launch: Launch) -> Ended {
        launch.discard();
        Ended {
            supervisor: launch.supervisor.take(),
            net: launch.net.take(),
            in_pod: launch.in_pod,
        }
    }
}

/// After a command: what the socket supervisor refused (it waits a moment for the command's
/// last process to go), the hosts its proxy blocked (the proxy stops), and what the audit
/// found, one sentence each; the socket refusals go to the violation log (the proxy and the
/// audit log their own). A note is one line naming what the command made or reached: all
/// of it is escaped (`shown::text`), so a name's newline cannot start a line of its own.
pub(crate) fn finished(ended: Ended, ticket: Option<(Arc<Commands>, Ticket)>) -> Vec<String> {
    notes_of(ended, ticket)
        .iter()
        .map(|n| shown::text(n))
        .collect()
}

fn notes_of(ended: Ended, ticket: Option<(Arc<Commands>, Ticket)>) -> Vec<String> {
    // Said once per session, where bash hides env files; git is asked without the lock.
    let committed_env = ticket.as_ref().and_then(|(commands, _)| {
        let session = commands.session();
        let guard = session.guard().filter(|g| g.hides_env_files())?;
        Some((session.committed_env(), guard.clone()))
    });
    let Ended {
        supervisor,
        net,
        in_pod,
    } = ended;
    let (left, running) = match (&ticket, in_pod) {
        (Some((commands, _)), true) => commands.session().left_running(),
        _ => (vec![], false),
    };
    // With processes left running, the command's filter may never go quiet: no waiting.
    let wait = if running {
        std::time::Duration::ZERO
    } else {
        std::time::Duration::from_secs(2)
    };
    let refused = supervisor.map(|s| s.finish(wait)).unwrap_or_default();
    let blocked_hosts = net.map(|n| n.finish()).unwrap_or_default();
    if let Some((commands, _)) = &ticket {
        if !refused.is_empty() {
            commands.session().log_socket_refusals(&refused);
        }
    }
    let mut out: Vec<String> = refused
        .into_iter()
        .map(|r| {
            let mut c = r.message.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect(),
                None => r.message,
            }
        })
        .collect();
    out.extend(blocked_hosts);
    if let (Some((commands, _)), true) = (&ticket, running) {
        // What runs on between commands is audited again before the next one.
        commands.audit_before_next();
    }
    if let Some((commands, _)) = &ticket {
        out.extend(commands.session().background_failure_note());
    }
    out.extend(audit(ticket));
    out.extend(servers::left_running_note(&left));
    out.extend(committed_env.and_then(|(c, guard)| c.first_note(&|p| guard.is_secret_env_file(p))));
    out
}

/// The audit of a ticket's command, one sentence per finding (none without a ticket).
fn audit(ticket: Option<(Arc<Commands>, Ticket)>) -> Vec<String> {
    match ticket {
        Some((commands, ticket)) => commands
            .finish(ticket)
            .iter()
            .map(|f| f.to_string())
            .collect(),
        None => vec![],
    }
}

/// What to prepare, for `PrepareTask`.
pub(crate) enum Preparation {
    Bash(String),
    Argv(Vec<std::ffi::OsString>),
}

pub(crate) fn prepare_on(
    commands: &Commands,
    what: &Preparation,
    network: Option<Network>,
) -> (Prepared, Option<Ticket>) {
    commands.prepare(|session| {
        session.refresh();
        match what {
            Preparation::Bash(command) => session.prepare_bash(command, network),
            Preparation::Argv(argv) => session.prepare_argv(argv, network),
        }
    })
}

#[cfg(test)]
#[path = "bash_tests.rs"]
mod tests;
