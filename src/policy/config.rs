//! Layered configuration: built-in defaults → global file → project file.
//!
//! Merge rule (the one seed-001 extensions use): a later layer replaces a key it sets, and
//! leaves every key it does not set alone. Arrays are replaced whole, never concatenated,
//! so a project can narrow as well as widen a list. Every effective value remembers the
//! layer it came from, so a block message can name the file to edit.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

// The values and the session's directories live below `config` and `trust` both; named
// here too, where the rest of the crate has always found them.
pub(crate) use crate::policy::config_values::{Config, Mode, Source, Sourced, MODE_HELP};
use crate::policy::project_layer::{ProjectLayer, Trust, Widening};
pub(crate) use crate::policy::session_env::Env;
use crate::shown;

impl Config {
    /// The built-in defaults for `env`: lists the other projects' transcript directories.
    pub(crate) fn defaults_for(env: &Env) -> Config {
        let other_sessions = crate::policy::credentials::other_sessions(env);
        Config::defaults(crate::policy::credentials::defaults(
            &env.agent_dir,
            &other_sessions,
        ))
    }
}

/// What can go wrong with a config file. Every variant names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConfigError {
    Read {
        file: PathBuf,
        message: String,
    },
    Parse {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    Schema {
        file: PathBuf,
        key: String,
        message: String,
    },
}

