//! The N-API skin: JS objects and classes, converted and handed to the session; each error
//! mapped to its JS `code`.

#[cfg(test)]
mod dts_tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Buffer, BufferSlice, Task};
use napi::Error;
use napi_derive::napi;
use serde_json::Value;

use crate::platform::launch::Launch;
use crate::policy::bash::Network;
use crate::policy::config::{Env, Mode};
use crate::policy::guard::{Decision, Op, Step};
use crate::policy::{config, pi_loads, pi_session};
use crate::session::commands::{Commands, Ticket};
use crate::session::tools;
use crate::session::{FileOpError, Options, Prepared, Session, WriteScope};
use crate::{paths, redact, shown};

/// A JS error whose `code` is our stable code (e.g. `E_BAD_MODE`).
fn js_error(code: &str, message: impl Into<String>) -> Error<String> {
    Error::new(code.to_string(), message.into())
}

/// What `Sandbox.load` and `Sandbox.loadAsync` take.
#[napi(object)]
pub struct LoadOptions {
    /// The session's working directory (pi's `ctx.cwd`).
    pub cwd: String,
    /// Defaults to `$HOME`.
    pub home: Option<String>,
    /// Defaults to `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub agent_dir: Option<String>,
    /// The folder pi keeps this session's transcript in, as pi names it
    /// (`ctx.sessionManager.getSessionDir()`, made absolute against pi's own cwd). Whatever
    /// is given, the folder `$PI_CODING_AGENT_SESSION_DIR` or pi's settings (`sessionDir`)
    /// name is pi's too (its next session goes there), and the only one when this is absent.
    pub session_dir: Option<String>,
    /// The live transcript (`ctx.sessionManager.getSessionFile()`, absolute): pi appends to
    /// it on the host.
    pub session_file: Option<String>,
    /// Defaults to `$PI_SANDBOX_APPROVAL_MODE` (ask when unset). Any other value does not
    /// throw: the sandbox loads refusing (`error.code` `E_APPROVAL_MODE`).
    #[napi(ts_type = "ApprovalMode")]
    pub approval_mode: Option<String>,
    /// pi's session id (`ctx.sessionManager.getSessionId()`): grants "for this session" of
    /// the approvals store belong to it. Defaults to one per process.
    pub session_id: Option<String>,
    /// The extensions pi's settings make it load at start, as pi's package manager resolves
    /// them (absolute): kept from the agent with the folder each imports from.
    pub pi_extensions: Option<Vec<PiExtension>>,
}

/// An extension pi loads at start.
#[napi(object)]
pub struct PiExtension {
    /// The file (or folder) pi loads, or a settings entry that names nothing yet.
    pub path: String,
    /// The root of the package it comes from, if it comes from one.
    pub package_root: Option<String>,
}

/// The guard's answer about one path.
#[napi(object, js_name = "Decision")]
pub struct JsDecision {
    #[napi(ts_type = "Verdict")]
    pub verdict: String,
    #[napi(ts_type = "Op")]
    pub op: String,
    /// Canonical path that was checked.
    pub path: String,
    /// The rule that decided.
    pub rule: String,
    /// The file (or "built-in defaults", ...) the rule came from.
    pub source: String,
    /// What happened, why, and how to change it.
    pub reason: String,
}

impl From<Decision> for JsDecision {
    fn from(d: Decision) -> Self {
        JsDecision {
            verdict: d.verdict.as_str().into(),
            op: d.op.as_str().into(),
            path: d.path.display().to_string(),
            rule: d.rule,
            source: d.source,
            reason: d.reason,
        }
    }
}

/// The guard's answer about one pi tool call (`checkTool`).
#[napi(object, js_name = "ToolDecision")]
pub struct JsToolDecision {
    pub decision: JsDecision,
    /// Input key to overwrite before pi runs the tool (e.g. grep's `glob`), if any.
    pub patch_key: Option<String>,
    /// The value `patchKey` gets.
    pub patch_value: Option<String>,
    /// What to ask the user when the verdict is "prompt".
    #[napi(ts_type = "GuardPrompt")]
    pub prompt: Option<JsPrompt>,
}

/// One answer of a `Prompt`.
#[napi(object, js_name = "Choice")]
pub struct JsChoice {
    /// Sent back to the matching `grant...` call (which ids each prompt kind offers: `PromptOf`).
    #[napi(ts_type = "ChoiceId")]
    pub id: String,
    pub label: String,
}

/// A permission prompt: the question, the choices (the first keeps things blocked), and
/// what to tell the model after a No and when there is no UI to ask in.
#[napi(object, js_name = "Prompt")]
pub struct JsPrompt {
    #[napi(ts_type = "PromptKind")]
    pub kind: String,
    pub title: String,
    pub choices: Vec<JsChoice>,
    pub declined: String,
    pub no_ui: String,
    /// The project file's content hash the trust prompt is about (pass to `answerTrust`).
    pub sha256: Option<String>,
}

impl From<crate::session::prompts::Prompt> for JsPrompt {
    fn from(p: crate::session::prompts::Prompt) -> Self {
        JsPrompt {
            kind: p.kind.into(),
            title: p.title,
            choices: p
                .choices
                .into_iter()
                .map(|c| JsChoice {
                    id: c.id,
                    label: c.label,
                })
                .collect(),
            declined: p.declined,
            no_ui: p.no_ui,
            sha256: None,
        }
    }
}

/// The project config file (`<cwd>/.pi/sandbox.json`) and whether its loosening rules apply.
#[napi(object, js_name = "ProjectTrust")]
pub struct JsProjectTrust {
    pub file: String,
    pub sha256: String,
    #[napi(ts_type = "TrustState")]
    pub trust: String,
    /// What the file would widen, one line each (`key: what`).
    pub widenings: Vec<String>,
}

/// One rule `explain` consulted.
#[napi(object, js_name = "Step")]
pub struct JsStep {
    pub rule: String,
    pub source: String,
    pub matched: bool,
}

impl From<Step> for JsStep {
    fn from(s: Step) -> Self {
        JsStep {
            rule: s.rule,
            source: s.source,
            matched: s.matched,
        }
    }
}

/// `explain`'s answer: the decision and how the guard came to it.
#[napi(object, js_name = "Explanation")]
pub struct JsExplanation {
    pub decision: JsDecision,
    /// Every rule consulted, in the order the guard consulted them.
    pub steps: Vec<JsStep>,
}

/// Why the policy could not be loaded (`Sandbox.error`).
#[napi(object, js_name = "LoadError")]
pub struct JsLoadError {
    #[napi(ts_type = "LoadErrorCode")]
    pub code: String,
    pub message: String,
    /// The config file at fault, when it is one.
    pub file: Option<String>,
}

/// One entry of the violation log.
#[napi(object, js_name = "Violation")]
pub struct JsViolation {
    /// RFC 3339, UTC.
    pub time: String,
    #[napi(ts_type = "ViolationLayer")]
    pub layer: String,
    /// What was attempted: `read`, `write`, `connect`, ...
    pub operation: String,
    /// The path, or `host:port`.
    pub target: String,
    pub rule: String,
    pub source: String,
    /// The network proxy's entries only (every other entry is a refusal).
    #[napi(ts_type = "'allowed' | 'denied'")]
    pub decision: Option<String>,
    pub host: Option<String>,
    pub port: Option<u32>,
}

