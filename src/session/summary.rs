//! `/sandbox`: one screen (about a dozen lines at 80 columns) of what holds now: the mode,
//! bash's engine and network, where it may write, what is hidden (counted), the grants, the last
//! few refusals. Every rule and where it comes from is `/sandbox full` (`describe`).

use std::fmt::Write as _;
use std::path::Path;

use super::Session;
use crate::platform::detect;
use crate::policy::bash::{Capability, Network};
use crate::policy::environment::Dropped;
use crate::shown;

/// How many of the latest refusals the summary shows.
const RECENT: usize = 3;

/// How many of the variables held back the summary names.
const ENV_NAMES: usize = 3;

/// The environment in one line: how many variables commands do not get, and a few names
/// (never a value), those dropped for a credential first.
fn env_line(mut dropped: Vec<Dropped>) -> String {
    if dropped.is_empty() {
        return "Environment: the allow-list and env.allow; nothing held back".into();
    }
    dropped.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    let mut names: Vec<String> = dropped
        .iter()
        .take(ENV_NAMES)
        .map(|d| shown::name(&d.name))
        .collect();
    if dropped.len() > ENV_NAMES {
        names.push(format!("+{} more", dropped.len() - ENV_NAMES));
    }
    format!(
        "Environment: the allow-list and env.allow; {} held back ({})",
        match dropped.len() {
            1 => "1 variable".to_string(),
            n => format!("{n} variables"),
        },
        names.join(", ")
    )
}

impl Session {
    /// The one-screen summary; `asked`: the network mode asked for (`--sandbox-network`).
    pub(crate) fn summary(&self, asked: Option<Network>) -> String {
        let Ok(l) = &self.state else {
            return self.describe(asked);
        };
        let g = &l.guard;
        let mut out = String::new();
        let mode = if !g.active() {
            "OFF (yolo or enabled: false): nothing is guarded".to_string()
        } else {
            g.mode().value.as_str().to_string()
        };
        let engine = match detect::detect() {
            Capability::Bwrap { .. } => "bubblewrap",
            Capability::SandboxExec { .. } => "sandbox-exec",
            Capability::Unavailable { .. } => "none (bash is blocked)",
        };
        let network = asked.unwrap_or_else(|| self.default_network());
        let _ = writeln!(
            out,
            "pi-sandbox: {mode} · bash in {engine} · network {}{}",
            network.name(),
            match network {
                Network::Filtered => format!(
                    " ({} domains allowed, the rest asked)",
                    l.config.allowed_domains.value.len()
                ),
                _ => String::new(),
            }
        );
        let env = g.env();
        let mut writable: Vec<String> = g
            .allow_write_paths()
            .filter(|p| Some(*p) != env.tmp.as_deref() && *p != Path::new("/tmp"))
            .map(|p| {
                if p == env.cwd {
                    "the project".into()
                } else {
                    shown::path(p)
                }
            })
            .collect();
        writable.push(match env.tmp {
            Some(_) => "/tmp (the session's own)".into(),
            None => "/tmp (private to each command)".into(),
        });
        let _ = writeln!(out, "Writable: {}", writable.join(", "));
        let _ = writeln!(
            out,
            "Hidden from bash: {} denyRead entries, env files",
            l.config.deny_read.value.len(),
        );
        let _ = writeln!(out, "{}", env_line(self.dropped_env()));
        let grants = self.granted.entries.len() + self.session_writes.len();
        let hosts = self.gate.rules().granted.len();
        let _ = writeln!(
            out,
            "Grants this session: {}",
            match (grants, hosts) {
                (0, 0) => "none".to_string(),
                (g, 0) => format!("{g} (files, commands)"),
                (g, h) => format!("{g} (files, commands), hosts: {h}"),
            }
        );
        self.background_line(&mut out);
        self.recent_refusals(&mut out);
        let _ = writeln!(
            out,
            "/sandbox full: every rule and its file · /sandbox log: the last 30 decisions"
        );
        out
    }

    /// What commands left running, one line (`/sandbox stop` ends it).
    fn background_line(&self, out: &mut String) {
        let running = self.background();
        if running.is_empty() {
            return;
        }
        let named: Vec<String> = running
            .iter()
            .map(|b| format!("{} (pid {})", b.command, b.pid))
            .collect();
        let line = format!("Running in the background: {}", named.join(", "));
        let _ = writeln!(
            out,
            "{} · /sandbox stop ends them",
            shown::text(&line).chars().take(120).collect::<String>()
        );
    }

    fn recent_refusals(&self, out: &mut String) {
        let recent: Vec<_> = self
            .recent_violations(20)
            .into_iter()
            .filter(|v| v.decision.as_deref() != Some("allowed"))
            .collect();
        if recent.is_empty() {
            let _ = writeln!(out, "Refusals: none yet");
            return;
        }
        let _ = writeln!(out, "Latest refusals:");
        for v in recent.iter().rev().take(RECENT).rev() {
            let time = v.time.get(11..19).unwrap_or(&v.time);
            let line = format!("{time} {} {} {}", v.layer, v.operation, v.target);
            let _ = writeln!(
                out,
                "  {}",
                shown::text(&line).chars().take(76).collect::<String>()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::environment::DropKind;

    fn d(name: &str, kind: DropKind) -> Dropped {
        Dropped {
            name: name.into(),
            why: "why".into(),
            kind,
        }
    }

    #[test]
    fn the_environment_line_counts_and_names_credentials_first() {
        let line = env_line(vec![
            d("AAA_PLAIN", DropKind::NotListed),
            d("ZZ_URL", DropKind::Value),
            d("BBB", DropKind::NotListed),
            d("GH_TOKEN", DropKind::NotListed),
            d("CORP_LLM", DropKind::ReadByPi),
        ]);
        assert_eq!(
            line,
            "Environment: the allow-list and env.allow; 5 variables held back (ZZ_URL, CORP_LLM, AAA_PLAIN, +2 more)"
        );
        assert!(!line.contains('\n'));
        assert_eq!(
            env_line(vec![d("X", DropKind::Denied)]),
            "Environment: the allow-list and env.allow; 1 variable held back (X)"
        );
        assert!(env_line(vec![]).contains("nothing held back"));
    }
}
