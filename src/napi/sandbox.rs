//! `Sandbox`: one pi session's policy, its methods converting JS values for the session.

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Buffer, BufferSlice, Task};
use napi_derive::napi;
use serde_json::Value;

use super::errors::*;
use super::network::*;
use super::objects::*;
use super::prepared::*;
use super::tasks::*;
use crate::policy::bash::Network;
use crate::policy::config::Env;
use crate::policy::guard::Op;
use crate::policy::pi_loads;
use crate::session::bash::{prepare_on, Preparation};
use crate::session::commands::Commands;
use crate::session::grants::WriteScope;
use crate::session::network_questions::{NetworkQuestions, Show};
use crate::session::{Options, Session};
use crate::{paths, redact, shown};

/// The network mode asked for; None (or "") for the session's default.
pub(crate) fn parse_network(network: Option<String>) -> napi::Result<Option<Network>, String> {
    match network.as_deref() {
        None | Some("") => Ok(None),
        Some(n) => Network::parse(n)
            .map(Some)
            .ok_or_else(|| CallError::BadNetwork(n.into()).into()),
    }
}

/// A write scope as JS names it (`WriteScope`).
pub(crate) fn write_scope(scope: &str) -> napi::Result<WriteScope, String> {
    WriteScope::parse(scope).ok_or_else(|| CallError::BadScope(scope.into()).into())
}

pub(crate) fn parse_op(op: &str) -> napi::Result<Op, String> {
    Op::parse(op).ok_or_else(|| CallError::BadOp(op.into()).into())
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
    pub(super) commands: Arc<Commands>,
    /// The session's network gate, reached without the session's lock (its questions come
    /// from proxy threads while a command holds the session).
    gate: Arc<crate::net::gate::Gate>,
    questions: Arc<NetworkQuestions>,
}

impl Sandbox {
    pub(crate) fn of(session: Session) -> Sandbox {
        let gate = session.gate();
        let questions = session.network_questions();
        Sandbox {
            commands: Arc::new(Commands::new(session)),
            gate,
            questions,
        }
    }
}

