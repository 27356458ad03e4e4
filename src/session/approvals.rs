//! The approvals store: `<agent dir>/sandbox-approvals.json`, the grants the *user* made in
//! permission prompts (run a command without the OS sandbox, read an env file, trust a
//! project config file's widening rules).
//!
//! This module only stores. The agent must never grant itself anything: the callers pass
//! only the user's answers here, and the agent dir is kept read-only to the agent by the
//! guard and bash's mounts.
//!
//! The file (`"version": 2`) holds an array of entries. `always` entries last until
//! removed; `session` entries carry the id of the pi session they were granted in, apply
//! only to it, and expire after a TTL (`PI_SANDBOX_SESSION_APPROVAL_TTL_MS`, 6 hours by
//! default). Expired entries are ignored when reading and pruned at the next write.
//!
//! Safety rules of the format:
//! - a file that cannot be read as approvals (invalid JSON, wrong shape) is moved aside and
//!   read as *no* approvals, never as everything approved;
//! - a file written by a newer version (`version` > 2) is refused and never overwritten;
//! - entries of a kind or scope this version does not know are ignored and written back
//!   untouched, as are keys this version does not know;
//! - older files (version 1's `{"<command>": true}` map and the earlier extension's
//!   version-2 object map) are read and upgraded at the next write.
//!
//! Every write runs under an exclusive `flock` on a sidecar lock file, re-reads the file
//! under the lock and replaces it atomically (temp file, fsync, rename, fsync of the
//! directory), so several pi processes granting at once lose nothing.

use std::fmt;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub const FILE_NAME: &str = "sandbox-approvals.json";
pub const TTL_VAR: &str = "PI_SANDBOX_SESSION_APPROVAL_TTL_MS";
/// How long a `session` approval lasts unless `PI_SANDBOX_SESSION_APPROVAL_TTL_MS` says.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(6 * 60 * 60);

/// The file format this module writes.
const VERSION: u64 = 2;
/// The grant kinds this version understands; entries of other kinds are kept untouched.
const KNOWN_KINDS: [&str; 5] = [
    "command",
    "commandPrefix",
    "envRead",
    "projectTrust",
    "networkHost",
];
const KNOWN_SCOPES: [&str; 2] = ["session", "always"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Session,
    Always,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Grant {
    /// Run exactly this command text without an OS sandbox.
    Command { command: String },
    /// Run without an OS sandbox any *simple* command whose words start with `argv`.
    CommandPrefix { argv: Vec<String> },
    /// Read this sensitive env file (canonical path).
    EnvRead { path: PathBuf },
    /// Let sandboxed commands reach this host (canonical: `domains::parse_host`'s form) through
    /// the network proxy, on any port.
    NetworkHost { host: String },
    /// The user's answer about a project config file's widening rules, for this exact content.
    ProjectTrust {
        file: PathBuf,
        sha256: String,
        trusted: bool,
    },
}

impl Grant {
    /// Whether this grant lets `command` run unsandboxed: `Command` = byte-exact equality;
    /// `CommandPrefix` = `simple_argv(command)` is `Some` and starts with `argv` (word by
    /// word, exact); other kinds never. An empty prefix covers nothing.
    pub fn covers_command(&self, command: &str) -> bool {
        match self {
            Grant::Command { command: granted } => granted == command,
            Grant::CommandPrefix { argv } => {
                !argv.is_empty()
                    && simple_argv(command).is_some_and(|words| words.starts_with(argv))
            }
            Grant::EnvRead { .. } | Grant::ProjectTrust { .. } | Grant::NetworkHost { .. } => false,
        }
    }

    /// Why this grant cannot be stored, if it cannot.
    fn invalid(&self) -> Option<String> {
        match self {
            Grant::Command { command } if command.is_empty() => {
                Some("a command grant needs the command's text; it is empty".into())
            }
            Grant::CommandPrefix { argv } if argv.is_empty() => Some(
                "a command-prefix grant needs at least one word; an empty prefix would cover every command"
                    .into(),
            ),
            Grant::EnvRead { path } if !path.is_absolute() => Some(format!(
                "an env-read grant needs an absolute (canonical) path, not {}",
                path.display()
            )),
            Grant::ProjectTrust { file, .. } if !file.is_absolute() => Some(format!(
                "a project-trust grant needs the config file's absolute path, not {}",
                file.display()
            )),
            Grant::NetworkHost { host } if !is_canonical_host(host) => Some(format!(
                "a network grant needs one host in canonical form (lower case, punycode, no port or trailing dot), not {host:?}"
            )),
            Grant::ProjectTrust { sha256, .. } if !is_sha256_hex(sha256) => Some(format!(
                "a project-trust grant needs the file's SHA-256 as 64 lowercase hex digits (content_hash), not {sha256:?}"
            )),
            _ => None,
        }
    }
}

/// One stored grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub scope: Scope,
    /// The pi session a `session` entry was granted in (absent for `always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub grant: Grant,
    /// Which prompt the user answered, e.g. `user: unsandboxed bash prompt`.
    pub granted_by: String,
    /// RFC 3339, UTC, milliseconds.
    pub granted_at: String,
    /// Milliseconds since the epoch; `None` (`null`) for `always`.
    #[serde(default)]
    pub expires_at: Option<u64>,
}

impl Entry {
    fn expired(&self, now_ms: u64) -> bool {
        self.expires_at.is_some_and(|t| t <= now_ms)
    }

    fn visible_to(&self, session: &str) -> bool {
        match self.scope {
            Scope::Always => true,
            Scope::Session => self.session.as_deref() == Some(session),
        }
    }

    /// Why an entry read from the file is not well-formed, if it is not.
    fn malformed(&self) -> Option<String> {
        match self.scope {
            Scope::Session if self.session.as_deref().is_none_or(str::is_empty) => {
                return Some("a session entry has no session id".into())
            }
            Scope::Session if self.expires_at.is_none() => {
                return Some("a session entry has no expiresAt".into())
            }
            Scope::Always if self.session.is_some() => {
                return Some("an always entry carries a session id".into())
            }
            _ => {}
        }
        match &self.grant {
            Grant::CommandPrefix { argv } if argv.is_empty() => {
                Some("a commandPrefix grant has no words".into())
            }
            _ => None,
        }
    }
}

