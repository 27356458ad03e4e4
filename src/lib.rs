//! N-API exports only: convert JS values, call the modules, map errors to JS errors with a
//! stable `code`.

pub mod audit;
pub mod config;
pub mod guard;
pub mod launch;
pub mod open;
pub mod paths;
pub mod platform;
pub mod policy;
pub mod protected;
pub mod session;
pub mod tools;

use std::path::{Path, PathBuf};

use napi::Error;
use napi_derive::napi;
use serde_json::Value;

use crate::config::{Env, Mode};
use crate::guard::{Decision, Op, Step};
use crate::launch::Launch;
use crate::policy::Network;
use crate::session::{FileOpError, Options, Prepared, Session};

/// A JS error whose `code` is our stable code (e.g. `E_BAD_MODE`).
fn js_error(code: &str, message: impl Into<String>) -> Error<String> {
    Error::new(code.to_string(), message.into())
}

#[napi(object)]
pub struct LoadOptions {
    /// The session's working directory (pi's `ctx.cwd`).
    pub cwd: String,
    /// Defaults to `$HOME`.
    pub home: Option<String>,
    /// Defaults to `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub agent_dir: Option<String>,
    /// Defaults to `$PI_CODING_AGENT_SESSION_DIR`.
    pub session_dir: Option<String>,
    /// Defaults to `$PI_SANDBOX_APPROVAL_MODE` (ask when unset).
    pub approval_mode: Option<String>,
}

#[napi(object)]
pub struct JsDecision {
    /// "allow" | "prompt" | "deny"
    pub verdict: String,
    /// "read" | "write"
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

#[napi(object)]
pub struct JsToolDecision {
    pub decision: JsDecision,
    /// Input key to overwrite before pi runs the tool (e.g. grep's `glob`), if any.
    pub patch_key: Option<String>,
    pub patch_value: Option<Value>,
}

#[napi(object)]
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

#[napi(object)]
pub struct JsExplanation {
    pub decision: JsDecision,
    /// Every rule consulted, in the order the guard consulted them.
    pub steps: Vec<JsStep>,
}

#[napi(object)]
pub struct JsLoadError {
    /// E_CONFIG_PARSE, E_CONFIG_SCHEMA, E_CONFIG_READ, E_CONFIG_RULE, E_CONFIG_PATH,
    /// E_APPROVAL_MODE
    pub code: String,
    pub message: String,
    pub file: Option<String>,
}

/// A shell command or argv, prepared: the policy's verdict and, when sandboxed, what to spawn.
/// Spawn `program` with `args` directly (no shell), giving the child `fds` as its fds 3, 4, ...
/// in order (`stdio: ["ignore", "pipe", "pipe", ...fds]`); call `release()` once spawned and
/// `finish()` when the run is over.
#[napi]
pub struct PreparedCommand {
    verdict: &'static str,
    reason: Option<String>,
    launch: Option<Launch>,
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
    /// "sandboxed" | "unsandboxed" | "denied"
    #[napi(getter)]
    pub fn verdict(&self) -> String {
        self.verdict.into()
    }

    /// Why it is unsandboxed or denied, for the user and the model.
    #[napi(getter)]
    pub fn reason(&self) -> Option<String> {
        self.reason.clone()
    }

    /// The program to spawn (bwrap or sandbox-exec).
    #[napi(getter)]
    pub fn program(&self) -> Option<String> {
        self.launch
            .as_ref()
            .map(|l| l.program.display().to_string())
    }

    /// Its arguments (bwrap's options come on fd 3).
    #[napi(getter)]
    pub fn args(&self) -> napi::Result<Option<Vec<String>>, String> {
        self.launch.as_ref().map(|l| utf8_args(&l.args)).transpose()
    }

    /// All of the sandbox's arguments, options included, for display.
    #[napi(getter)]
    pub fn shown(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.shown
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        })
    }

    /// The open files the child gets as fds 3, 4, ...; empty once released.
    #[napi(getter)]
    pub fn fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.launch
            .as_ref()
            .map(|l| l.fds.iter().map(|f| f.as_raw_fd()).collect())
            .unwrap_or_default()
    }

    /// Empty directories created as mount points for protected names (kept afterwards).
    #[napi(getter)]
    pub fn placeholders(&self) -> Option<Vec<String>> {
        self.launch.as_ref().map(|l| {
            l.placeholders
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        })
    }

    /// Closes this process's copies of `fds` (the child has its own once spawned).
    #[napi]
    pub fn release(&mut self) {
        if let Some(l) = &mut self.launch {
            l.fds.clear();
        }
    }

    /// After the run: releases the fds and removes the run's temp files.
    #[napi]
    pub fn finish(&mut self) {
        if let Some(l) = self.launch.take() {
            l.discard();
        }
    }
}