/// A variable of pi's environment that sandboxed commands do not get (`Sandbox.droppedEnv`).
#[napi(object, js_name = "DroppedEnv")]
pub struct JsDroppedEnv {
    pub name: String,
    pub why: String,
}

/// The OS sandbox bash runs in (`sandboxCapability`).
#[napi(object, js_name = "Capability")]
pub struct JsCapability {
    #[napi(ts_type = "CapabilityKind")]
    pub kind: String,
    /// The program found, when there is one.
    pub program: Option<String>,
    /// Why there is no sandbox and how to fix it, when there is none.
    pub reason: Option<String>,
}

/// A shell command or argv, prepared: the policy's verdict and, when sandboxed, what to spawn.
/// Spawn `program` with `args` directly (no shell), giving the child `fds` as its fds 3, 4, ...
/// in order (`stdio: ["ignore", "pipe", "pipe", ...fds]`); call `release()` once spawned and
/// `finish()` when the run is over. Made by `Sandbox.prepareBash` and `prepareRun` only.
#[napi]
pub struct PreparedCommand {
    verdict: &'static str,
    reason: Option<String>,
    /// For verdict "ask": what to ask the user.
    ask: Option<crate::session::prompts::Prompt>,
    launch: Option<Launch>,
    /// The session and the ticket of this command's audit (sandboxed commands only).
    audit: Option<(Arc<Commands>, Ticket)>,
}

fn utf8_args(args: &[std::ffi::OsString]) -> napi::Result<Vec<String>, String> {
    args.iter()
        .map(|a| {
            a.to_str().map(str::to_owned).ok_or_else(|| {
                js_error(
                    "E_LAUNCH",
                    format!("argument {a:?} is not valid UTF-8 and cannot be passed to spawn"),
                )
            })
        })
        .collect()
}

#[napi]
impl PreparedCommand {
    /// What to do with the command: spawn `program` (`sandboxed`), run it as it is
    /// (`unsandboxed`), ask the user with `prompt` (`ask`), or refuse it with `reason` (`denied`).
    #[napi(getter, catch_unwind, ts_return_type = "CommandVerdict")]
    pub fn verdict(&self) -> String {
        self.verdict.into()
    }

    /// Why it is unsandboxed or denied, for the user and the model.
    #[napi(getter, catch_unwind)]
    pub fn reason(&self) -> Option<String> {
        self.reason.clone()
    }

    /// For verdict "ask" (no OS sandbox, approval mode ask): what to ask the user before
    /// running the command unsandboxed.
    #[napi(getter, catch_unwind, ts_return_type = "CommandPrompt | null")]
    pub fn prompt(&self) -> Option<JsPrompt> {
        self.ask.clone().map(Into::into)
    }

    /// The program to spawn (bwrap or sandbox-exec), when sandboxed.
    #[napi(getter, catch_unwind)]
    pub fn program(&self) -> Option<String> {
        self.launch
            .as_ref()
            .map(|l| l.program.display().to_string())
    }

    /// Its arguments (bwrap's options come on fd 3).
    /// @throws {SandboxError} `E_LAUNCH` when one is not UTF-8 (spawn could not pass it).
    #[napi(getter, catch_unwind)]
    pub fn args(&self) -> napi::Result<Option<Vec<String>>, String> {
        self.launch.as_ref().map(|l| utf8_args(&l.args)).transpose()
    }

    /// Environment variables to leave out of the child's environment: secrets (see
    /// `Sandbox.droppedEnv`). bwrap unsets them too; sandbox-exec relies on the spawner.
    #[napi(getter, catch_unwind)]
    pub fn unset_env(&self) -> Vec<String> {
        self.launch
            .as_ref()
            .map(|l| l.unset_env.clone())
            .unwrap_or_default()
    }

    /// Environment variables to set in the child's environment (sandbox-exec's proxy
    /// variables; bwrap sets its own), as [name, value] pairs.
    #[napi(getter, catch_unwind)]
    pub fn set_env(&self) -> Vec<Vec<String>> {
        self.launch
            .as_ref()
            .map(|l| {
                l.set_env
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect()
            })
            .unwrap_or_default()
    }

    /// All of the sandbox's arguments, options included, for display.
    #[napi(getter, catch_unwind)]
    pub fn shown(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.shown
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        })
    }

    /// The open files the child gets as fds 3, 4, ...; empty once released.
    #[napi(getter, catch_unwind)]
    pub fn fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.launch
            .as_ref()
            .map(|l| l.fds.iter().map(|f| f.as_raw_fd()).collect())
            .unwrap_or_default()
    }

    /// Empty directories created as mount points for protected names (kept afterwards).
    #[napi(getter, catch_unwind)]
    pub fn placeholders(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.placeholders
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        })
    }

    /// Closes this process's copies of `fds` (the child has its own once spawned).
    #[napi(catch_unwind)]
    pub fn release(&mut self) {
        if let Some(l) = &mut self.launch {
            l.fds.clear();
        }
    }

    /// After the run: releases the fds, removes the run's temp files and audits what the
    /// command left on pi's control surface (moved aside). One sentence per finding; empty
    /// when all is well, or when this command was audited already.
    #[napi(catch_unwind)]
    pub fn finish(&mut self) -> Vec<String> {
        let ended = self.discard();
        finished(ended, self.audit.take())
    }

    /// `finish`, with the audit off Node's main thread. Resolves with the same sentences.
    #[napi(ts_return_type = "Promise<Array<string>>")]
    pub fn finish_async(&mut self) -> AsyncTask<AuditTask> {
        let ended = self.discard();
        AsyncTask::new(AuditTask {
            audit: self.audit.take(),
            ended: Some(ended),
        })
    }
}

impl PreparedCommand {
    /// Drops the launch (its fds, its temp files); its socket supervisor and its proxy, if
    /// any, are handed back for what they refused.
    fn discard(&mut self) -> Ended {
        let Some(mut l) = self.launch.take() else {
            return Ended::default();
        };
        l.discard();
        Ended {
            supervisor: l.supervisor.take(),
            net: l.net.take(),
        }
    }
}

/// What of a launch outlives it until the command is over.
#[derive(Default)]
struct Ended {
    supervisor: Option<crate::platform::launch::Supervisor>,
    net: Option<Arc<crate::net::gate::CommandNet>>,
}

/// After a command: what the socket supervisor refused (it waits a moment for the command's
/// last process to go), the hosts its proxy blocked (the proxy stops), and what the audit
/// found, one sentence each; the socket refusals go to the violation log (the proxy and the
/// audit log their own). A note is one line naming what the command made or reached: all
/// of it is escaped (`shown::text`), so a name's newline cannot start a line of its own.
fn finished(ended: Ended, ticket: Option<(Arc<Commands>, Ticket)>) -> Vec<String> {
    notes_of(ended, ticket)
        .iter()
        .map(|n| shown::text(n))
        .collect()
}