/// What the store holds for one session now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Unexpired entries, in file order; session entries of other sessions left out.
    pub entries: Vec<Entry>,
    /// Something the user should know about the file: a corrupt file moved aside, an old
    /// format that will be upgraded at the next grant.
    pub notice: Option<String>,
}

impl Snapshot {
    pub fn empty() -> Snapshot {
        Snapshot::default()
    }

    /// The entry that lets `command` run unsandboxed, if any.
    pub fn command_grant(&self, command: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.grant.covers_command(command))
    }

    /// The env files granted, each with the entry that grants it.
    pub fn env_read_grants(&self) -> impl Iterator<Item = (&Path, &Entry)> {
        self.entries.iter().filter_map(|e| match &e.grant {
            Grant::EnvRead { path } => Some((path.as_path(), e)),
            _ => None,
        })
    }

    pub fn env_read_granted(&self, path: &Path) -> bool {
        self.env_read_grants().any(|(p, _)| p == path)
    }

    /// The hosts granted for the network proxy, each with the entry that grants it.
    pub fn network_grants(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().filter_map(|e| match &e.grant {
            Grant::NetworkHost { host } => Some((host.as_str(), e)),
            _ => None,
        })
    }

    /// The latest trust answer for `file`: (sha256, trusted).
    pub fn trust(&self, file: &Path) -> Option<(&str, bool)> {
        self.entries.iter().rev().find_map(|e| match &e.grant {
            Grant::ProjectTrust {
                file: f,
                sha256,
                trusted,
            } if f == file => Some((sha256.as_str(), *trusted)),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The file, its directory or its lock cannot be read or written.
    Io { path: PathBuf, message: String },
    /// The file was written by a newer version; it is left alone.
    FutureVersion { path: PathBuf, version: u64 },
    /// `PI_SANDBOX_SESSION_APPROVAL_TTL_MS` is not a positive whole number of milliseconds.
    Ttl { message: String },
    /// A grant that cannot be stored (a caller's mistake: a session grant without the
    /// session id, an empty command prefix, ...).
    Invalid { message: String },
}

impl StoreError {
    /// Stable code for the JS side.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "E_APPROVALS_IO",
            StoreError::FutureVersion { .. } => "E_APPROVALS_VERSION",
            StoreError::Ttl { .. } => "E_APPROVALS_TTL",
            StoreError::Invalid { .. } => "E_APPROVALS_INVALID",
        }
    }

    fn io(path: &Path, doing: &str, err: impl fmt::Display) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            message: format!("{doing}: {err}"),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, message } => write!(
                f,
                "sandbox approvals {}: {message}. Check that the agent directory exists and that you own the file and can write to it (or remove the file to start over).",
                path.display()
            ),
            StoreError::FutureVersion { path, version } => write!(
                f,
                "sandbox approvals {}: version {version} was written by a newer pi-sandbox; this one reads versions 1 and 2 only and leaves the file alone, so no approval can be recorded. Update pi-sandbox, or move the file aside to start an empty store (its approvals are then forgotten).",
                path.display()
            ),
            StoreError::Ttl { message } => f.write_str(message),
            StoreError::Invalid { message } => write!(f, "cannot record the approval: {message}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Parses the TTL variable's raw value: `None` (or empty, as for pi's other variables) →
/// the default; a positive whole number of milliseconds → that; anything else → an error
/// naming the variable, the value and what to write.
pub fn ttl_from_env(raw: Option<&str>) -> Result<Duration, String> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(DEFAULT_SESSION_TTL);
    };
    let digits = raw.trim();
    let ms = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<u64>().ok().filter(|&ms| ms > 0)
    } else {
        None
    };
    ms.map(Duration::from_millis).ok_or_else(|| {
        format!(
            "{TTL_VAR}={raw:?} is not a positive whole number of milliseconds; set e.g. {TTL_VAR}=3600000 for one hour, or unset it for the default of {} ms (6 hours)",
            DEFAULT_SESSION_TTL.as_millis()
        )
    })
}

/// The clock a store reads: milliseconds since the epoch.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The approvals file of one agent dir.
#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    ttl: Duration,
    clock: Clock,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// One element of the file's `approvals` array.
#[derive(Debug, Clone)]
struct Item {
    /// As read from the file; written back as it was (keys a newer version added included).
    /// `None` for entries made or upgraded here.
    raw: Option<Value>,
    /// `None` for an entry of a kind or scope this version does not know.
    entry: Option<Entry>,
}

impl Item {
    fn to_value(&self) -> Result<Value, serde_json::Error> {
        match (&self.raw, &self.entry) {
            (Some(raw), _) => Ok(raw.clone()),
            (None, Some(entry)) => serde_json::to_value(entry),
            (None, None) => Ok(Value::Null),
        }
    }
}

/// The file's content as this version understands it.
#[derive(Debug, Default)]
struct State {
    items: Vec<Item>,
    /// Top-level keys other than `version` and `approvals`, kept on rewrite.
    extra: Map<String, Value>,
    notice: Option<String>,
}

enum Parsed {
    Valid(State),
    Corrupt(String),
}

impl Store {
    /// The store in `agent_dir`, TTL from `PI_SANDBOX_SESSION_APPROVAL_TTL_MS` (see
    /// [`ttl_from_env`]).
    pub fn in_agent_dir(agent_dir: &Path) -> Result<Store, StoreError> {
        let raw = match std::env::var(TTL_VAR) {
            Ok(v) => Some(v),
            Err(std::env::VarError::NotPresent) => None,
            // Not UTF-8: no number either; `ttl_from_env` says so, as for any other value.
            Err(std::env::VarError::NotUnicode(v)) => Some(v.to_string_lossy().into_owned()),
        };
        let ttl = ttl_from_env(raw.as_deref()).map_err(|message| StoreError::Ttl { message })?;
        Ok(Store::with_clock(
            agent_dir.join(FILE_NAME),
            ttl,
            Arc::new(system_now_ms),
        ))
    }

