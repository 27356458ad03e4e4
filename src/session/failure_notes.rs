//! Notes for failures the sandbox causes that no rule refused by name: a write outside the
//! folders bash may write ("Read-only file system" and nothing else), a connection to a
//! service on 127.0.0.1 (inside the sandbox that is the sandbox's own loopback), and a port
//! held by a process an earlier command left running (which the command cannot see). One line
//! each: what, why, and the one thing that changes it.

use std::path::Path;

use super::Session;
use crate::policy::bash::Network;
use crate::policy::guard::{Op, Verdict};
use crate::shown;

/// Words of clients that could not connect (curl, wget, node, Python, psql, redis-cli…).
const REFUSED: &[&str] = &[
    "Connection refused",
    "Couldn't connect to server",
    "Failed to connect",
    "ECONNREFUSED",
    "Could not connect",
];

/// How many notes of each kind one command gets.
const MOST: usize = 3;

impl Session {
    /// The notes for `output`, besides `explain_write_failures`'s (which names the rules that
    /// refused): writes the guard would have asked about, and the host's loopback.
    pub(crate) fn explain_reach_failures(&self, output: &str, network: Network) -> Vec<String> {
        let mut notes = self.outside_writable(output);
        if let Some(n) = self.loopback_note(output, network) {
            notes.push(n);
        }
        if let Some(n) = self.port_in_use_note(output) {
            notes.push(n);
        }
        notes
    }

    /// A port already in use while processes earlier commands left run: they may hold it, and
    /// a command can neither see nor stop them.
    fn port_in_use_note(&self, output: &str) -> Option<String> {
        const IN_USE: &[&str] = &[
            "Address already in use",
            "EADDRINUSE",
            "address already in use",
        ];
        let line = output
            .lines()
            .find(|l| IN_USE.iter().any(|w| l.contains(w)))?;
        let running = self.background();
        if running.is_empty() {
            return None;
        }
        let named: Vec<String> = running
            .iter()
            .take(MOST)
            .map(|b| format!("{} (host pid {})", b.command, b.pid))
            .collect();
        Some(shown::text(&format!(
            "{}: a process an earlier command left running may hold that port: {}. Commands cannot see or stop it; use another port, or ask the user to end it with /sandbox stop.",
            line.trim().chars().take(160).collect::<String>(),
            named.join(", ")
        )))
    }

    /// "Read-only file system" on a path outside every writable folder: the file tools would
    /// ask; bash cannot, so the note says how to open the folder.
    fn outside_writable(&self, output: &str) -> Vec<String> {
        let Some(guard) = self.guard().filter(|g| g.active()) else {
            return vec![];
        };
        let env = &self.options.env;
        let mut seen = std::collections::HashSet::new();
        let mut notes = Vec::new();
        for line in output
            .lines()
            .filter(|l| l.contains("Read-only file system"))
        {
            for p in self.paths_in_output_line(guard, line) {
                let d = guard.check(Op::Write, &p);
                if d.verdict != Verdict::Prompt || !seen.insert(d.path.clone()) {
                    continue;
                }
                let dir = if d.path.is_dir() {
                    d.path.as_path()
                } else {
                    d.path.parent().unwrap_or(Path::new("/"))
                };
                let how = if on_path(dir) {
                    format!(
                        "{} holds programs you run outside pi (it is on PATH): keep it read-only to the agent.",
                        shown::path(dir)
                    )
                } else if self.too_broad(dir) {
                    format!(
                        "{} holds your home or the project: add a narrower folder to filesystem.allowWrite in {}.",
                        shown::path(dir),
                        shown::path(&env.global_config())
                    )
                } else {
                    format!(
                        "A write there with the write tool asks you, and answering \"this session\" opens {} to bash too; or add it to filesystem.allowWrite in {}.",
                        shown::path(dir),
                        shown::path(&env.global_config())
                    )
                };
                notes.push(format!(
                    "{} is outside the folders bash may write (the project and /tmp, plus filesystem.allowWrite). {how}",
                    shown::path(&d.path),
                ));
                if notes.len() >= MOST {
                    return notes;
                }
            }
        }
        notes
    }

    /// A client that could not reach 127.0.0.1 / localhost / ::1 inside the sandbox.
    fn loopback_note(&self, output: &str, network: Network) -> Option<String> {
        if network == Network::On || self.guard().is_none_or(|g| !g.active()) {
            return None;
        }
        let line = output.lines().find(|l| {
            REFUSED.iter().any(|w| l.contains(w))
                && ["127.0.0.1", "localhost", "[::1]", "::1"]
                    .iter()
                    .any(|h| l.contains(h))
        })?;
        let how = match network {
            Network::Filtered => format!(
                "To reach a service of the host, add \"localhost\" to network.allowedDomains in {}.",
                shown::path(&self.options.env.global_config())
            ),
            _ => "To reach a service of the host, start pi with --sandbox-network filtered and add \"localhost\" to network.allowedDomains.".into(),
        };
        Some(format!(
            "{}: inside the sandbox 127.0.0.1 is the sandbox's own loopback (where servers this session's commands leave running listen), not the host's. {how}",
            shown::text(line.trim()).chars().take(160).collect::<String>()
        ))
    }
}

/// Whether `dir` (or a folder below it) is on pi's own PATH: what is written there runs on
/// the host. A note must not invite opening it, whatever a command's output says.
fn on_path(dir: &Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|e| e.is_absolute() && e.starts_with(dir)))
}