fn notes_of(ended: Ended, ticket: Option<(Arc<Commands>, Ticket)>) -> Vec<String> {
    // Said once per session, where bash hides env files; git is asked without the lock.
    let committed_env = ticket.as_ref().and_then(|(commands, _)| {
        let session = commands.session();
        let hides = session.guard().is_some_and(|g| g.hides_env_files());
        hides.then(|| session.committed_env())
    });
    let Ended { supervisor, net } = ended;
    let refused = supervisor.map(|s| s.finish()).unwrap_or_default();
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
    out.extend(audit(ticket));
    out.extend(committed_env.and_then(|c| c.first_note()));
    out
}

impl Drop for PreparedCommand {
    fn drop(&mut self) {
        // Never finished: its proxy stops now (on macOS it listens on the host).
        if let Some(net) = self.discard().net {
            net.finish();
        }
        // Never finished: the session audits before its next command.
        if let Some((commands, ticket)) = self.audit.take() {
            commands.abandon(ticket);
        }
    }
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

pub struct AuditTask {
    audit: Option<(Arc<Commands>, Ticket)>,
    ended: Option<Ended>,
}

impl Task for AuditTask {
    type Output = Vec<String>;
    type JsValue = Vec<String>;

    fn compute(&mut self) -> napi::Result<Vec<String>> {
        let ticket = self.audit.take();
        let ended = self.ended.take().unwrap_or_default();
        guarded(move || finished(ended, ticket))
    }

    fn resolve(&mut self, _env: napi::Env, output: Vec<String>) -> napi::Result<Vec<String>> {
        Ok(output)
    }
}

/// Runs `f` on a worker thread's behalf: a panic becomes a JS error instead of aborting pi.
fn guarded<T>(f: impl FnOnce() -> T) -> napi::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        Error::new(
            napi::Status::GenericFailure,
            "E_INTERNAL: pi-sandbox-rs hit an internal error (a bug; please report it). The operation did not happen.",
        )
    })
}

fn prepared(commands: &Arc<Commands>, (p, ticket): (Prepared, Option<Ticket>)) -> PreparedCommand {
    let mut ask = None;
    let (verdict, reason, launch) = match p {
        Prepared::Unsandboxed(reason) => ("unsandboxed", Some(reason), None),
        Prepared::NeedsApproval(prompt) => {
            let no_ui = prompt.no_ui.clone();
            ask = Some(*prompt);
            ("ask", Some(no_ui), None)
        }
        Prepared::Denied(reason) => ("denied", Some(reason), None),
        Prepared::Sandboxed(launch) => ("sandboxed", None, Some(launch)),
    };
    PreparedCommand {
        verdict,
        reason,
        ask,
        launch,
        audit: ticket.map(|t| (commands.clone(), t)),
    }
}

/// What to prepare, for `PrepareTask`.
enum Preparation {
    Bash(String),
    Argv(Vec<std::ffi::OsString>),
}

fn prepare_on(
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

pub struct PrepareTask {
    commands: Arc<Commands>,
    what: Preparation,
    network: Option<Network>,
}

impl Task for PrepareTask {
    type Output = (Prepared, Option<Ticket>);
    type JsValue = PreparedCommand;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        guarded(|| prepare_on(&self.commands, &self.what, self.network))
    }

    fn resolve(&mut self, _env: napi::Env, output: Self::Output) -> napi::Result<PreparedCommand> {
        Ok(prepared(&self.commands, output))
    }
}

/// One session call on libuv's thread pool. Its errors reject the promise with the same
/// `code` (`E_BLOCKED`, `ENOENT`, ...) the synchronous call throws.
pub struct SessionTask<T> {
    commands: Arc<Commands>,
    call: Option<SessionCall<T>>,
}

type SessionCall<T> = Box<dyn FnOnce(&mut Session) -> napi::Result<T, String> + Send>;

impl<T> SessionTask<T> {
    fn new(
        commands: &Arc<Commands>,
        call: impl FnOnce(&mut Session) -> napi::Result<T, String> + Send + 'static,
    ) -> AsyncTask<SessionTask<T>>
    where
        SessionTask<T>: Task,
    {
        AsyncTask::new(SessionTask {
            commands: commands.clone(),
            call: Some(Box::new(call)),
        })
    }
}

impl<T> Task for SessionTask<T>
where
    T: napi::bindgen_prelude::ToNapiValue + napi::bindgen_prelude::TypeName + Send + 'static,
{
    type Output = Result<T, (String, String)>;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let call = self.call.take().expect("computed once");
        let commands = self.commands.clone();
        guarded(move || {
            let mut session = commands.session();
            call(&mut session).map_err(|e| (e.status, e.reason))
        })
    }

    fn resolve(&mut self, env: napi::Env, output: Self::Output) -> napi::Result<T> {
        output.map_err(|(code, message)| {
            // Rejected with a JS error carrying our code, as the synchronous call throws.
            let js = napi::JsError::from(js_error(&code, message)).into_unknown(env);
            Error::from(js)
        })
    }
}

/// A path as pi's tools hand it over (absolute already; relative ones against the cwd).
fn session_path(session: &Session, path: &str) -> napi::Result<PathBuf, String> {
    let env = session.env();
    absolute(path, &env.cwd, &env.home)
}

// The session calls behind both the synchronous methods and their `...Async` twins.

fn check_tool_on(session: &mut Session, tool: &str, input: &Value) -> Option<JsToolDecision> {
    session.refresh();
    let checked = session.check_tool(tool, input)?;
    let prompt = (checked.decision.verdict == crate::policy::guard::Verdict::Prompt)
        .then(|| session.prompt_for(&checked.decision).into());
    Some(tool_decision(checked, prompt))
}

fn read_file_on(session: &Session, path: &str) -> napi::Result<Buffer, String> {
    let p = session_path(session, path)?;
    session.read_file(&p).map(Into::into).map_err(file_op_error)
}

fn write_file_on(session: &Session, path: &str, content: &str) -> napi::Result<(), String> {
    let p = session_path(session, path)?;
    session
        .write_file(&p, content.as_bytes())
        .map_err(file_op_error)
}

fn access_file_on(session: &Session, path: &str, write: bool) -> napi::Result<(), String> {
    let p = session_path(session, path)?;
    session.access_file(&p, write).map_err(file_op_error)
}

fn mkdir_on(session: &Session, dir: &str) -> napi::Result<(), String> {
    let p = session_path(session, dir)?;
    session.mkdir(&p).map_err(file_op_error)
}

fn tool_decision(c: crate::session::tools::ToolCheck, prompt: Option<JsPrompt>) -> JsToolDecision {
    let (patch_key, patch_value) = match c.patch {
        Some((k, v)) => (Some(k), Some(v)),
        None => (None, None),
    };
    JsToolDecision {
        decision: c.decision.into(),
        patch_key,
        patch_value,
        prompt,
    }
}

pub struct LoadTask {
    options: Option<Options>,
}

impl Task for LoadTask {
    type Output = Session;
    type JsValue = Sandbox;

    fn compute(&mut self) -> napi::Result<Session> {
        let options = self.options.take().expect("computed once");
        guarded(|| Session::load(options))
    }

    fn resolve(&mut self, _env: napi::Env, session: Session) -> napi::Result<Sandbox> {
        Ok(Sandbox::of(session))
    }
}