    /// For tests: explicit path, ttl and clock (ms since epoch).
    pub fn with_clock(path: PathBuf, ttl: Duration, clock: Clock) -> Store {
        Store { path, ttl, clock }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// What the store holds for `session` now. A missing file is an empty store; a corrupt
    /// one is moved aside and read as empty (with a notice); a newer version's file is an
    /// error.
    pub fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
        let now = (self.clock)();
        let state = match self.read()? {
            None => State::default(),
            Some(bytes) => match self.parse(&bytes, now)? {
                Parsed::Valid(state) => state,
                // Moving the file aside must not race a writer that replaced it meanwhile:
                // it is done under the lock, after reading the file again.
                Parsed::Corrupt(reason) => {
                    match self.lock().and_then(|_lock| self.read_locked(now)) {
                        Ok(state) => state,
                        Err(StoreError::Io { message, .. }) => State {
                            notice: Some(format!(
                                "{} is not a valid approvals file ({reason}) and could not be moved aside ({message}); no approvals apply. Fix or remove it.",
                                self.path.display()
                            )),
                            ..State::default()
                        },
                        Err(e) => return Err(e),
                    }
                }
            },
        };
        Ok(Snapshot {
            entries: state
                .items
                .into_iter()
                .filter_map(|item| item.entry)
                .filter(|e| !e.expired(now) && e.visible_to(session))
                .collect(),
            notice: state.notice,
        })
    }

    /// Records a grant (scope `Session` needs `session`; `Always` ignores it) and returns
    /// the stored entry. An identical unexpired entry of the same scope and session is
    /// refreshed rather than duplicated; a `ProjectTrust` grant replaces every earlier
    /// answer about the same file.
    pub fn grant(
        &self,
        scope: Scope,
        grant: Grant,
        session: &str,
        granted_by: &str,
    ) -> Result<Entry, StoreError> {
        if let Some(message) = grant.invalid() {
            return Err(StoreError::Invalid { message });
        }
        if scope == Scope::Session && session.is_empty() {
            return Err(StoreError::Invalid {
                message: "a session grant needs the id of the pi session it is granted in".into(),
            });
        }
        let dir = self.dir();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| StoreError::io(&dir, "creating the agent directory", e))?;

        let _lock = self.lock()?;
        let now = (self.clock)();
        let mut state = self.read_locked(now)?;
        state
            .items
            .retain(|item| item.entry.as_ref().is_none_or(|e| !e.expired(now)));

        let entry = Entry {
            scope,
            session: (scope == Scope::Session).then(|| session.to_string()),
            grant,
            granted_by: granted_by.to_string(),
            granted_at: rfc3339_ms(now),
            expires_at: match scope {
                Scope::Always => None,
                Scope::Session => Some(now.saturating_add(duration_ms(self.ttl))),
            },
        };
        state.items.retain(|item| {
            let Some(old) = &item.entry else {
                return true;
            };
            let same = old.scope == entry.scope
                && old.session == entry.session
                && old.grant == entry.grant;
            let same_file = matches!(
                (&old.grant, &entry.grant),
                (Grant::ProjectTrust { file: a, .. }, Grant::ProjectTrust { file: b, .. }) if a == b
            );
            !same && !same_file
        });
        state.items.push(Item {
            raw: None,
            entry: Some(entry.clone()),
        });
        self.write(&state)?;
        Ok(entry)
    }

    fn dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    /// The file's bytes, `None` when it does not exist.
    fn read(&self) -> Result<Option<Vec<u8>>, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&self.path, "reading", e)),
        }
    }

    /// Reads the file with the lock held: a corrupt file is moved aside (and read as empty,
    /// with a notice). Errors if it cannot be moved aside, so that it is never overwritten.
    fn read_locked(&self, now: u64) -> Result<State, StoreError> {
        let Some(bytes) = self.read()? else {
            return Ok(State::default());
        };
        match self.parse(&bytes, now)? {
            Parsed::Valid(state) => Ok(state),
            Parsed::Corrupt(reason) => {
                let aside = self.move_aside(now)?;
                Ok(State {
                    notice: Some(format!(
                        "{} was not a valid approvals file ({reason}); it was moved aside to {} and no approvals apply until you grant them again",
                        self.path.display(),
                        aside.display()
                    )),
                    ..State::default()
                })
            }
        }
    }

    /// Renames the file to `<name>.corrupt-<unix ms>` (with `-<n>` if that exists).
    fn move_aside(&self, now: u64) -> Result<PathBuf, StoreError> {
        let base = format!(".corrupt-{now}");
        let mut aside = self.sibling(&base);
        let mut n = 1;
        while aside.symlink_metadata().is_ok() {
            aside = self.sibling(&format!("{base}-{n}"));
            n += 1;
        }
        std::fs::rename(&self.path, &aside).map_err(|e| {
            StoreError::io(
                &self.path,
                &format!("moving the corrupt file aside to {}", aside.display()),
                e,
            )
        })?;
        sync_dir(&self.dir());
        Ok(aside)
    }

    /// The exclusive lock on the sidecar lock file, released when dropped.
    fn lock(&self) -> Result<File, StoreError> {
        let path = self.sibling(".lock");
        crate::session::config_edit::exclusive_lock(&path)
            .map_err(|e| StoreError::io(&path, "locking", e))
    }

    /// The file's content, or why it is not an approvals file. A newer version is an error.
    fn parse(&self, bytes: &[u8], now: u64) -> Result<Parsed, StoreError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Parsed::Valid(State::default()));
        }
        let root: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => return Ok(Parsed::Corrupt(format!("invalid JSON: {e}"))),
        };
        let Value::Object(mut root) = root else {
            return Ok(Parsed::Corrupt("the top level is not a JSON object".into()));
        };
        let version = match root.get("version") {
            None => 1,
            Some(v) => match v.as_u64() {
                Some(n @ 1..) => n,
                _ => {
                    return Ok(Parsed::Corrupt(format!(
                        "\"version\" is {v}, not a version number"
                    )))
                }
            },
        };
        if version > VERSION {
            return Err(StoreError::FutureVersion {
                path: self.path.clone(),
                version,
            });
        }
        let approvals = root.shift_remove("approvals").unwrap_or(Value::Null);
        root.shift_remove("version");
        let state = match (version, approvals) {
            (_, Value::Null) => Ok(State::default()),
            (1, Value::Object(map)) => self.upgrade_v1(map, now),
            (2, Value::Object(map)) => self.upgrade_old_v2(map, now),
            (2, Value::Array(items)) => parse_items(items),
            (_, _) => Err(format!(
                "\"approvals\" has the wrong shape for version {version}"
            )),
        };
        Ok(match state {
            Ok(mut state) => {
                state.extra = root;
                Parsed::Valid(state)
            }
            Err(reason) => Parsed::Corrupt(reason),
        })
    }

    /// Version 1 (or no version): `{"<command text>": true}`, each a permanent approval.
    fn upgrade_v1(&self, map: Map<String, Value>, now: u64) -> Result<State, String> {
        let mut items = vec![];
        for (command, value) in map {
            match value {
                Value::Bool(true) if !command.is_empty() => {
                    items.push(upgraded(command, None, "version 1", now))
                }
                Value::Bool(_) => {}
                other => {
                    return Err(format!(
                        "approval {command:?} is {other}, not true or false"
                    ))
                }
            }
        }
        let notice = format!(
            "{} is in the version-1 format; its {} approval(s) are read as permanent approvals of those exact commands, and the file is rewritten as version 2 at the next grant",
            self.path.display(),
            items.len()
        );
        Ok(State {
            items,
            notice: Some(notice),
            ..State::default()
        })
    }

    /// The earlier extension's version 2: `{"<command text>": {"scope": ..., "expiresAt"?}}`.
    /// Its session approvals carry no session id, so they are dropped.
    fn upgrade_old_v2(&self, map: Map<String, Value>, now: u64) -> Result<State, String> {
        let mut items = vec![];
        let mut dropped = 0;
        for (command, value) in map {
            let scope = value.get("scope").and_then(Value::as_str);
            let expires_at = match value.get("expiresAt") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or_else(|| {
                    format!("approval {command:?}: \"expiresAt\" is {v}, not milliseconds")
                })?),
            };
            match scope {
                Some("always") if !command.is_empty() => {
                    items.push(upgraded(command, expires_at, "the earlier extension", now))
                }
                Some("always") => {}
                Some("session") => dropped += 1,
                _ => {
                    return Err(format!(
                    "approval {command:?} is {value}, not {{\"scope\": \"always\" | \"session\"}}"
                ))
                }
            }
        }
        let mut notice = format!(
            "{} is in the earlier extension's format; its {} permanent approval(s) are kept and the file is rewritten in the current format at the next grant",
            self.path.display(),
            items.len()
        );
        if dropped > 0 {
            notice.push_str(&format!(
                "; {dropped} session approval(s) were dropped because they do not say which session they belong to (you will be asked again)"
            ));
        }
        Ok(State {
            items,
            notice: Some(notice),
            ..State::default()
        })
    }

    /// Writes `state` atomically: temp file in the same directory, fsync, rename over the
    /// file, fsync of the directory. Mode 0600.
    fn write(&self, state: &State) -> Result<(), StoreError> {
        let mut root = Map::new();
        root.insert("version".into(), Value::from(VERSION));
        let mut approvals = Vec::with_capacity(state.items.len());
        for item in &state.items {
            approvals.push(
                item.to_value()
                    .map_err(|e| StoreError::io(&self.path, "serialising", e))?,
            );
        }
        root.insert("approvals".into(), Value::Array(approvals));
        for (k, v) in &state.extra {
            root.insert(k.clone(), v.clone());
        }
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(root))
            .map_err(|e| StoreError::io(&self.path, "serialising", e))?;
        bytes.push(b'\n');

        let dir = self.dir();
        let mut tmp = tempfile::NamedTempFile::new_in(&dir)
            .map_err(|e| StoreError::io(&dir, "creating a temporary file", e))?;
        let tmp_path = tmp.path().to_path_buf();
        let io = |doing: &str, e: std::io::Error| StoreError::io(&tmp_path, doing, e);
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("setting mode 0600", e))?;
        tmp.write_all(&bytes).map_err(|e| io("writing", e))?;
        tmp.as_file().sync_all().map_err(|e| io("syncing", e))?;
        tmp.persist(&self.path)
            .map_err(|e| StoreError::io(&self.path, "replacing the file", e.error))?;
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io(&dir, "syncing the directory", e))
    }
}

