//! The plain JS objects the API takes and returns (`#[napi(object)]`), converted from the
//! session's types.

use napi_derive::napi;

use crate::policy::guard::{Decision, Step};

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
    /// Input keys to overwrite before pi runs the tool, with their values (grep's `glob`; a
    /// search's `path` in the session's own /tmp), if any.
    pub patch: Option<std::collections::HashMap<String, String>>,
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

/// A question of the network gate for the user: answer it with `answerNetworkPrompt(id, choice)`.
#[napi(object, js_name = "NetworkQuestion")]
pub struct JsNetworkQuestion {
    pub id: u32,
    pub host: String,
    pub port: u32,
    #[napi(ts_type = "NetworkPrompt")]
    pub prompt: JsPrompt,
}
