//! The config's values, each with the layer it came from, and the built-in defaults: what
//! the layers resolve to (`config`) and what project trust compares (`trust`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::policy::project_layer::ProjectLayer;
use crate::shown;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Defaults,
    File(PathBuf),
    /// Protection the sandbox applies whatever the config says.
    Mandatory,
    /// Set during the session (flag, command, shortcut).
    Runtime(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Defaults => write!(f, "built-in defaults"),
            // Shown wherever a rule's source is (dialogs, /sandbox): a path from the disk.
            Source::File(p) => f.write_str(&shown::path(p)),
            Source::Mandatory => write!(f, "built-in protection (cannot be turned off)"),
            Source::Runtime(how) => write!(f, "{how}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sourced<T> {
    pub(crate) value: T,
    pub(crate) source: Source,
}

impl<T> Sourced<T> {
    fn default(value: T) -> Self {
        Sourced {
            value,
            source: Source::Defaults,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    ReadOnly,
    ReadWrite,
    Yolo,
}

impl Mode {
    /// Accepts the canonical names and the aliases of seed 003.
    pub(crate) fn parse(s: &str) -> Option<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read-only" | "readonly" | "ro" => Some(Mode::ReadOnly),
            "read-write" | "readwrite" | "rw" => Some(Mode::ReadWrite),
            "yolo" => Some(Mode::Yolo),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::ReadWrite => "read-write",
            Mode::Yolo => "yolo",
        }
    }

    /// Alt+S order: read-only → read-write → yolo → read-only.
    pub(crate) fn next(self) -> Mode {
        match self {
            Mode::ReadOnly => Mode::ReadWrite,
            Mode::ReadWrite => Mode::Yolo,
            Mode::Yolo => Mode::ReadOnly,
        }
    }
}

pub(crate) const MODE_HELP: &str =
    "read-only (aliases readonly, ro), read-write (readwrite, rw) or yolo";

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub(crate) enabled: Sourced<bool>,
    pub(crate) mode: Sourced<Mode>,
    pub(crate) allowed_domains: Sourced<Vec<String>>,
    pub(crate) denied_domains: Sourced<Vec<String>>,
    /// Unix sockets outside the sandbox a command may connect to (paths).
    pub(crate) allow_unix_sockets: Sourced<Vec<String>>,
    /// Every unix socket may be connected to: the supervisor's check is off.
    pub(crate) allow_all_unix_sockets: Sourced<bool>,
    pub(crate) deny_read: Sourced<Vec<String>>,
    pub(crate) allow_write: Sourced<Vec<String>>,
    pub(crate) deny_write: Sourced<Vec<String>>,
    /// Let the agent edit the directories `core.hooksPath` names (husky's hooks); a git dir's
    /// own `hooks` stays protected.
    pub(crate) allow_hooks_path: Sourced<bool>,
    /// Env templates (`.env.example`, ...) are asked about and hidden like `.env`; by
    /// default they are not (they hold no secrets by convention).
    pub(crate) env_templates_secret: Sourced<bool>,
    /// Environment variables kept for sandboxed commands whatever else says (`env.allow`),
    /// and dropped besides the built-in patterns (`env.deny`): names or `*`/`?` patterns.
    pub(crate) env_allow: Sourced<Vec<String>>,
    pub(crate) env_deny: Sourced<Vec<String>>,
    /// Values hidden from the model in tools' output (`redact.values`), and variables whose
    /// values are hidden as well (`redact.env`), besides the dropped variables and pi's keys.
    pub(crate) redact_values: Sourced<Vec<String>>,
    pub(crate) redact_env: Sourced<Vec<String>>,
    pub(crate) ignore_violations: Sourced<BTreeMap<String, Vec<String>>>,
    pub(crate) enable_weaker_nested_sandbox: Sourced<bool>,
    pub(crate) enable_weaker_network_isolation: Sourced<bool>,
    /// Keys @anthropic-ai/sandbox-runtime accepts that this sandbox does not enforce yet;
    /// accepted so that existing files load unchanged, and shown by `/sandbox`.
    pub(crate) passthrough: BTreeMap<String, Sourced<Value>>,
    /// Every file consulted, in order, and whether it existed.
    pub(crate) layers: Vec<(PathBuf, bool)>,
    /// Why each default denyRead entry is there (`credentials`).
    pub(crate) deny_read_reasons: BTreeMap<String, &'static str>,
    /// The project file, if there is one: what it would widen and whether that applies.
    pub(crate) project: Option<ProjectLayer>,
    /// Directories the user allowed writes to for this session only (a prompt's answer),
    /// each with how it was granted: writable in both layers, never written to a file.
    pub(crate) session_allow_write: Vec<(String, Source)>,
    /// Single files the user allowed writing for this session (matched exactly, file tools
    /// only: `Guard::write_file_grant`).
    pub(crate) session_write_files: Vec<(String, Source)>,
}

pub(crate) const DEFAULT_ALLOWED_DOMAINS: &[&str] = &[
    "npmjs.org",
    "*.npmjs.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "pypi.org",
    "*.pypi.org",
    // Where pypi.org's files are: pip fetches every distribution from there.
    "files.pythonhosted.org",
    "github.com",
    "*.github.com",
    "api.github.com",
    "raw.githubusercontent.com",
];

impl Config {
    /// The built-in defaults, with `deny_read` (entry, why) from `credentials::defaults`.
    pub(crate) fn defaults(deny_read: Vec<(String, &'static str)>) -> Config {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Config {
            enabled: Sourced::default(true),
            mode: Sourced::default(Mode::ReadWrite),
            allowed_domains: Sourced::default(strings(DEFAULT_ALLOWED_DOMAINS)),
            denied_domains: Sourced::default(vec![]),
            allow_unix_sockets: Sourced::default(vec![]),
            allow_all_unix_sockets: Sourced::default(false),
            deny_read: Sourced::default(deny_read.iter().map(|(p, _)| p.clone()).collect()),
            deny_read_reasons: deny_read.into_iter().collect(),
            allow_write: Sourced::default(strings(&[".", "/tmp"])),
            deny_write: Sourced::default(strings(&[".env", ".env.*", "*.pem", "*.key"])),
            allow_hooks_path: Sourced::default(false),
            env_templates_secret: Sourced::default(false),
            env_allow: Sourced::default(vec![]),
            env_deny: Sourced::default(vec![]),
            redact_values: Sourced::default(vec![]),
            redact_env: Sourced::default(vec![]),
            ignore_violations: Sourced::default(BTreeMap::new()),
            enable_weaker_nested_sandbox: Sourced::default(false),
            enable_weaker_network_isolation: Sourced::default(false),
            passthrough: BTreeMap::new(),
            layers: vec![],
            project: None,
            session_allow_write: vec![],
            session_write_files: vec![],
        }
    }
}
