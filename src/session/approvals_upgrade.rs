//! The approvals files of older versions, read to be upgraded: version 1's
//! `{"<command>": true}` map and the earlier extension's version-2 object map. The store makes
//! each approval kept a permanent approval of the exact command, and writes the file in the
//! current format at the next grant.

use std::path::Path;

use serde_json::{Map, Value};

/// An old file's approvals: the commands approved for good (each with its expiry, if it had
/// one), the format they come from, and what the user is told about the upgrade.
pub(crate) struct Old {
    pub(crate) commands: Vec<(String, Option<u64>)>,
    pub(crate) from: &'static str,
    pub(crate) notice: String,
}

/// Version 1 (or no version): `{"<command text>": true}`, each a permanent approval.
pub(crate) fn version_1(path: &Path, map: Map<String, Value>) -> Result<Old, String> {
    let mut commands = vec![];
    for (command, value) in map {
        match value {
            Value::Bool(true) if !command.is_empty() => commands.push((command, None)),
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
        path.display(),
        commands.len()
    );
    Ok(Old {
        commands,
        from: "version 1",
        notice,
    })
}

/// The earlier extension's version 2: `{"<command text>": {"scope": ..., "expiresAt"?}}`.
/// Its session approvals carry no session id, so they are dropped.
pub(crate) fn earlier_v2(path: &Path, map: Map<String, Value>) -> Result<Old, String> {
    let mut commands = vec![];
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
            Some("always") if !command.is_empty() => commands.push((command, expires_at)),
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
        path.display(),
        commands.len()
    );
    if dropped > 0 {
        notice.push_str(&format!(
            "; {dropped} session approval(s) were dropped because they do not say which session they belong to (you will be asked again)"
        ));
    }
    Ok(Old {
        commands,
        from: "the earlier extension",
        notice,
    })
}