/// An entry of an old format, now a permanent approval of the exact command.
fn upgraded(command: String, expires_at: Option<u64>, from: &str, now: u64) -> Item {
    Item {
        raw: None,
        entry: Some(Entry {
            scope: Scope::Always,
            session: None,
            grant: Grant::Command { command },
            granted_by: format!("user (upgraded from the approvals file of {from})"),
            granted_at: rfc3339_ms(now),
            expires_at,
        }),
    }
}

/// Our version 2's array. Entries of an unknown kind or scope are kept as they are.
fn parse_items(values: Vec<Value>) -> Result<State, String> {
    let mut items = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        let scope = value.get("scope").and_then(Value::as_str);
        let kind = value
            .get("grant")
            .and_then(|g| g.get("kind"))
            .and_then(Value::as_str);
        let (Some(scope), Some(kind)) = (scope, kind) else {
            return Err(format!(
                "approvals[{i}] has no \"scope\" or no \"grant\".\"kind\""
            ));
        };
        if !KNOWN_SCOPES.contains(&scope) || !KNOWN_KINDS.contains(&kind) {
            items.push(Item {
                raw: Some(value),
                entry: None,
            });
            continue;
        }
        let entry: Entry =
            Entry::deserialize(&value).map_err(|e| format!("approvals[{i}]: {e}"))?;
        if let Some(why) = entry.malformed() {
            return Err(format!("approvals[{i}]: {why}"));
        }
        items.push(Item {
            raw: Some(value),
            entry: Some(entry),
        });
    }
    Ok(State {
        items,
        ..State::default()
    })
}

// ---------------------------------------------------------------------------------------
// Command keys

/// Characters that make a command more than one simple command, or code: separators,
/// redirections, expansions, quoting escapes, brace expansion, globs, comments, history.
/// Refused anywhere, quoted or not (conservative).
const NOT_SIMPLE: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '$', '`', '\\', '\n', '\r', '{', '}', ',', '*', '?', '[',
    ']', '#', '!',
];