/// The network mode asked for; None (or "") for the session's default.
fn parse_network(network: Option<String>) -> napi::Result<Option<Network>, String> {
    match network.as_deref() {
        None | Some("") => Ok(None),
        Some(n) => Network::parse(n).map(Some).ok_or_else(|| {
            js_error(
                "E_BAD_NETWORK",
                format!("unknown network mode {n:?}; use \"filtered\", \"off\" or \"on\""),
            )
        }),
    }
}

/// A file operation's failure as a JS error: `E_BLOCKED` (the guard's reason), `E_CHANGED`
/// (a link appeared on the judged path), or the errno name Node would use (`ENOENT`, ...).
fn file_op_error(e: FileOpError) -> Error<String> {
    use crate::open::OpenError;
    match e {
        FileOpError::Blocked(reason) => js_error("E_BLOCKED", reason),
        FileOpError::Open(e @ OpenError::Changed { .. }) => js_error("E_CHANGED", e.to_string()),
        FileOpError::Open(e @ OpenError::HardLinked { .. }) => js_error("E_BLOCKED", e.to_string()),
        FileOpError::Open(e @ OpenError::NotRegular { .. }) => js_error("EISDIR", e.to_string()),
        FileOpError::Open(OpenError::Io { path, source }) => {
            let code = match source.raw_os_error() {
                Some(libc::ENOENT) => "ENOENT",
                Some(libc::EACCES) => "EACCES",
                Some(libc::EPERM) => "EPERM",
                Some(libc::EISDIR) => "EISDIR",
                Some(libc::ENOTDIR) => "ENOTDIR",
                Some(libc::EROFS) => "EROFS",
                Some(libc::ENOSPC) => "ENOSPC",
                Some(libc::EEXIST) => "EEXIST",
                _ => "EIO",
            };
            js_error(code, format!("{code}: {source}, open '{}'", path.display()))
        }
    }
}

fn parse_op(op: &str) -> napi::Result<Op, String> {
    Op::parse(op).ok_or_else(|| {
        js_error(
            "E_BAD_OP",
            format!("unknown operation {op:?}; use \"read\" or \"write\""),
        )
    })
}

fn absolute(path: &str, cwd: &Path, home: &Path) -> napi::Result<PathBuf, String> {
    paths::expand(path, home, cwd).map_err(|e| js_error("E_BAD_PATH", e.to_string()))
}

/// Hides the session's secrets in one stream of output: `push` each chunk and show what it
/// returns, then `finish` at the end of the stream. A secret split across chunks is held back
/// until it can be hidden whole. Made by `Sandbox.redactStream` only.
#[napi]
pub struct RedactStream {
    inner: redact::RedactStream,
}

#[napi]
impl RedactStream {
    /// The part of `chunk` (with what was held back before) that can be shown now.
    #[napi(catch_unwind)]
    pub fn push<'env>(
        &mut self,
        env: &'env napi::Env,
        chunk: BufferSlice<'env>,
    ) -> napi::Result<BufferSlice<'env>> {
        // Copied into memory the JS engine owns: cheaper than a new Rust allocation handed
        // over with a finaliser for every chunk.
        BufferSlice::copy_from(env, self.inner.push(&chunk))
    }

    /// What was held back, at the end of the stream.
    #[napi(catch_unwind)]
    pub fn finish(&mut self) -> Buffer {
        Buffer::from(self.inner.finish())
    }
}

/// The policy of one pi session. Never throws for a broken config: it loads in a refusing
/// state (see `error`) so that every check fails closed with the reason. Made by
/// `Sandbox.load` or `Sandbox.loadAsync` only. Errors thrown carry a `SandboxErrorCode`.
#[napi]
pub struct Sandbox {
    commands: Arc<Commands>,
    /// The session's network gate, reached without the session's lock (its questions come
    /// from proxy threads while a command holds the session).
    gate: Arc<crate::net::gate::Gate>,
    questions: Arc<NetworkQuestions>,
}

impl Sandbox {
    fn of(session: Session) -> Sandbox {
        let gate = session.gate();
        Sandbox {
            commands: Arc::new(Commands::new(session)),
            gate,
            questions: Arc::default(),
        }
    }
}

/// A proxy on the host's loopback, made by `Sandbox.startHostProxy` only.
#[napi]
pub struct HostProxy {
    port: u16,
    net: Option<Arc<crate::net::gate::CommandNet>>,
}

#[napi]
impl HostProxy {
    /// Its port on 127.0.0.1 (HTTP CONNECT, plain HTTP and SOCKS5).
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        self.port.into()
    }

    /// Stops it (every connection cut); returns a sentence per host it blocked.
    #[napi(catch_unwind)]
    pub fn stop(&mut self) -> Vec<String> {
        self.net.take().map(|n| n.finish()).unwrap_or_default()
    }
}

impl Drop for HostProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Questions of the network gate sent to JS and not answered yet, by id: the host asked
/// about, and where the answer goes.
#[derive(Default)]
pub struct NetworkQuestions {
    next: std::sync::atomic::AtomicU32,
    waiting: std::sync::Mutex<Waiting>,
}

/// By question id: the host, whether its command is over, where the answer goes.
type Waiting = std::collections::HashMap<
    u32,
    (
        String,
        Arc<std::sync::atomic::AtomicBool>,
        std::sync::mpsc::Sender<String>,
    ),
>;

impl NetworkQuestions {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How long a connection waits for the user's answer before it is refused.
const NETWORK_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// A question of the network gate for the user: answer it with `answerNetworkPrompt(id, choice)`.
#[napi(object, js_name = "NetworkQuestion")]
pub struct JsNetworkQuestion {
    pub id: u32,
    pub host: String,
    pub port: u32,
    #[napi(ts_type = "NetworkPrompt")]
    pub prompt: JsPrompt,
}

type NetworkCallback = napi::threadsafe_function::ThreadsafeFunction<
    JsNetworkQuestion,
    (),
    JsNetworkQuestion,
    napi::Status,
    false,
    true,
>;

/// The session options `load` and `loadAsync` take, checked.
fn session_options(options: LoadOptions) -> napi::Result<Options, String> {
    if options.cwd.is_empty() {
        return Err(js_error("E_BAD_PATH", "cwd must not be empty"));
    }
    let cwd = PathBuf::from(&options.cwd);
    if !cwd.is_absolute() {
        return Err(js_error(
            "E_BAD_PATH",
            format!("cwd must be absolute, got {:?}", options.cwd),
        ));
    }
    let mut env = Env::from_process(&cwd);
    if let Some(h) = options.home {
        env.home = PathBuf::from(h);
    }
    if let Some(a) = options.agent_dir {
        env.agent_dir = absolute(&a, &cwd, &env.home)?;
    }
    // As pi names them: `..` taken lexically, as node's `path.join` does.
    let pi_named = |p: Option<String>| -> napi::Result<Option<PathBuf>, String> {
        match p.filter(|p| !p.is_empty()) {
            Some(p) => Ok(Some(paths::lexical_normalize(&absolute(
                &p, &cwd, &env.home,
            )?))),
            None => Ok(None),
        }
    };
    let (dir, file) = (
        pi_named(options.session_dir)?,
        pi_named(options.session_file)?,
    );
    let mut loads = Vec::new();
    for e in options.pi_extensions.unwrap_or_default() {
        if let Some(path) = pi_named(Some(e.path))? {
            loads.push(pi_loads::PiLoad {
                path,
                package_root: pi_named(e.package_root)?,
            });
        }
    }
    env.with_sessions(dir, file);
    env.pi_loads = loads;
    let approval_mode = options
        .approval_mode
        .or_else(|| std::env::var("PI_SANDBOX_APPROVAL_MODE").ok());
    Ok(Options {
        env,
        approval_mode,
        session_id: options.session_id,
    })
}

#[napi]
impl Sandbox {
    /// Loads the policy of the session in `options.cwd`: the global and project config files,
    /// the approvals store, the environment. A broken config does not throw (see `error`).
    /// @throws {SandboxError} `E_BAD_PATH` when `cwd` is empty or relative, or `agentDir` /
    /// `sessionDir` is not a path.
    #[napi(factory, catch_unwind)]
    pub fn load(options: LoadOptions) -> napi::Result<Sandbox, String> {
        Ok(Sandbox::of(Session::load(session_options(options)?)))
    }