impl ConfigError {
    /// Stable code for the JS side.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            ConfigError::Read { .. } => "E_CONFIG_READ",
            ConfigError::Parse { .. } => "E_CONFIG_PARSE",
            ConfigError::Schema { .. } => "E_CONFIG_SCHEMA",
        }
    }

    pub(crate) fn file(&self) -> &Path {
        match self {
            ConfigError::Read { file, .. }
            | ConfigError::Parse { file, .. }
            | ConfigError::Schema { file, .. } => file,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The file's name and what the parser quotes from it (an unknown key, a bad
            // value) are the file's: escaped, so a hostile one cannot fake a line.
            ConfigError::Read { file, message } => write!(
                f,
                "cannot read sandbox config {}: {}. Fix its permissions or remove it.",
                shown::path(file),
                shown::text(message)
            ),
            ConfigError::Parse {
                file,
                line,
                column,
                message,
            } => write!(
                f,
                "{}:{line}:{column}: invalid JSON in sandbox config: {}. Fix the syntax at that position.",
                shown::path(file),
                shown::text(message)
            ),
            ConfigError::Schema { file, key, message } => write!(
                f,
                "{}: key `{}`: {}",
                shown::path(file),
                shown::text(key),
                shown::text(message)
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

// ---- file schema -------------------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileLayer {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    enabled: Option<bool>,
    mode: Option<String>,
    network: Option<NetworkLayer>,
    filesystem: Option<FilesystemLayer>,
    env: Option<EnvLayer>,
    redact: Option<RedactLayer>,
    ignore_violations: Option<BTreeMap<String, Vec<String>>>,
    enable_weaker_nested_sandbox: Option<bool>,
    enable_weaker_network_isolation: Option<bool>,
    // sandbox-runtime keys: accepted, not enforced.
    ripgrep: Option<Value>,
    mandatory_deny_search_depth: Option<Value>,
    allow_pty: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NetworkLayer {
    allowed_domains: Option<Vec<String>>,
    denied_domains: Option<Vec<String>>,
    allow_unix_sockets: Option<Vec<String>>,
    allow_all_unix_sockets: Option<bool>,
    allow_local_binding: Option<Value>,
    http_proxy_port: Option<Value>,
    socks_proxy_port: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnvLayer {
    allow: Option<Vec<String>>,
    deny: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RedactLayer {
    values: Option<Vec<String>>,
    env: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FilesystemLayer {
    deny_read: Option<Vec<String>>,
    allow_write: Option<Vec<String>>,
    deny_write: Option<Vec<String>>,
    allow_hooks_path: Option<bool>,
    env_templates_secret: Option<bool>,
}

/// Parses one layer's text. `file` is only used in errors.
fn parse_layer(file: &Path, text: &str) -> Result<FileLayer, ConfigError> {
    // Syntax first, so that a syntax error is reported as one (with its position) rather
    // than as whatever the schema makes of a truncated document.
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    })?;
    if !value.is_object() {
        return Err(ConfigError::Schema {
            file: file.to_path_buf(),
            key: "(top level)".into(),
            message: "the file must hold one JSON object, e.g. {\"filesystem\": {...}}".into(),
        });
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let key = e.path().to_string();
        ConfigError::Schema {
            file: file.to_path_buf(),
            key: if key == "." {
                "(top level)".into()
            } else {
                key
            },
            message: explain_schema_error(&e.inner().to_string()),
        }
    })
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

fn explain_schema_error(msg: &str) -> String {
    if msg.starts_with("unknown field") {
        format!("{msg}. Remove the key or fix its spelling (keys are case-sensitive).")
    } else {
        format!("{msg}.")
    }
}

fn schema_err(file: &Path, key: String, message: String) -> ConfigError {
    ConfigError::Schema {
        file: file.to_path_buf(),
        key,
        message,
    }
}

fn check_strings(file: &Path, key: &str, items: &[String]) -> Result<(), ConfigError> {
    for (i, item) in items.iter().enumerate() {
        if item.trim().is_empty() {
            return Err(schema_err(
                file,
                format!("{key}[{i}]"),
                "empty entry; remove it".into(),
            ));
        }
        if item.contains('\0') {
            return Err(schema_err(
                file,
                format!("{key}[{i}]"),
                "contains a NUL byte; remove it".into(),
            ));
        }
    }
    Ok(())
}

fn check_domains(file: &Path, key: &str, items: &[String]) -> Result<(), ConfigError> {
    check_strings(file, key, items)?;
    for (i, d) in items.iter().enumerate() {
        // The proxy's own parser: what passes here is what it matches.
        if let Err(e) = crate::net::domains::check_entry(d) {
            return Err(schema_err(
                file,
                format!("{key}[{i}]"),
                format!(
                    "{d:?} is not a host pattern ({e}); write a host such as \"example.com\", \"*.example.com\" or an IP address (no scheme, port or path)"
                ),
            ));
        }
    }
    Ok(())
}

/// Applies one parsed layer on top of `cfg`.
fn apply_layer(cfg: &mut Config, file: &Path, layer: FileLayer) -> Result<(), ConfigError> {
    if let Some(v) = layer.enabled {
        cfg.enabled = from_file(v, file);
    }
    if let Some(m) = layer.mode {
        let mode = Mode::parse(&m).ok_or_else(|| {
            schema_err(
                file,
                "mode".into(),
                format!("unknown mode {m:?}; use {MODE_HELP}"),
            )
        })?;
        cfg.mode = from_file(mode, file);
    }
    pass_through(cfg, file, "ripgrep", layer.ripgrep);
    pass_through(
        cfg,
        file,
        "mandatoryDenySearchDepth",
        layer.mandatory_deny_search_depth,
    );
    pass_through(cfg, file, "allowPty", layer.allow_pty);
    if let Some(net) = layer.network {
        apply_network(cfg, file, net)?;
    }
    if let Some(fs) = layer.filesystem {
        apply_filesystem(cfg, file, fs)?;
    }
    if let Some(env) = layer.env {
        for (key, v) in [("env.allow", &env.allow), ("env.deny", &env.deny)] {
            if let Some(v) = v {
                check_var_names(file, key, v, Wildcards::Allowed)?;
            }
        }
        set_list(&mut cfg.env_allow, env.allow, file);
        set_list(&mut cfg.env_deny, env.deny, file);
    }
    if let Some(redact) = layer.redact {
        apply_redact(cfg, file, redact)?;
    }
    if let Some(v) = layer.ignore_violations {
        cfg.ignore_violations = from_file(v, file);
    }
    if let Some(v) = layer.enable_weaker_nested_sandbox {
        cfg.enable_weaker_nested_sandbox = from_file(v, file);
    }
    if let Some(v) = layer.enable_weaker_network_isolation {
        cfg.enable_weaker_network_isolation = from_file(v, file);
    }
    Ok(())
}

/// `value`, as `file` set it.
fn from_file<T>(value: T, file: &Path) -> Sourced<T> {
    Sourced {
        value,
        source: Source::File(file.to_path_buf()),
    }
}

/// A list the layer sets replaces the one below.
fn set_list(slot: &mut Sourced<Vec<String>>, v: Option<Vec<String>>, file: &Path) {
    if let Some(v) = v {
        *slot = from_file(v, file);
    }
}

/// A key accepted for @anthropic-ai/sandbox-runtime's files and not enforced here.
fn pass_through(cfg: &mut Config, file: &Path, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        cfg.passthrough.insert(key.to_string(), from_file(v, file));
    }
}

fn apply_network(cfg: &mut Config, file: &Path, net: NetworkLayer) -> Result<(), ConfigError> {
    if let Some(v) = &net.allow_unix_sockets {
        check_strings(file, "network.allowUnixSockets", v)?;
    }
    set_list(&mut cfg.allow_unix_sockets, net.allow_unix_sockets, file);
    if let Some(v) = net.allow_all_unix_sockets {
        cfg.allow_all_unix_sockets = from_file(v, file);
    }
    pass_through(
        cfg,
        file,
        "network.allowLocalBinding",
        net.allow_local_binding,
    );
    pass_through(cfg, file, "network.httpProxyPort", net.http_proxy_port);
    pass_through(cfg, file, "network.socksProxyPort", net.socks_proxy_port);
    if let Some(v) = &net.allowed_domains {
        check_domains(file, "network.allowedDomains", v)?;
    }
    if let Some(v) = &net.denied_domains {
        check_domains(file, "network.deniedDomains", v)?;
    }
    set_list(&mut cfg.allowed_domains, net.allowed_domains, file);
    set_list(&mut cfg.denied_domains, net.denied_domains, file);
    Ok(())
}

fn apply_filesystem(cfg: &mut Config, file: &Path, fs: FilesystemLayer) -> Result<(), ConfigError> {
    for (key, v) in [
        ("filesystem.denyRead", &fs.deny_read),
        ("filesystem.allowWrite", &fs.allow_write),
        ("filesystem.denyWrite", &fs.deny_write),
    ] {
        if let Some(v) = v {
            check_strings(file, key, v)?;
        }
    }
    if let Some(v) = fs.allow_hooks_path {
        cfg.allow_hooks_path = from_file(v, file);
    }
    if let Some(v) = fs.env_templates_secret {
        cfg.env_templates_secret = from_file(v, file);
    }
    set_list(&mut cfg.deny_read, fs.deny_read, file);
    set_list(&mut cfg.allow_write, fs.allow_write, file);
    set_list(&mut cfg.deny_write, fs.deny_write, file);
    Ok(())
}

fn apply_redact(cfg: &mut Config, file: &Path, redact: RedactLayer) -> Result<(), ConfigError> {
    if let Some(v) = &redact.values {
        check_strings(file, "redact.values", v)?;
        for (i, value) in v.iter().enumerate() {
            if value.len() < crate::redact::MIN_SECRET_LEN {
                return Err(schema_err(
                    file,
                    format!("redact.values[{i}]"),
                    format!(
                        "a value to hide must have at least {} characters (shorter ones would garble ordinary output)",
                        crate::redact::MIN_SECRET_LEN
                    ),
                ));
            }
        }
    }
    if let Some(v) = &redact.env {
        check_var_names(file, "redact.env", v, Wildcards::Refused)?;
    }
    // Each layer adds to the lists: a project file cannot unlist what the user hides.
    for (target, more) in [
        (&mut cfg.redact_values, redact.values),
        (&mut cfg.redact_env, redact.env),
    ] {
        if let Some(more) = more {
            target.value.extend(more);
            target.source = Source::File(file.to_path_buf());
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wildcards {
    Allowed,
    Refused,
}

/// Each of `names` (the list at `key`) is a variable name, or with `Wildcards::Allowed` a
/// pattern of one with `*` and `?`.
fn check_var_names(
    file: &Path,
    key: &str,
    names: &[String],
    wildcards: Wildcards,
) -> Result<(), ConfigError> {
    check_strings(file, key, names)?;
    let allowed = |c: char| {
        c.is_ascii_alphanumeric()
            || c == '_'
            || (wildcards == Wildcards::Allowed && matches!(c, '*' | '?'))
    };
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() || !name.chars().all(allowed) {
            let how = match wildcards {
                Wildcards::Allowed => "use letters, digits and '_', with '*' or '?' as wildcards",
                Wildcards::Refused => "use letters, digits and '_'",
            };
            return Err(schema_err(
                file,
                format!("{key}[{i}]"),
                format!("'{name}' is not a variable name: {how}"),
            ));
        }
    }
    Ok(())
}

/// Merges `layers` (file path, file text or `None` when absent) over the defaults.
/// Pure: the caller reads the files.
pub(crate) fn merge(
    defaults: Config,
    layers: &[(PathBuf, Option<String>)],
) -> Result<Config, ConfigError> {
    let mut cfg = defaults;
    for (file, text) in layers {
        cfg.layers.push((file.clone(), text.is_some()));
        if let Some(text) = text {
            let layer = parse_layer(file, text)?;
            apply_layer(&mut cfg, file, layer)?;
        }
    }
    Ok(cfg)
}

/// Reads a layer file; absent is `None`, any other failure is an error (fail closed: an
/// unreadable config must not silently mean "no rules").
pub(crate) fn read_layer(file: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ConfigError::Read {
                file: file.to_path_buf(),
                message: "not valid UTF-8".into(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::Read {
            file: file.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// Loads defaults → global → project for `env`. The project file's widening parts apply
/// only when `trust_of(file, sha256)` says its content is trusted (see `trust`); what it
/// would widen is kept in `Config::project` either way.
pub(crate) fn load(
    env: &Env,
    trust_of: &dyn Fn(&Path, &str) -> Trust,
) -> Result<Config, ConfigError> {
    let base = below_project(env)?;
    let project = env.project_config();
    let Some(text) = read_layer(&project)? else {
        let mut cfg = base;
        cfg.layers.push((project, false));
        return Ok(cfg);
    };
    let meaning = project_meaning(env, &base, &text)?;
    let trust = if meaning.widenings.is_empty() {
        Trust::Trusted
    } else {
        trust_of(&project, &meaning.sha256)
    };
    let mut cfg = if trust == Trust::Trusted {
        meaning.wanted
    } else {
        meaning.restricted
    };
    cfg.project = Some(ProjectLayer {
        file: project,
        sha256: meaning.sha256,
        widenings: meaning.widenings,
        trust,
    });
    Ok(cfg)
}

/// The defaults and the global file: what the project file is judged against.
fn below_project(env: &Env) -> Result<Config, ConfigError> {
    let global = env.global_config();
    let global_text = read_layer(&global)?;
    merge(Config::defaults_for(env), &[(global, global_text)])
}

/// What a project file holding `text` would mean over `base`.
struct ProjectMeaning {
    /// Everything in it applied.
    wanted: Config,
    /// Only what tightens applied.
    restricted: Config,
    widenings: Vec<Widening>,
    /// The key a trust answer about it is stored under.
    sha256: String,
}

fn project_meaning(env: &Env, base: &Config, text: &str) -> Result<ProjectMeaning, ConfigError> {
    let project = env.project_config();
    let wanted = merge(base.clone(), &[(project.clone(), Some(text.to_string()))])?;
    let resolve = |raw: &str| crate::paths::resolve(raw, &env.home, &env.cwd).ok();
    let (restricted, widenings) = crate::policy::trust::restrict(base, &wanted, &project, &resolve);
    // The content, and what its widening entries resolve to now: a symlink swapped in under a
    // listed directory later changes what the same bytes mean, and so asks again.
    let mut meaning = text.to_string();
    for w in &widenings {
        meaning.push('\0');
        meaning.push_str(&w.meaning);
    }
    Ok(ProjectMeaning {
        wanted,
        restricted,
        sha256: crate::policy::project_layer::content_hash(meaning.as_bytes()),
        widenings,
    })
}

/// The trust key of a project file holding `text` (as `load` computes it, against the
/// global file as it is now), and whether that content widens anything (content that does
/// not needs no trust).
pub(crate) fn project_trust_key(env: &Env, text: &str) -> Result<(String, bool), ConfigError> {
    let meaning = project_meaning(env, &below_project(env)?, text)?;
    Ok((meaning.sha256, !meaning.widenings.is_empty()))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
