//! The violation log: every refusal of the sandbox, one JSON line each, in
//! `<agent dir>/sandbox-violations.jsonl` — path-guard blocks, what the audit after a bash
//! command moved aside, unix-socket connections the supervisor refused, and every decision of
//! the network proxy (allowed ones too, with `decision`, `host` and `port`). `/sandbox log`
//! shows the recent ones.
//!
//! The file sits in pi's agent directory, which the guard and bash's mounts keep read-only
//! to the agent: a command cannot erase or forge its entries. Appends from several pi
//! processes are serialised by a lock on the file; past `max_bytes` the file is rotated to
//! `…jsonl.1` (one generation kept), so the log never grows without bound.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write as _};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub(crate) const FILE_NAME: &str = "sandbox-violations.jsonl";
/// Rotated past this size (about 5,000 entries).
pub(crate) const DEFAULT_MAX_BYTES: u64 = 1 << 20;

/// One refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Violation {
    /// RFC 3339, UTC.
    pub(crate) time: String,
    /// `guard` (pi's file tools), `audit` (after a bash command), `sockets` (the unix-socket
    /// supervisor), `network` (the proxy).
    pub(crate) layer: String,
    /// What was attempted: `read`, `write`, `connect`, ...
    pub(crate) operation: String,
    /// The path or host concerned.
    pub(crate) target: String,
    /// The rule that refused it.
    pub(crate) rule: String,
    /// Where the rule comes from (a config file, built-in defaults), when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) source: String,
    /// The network proxy's entries: `allowed` or `denied` (others are all refusals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) port: Option<u16>,
}

impl Violation {
    pub(crate) fn now(
        layer: &str,
        operation: &str,
        target: &str,
        rule: &str,
        source: &str,
    ) -> Violation {
        Violation {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            layer: layer.into(),
            operation: operation.into(),
            target: target.into(),
            rule: rule.into(),
            source: source.into(),
            decision: None,
            host: None,
            port: None,
        }
    }