    /// `load`, with the config files read and compiled off Node's main thread.
    /// @throws {SandboxError} `E_BAD_PATH` as `load` does, at once (not as a rejection).
    #[napi(ts_return_type = "Promise<Sandbox>")]
    pub fn load_async(options: LoadOptions) -> napi::Result<AsyncTask<LoadTask>, String> {
        Ok(AsyncTask::new(LoadTask {
            options: Some(session_options(options)?),
        }))
    }

    /// Why the policy could not be loaded, or null.
    #[napi(getter, catch_unwind)]
    pub fn error(&self) -> Option<JsLoadError> {
        self.commands.session().error().map(|e| JsLoadError {
            code: e.code.into(),
            message: e.message.clone(),
            file: e.file.as_ref().map(|f| f.display().to_string()),
        })
    }

    /// A path as pi's tools hand it over (absolute already; relative ones against the cwd).
    fn tool_path(&self, path: &str) -> napi::Result<PathBuf, String> {
        session_path(&self.commands.session(), path)
    }

    /// Decides a read or write of `path` (relative paths resolve against the session cwd).
    /// @throws {SandboxError} `E_BAD_OP`, `E_BAD_PATH`.
    #[napi(catch_unwind, ts_args_type = "op: Op, path: string")]
    pub fn check(&self, op: String, path: String) -> napi::Result<JsDecision, String> {
        let op = parse_op(&op)?;
        let p = self.tool_path(&path)?;
        Ok(self.commands.session().check(op, &p).into())
    }

    /// Like `check`, with every rule consulted on the way.
    /// @throws {SandboxError} `E_BAD_OP`, `E_BAD_PATH`.
    #[napi(catch_unwind, ts_args_type = "op: Op, path: string")]
    pub fn explain(&self, op: String, path: String) -> napi::Result<JsExplanation, String> {
        let op = parse_op(&op)?;
        let p = self.tool_path(&path)?;
        let (d, steps) = self.commands.session().explain(op, &p);
        Ok(JsExplanation {
            decision: d.into(),
            steps: steps.into_iter().map(Into::into).collect(),
        })
    }