pub struct LoadTask {
    pub(crate) options: Option<Options>,
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

/// The session options `load` and `loadAsync` take, checked.
pub(crate) fn session_options(options: LoadOptions) -> napi::Result<Options, String> {
    if options.cwd.is_empty() {
        return Err(CallError::BadPath("cwd must not be empty".into()).into());
    }
    let cwd = PathBuf::from(&options.cwd);
    if !cwd.is_absolute() {
        let why = format!("cwd must be absolute, got {:?}", options.cwd);
        return Err(CallError::BadPath(why).into());
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
        let session = self.commands.session();
        Ok(session.shown(session.check(op, &p)).into())
    }

    /// Like `check`, with every rule consulted on the way.
    /// @throws {SandboxError} `E_BAD_OP`, `E_BAD_PATH`.
    #[napi(catch_unwind, ts_args_type = "op: Op, path: string")]
    pub fn explain(&self, op: String, path: String) -> napi::Result<JsExplanation, String> {
        let op = parse_op(&op)?;
        let p = self.tool_path(&path)?;
        let session = self.commands.session();
        let (d, steps) = session.explain(op, &p);
        Ok(JsExplanation {
            decision: session.shown(d).into(),
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
            .map_err(Into::into)
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
            return Err(CallError::NoCommand.into());
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
            self.questions.set_show(None);
            return;
        };
        let show: Show = Arc::new(move |id, q, prompt| {
            let question = JsNetworkQuestion {
                id,
                host: q.host.clone(),
                port: q.port.into(),
                prompt: prompt.clone().into(),
            };
            let mode = napi::threadsafe_function::ThreadsafeFunctionCallMode::NonBlocking;
            callback.call(question, mode) == napi::Status::Ok
        });
        self.questions.set_show(Some(show));
    }

    /// Starts a proxy of this session's network gate on the host's 127.0.0.1 (what
    /// sandbox-exec commands use on macOS; here for tools and benchmarks): the same rules,
    /// questions and log as a filtered command's. Stop it with `stop()`.
    /// @throws {SandboxError} `E_PROXY` when it cannot listen.
    #[napi(catch_unwind)]
    pub fn start_host_proxy(&self) -> napi::Result<HostProxy, String> {
        let net = crate::net::gate::CommandNet::new(self.gate.clone());
        let port = net.serve_loopback().map_err(CallError::Proxy)?;
        Ok(HostProxy {
            port,
            net: Some(net),
        })
    }

    /// Whether the network question `id` still waits for its answer (not answered, withdrawn
    /// because its command ended, or timed out): a dialog showing it can be closed when not.
    #[napi(catch_unwind)]
    pub fn network_prompt_pending(&self, id: u32) -> bool {
        self.questions.pending(id)
    }

    /// The user's answer to the network question `id` (the four a blocked write has):
    /// "abort", "session" (kept in memory for the rest of this session), "project" / "global"
    /// (written into network.allowedDomains of that config file), or "noUi" (no one to ask). Returns a sentence for the user when the
    /// answer stored something (or could not), else nothing. An id no longer waited for
    /// (answered, withdrawn, timed out) is ignored: nothing is stored. Never throws: a
    /// project / global answer that cannot be written is said in the sentence.
    #[napi(catch_unwind, ts_args_type = "id: number, answer: NetworkAnswer")]
    pub fn answer_network_prompt(&self, id: u32, answer: String) -> Option<String> {
        self.questions.answer(id, answer, &self.commands)
    }

    /// For a sandboxed command's output: one sentence for each failure the sandbox caused
    /// that an error line shows: a path kept read-only or hidden (with the rule), a write
    /// outside the writable folders, a connection to the host's loopback; each with how to
    /// change it. `network`: the mode the command ran with (`--sandbox-network`; default the
    /// session's).
    #[napi(
        catch_unwind,
        ts_args_type = "output: string, network?: NetworkMode | undefined | null"
    )]
    pub fn explain_write_failures(&self, output: String, network: Option<String>) -> Vec<String> {
        let session = self.commands.session();
        let network = parse_network(network)
            .ok()
            .flatten()
            .unwrap_or_else(|| session.default_network());
        let mut notes = session.explain_write_failures(&output);
        notes.extend(session.explain_reach_failures(&output, network));
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
    /// session (memory only), project or global (written into that config file); or `path`
    /// alone: once (this tool call) or file-session. Takes effect at once. Returns a
    /// sentence saying where the grant went.
    /// @throws {SandboxError} `E_BAD_SCOPE`, `E_BAD_PATH`, `E_GRANT` (not grantable, or not stored).
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, scope: WriteScope | FileOnlyScope"
    )]
    pub fn grant_write(&mut self, path: String, scope: String) -> napi::Result<String, String> {
        let file_only = match scope.as_str() {
            "once" => Some(true),
            "file-session" => Some(false),
            _ => None,
        };
        let mut session = self.commands.session();
        let p = session_path(&session, &path)?;
        match file_only {
            Some(once) => session.grant_file_write(&p, once).map_err(Into::into),
            None => {
                let scope = write_scope(&scope)?;
                session.grant_write(&p, scope).map_err(Into::into)
            }
        }
    }

    /// The user allowed `host` from the network prompt: session (approvals store), project
    /// or global (added to network.allowedDomains of that config file). Takes effect at once,
    /// for the running command too. A host deniedDomains lists is refused. Returns a
    /// sentence saying where the grant went.
    /// @throws {SandboxError} `E_BAD_SCOPE`, `E_GRANT` (a denied or bad host, or not stored).
    #[napi(catch_unwind, ts_args_type = "host: string, scope: WriteScope")]
    pub fn grant_domain(&mut self, host: String, scope: String) -> napi::Result<String, String> {
        let scope = write_scope(&scope)?;
        self.commands
            .session()
            .grant_domain(&host, scope)
            .map_err(Into::into)
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
            .map_err(Into::into)
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
            .map_err(Into::into)
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
            .map_err(Into::into)
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
    /// extension pi loads kept without its folder), for the session's start, or null. Off
    /// Node's main thread: the links that make a project read-only are known from a scan of
    /// the writable trees, which the first call may wait for (the index being built).
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn kept_notice_async(&self) -> AsyncTask<SessionTask<Option<String>>> {
        SessionTask::new(&self.commands, |session| {
            Ok(session.kept_notice().map(|n| shown::lines(&n)))
        })
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
        self.commands.dispose();
    }
}
