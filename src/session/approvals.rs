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

use super::approvals_upgrade::{self, Old};
use super::command_keys::simple_argv;

pub(crate) const FILE_NAME: &str = "sandbox-approvals.json";
pub(crate) const TTL_VAR: &str = "PI_SANDBOX_SESSION_APPROVAL_TTL_MS";
/// How long a `session` approval lasts unless `PI_SANDBOX_SESSION_APPROVAL_TTL_MS` says.
pub(crate) const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(6 * 60 * 60);

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
pub(crate) enum Scope {
    Session,
    Always,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Grant {
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
    pub(crate) fn covers_command(&self, command: &str) -> bool {
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
pub(crate) struct Entry {
    pub(crate) scope: Scope,
    /// The pi session a `session` entry was granted in (absent for `always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    pub(crate) grant: Grant,
    /// Which prompt the user answered, e.g. `user: unsandboxed bash prompt`.
    pub(crate) granted_by: String,
    /// RFC 3339, UTC, milliseconds.
    pub(crate) granted_at: String,
    /// Milliseconds since the epoch; `None` (`null`) for `always`.
    #[serde(default)]
    pub(crate) expires_at: Option<u64>,
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
pub(crate) struct Snapshot {
    /// Unexpired entries, in file order; session entries of other sessions left out.
    pub(crate) entries: Vec<Entry>,
    /// Something the user should know about the file: a corrupt file moved aside, an old
    /// format that will be upgraded at the next grant.
    pub(crate) notice: Option<String>,
}

impl Snapshot {
    pub(crate) fn empty() -> Snapshot {
        Snapshot::default()
    }

    /// The entry that lets `command` run unsandboxed, if any.
    pub(crate) fn command_grant(&self, command: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.grant.covers_command(command))
    }

    /// The env files granted, each with the entry that grants it.
    pub(crate) fn env_read_grants(&self) -> impl Iterator<Item = (&Path, &Entry)> {
        self.entries.iter().filter_map(|e| match &e.grant {
            Grant::EnvRead { path } => Some((path.as_path(), e)),
            _ => None,
        })
    }

    #[cfg(test)]
    pub(crate) fn env_read_granted(&self, path: &Path) -> bool {
        self.env_read_grants().any(|(p, _)| p == path)
    }

    /// The hosts granted for the network proxy, each with the entry that grants it.
    pub(crate) fn network_grants(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().filter_map(|e| match &e.grant {
            Grant::NetworkHost { host } => Some((host.as_str(), e)),
            _ => None,
        })
    }

    /// The latest trust answer for `file`: (sha256, trusted).
    pub(crate) fn trust(&self, file: &Path) -> Option<(&str, bool)> {
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
pub(crate) enum StoreError {
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
    /// The kind, as the tests name it.
    #[cfg(test)]
    pub(crate) fn code(&self) -> &'static str {
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
pub(crate) fn ttl_from_env(raw: Option<&str>) -> Result<Duration, String> {
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
pub(crate) type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The approvals file of one agent dir.
#[derive(Clone)]
pub(crate) struct Store {
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
    pub(crate) fn in_agent_dir(agent_dir: &Path) -> Result<Store, StoreError> {
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
    pub(crate) fn with_clock(path: PathBuf, ttl: Duration, clock: Clock) -> Store {
        Store { path, ttl, clock }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    #[cfg(test)]
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// What the store holds for `session` now. A missing file is an empty store; a corrupt
    /// one is moved aside and read as empty (with a notice); a newer version's file is an
    /// error.
    pub(crate) fn load(&self, session: &str) -> Result<Snapshot, StoreError> {
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
    pub(crate) fn grant(
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
        let upgrade = |old: Old| upgraded_state(old, now);
        let state = match (version, approvals) {
            (_, Value::Null) => Ok(State::default()),
            (1, Value::Object(map)) => approvals_upgrade::version_1(&self.path, map).map(upgrade),
            (2, Value::Object(map)) => approvals_upgrade::earlier_v2(&self.path, map).map(upgrade),
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

/// An old file's approvals, each now a permanent approval of the exact command.
fn upgraded_state(old: Old, now: u64) -> State {
    let items = old
        .commands
        .into_iter()
        .map(|(command, expires_at)| upgraded(command, expires_at, old.from, now))
        .collect();
    State {
        items,
        notice: Some(old.notice),
        ..State::default()
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

/// Whether `host` is a host as the proxy judges it: its own canonical spelling.
fn is_canonical_host(host: &str) -> bool {
    crate::net::domains::parse_host(host).is_ok_and(|h| h.to_string() == host)
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
#[path = "approvals_tests.rs"]
mod tests;