    /// A decision of the network proxy about one connection.
    pub(crate) fn network(host: &str, port: u16, allowed: bool, rule: &str) -> Violation {
        let mut v = Violation::now("network", "connect", &format!("{host}:{port}"), rule, "");
        v.decision = Some(if allowed { "allowed" } else { "denied" }.into());
        v.host = Some(host.into());
        v.port = Some(port);
        v
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ViolationLog {
    path: PathBuf,
    max_bytes: u64,
}

impl ViolationLog {
    pub(crate) fn in_agent_dir(agent_dir: &Path) -> ViolationLog {
        ViolationLog::at(agent_dir.join(FILE_NAME), DEFAULT_MAX_BYTES)
    }

    pub(crate) fn at(path: PathBuf, max_bytes: u64) -> ViolationLog {
        ViolationLog { path, max_bytes }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn rotated(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".1");
        PathBuf::from(p)
    }

    /// Appends `v`. Logging never stands in the way of a decision: a log that cannot be
    /// written (a read-only agent dir) is skipped, and the refusal stands.
    pub(crate) fn append(&self, v: &Violation) {
        let _ = self.try_append(v);
    }

    fn try_append(&self, v: &Violation) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(v).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = self.open_locked()?;
        if file.metadata()?.len() + line.len() as u64 > self.max_bytes {
            // Under the lock: no other process appends or rotates meanwhile.
            std::fs::rename(&self.path, self.rotated())?;
            drop(file);
            file = self.open_locked()?;
        }
        file.write_all(&line)
    }

    /// The log file, opened for appending and locked (released when it is closed). A file
    /// rotated away between our open and our lock is opened again.
    fn open_locked(&self) -> std::io::Result<File> {
        loop {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            // SAFETY: flock on our own descriptor.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ours = file.metadata()?;
            match std::fs::metadata(&self.path) {
                Ok(now)
                    if std::os::unix::fs::MetadataExt::ino(&now)
                        == std::os::unix::fs::MetadataExt::ino(&ours) =>
                {
                    return Ok(file)
                }
                _ => continue,
            }
        }
    }

    /// The last `n` entries, oldest first (from the rotated file too when needed). Lines
    /// that are not entries (a torn write, a hand edit) are skipped.
    pub(crate) fn recent(&self, n: usize) -> Vec<Violation> {
        let read = |p: &Path| -> Vec<Violation> {
            let Ok(f) = File::open(p) else {
                return vec![];
            };
            BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| serde_json::from_str(&l).ok())
                .collect()
        };
        let mut out = read(&self.path);
        if out.len() < n {
            let mut older = read(&self.rotated());
            older.append(&mut out);
            out = older;
        }
        let skip = out.len().saturating_sub(n);
        out.split_off(skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Violation {
        Violation::now(
            "guard",
            "read",
            &format!("/p/{i}"),
            "denyRead entry '~/.ssh'",
            "built-in defaults",
        )
    }

    #[test]
    fn entries_come_back_in_order_as_json_lines() {
        let t = tempfile::tempdir().unwrap();
        let log = ViolationLog::in_agent_dir(t.path());
        for i in 0..3 {
            log.append(&entry(i));
        }
        let got = log.recent(10);
        assert_eq!(
            got.iter().map(|v| v.target.as_str()).collect::<Vec<_>>(),
            ["/p/0", "/p/1", "/p/2"]
        );
        assert_eq!(log.recent(2)[0].target, "/p/1");
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 3);
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        for key in ["time", "layer", "operation", "target", "rule", "source"] {
            assert!(first.get(key).is_some(), "{key} in {first}");
        }
        assert!(first["time"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn the_log_is_rotated_by_size_and_recent_spans_both_files() {
        let t = tempfile::tempdir().unwrap();
        let log = ViolationLog::at(t.path().join("v.jsonl"), 1000);
        for i in 0..40 {
            log.append(&entry(i));
        }
        assert!(std::fs::metadata(log.path()).unwrap().len() <= 1000);
        assert!(std::fs::metadata(log.rotated()).unwrap().len() <= 1000);
        // The newest entries, from both files, in order and without a gap.
        let got = log.recent(100);
        let one_file = 1000 / (serde_json::to_vec(&entry(10)).unwrap().len() + 1);
        assert!(got.len() > one_file, "{} entries", got.len());
        let first: usize = got[0].target[3..].parse().unwrap();
        for (k, v) in got.iter().enumerate() {
            assert_eq!(v.target, format!("/p/{}", first + k));
        }
        assert_eq!(got.last().unwrap().target, "/p/39");
        assert_eq!(log.recent(3).len(), 3);
    }

    #[test]
    fn appends_from_many_threads_lose_nothing() {
        let t = tempfile::tempdir().unwrap();
        let log = ViolationLog::in_agent_dir(t.path());
        std::thread::scope(|s| {
            for k in 0..4 {
                let log = log.clone();
                s.spawn(move || {
                    for i in 0..50 {
                        log.append(&entry(k * 1000 + i));
                    }
                });
            }
        });
        assert_eq!(log.recent(1000).len(), 200);
    }

    #[test]
    fn network_entries_carry_host_port_and_decision() {
        let t = tempfile::tempdir().unwrap();
        let log = ViolationLog::in_agent_dir(t.path());
        log.append(&Violation::network(
            "evil.example",
            443,
            false,
            "deniedDomains entry \"*.example\"",
        ));
        log.append(&entry(1));
        let text = std::fs::read_to_string(log.path()).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["host"], "evil.example");
        assert_eq!(first["port"], 443);
        assert_eq!(first["decision"], "denied");
        assert_eq!(first["layer"], "network");
        let second: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert!(second.get("decision").is_none(), "{second}");
        assert_eq!(log.recent(2)[0].port, Some(443));
    }

    #[test]
    fn an_unwritable_log_does_not_fail_the_caller() {
        let log = ViolationLog::at(PathBuf::from("/nonexistent-dir/v.jsonl"), 1000);
        log.append(&entry(0));
        assert!(log.recent(5).is_empty());
    }
}