/// The words of `command` if it is one simple command: plain words, single- or
/// double-quoted words (no escapes needed), separated by spaces/tabs. `None` for anything a
/// shell would treat as more than one command or as code (see [`NOT_SIMPLE`]), control
/// characters, a `~` that could be expanded, a first word that could be an environment
/// assignment (`NAME=value`), an unterminated quote and an empty command. When in doubt,
/// `None`: the command then cannot match a prefix grant and the user is asked again.
pub fn simple_argv(command: &str) -> Option<Vec<String>> {
    if command
        .chars()
        .any(|c| NOT_SIMPLE.contains(&c) || (c.is_control() && c != '\t'))
    {
        return None;
    }
    let mut words: Vec<String> = vec![];
    let mut chars = command.chars().peekable();
    loop {
        while matches!(chars.peek(), Some(' ' | '\t')) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        while let Some(c) = chars.next() {
            match c {
                ' ' | '\t' => break,
                '\'' | '"' => loop {
                    match chars.next() {
                        None => return None,
                        Some(q) if q == c => break,
                        Some(other) => word.push(other),
                    }
                },
                // Tilde expansion: at a word's start, and after `=` or `:` (assignments).
                '~' if word.is_empty() || word.ends_with(['=', ':']) => return None,
                _ => word.push(c),
            }
        }
        if words.is_empty() && word.contains('=') {
            return None;
        }
        words.push(word);
    }
    if words.is_empty() {
        return None;
    }
    // A second opinion: a POSIX-style split must see the same words.
    if shlex::split(command).as_ref() != Some(&words) {
        return None;
    }
    Some(words)
}

/// The prefixes a user may pick for a prefix grant of `command`: its words' prefixes,
/// longest (all words) first down to the first word alone; empty if not simple.
pub fn prefix_choices(command: &str) -> Vec<Vec<String>> {
    let Some(words) = simple_argv(command) else {
        return vec![];
    };
    (1..=words.len())
        .rev()
        .map(|n| words[..n].to_vec())
        .collect()
}

/// Lowercase hex SHA-256 of `bytes` (project trust is keyed by the file's content hash).
/// Whether `host` is a host as the proxy judges it: its own canonical spelling.
fn is_canonical_host(host: &str) -> bool {
    crate::net::domains::parse_host(host).is_ok_and(|h| h.to_string() == host)
}

pub fn content_hash(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0xf)] as char);
    }
    out
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

// ---------------------------------------------------------------------------------------
// Time and files

fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_ms)
        .unwrap_or(0)
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 3339 with milliseconds, UTC (clamped to the year 9999).
fn rfc3339_ms(ms: u64) -> String {
    const MAX_MS: u64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z
    let t = UNIX_EPOCH + Duration::from_millis(ms.min(MAX_MS));
    humantime::format_rfc3339_millis(t).to_string()
}