impl Drop for PreparedCommand {
    fn drop(&mut self) {
        self.finish();
    }
}

fn prepared(p: Prepared) -> PreparedCommand {
    let (verdict, reason, launch) = match p {
        Prepared::Unsandboxed(reason) => ("unsandboxed", Some(reason), None),
        Prepared::Denied(reason) => ("denied", Some(reason), None),
        Prepared::Sandboxed(launch) => ("sandboxed", None, Some(launch)),
    };
    PreparedCommand {
        verdict,
        reason,
        launch,
    }
}

fn parse_network(network: Option<String>) -> napi::Result<Network, String> {
    match network.as_deref() {
        None => Ok(Network::Off),
        Some(n) => Network::parse(n).ok_or_else(|| {
            js_error(
                "E_BAD_NETWORK",
                format!("unknown network mode {n:?}; use \"on\" or \"off\""),
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

/// The policy of one pi session. Never throws for a broken config: it loads in a refusing
/// state (see `error`) so that every check fails closed with the reason.
#[napi]
pub struct Sandbox {
    session: Session,
}

#[napi]
impl Sandbox {
    #[napi(factory)]
    pub fn load(options: LoadOptions) -> napi::Result<Sandbox, String> {
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
        if let Some(s) = options.session_dir {
            env.session_dir = Some(absolute(&s, &cwd, &env.home)?);
        }
        let approval_mode = options
            .approval_mode
            .or_else(|| std::env::var("PI_SANDBOX_APPROVAL_MODE").ok());
        Ok(Sandbox {
            session: Session::load(Options { env, approval_mode }),
        })
    }

    /// Why the policy could not be loaded, or null.
    #[napi(getter)]
    pub fn error(&self) -> Option<JsLoadError> {
        self.session.error().map(|e| JsLoadError {
            code: e.code.into(),
            message: e.message.clone(),
            file: e.file.as_ref().map(|f| f.display().to_string()),
        })
    }

    /// A path as pi's tools hand it over (absolute already; relative ones against the cwd).
    fn tool_path(&self, path: &str) -> napi::Result<PathBuf, String> {
        let env = self.session.env();
        absolute(path, &env.cwd, &env.home)
    }

    /// Decides a read or write of `path` (relative paths resolve against the session cwd).
    #[napi]
    pub fn check(&self, op: String, path: String) -> napi::Result<JsDecision, String> {
        let op = parse_op(&op)?;
        let env = self.session.env();
        let p = absolute(&path, &env.cwd, &env.home)?;
        Ok(self.session.check(op, &p).into())
    }

    /// Like `check`, with every rule consulted on the way.
    #[napi]
    pub fn explain(&self, op: String, path: String) -> napi::Result<JsExplanation, String> {
        let op = parse_op(&op)?;
        let env = self.session.env();
        let p = absolute(&path, &env.cwd, &env.home)?;
        let (d, steps) = self.session.explain(op, &p);
        Ok(JsExplanation {
            decision: d.into(),
            steps: steps.into_iter().map(Into::into).collect(),
        })
    }

    /// Checks one pi tool call (`event.toolName`, `event.input`). Re-reads the config files
    /// first if they changed. Null for tools the path guard does not cover.
    #[napi]
    pub fn check_tool(&mut self, tool: String, input: Value) -> Option<JsToolDecision> {
        self.session.refresh();
        self.session.check_tool(&tool, &input).map(|c| {
            let (patch_key, patch_value) = match c.patch {
                Some((k, v)) => (Some(k), Some(v)),
                None => (None, None),
            };
            JsToolDecision {
                decision: c.decision.into(),
                patch_key,
                patch_value,
            }
        })
    }

    /// pi's read tool backend: the file the guard judged, opened without following links.
    #[napi]
    pub fn read_file(&self, path: String) -> napi::Result<napi::bindgen_prelude::Buffer, String> {
        let p = self.tool_path(&path)?;
        self.session
            .read_file(&p)
            .map(Into::into)
            .map_err(file_op_error)
    }

    /// pi's write and edit backend: replaces the judged file's content (UTF-8 text).
    #[napi]
    pub fn write_file(&self, path: String, content: String) -> napi::Result<(), String> {
        let p = self.tool_path(&path)?;
        self.session
            .write_file(&p, content.as_bytes())
            .map_err(file_op_error)
    }

    /// pi's access check: readable (and writable when `write`), judged and opened the same way.
    #[napi]
    pub fn access_file(&self, path: String, write: Option<bool>) -> napi::Result<(), String> {
        let p = self.tool_path(&path)?;
        self.session
            .access_file(&p, write.unwrap_or(false))
            .map_err(file_op_error)
    }

    /// pi's write creates the file's directory first; judged as a write of that directory.
    #[napi]
    pub fn mkdir(&self, dir: String) -> napi::Result<(), String> {
        let p = self.tool_path(&dir)?;
        self.session.mkdir(&p).map_err(file_op_error)
    }

    /// Re-reads the config files now.
    #[napi]
    pub fn reload(&mut self) {
        self.session.reload();
    }

    /// "read-only" | "read-write" | "yolo"
    #[napi(getter)]
    pub fn mode(&self) -> String {
        self.session.mode().as_str().into()
    }

    /// False when the config says `enabled: false`.
    #[napi(getter)]
    pub fn enabled(&self) -> bool {
        self.session.enabled()
    }

    /// Sets the mode for the rest of the session; `how` is shown as its source.
    #[napi]
    pub fn set_mode(&mut self, mode: String, how: String) -> napi::Result<String, String> {
        self.session
            .set_mode(&mode, &how)
            .map(|m| m.as_str().into())
            .map_err(|e| js_error("E_BAD_MODE", e))
    }

    /// read-only → read-write → yolo → read-only; returns the new mode.
    #[napi]
    pub fn cycle_mode(&mut self, how: String) -> String {
        self.session.cycle_mode(&how).as_str().into()
    }

    /// Prepares a shell command for pi's bash: the policy's verdict and, when sandboxed, what
    /// to spawn (see `PreparedCommand`). `network`: "on" | "off" (default off).
    #[napi]
    pub fn prepare_bash(
        &mut self,
        command: String,
        network: Option<String>,
    ) -> napi::Result<PreparedCommand, String> {
        let network = parse_network(network)?;
        self.session.refresh();
        Ok(prepared(self.session.prepare_bash(&command, network)))
    }

    /// Prepares an argv (no shell) the same way.
    #[napi]
    pub fn prepare_run(
        &mut self,
        argv: Vec<String>,
        network: Option<String>,
    ) -> napi::Result<PreparedCommand, String> {
        let network = parse_network(network)?;
        if argv.is_empty() {
            return Err(js_error("E_BAD_COMMAND", "no command given"));
        }
        self.session.refresh();
        let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
        Ok(prepared(self.session.prepare_argv(&argv, network)))
    }

    /// Call after a sandboxed command finished: control-surface paths it created (a `.pi`
    /// directory, a new repository's live hooks or command-running git config) are moved
    /// aside; returns one sentence per finding (empty when all is well).
    #[napi]
    pub fn audit_after_command(&self) -> Vec<String> {
        self.session
            .audit_after_command()
            .iter()
            .map(|f| f.to_string())
            .collect()
    }

    /// For a sandboxed command's output: one sentence for each path an error line reports as
    /// read-only or busy that the sandbox keeps so, with the rule and how to change it.
    #[napi]
    pub fn explain_write_failures(&self, output: String) -> Vec<String> {
        self.session.explain_write_failures(&output)
    }

    /// The effective configuration as text, each value with the file it came from.
    #[napi]
    pub fn describe(&self) -> String {
        self.session.describe()
    }
}

/// Normalises a mode name or alias ("ro", "readwrite", ...) to its canonical name.
#[napi]
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

#[napi(object)]
pub struct JsCapability {
    /// "bwrap" | "sandbox-exec" | "none"
    pub kind: String,
    /// The program found, when there is one.
    pub program: Option<String>,
    /// Why there is no sandbox and how to fix it, when there is none.
    pub reason: Option<String>,
}

/// The OS sandbox bash runs in here (probed once per process).
#[napi]
pub fn sandbox_capability() -> JsCapability {
    use crate::platform::detect::{detect, Capability};
    match detect() {
        Capability::Bwrap { program } => JsCapability {
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
#[napi]
pub fn guarded_tools() -> Vec<String> {
    tools::GUARDED_TOOLS.iter().map(|s| s.to_string()).collect()
}
