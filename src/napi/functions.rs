//! The free functions: modes, the OS sandbox, pi's session folder, text for the user's eyes.

use std::path::Path;

use napi::bindgen_prelude::{AsyncTask, Task};
use napi_derive::napi;

use super::errors::*;
use super::objects::*;
use crate::policy::pi_session;
use crate::session::tools;
use crate::shown;

/// Normalises a mode name or alias ("ro", "readwrite", ...; any case, spaces around it) to
/// its canonical name: what to pass `setMode` text a user typed through.
/// @throws {SandboxError} `E_BAD_MODE`.
#[napi(catch_unwind, ts_return_type = "Mode")]
pub fn parse_mode(mode: String) -> napi::Result<String, String> {
    crate::session::parse_mode(&mode)
        .map(|m| m.as_str().into())
        .map_err(Into::into)
}

/// The OS sandbox bash runs in here (probed once per process).
#[napi(catch_unwind)]
pub fn sandbox_capability() -> JsCapability {
    capability(crate::platform::detect::detect())
}

pub struct ProbeTask;

impl Task for ProbeTask {
    type Output = crate::policy::bash::Capability;
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

pub(crate) fn capability(c: crate::policy::bash::Capability) -> JsCapability {
    use crate::policy::bash::Capability;
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