/// Best effort: the rename is done either way; this only makes it durable sooner.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    const T0: u64 = 1_790_000_000_000;

    struct Fixture {
        _dir: tempfile::TempDir,
        path: PathBuf,
        now: Arc<AtomicU64>,
        store: Store,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent").join(FILE_NAME);
        let now = Arc::new(AtomicU64::new(T0));
        let clock = now.clone();
        let store = Store::with_clock(
            path.clone(),
            Duration::from_millis(1000),
            Arc::new(move || clock.load(Ordering::SeqCst)),
        );
        Fixture {
            _dir: dir,
            path,
            now,
            store,
        }
    }

    fn write_file(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read_json(path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn cmd(s: &str) -> Grant {
        Grant::Command { command: s.into() }
    }

    fn prefix(words: &[&str]) -> Grant {
        Grant::CommandPrefix {
            argv: words.iter().map(|w| w.to_string()).collect(),
        }
    }

    #[test]
    fn missing_file_is_empty() {
        let f = fixture();
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap, Snapshot::empty());
        assert!(!f.path.exists());
    }

    #[test]
    fn grant_writes_version_2_array_with_mode_0600() {
        let f = fixture();
        let e = f
            .store
            .grant(
                Scope::Always,
                cmd("make deploy"),
                "s1",
                "user: unsandboxed bash prompt",
            )
            .unwrap();
        assert_eq!(e.session, None);
        assert_eq!(e.expires_at, None);
        assert_eq!(e.granted_at, "2026-09-21T14:13:20.000Z");
        let text = std::fs::read_to_string(&f.path).unwrap();
        assert!(text.ends_with("}\n"));
        let json: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["version"], 2);
        assert_eq!(
            json["approvals"][0],
            serde_json::json!({
                "scope": "always",
                "grant": {"kind": "command", "command": "make deploy"},
                "grantedBy": "user: unsandboxed bash prompt",
                "grantedAt": "2026-09-21T14:13:20.000Z",
                "expiresAt": null
            })
        );
        let mode = std::fs::metadata(&f.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let lock_mode = std::fs::metadata(f.store.sibling(".lock"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(lock_mode, 0o600);
        let snap = f.store.load("other").unwrap();
        assert_eq!(snap.entries, vec![e.clone()]);
        assert_eq!(snap.command_grant("make deploy"), Some(&e));
        assert_eq!(snap.command_grant("make deploy "), None);
        assert_eq!(snap.command_grant("make  deploy"), None);
        assert_eq!(snap.notice, None);
    }

    #[test]
    fn session_entries_expire_and_are_pruned() {
        let f = fixture();
        let e = f
            .store
            .grant(Scope::Session, prefix(&["git", "status"]), "s1", "user")
            .unwrap();
        assert_eq!(e.session.as_deref(), Some("s1"));
        assert_eq!(e.expires_at, Some(T0 + 1000));

        f.now.store(T0 + 999, Ordering::SeqCst);
        let snap = f.store.load("s1").unwrap();
        assert!(snap.command_grant("git status -s").is_some());

        f.now.store(T0 + 1000, Ordering::SeqCst);
        let snap = f.store.load("s1").unwrap();
        assert!(snap.entries.is_empty());
        assert!(snap.command_grant("git status").is_none());
        // Still in the file until the next write...
        assert_eq!(read_json(&f.path)["approvals"].as_array().unwrap().len(), 1);
        // ...which prunes it.
        f.store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap();
        let json = read_json(&f.path);
        let approvals = json["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1);
        assert_eq!(approvals[0]["grant"]["command"], "ls");
    }

    #[test]
    fn other_sessions_do_not_see_session_entries() {
        let f = fixture();
        f.store
            .grant(Scope::Session, cmd("make deploy"), "s1", "user")
            .unwrap();
        f.store
            .grant(
                Scope::Session,
                Grant::EnvRead {
                    path: "/p/.env".into(),
                },
                "s1",
                "user",
            )
            .unwrap();
        f.store
            .grant(Scope::Always, cmd("make test"), "s2", "user")
            .unwrap();
        let s1 = f.store.load("s1").unwrap();
        assert_eq!(s1.entries.len(), 3);
        assert!(s1.command_grant("make deploy").is_some());
        assert!(s1.env_read_granted(Path::new("/p/.env")));
        let s2 = f.store.load("s2").unwrap();
        assert_eq!(s2.entries.len(), 1);
        assert!(s2.command_grant("make deploy").is_none());
        assert!(!s2.env_read_granted(Path::new("/p/.env")));
        assert!(s2.command_grant("make test").is_some());
        assert!(f
            .store
            .load("")
            .unwrap()
            .command_grant("make deploy")
            .is_none());
    }

    #[test]
    fn ttl_from_env_cases() {
        assert_eq!(ttl_from_env(None), Ok(DEFAULT_SESSION_TTL));
        assert_eq!(DEFAULT_SESSION_TTL.as_millis(), 21_600_000);
        assert_eq!(ttl_from_env(Some("")), Ok(DEFAULT_SESSION_TTL));
        assert_eq!(ttl_from_env(Some("60000")), Ok(Duration::from_secs(60)));
        assert_eq!(ttl_from_env(Some(" 5 ")), Ok(Duration::from_millis(5)));
        for bad in [
            "0",
            "-5",
            "+5",
            "1.5",
            "1e3",
            "6h",
            "abc",
            " ",
            "99999999999999999999999",
        ] {
            let err = ttl_from_env(Some(bad)).unwrap_err();
            assert!(err.contains(TTL_VAR), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("3600000"), "{err}");
        }
    }

    #[test]
    fn in_agent_dir_uses_the_file_name() {
        let dir = tempfile::tempdir().unwrap();
        // Only meaningful when the variable is not set in the test environment.
        if std::env::var_os(TTL_VAR).is_none() {
            let store = Store::in_agent_dir(dir.path()).unwrap();
            assert_eq!(store.path(), dir.path().join(FILE_NAME));
            assert_eq!(store.ttl(), DEFAULT_SESSION_TTL);
        }
    }

    #[test]
    fn invalid_grants_are_refused() {
        let f = fixture();
        let invalid = |scope, grant, session: &str| {
            let err = f.store.grant(scope, grant, session, "user").unwrap_err();
            assert_eq!(err.code(), "E_APPROVALS_INVALID", "{err}");
        };
        invalid(Scope::Session, cmd("ls"), "");
        invalid(Scope::Always, prefix(&[]), "s");
        invalid(Scope::Always, cmd(""), "s");
        invalid(
            Scope::Always,
            Grant::EnvRead {
                path: "rel/.env".into(),
            },
            "s",
        );
        invalid(
            Scope::Always,
            Grant::ProjectTrust {
                file: "/p/.pi/sandbox.json".into(),
                sha256: "ABC".into(),
                trusted: true,
            },
            "s",
        );
        assert!(!f.path.exists());
        // An always grant ignores the session argument.
        let e = f.store.grant(Scope::Always, cmd("ls"), "", "user").unwrap();
        assert_eq!(e.session, None);
    }

    #[test]
    fn upgrade_from_version_1() {
        for text in [
            r#"{"approvals": {"make deploy": true, "npm publish": true, "old": false}}"#,
            r#"{"version": 1, "approvals": {"make deploy": true, "npm publish": true, "old": false}}"#,
        ] {
            let f = fixture();
            write_file(&f.path, text);
            let snap = f.store.load("s1").unwrap();
            assert_eq!(snap.entries.len(), 2);
            assert!(snap.entries.iter().all(|e| e.scope == Scope::Always));
            assert!(snap.command_grant("make deploy").is_some());
            assert!(snap.command_grant("npm publish").is_some());
            assert!(snap.command_grant("old").is_none());
            assert!(snap.notice.unwrap().contains("version-1"));
            // Reading does not rewrite.
            assert_eq!(std::fs::read_to_string(&f.path).unwrap(), text);

            f.store
                .grant(Scope::Always, cmd("ls"), "s1", "user")
                .unwrap();
            let json = read_json(&f.path);
            assert_eq!(json["version"], 2);
            let approvals = json["approvals"].as_array().unwrap();
            assert_eq!(approvals.len(), 3);
            assert_eq!(approvals[0]["grant"]["command"], "make deploy");
            assert_eq!(approvals[0]["scope"], "always");
            let snap = f.store.load("s1").unwrap();
            assert_eq!(snap.notice, None);
            assert_eq!(snap.entries.len(), 3);
        }
    }

    #[test]
    fn upgrade_from_the_old_version_2_map() {
        let f = fixture();
        write_file(
            &f.path,
            r#"{"version": 2, "approvals": {
                "make deploy": {"scope": "always"},
                "npm test": {"scope": "session", "expiresAt": 9999999999999},
                "cargo run": {"scope": "session"}
            }}"#,
        );
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.entries.len(), 1);
        assert!(snap.command_grant("make deploy").is_some());
        assert!(snap.command_grant("npm test").is_none());
        let notice = snap.notice.unwrap();
        assert!(
            notice.contains("2 session approval(s) were dropped"),
            "{notice}"
        );

        f.store
            .grant(Scope::Session, cmd("ls"), "s1", "user")
            .unwrap();
        let json = read_json(&f.path);
        let approvals = json["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 2);
        assert_eq!(approvals[0]["grant"]["command"], "make deploy");
        assert_eq!(approvals[1]["session"], "s1");
        assert_eq!(f.store.load("s1").unwrap().notice, None);
    }

    #[test]
    fn future_version_is_refused_and_left_alone() {
        let f = fixture();
        let text = r#"{"version": 3, "approvals": [{"whatever": 1}]}"#;
        write_file(&f.path, text);
        let err = f.store.load("s1").unwrap_err();
        assert_eq!(err.code(), "E_APPROVALS_VERSION");
        let msg = err.to_string();
        assert!(msg.contains(&f.path.display().to_string()), "{msg}");
        assert!(msg.contains("version 3"), "{msg}");
        let err = f
            .store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap_err();
        assert_eq!(
            err,
            StoreError::FutureVersion {
                path: f.path.clone(),
                version: 3
            }
        );
        assert_eq!(std::fs::read_to_string(&f.path).unwrap(), text);
    }

    #[test]
    fn corrupt_files_are_moved_aside_and_read_as_nothing() {
        for text in [
            "{\"version\": 2, \"approvals\": [",
            "[1, 2]",
            r#"{"version": "2", "approvals": []}"#,
            r#"{"version": 2, "approvals": "everything"}"#,
            r#"{"version": 2, "approvals": [{"scope": "always"}]}"#,
            r#"{"version": 2, "approvals": [{"scope": "session", "grant": {"kind": "command", "command": "x"}, "grantedBy": "u", "grantedAt": "t", "expiresAt": 5}]}"#,
            r#"{"version": 2, "approvals": [{"scope": "always", "grant": {"kind": "commandPrefix", "argv": []}, "grantedBy": "u", "grantedAt": "t"}]}"#,
            r#"{"approvals": {"rm -rf /": "yes"}}"#,
        ] {
            let f = fixture();
            write_file(&f.path, text);
            let snap = f.store.load("s1").unwrap();
            assert!(snap.entries.is_empty(), "{text}");
            let aside = f.store.sibling(&format!(".corrupt-{T0}"));
            let notice = snap.notice.clone().unwrap();
            assert!(notice.contains(&aside.display().to_string()), "{notice}");
            assert_eq!(std::fs::read_to_string(&aside).unwrap(), text);
            assert!(!f.path.exists());
            // Nothing is approved: not the empty command, not anything.
            assert!(snap.command_grant("rm -rf /").is_none());

            f.store
                .grant(Scope::Always, cmd("ls"), "s1", "user")
                .unwrap();
            let json = read_json(&f.path);
            assert_eq!(json["approvals"].as_array().unwrap().len(), 1);
            let snap = f.store.load("s1").unwrap();
            assert_eq!(snap.notice, None);
            assert_eq!(snap.entries.len(), 1);
        }
    }

    #[test]
    fn corrupt_file_found_by_a_grant_is_moved_aside_too() {
        let f = fixture();
        write_file(&f.path, "not json");
        write_file(&f.store.sibling(&format!(".corrupt-{T0}")), "earlier");
        f.store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap();
        let aside = f.store.sibling(&format!(".corrupt-{T0}-1"));
        assert_eq!(std::fs::read_to_string(aside).unwrap(), "not json");
        assert_eq!(f.store.load("s1").unwrap().entries.len(), 1);
    }

    #[test]
    fn network_grants_hold_one_canonical_host() {
        let f = fixture();
        for bad in [
            "Example.com",
            "example.com.",
            "example.com:443",
            "*.example.com",
            "::1",
            "",
        ] {
            let e = f
                .store
                .grant(
                    Scope::Always,
                    Grant::NetworkHost { host: bad.into() },
                    "s1",
                    "user",
                )
                .unwrap_err();
            assert!(e.to_string().contains("canonical form"), "{bad}: {e}");
        }
        for good in ["example.com", "xn--bcher-kva.de", "[::1]", "10.0.0.1"] {
            f.store
                .grant(
                    Scope::Session,
                    Grant::NetworkHost { host: good.into() },
                    "s1",
                    "user",
                )
                .unwrap();
        }
        let snap = f.store.load("s1").unwrap();
        let hosts: Vec<&str> = snap.network_grants().map(|(h, _)| h).collect();
        assert_eq!(
            hosts,
            ["example.com", "xn--bcher-kva.de", "[::1]", "10.0.0.1"]
        );
        // Another session does not see them.
        assert_eq!(f.store.load("s2").unwrap().network_grants().count(), 0);
    }

    #[test]
    fn unknown_kinds_scopes_and_keys_are_kept() {
        let f = fixture();
        let future_kind = serde_json::json!({
            "scope": "always",
            "grant": {"kind": "gpuDevice", "device": "/dev/nvidia0"},
            "grantedBy": "user", "grantedAt": "t", "expiresAt": null
        });
        let future_scope = serde_json::json!({
            "scope": "project", "project": "/p",
            "grant": {"kind": "command", "command": "rm -rf /"},
            "grantedBy": "user", "grantedAt": "t", "expiresAt": null
        });
        let with_extra_key = serde_json::json!({
            "scope": "always",
            "grant": {"kind": "command", "command": "make", "note": "n"},
            "grantedBy": "user", "grantedAt": "t", "expiresAt": null, "comment": "c"
        });
        let file = serde_json::json!({
            "version": 2,
            "approvals": [future_kind, future_scope, with_extra_key],
            "meta": {"x": 1}
        });
        write_file(&f.path, &serde_json::to_string(&file).unwrap());
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.entries.len(), 1);
        assert!(snap.command_grant("make").is_some());
        assert!(snap.command_grant("rm -rf /").is_none());

        f.store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap();
        let json = read_json(&f.path);
        assert_eq!(json["meta"], serde_json::json!({"x": 1}));
        let approvals = json["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 4);
        assert_eq!(approvals[0], future_kind);
        assert_eq!(approvals[1], future_scope);
        assert_eq!(approvals[2], with_extra_key);
    }

    #[test]
    fn dedupe_refreshes_identical_grants() {
        let f = fixture();
        f.store
            .grant(Scope::Session, prefix(&["git", "status"]), "s1", "user")
            .unwrap();
        f.now.store(T0 + 500, Ordering::SeqCst);
        let e = f
            .store
            .grant(
                Scope::Session,
                prefix(&["git", "status"]),
                "s1",
                "user again",
            )
            .unwrap();
        assert_eq!(e.expires_at, Some(T0 + 1500));
        // Other sessions and scopes are separate entries.
        f.store
            .grant(Scope::Session, prefix(&["git", "status"]), "s2", "user")
            .unwrap();
        f.store
            .grant(Scope::Always, prefix(&["git", "status"]), "s1", "user")
            .unwrap();
        f.store
            .grant(Scope::Always, prefix(&["git", "status"]), "s2", "user")
            .unwrap();
        let json = read_json(&f.path);
        assert_eq!(json["approvals"].as_array().unwrap().len(), 3);
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.entries.len(), 2);
        let session_entry = snap
            .entries
            .iter()
            .find(|e| e.scope == Scope::Session)
            .unwrap();
        assert_eq!(session_entry.granted_by, "user again");
        // The refreshed entry outlives the first one's expiry.
        f.now.store(T0 + 1200, Ordering::SeqCst);
        assert_eq!(f.store.load("s1").unwrap().entries.len(), 2);
    }

    #[test]
    fn project_trust_replaces_earlier_answers_about_the_file() {
        let f = fixture();
        let file = PathBuf::from("/home/u/proj/.pi/sandbox.json");
        let other = PathBuf::from("/home/u/other/.pi/sandbox.json");
        let h1 = content_hash(b"one");
        let h2 = content_hash(b"two");
        let trust = |file: &Path, sha: &str, trusted| Grant::ProjectTrust {
            file: file.to_path_buf(),
            sha256: sha.to_string(),
            trusted,
        };
        f.store
            .grant(Scope::Always, trust(&file, &h1, true), "s1", "user")
            .unwrap();
        f.store
            .grant(Scope::Always, trust(&other, &h1, true), "s1", "user")
            .unwrap();
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.trust(&file), Some((h1.as_str(), true)));

        f.store
            .grant(Scope::Session, trust(&file, &h2, false), "s1", "user")
            .unwrap();
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.trust(&file), Some((h2.as_str(), false)));
        assert_eq!(snap.trust(&other), Some((h1.as_str(), true)));
        assert_eq!(snap.trust(Path::new("/nowhere")), None);
        let json = read_json(&f.path);
        assert_eq!(json["approvals"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn content_hash_is_lowercase_hex_sha256() {
        assert_eq!(
            content_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256_hex(&content_hash(b"")));
    }

    fn words(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn simple_argv_cases() {
        assert_eq!(simple_argv("git status"), words(&["git", "status"]));
        assert_eq!(simple_argv("  git\tstatus  "), words(&["git", "status"]));
        assert_eq!(
            simple_argv(r#"'git' "status" 'it"s' "it's" a'b'"c""#),
            words(&["git", "status", "it\"s", "it's", "abc"])
        );
        assert_eq!(simple_argv("echo ''"), words(&["echo", ""]));
        // A quoted tilde is literal in every shell.
        assert_eq!(simple_argv("ls '~' \"~\""), words(&["ls", "~", "~"]));
        assert_eq!(
            simple_argv("git log HEAD~1 --x=y"),
            words(&["git", "log", "HEAD~1", "--x=y"])
        );
        for bad in [
            "",
            "   ",
            "git 'status",
            "git \"status",
            "~/bin/x",
            "ls ~",
            "ls --dir=~/x",
            "ls a:~/x",
            "FOO=1 git",
            "'FOO=1' git",
            "ls *.rs",
            "ls a?",
            "ls [ab]",
            "echo {a,b}",
            "echo a,b",
            "echo !x",
            "echo \"$HOME\"",
            "echo 'a;b'",
            "echo \u{0}",
            "echo \u{b}x",
        ] {
            assert_eq!(simple_argv(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn prefix_choices_longest_first() {
        assert_eq!(
            prefix_choices("git status -s"),
            vec![
                vec!["git".to_string(), "status".into(), "-s".into()],
                vec!["git".to_string(), "status".into()],
                vec!["git".to_string()],
            ]
        );
        assert!(prefix_choices("git status; id").is_empty());
        assert!(prefix_choices("").is_empty());
    }

    #[test]
    fn prefix_grants_resist_stretching() {
        let g = prefix(&["git", "status"]);
        for bad in [
            "git status; rm -rf ~",
            "git status && curl x",
            "git status || x",
            "git status | sh",
            "git status $(id)",
            "git status `id`",
            "git status\nrm x",
            "FOO=1 git status",
            "git status > ~/.bashrc",
            "git status &",
            "git statusx",
            "git",
            "alias git=rm; git status",
            "git status # x",
            "{ git status; }",
            "git status\r\nid",
            "git status\\\nid",
            "git status <(id)",
            "git status 2>&1",
            "(git status)",
            "git stat*",
            "git 'status",
            "git status ~root",
        ] {
            assert!(!g.covers_command(bad), "{bad:?}");
        }
        for good in [
            "git status",
            "git status -s",
            "git  status  --short",
            "'git' \"status\"",
            "\tgit status\t",
        ] {
            assert!(g.covers_command(good), "{good:?}");
        }
        assert!(!prefix(&[]).covers_command("git status"));
    }

    #[test]
    fn exact_grants_match_only_identical_text() {
        let g = cmd("make deploy");
        assert!(g.covers_command("make deploy"));
        for other in [
            "make deploy ",
            " make deploy",
            "make  deploy",
            "make deploy; id",
            "'make' deploy",
            "make",
            "make deploy2",
        ] {
            assert!(!g.covers_command(other), "{other:?}");
        }
        assert!(!Grant::EnvRead { path: "/x".into() }.covers_command("/x"));
    }

    #[test]
    fn concurrent_grants_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let store =
                        Store::with_clock(path, DEFAULT_SESSION_TTL, Arc::new(system_now_ms));
                    for i in 0..250 {
                        store
                            .grant(Scope::Always, cmd(&format!("cmd {t} {i}")), "s", "user")
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let json = read_json(&path);
        assert_eq!(json["approvals"].as_array().unwrap().len(), 1000);
        let store = Store::with_clock(path, DEFAULT_SESSION_TTL, Arc::new(system_now_ms));
        let snap = store.load("s").unwrap();
        assert_eq!(snap.entries.len(), 1000);
        for t in 0..4 {
            for i in 0..250 {
                assert!(snap.command_grant(&format!("cmd {t} {i}")).is_some());
            }
        }
    }

    #[test]
    fn errors_have_codes_and_name_the_file() {
        let e = StoreError::Io {
            path: "/a/sandbox-approvals.json".into(),
            message: "reading: denied".into(),
        };
        assert_eq!(e.code(), "E_APPROVALS_IO");
        assert!(e.to_string().contains("/a/sandbox-approvals.json"));
        let e = StoreError::Ttl {
            message: ttl_from_env(Some("x")).unwrap_err(),
        };
        assert_eq!(e.code(), "E_APPROVALS_TTL");
        assert!(e.to_string().contains(TTL_VAR));
    }
}