    /// Checks one pi tool call (`event.toolName`, `event.input`). Re-reads the config files
    /// first if they changed. Null for tools the path guard does not cover (`guardedTools`).
    #[napi(
        catch_unwind,
        ts_args_type = "tool: string, input: Record<string, unknown>"
    )]
    pub fn check_tool(&mut self, tool: String, input: Value) -> Option<JsToolDecision> {
        check_tool_on(&mut self.commands.session(), &tool, &input)
    }

    /// `checkTool` off Node's main thread (a check may read the disk or wait for the index).
    #[napi(
        ts_args_type = "tool: string, input: Record<string, unknown>",
        ts_return_type = "Promise<ToolDecision | null>"
    )]
    pub fn check_tool_async(
        &self,
        tool: String,
        input: Value,
    ) -> AsyncTask<SessionTask<Option<JsToolDecision>>> {
        SessionTask::new(&self.commands, move |session| {
            Ok(check_tool_on(session, &tool, &input))
        })
    }

    /// `readFile` off Node's main thread; rejects with the codes `readFile` throws.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn read_file_async(&self, path: String) -> AsyncTask<SessionTask<Buffer>> {
        SessionTask::new(&self.commands, move |session| read_file_on(session, &path))
    }

    /// `writeFile` off Node's main thread; rejects with the codes `writeFile` throws.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn write_file_async(&self, path: String, content: String) -> AsyncTask<SessionTask<()>> {
        SessionTask::new(&self.commands, move |session| {
            write_file_on(session, &path, &content)
        })
    }

    /// `accessFile` off Node's main thread; rejects with the codes `accessFile` throws.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn access_file_async(
        &self,
        path: String,
        write: Option<bool>,
    ) -> AsyncTask<SessionTask<()>> {
        SessionTask::new(&self.commands, move |session| {
            access_file_on(session, &path, write.unwrap_or(false))
        })
    }

    /// `mkdir` off Node's main thread; rejects with the codes `mkdir` throws.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn mkdir_async(&self, dir: String) -> AsyncTask<SessionTask<()>> {
        SessionTask::new(&self.commands, move |session| mkdir_on(session, &dir))
    }

    /// pi's read tool backend: the file the guard judged, opened without following links.
    /// @throws {SandboxError} `E_BLOCKED` (the guard's reason), `E_CHANGED`, `E_BAD_PATH`, or
    /// a `FileErrorCode` (`ENOENT`, ...).
    #[napi(catch_unwind)]
    pub fn read_file(&self, path: String) -> napi::Result<Buffer, String> {
        read_file_on(&self.commands.session(), &path)
    }

    /// pi's write and edit backend: replaces the judged file's content (UTF-8 text).
    /// @throws {SandboxError} `E_BLOCKED` (the guard's reason), `E_CHANGED`, `E_BAD_PATH`, or
    /// a `FileErrorCode` (`ENOENT`, ...).
    #[napi(catch_unwind)]
    pub fn write_file(&self, path: String, content: String) -> napi::Result<(), String> {
        write_file_on(&self.commands.session(), &path, &content)
    }

    /// pi's access check: readable (and writable when `write`), judged and opened the same way.
    /// @throws {SandboxError} `E_BLOCKED` (the guard's reason), `E_CHANGED`, `E_BAD_PATH`, or
    /// a `FileErrorCode` (`ENOENT`, ...).
    #[napi(catch_unwind)]
    pub fn access_file(&self, path: String, write: Option<bool>) -> napi::Result<(), String> {
        access_file_on(&self.commands.session(), &path, write.unwrap_or(false))
    }

    /// pi's write creates the file's directory first; judged as a write of that directory.
    /// @throws {SandboxError} `E_BLOCKED` (the guard's reason), `E_CHANGED`, `E_BAD_PATH`, or
    /// a `FileErrorCode` (`ENOENT`, ...).
    #[napi(catch_unwind)]
    pub fn mkdir(&self, dir: String) -> napi::Result<(), String> {
        mkdir_on(&self.commands.session(), &dir)
    }

    /// Re-reads the config files now.
    #[napi(catch_unwind)]
    pub fn reload(&mut self) {
        self.commands.session().reload();
    }

    /// The mode in force.
    #[napi(getter, catch_unwind, ts_return_type = "Mode")]
    pub fn mode(&self) -> String {
        self.commands.session().mode().as_str().into()
    }

    /// How bash finds what to protect: "current (N directories watched)", "building ...", or
    /// "full scan for every command: <why>".
    #[napi(getter, catch_unwind)]
    pub fn index_status(&self) -> String {
        self.commands.session().index_status()
    }

    /// The variables of pi's environment that sandboxed commands do not get, and why (names
    /// only: never a value).
    #[napi(catch_unwind)]
    pub fn dropped_env(&self) -> Vec<JsDroppedEnv> {
        self.commands
            .session()
            .dropped_env()
            .into_iter()
            .map(|d| JsDroppedEnv {
                name: d.name,
                why: d.why,
            })
            .collect()
    }

    /// `text` with every secret of the session replaced by `[redacted: NAME]`: what a tool's
    /// result may show the model.
    #[napi(catch_unwind)]
    pub fn redact(&self, text: String) -> String {
        let redactor = self.commands.session().redactor();
        match redactor.redact_str(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(t) => t,
        }
    }

    /// A redactor for one output stream that arrives in chunks (a command's stdout or
    /// stderr); null when the session has no secret to hide.
    #[napi(catch_unwind)]
    pub fn redact_stream(&self) -> Option<RedactStream> {
        let redactor = self.commands.session().redactor();
        (!redactor.is_empty()).then(|| RedactStream {
            inner: redact::RedactStream::new(redactor),
        })
    }

    /// The violation log's last `count` entries (default 20), oldest first: every refusal of
    /// the guard, the audit and the socket supervisor, from every pi session of this agent dir.
    #[napi(catch_unwind)]
    pub fn recent_violations(&self, count: Option<u32>) -> Vec<JsViolation> {
        self.commands
            .session()
            .recent_violations(count.unwrap_or(20) as usize)
            .into_iter()
            .map(|v| JsViolation {
                time: v.time,
                layer: v.layer,
                operation: v.operation,
                target: v.target,
                rule: v.rule,
                source: v.source,
                decision: v.decision,
                host: v.host,
                port: v.port.map(u32::from),
            })
            .collect()
    }

    /// Where the violation log is (`sandbox-violations.jsonl` in pi's agent dir).
    #[napi(getter, catch_unwind)]
    pub fn violation_log_path(&self) -> String {
        self.commands
            .session()
            .violation_log_path()
            .display()
            .to_string()
    }

    /// The names whose values are hidden from the model (never the values).
    #[napi(catch_unwind)]
    pub fn redacted_names(&self) -> Vec<String> {
        self.commands.session().redactor().names().to_vec()
    }

    /// False when the config says `enabled: false`.
    #[napi(getter, catch_unwind)]
    pub fn enabled(&self) -> bool {
        self.commands.session().enabled()
    }

    /// Sets the mode for the rest of the session; `how` is shown as its source. Returns the
    /// mode set. For text a user typed, see `parseMode`.
    /// @throws {SandboxError} `E_BAD_MODE`.
    #[napi(
        catch_unwind,
        ts_args_type = "mode: Mode | ModeAlias, how: string",
        ts_return_type = "Mode"
    )]
    pub fn set_mode(&mut self, mode: String, how: String) -> napi::Result<String, String> {
        self.commands
            .session()
            .set_mode(&mode, &how)
            .map(|m| m.as_str().into())
            .map_err(|e| js_error("E_BAD_MODE", e))
    }

    /// read-only → read-write → yolo → read-only; returns the new mode.
    #[napi(catch_unwind, ts_return_type = "Mode")]
    pub fn cycle_mode(&mut self, how: String) -> String {
        self.commands.session().cycle_mode(&how).as_str().into()
    }

    /// Prepares a shell command for pi's bash: the policy's verdict and, when sandboxed, what
    /// to spawn (see `PreparedCommand`). `network`: "filtered" | "off" | "on"; by default
    /// filtered when the config lists domains, else off (see `defaultNetwork`).
    /// At most one sandboxed command of a session is outstanding: another is refused until
    /// the first one's `finish`.
    /// @throws {SandboxError} `E_BAD_NETWORK`.
    #[napi(
        catch_unwind,
        ts_args_type = "command: string, network?: NetworkMode | undefined | null"
    )]
    pub fn prepare_bash(
        &self,
        command: String,
        network: Option<String>,
    ) -> napi::Result<PreparedCommand, String> {
        let network = parse_network(network)?;
        let what = Preparation::Bash(command);
        Ok(prepared(
            &self.commands,
            prepare_on(&self.commands, &what, network),
        ))
    }

    /// `prepareBash` off Node's main thread (the workspace scan, the mount plan).
    /// @throws {SandboxError} `E_BAD_NETWORK`, at once (not as a rejection).
    #[napi(
        ts_args_type = "command: string, network?: NetworkMode | undefined | null",
        ts_return_type = "Promise<PreparedCommand>"
    )]
    pub fn prepare_bash_async(
        &self,
        command: String,
        network: Option<String>,
    ) -> napi::Result<AsyncTask<PrepareTask>, String> {
        Ok(AsyncTask::new(PrepareTask {
            commands: self.commands.clone(),
            what: Preparation::Bash(command),
            network: parse_network(network)?,
        }))
    }

    /// Prepares an argv (no shell) the same way.
    /// @throws {SandboxError} `E_BAD_NETWORK`, `E_BAD_COMMAND` (an empty argv).
    #[napi(
        catch_unwind,
        ts_args_type = "argv: Array<string>, network?: NetworkMode | undefined | null"
    )]
    pub fn prepare_run(
        &self,
        argv: Vec<String>,
        network: Option<String>,
    ) -> napi::Result<PreparedCommand, String> {
        let network = parse_network(network)?;
        if argv.is_empty() {
            return Err(js_error("E_BAD_COMMAND", "no command given"));
        }
        let what = Preparation::Argv(argv.into_iter().map(Into::into).collect());
        Ok(prepared(
            &self.commands,
            prepare_on(&self.commands, &what, network),
        ))
    }

    /// The network mode a command gets when none is asked for: "filtered" when the config
    /// lists domains, else "off".
    #[napi(getter, catch_unwind, ts_return_type = "'filtered' | 'off'")]
    pub fn default_network(&self) -> String {
        self.commands.session().default_network().name().into()
    }

    /// Who asks the user about hosts no network list names (filtered network). `callback`
    /// gets each question and must answer it with `answerNetworkPrompt(id, choice)`: a
    /// choice id of the question's prompt, or "noUi" when it cannot ask (refused with the
    /// prompt's `noUi` text). Without a callback such hosts are refused. The callback does
    /// not keep Node's event loop alive.
    #[napi(
        catch_unwind,
        ts_args_type = "callback?: ((question: NetworkQuestion) => void) | null"
    )]
    pub fn on_network_prompt(&self, callback: Option<NetworkCallback>) {
        let Some(callback) = callback else {
            self.gate.set_asker(None);
            return;
        };
        let questions = self.questions.clone();
        let asker: crate::net::gate::Asker = Arc::new(move |q: &crate::net::gate::Question| {
            use std::sync::atomic::Ordering;
            let id = questions.next.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = std::sync::mpsc::channel();
            questions
                .waiting()
                .insert(id, (q.host.clone(), q.withdrawn.clone(), tx));
            let status = callback.call(
                JsNetworkQuestion {
                    id,
                    host: q.host.clone(),
                    port: q.port.into(),
                    prompt: q.prompt.clone().into(),
                },
                napi::threadsafe_function::ThreadsafeFunctionCallMode::NonBlocking,
            );
            let mut answer = None;
            if status == napi::Status::Ok {
                // Until answered, withdrawn (the command is over) or timed out.
                let until = std::time::Instant::now() + NETWORK_ANSWER_TIMEOUT;
                while !q.withdrawn.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                    match rx.recv_timeout(std::time::Duration::from_millis(100)) {
                        Ok(a) => {
                            answer = Some(a);
                            break;
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
            }
            questions.waiting().remove(&id);
            match answer.as_deref() {
                None | Some("noUi") => None,
                Some(_) => answer,
            }
        });
        self.gate.set_asker(Some(asker));
    }

    /// Starts a proxy of this session's network gate on the host's 127.0.0.1 (what
    /// sandbox-exec commands use on macOS; here for tools and benchmarks): the same rules,
    /// questions and log as a filtered command's. Stop it with `stop()`.
    /// @throws {SandboxError} `E_PROXY` when it cannot listen.
    #[napi(catch_unwind)]
    pub fn start_host_proxy(&self) -> napi::Result<HostProxy, String> {
        let net = crate::net::gate::CommandNet::new(self.gate.clone());
        let port = net
            .serve_loopback()
            .map_err(|e| js_error("E_PROXY", format!("cannot start the proxy: {e}")))?;
        Ok(HostProxy {
            port,
            net: Some(net),
        })
    }

    /// Whether the network question `id` still waits for its answer (not answered, withdrawn
    /// because its command ended, or timed out): a dialog showing it can be closed when not.
    #[napi(catch_unwind)]
    pub fn network_prompt_pending(&self, id: u32) -> bool {
        self.questions.waiting().contains_key(&id)
    }

    /// The user's answer to the network question `id` (the four a blocked write has):
    /// "abort", "session" (kept in memory for the rest of this session), "project" / "global"
    /// (written into network.allowedDomains of that config file), or "noUi" (no one to ask). Returns a sentence for the user when the
    /// answer stored something (or could not), else nothing. An id no longer waited for
    /// (answered, withdrawn, timed out) is ignored: nothing is stored. Never throws: a
    /// project / global answer that cannot be written is said in the sentence.
    #[napi(catch_unwind, ts_args_type = "id: number, answer: NetworkAnswer")]
    pub fn answer_network_prompt(&self, id: u32, answer: String) -> Option<String> {
        use std::sync::atomic::Ordering;
        let (host, withdrawn, tx) = self.questions.waiting().remove(&id)?;
        let said = match answer.as_str() {
            "project" | "global" if !withdrawn.load(Ordering::SeqCst) => {
                let scope = WriteScope::parse(&answer).expect("a write scope");
                let mut session = self.commands.session();
                // The command may have ended while the lock was awaited: then nothing.
                if withdrawn.load(Ordering::SeqCst) {
                    return None;
                }
                Some(match session.grant_domain(&host, scope) {
                    Ok(s) => s,
                    Err(e) => format!(
                        "{e}; {} is allowed for this command only",
                        shown::name(&host)
                    ),
                })
            }
            _ => None,
        };
        let _ = tx.send(answer);
        said
    }

    /// For a sandboxed command's output: one sentence for each path an error line reports as
    /// read-only or busy that the sandbox keeps so, with the rule and how to change it.
    #[napi(catch_unwind)]
    pub fn explain_write_failures(&self, output: String) -> Vec<String> {
        let notes = self.commands.session().explain_write_failures(&output);
        notes.iter().map(|n| shown::text(n)).collect()
    }

    /// `path` (a `PATH` value) without the entries pi itself must not run programs from:
    /// relative ones, and those inside a directory the agent may write (an activated
    /// virtualenv's `bin`, `node_modules/.bin`), where a planted `rg` or `git` would run on
    /// the host. Sandboxed commands keep the full `PATH`.
    #[napi(catch_unwind)]
    pub fn host_path(&self, path: String) -> String {
        self.commands.session().host_path(&path)
    }

    /// The user allowed writes in `path`'s directory from the write prompt: `scope` is
    /// session (memory only), project or global (written into that config file). Takes
    /// effect at once. Returns a sentence saying where the grant went.
    /// @throws {SandboxError} `E_BAD_SCOPE`, `E_BAD_PATH`, `E_GRANT` (not grantable, or not stored).
    #[napi(catch_unwind, ts_args_type = "path: string, scope: WriteScope")]
    pub fn grant_write(&mut self, path: String, scope: String) -> napi::Result<String, String> {
        let scope = WriteScope::parse(&scope).ok_or_else(|| {
            js_error(
                "E_BAD_SCOPE",
                format!("unknown scope {scope:?}: session, project or global"),
            )
        })?;
        let mut session = self.commands.session();
        let p = session_path(&session, &path)?;
        session
            .grant_write(&p, scope)
            .map_err(|e| js_error("E_GRANT", e))
    }

    /// The user allowed `host` from the network prompt: session (approvals store), project
    /// or global (added to network.allowedDomains of that config file). Takes effect at once,
    /// for the running command too. A host deniedDomains lists is refused. Returns a
    /// sentence saying where the grant went.
    /// @throws {SandboxError} `E_BAD_SCOPE`, `E_GRANT` (a denied or bad host, or not stored).
    #[napi(catch_unwind, ts_args_type = "host: string, scope: WriteScope")]
    pub fn grant_domain(&mut self, host: String, scope: String) -> napi::Result<String, String> {
        let scope = WriteScope::parse(&scope).ok_or_else(|| {
            js_error(
                "E_BAD_SCOPE",
                format!("unknown scope {scope:?}: session, project or global"),
            )
        })?;
        self.commands
            .session()
            .grant_domain(&host, scope)
            .map_err(|e| js_error("E_GRANT", e))
    }

    /// The user allowed the env file `path` (the envRead / envWrite prompt): once (this tool
    /// call; `write`: a change too), session or always.
    /// @throws {SandboxError} `E_BAD_PATH`, `E_GRANT` (an unknown scope too: not `E_BAD_SCOPE`).
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, scope: EnvFileScope, write?: boolean | undefined | null"
    )]
    pub fn grant_env_file(
        &mut self,
        path: String,
        scope: String,
        write: Option<bool>,
    ) -> napi::Result<(), String> {
        let mut session = self.commands.session();
        let p = session_path(&session, &path)?;
        session
            .grant_env_file(&p, &scope, write.unwrap_or(false))
            .map_err(|e| js_error("E_GRANT", e))
    }

    /// After "allow for this session / always" for an unsandboxed command: which commands
    /// the grant should cover.
    #[napi(catch_unwind, ts_return_type = "CommandKeyPrompt")]
    pub fn command_key_prompt(&self, command: String) -> JsPrompt {
        self.commands.session().command_key_prompt(&command).into()
    }

    /// The user allowed `command` to run unsandboxed: `scope` session or always, `key`
    /// exact or prefix:N.
    /// @throws {SandboxError} `E_GRANT` (an unknown scope or key too: not `E_BAD_SCOPE`).
    #[napi(
        catch_unwind,
        ts_args_type = "command: string, scope: CommandScope, key: CommandKey"
    )]
    pub fn grant_command(
        &mut self,
        command: String,
        scope: String,
        key: String,
    ) -> napi::Result<(), String> {
        self.commands
            .session()
            .grant_command(&command, &scope, &key)
            .map_err(|e| js_error("E_GRANT", e))
    }

    /// The project config file and whether its widening rules apply; null without one.
    #[napi(getter, catch_unwind)]
    pub fn project_trust(&self) -> Option<JsProjectTrust> {
        self.commands
            .session()
            .project_layer()
            .map(|p| JsProjectTrust {
                file: p.file.display().to_string(),
                sha256: p.sha256.clone(),
                trust: p.trust.as_str().into(),
                widenings: p
                    .by_weight()
                    .iter()
                    .map(|w| format!("{}: {}", w.key, w.what))
                    .collect(),
            })
    }

    /// The trust prompt, when the project file would widen the rules and its content has
    /// not been answered yet (`again`: or was declined); null otherwise. Re-reads changed
    /// config files first.
    #[napi(catch_unwind, ts_return_type = "TrustPrompt | null")]
    pub fn trust_prompt(&mut self, again: Option<bool>) -> Option<JsPrompt> {
        let mut session = self.commands.session();
        session.refresh();
        let sha = session.project_layer().map(|p| p.sha256.clone());
        session
            .trust_prompt(again.unwrap_or(false))
            .map(|p| JsPrompt {
                sha256: sha,
                ..p.into()
            })
    }

    /// The user's answer to the trust prompt for the content with hash `sha256`.
    /// @throws {SandboxError} `E_GRANT` (the file changed since, or the answer not stored).
    #[napi(catch_unwind)]
    pub fn answer_trust(&mut self, sha256: String, trusted: bool) -> napi::Result<(), String> {
        self.commands
            .session()
            .answer_trust(&sha256, trusted)
            .map_err(|e| js_error("E_GRANT", e))
    }

    /// Why the approvals store could not be used as it is (corrupt file moved aside, newer
    /// version), or null.
    #[napi(getter, catch_unwind)]
    pub fn approvals_notice(&self) -> Option<String> {
        self.commands
            .session()
            .approvals_notice()
            .map(str::to_string)
    }

    /// What the sandbox keeps that the user would not guess (a project kept read-only, an
    /// extension pi loads kept without its folder), for the session's start, or null.
    #[napi(getter, catch_unwind)]
    pub fn kept_notice(&self) -> Option<String> {
        self.commands
            .session()
            .kept_notice()
            .map(|n| shown::lines(&n))
    }

    /// Re-reads the config files and the approvals store if one changed; true if it did.
    #[napi(catch_unwind)]
    pub fn refresh(&mut self) -> bool {
        self.commands.session().refresh()
    }

    /// Stops the session's background work (the index of the writable trees, the search for
    /// env files in the home directory) when pi's session ends, instead of when the garbage
    /// collector gets to this object.
    #[napi(catch_unwind)]
    pub fn dispose(&mut self) {
        self.commands.session().dispose();
    }

    /// The effective configuration as text, each value with the file it came from.
    /// `network`: the mode asked for (`--sandbox-network`), to say what bash gets.
    /// @throws {SandboxError} `E_BAD_NETWORK`.
    #[napi(
        catch_unwind,
        ts_args_type = "network?: NetworkMode | undefined | null"
    )]
    pub fn describe(&self, network: Option<String>) -> napi::Result<String, String> {
        let asked = parse_network(network)?;
        Ok(self.commands.session().describe(asked))
    }
}

/// Normalises a mode name or alias ("ro", "readwrite", ...; any case, spaces around it) to
/// its canonical name: what to pass `setMode` text a user typed through.
/// @throws {SandboxError} `E_BAD_MODE`.
#[napi(catch_unwind, ts_return_type = "Mode")]
pub fn parse_mode(mode: String) -> napi::Result<String, String> {
    Mode::parse(&mode)
        .map(|m| m.as_str().into())
        .ok_or_else(|| {
            js_error(
                "E_BAD_MODE",
                format!("unknown sandbox mode {mode:?}; use {}", config::MODE_HELP),
            )
        })
}

/// The OS sandbox bash runs in here (probed once per process).
#[napi(catch_unwind)]
pub fn sandbox_capability() -> JsCapability {
    capability(crate::platform::detect::detect())
}

pub struct ProbeTask;

impl Task for ProbeTask {
    type Output = crate::platform::detect::Capability;
    type JsValue = JsCapability;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        guarded(crate::platform::detect::detect)
    }

    fn resolve(&mut self, _env: napi::Env, c: Self::Output) -> napi::Result<JsCapability> {
        Ok(capability(c))
    }
}

/// `sandboxCapability`, probed off Node's main thread (the first probe starts bwrap).
#[napi(ts_return_type = "Promise<Capability>")]
pub fn probe_capability() -> AsyncTask<ProbeTask> {
    AsyncTask::new(ProbeTask)
}

fn capability(c: crate::platform::detect::Capability) -> JsCapability {
    use crate::platform::detect::Capability;
    match c {
        Capability::Bwrap { program, .. } => JsCapability {
            kind: "bwrap".into(),
            program: Some(program.display().to_string()),
            reason: None,
        },
        Capability::SandboxExec { program } => JsCapability {
            kind: "sandbox-exec".into(),
            program: Some(program.display().to_string()),
            reason: None,
        },
        Capability::Unavailable { reason } => JsCapability {
            kind: "none".into(),
            program: None,
            reason: Some(reason),
        },
    }
}

/// The tools the path guard covers.
#[napi(catch_unwind)]
pub fn guarded_tools() -> Vec<String> {
    tools::GUARDED_TOOLS.iter().map(|s| s.to_string()).collect()
}

/// Where pi, started in `cwd`, keeps its session transcripts when not in its per-project
/// folder of the agent dir, resolved as pi resolves it: `sessionDirVar` (the value of
/// `PI_CODING_AGENT_SESSION_DIR`) when not empty, else `sessionDir` of `agentDir`'s
/// `settings.json` merged with the project's `.pi/settings.json`; `~` from `home`, a relative
/// path from `cwd`. Null for pi's per-project folder (or where pi would not start).
#[napi(catch_unwind)]
pub fn resolve_session_dir(
    cwd: String,
    home: String,
    agent_dir: String,
    session_dir_var: Option<String>,
) -> Option<String> {
    pi_session::configured_dir(
        session_dir_var.as_deref(),
        Path::new(&home),
        Path::new(&agent_dir),
        Path::new(&cwd),
    )
    .map(|p| p.display().to_string())
}

/// Text from the disk, a config or the model as one line for the user's eyes: controls,
/// line separators, bidi, tag and invisible characters shown as escapes (`shown::text`).
#[napi(catch_unwind)]
pub fn shown_text(text: String) -> String {
    shown::text(&text)
}

/// A whole message for the user's eyes: as `shownText`, but its own line breaks stay.
#[napi(catch_unwind)]
pub fn shown_lines(text: String) -> String {
    shown::lines(&text)
}
