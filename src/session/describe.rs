//! `/sandbox`'s text for the session: the effective configuration (`report`), then what the
//! session adds to it: bash's network, the index, project trust, the grants, git's paths, the
//! environment and the secrets hidden.

use std::fmt::Write as _;
use std::path::Path;

use super::approvals::Grant;
use super::{granted_how, Session};
use crate::policy::bash::Network;
use crate::policy::trust::Trust;
use crate::{redact, shown};

fn show_list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter()
            .map(|e| shown::name(e))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Session {
    /// What bash's network is, and whether the domain lists are enforced.
    fn network_report(&self, asked: Option<Network>) -> String {
        let mode = asked.unwrap_or_else(|| self.default_network());
        let how = match asked {
            Some(_) => "--sandbox-network",
            None if mode == Network::Filtered => "the default: the config lists domains",
            None => "the default: the config lists no domains",
        };
        let mut out = format!("\nNetwork for bash: {} ({how})\n", mode.name());
        let what = match mode {
            Network::Filtered => "network.allowedDomains and network.deniedDomains are ENFORCED: a command's only way out is this session's proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY); deniedDomains is refused, any other unlisted host is asked about (refused without a UI); each decision goes to the violation log",
            Network::Off => "no network at all; network.allowedDomains and network.deniedDomains are not consulted",
            Network::On => "the host's network, unfiltered: network.allowedDomains and network.deniedDomains are NOT enforced",
        };
        let _ = writeln!(out, "  {what}");
        let granted = self.gate.rules().granted;
        if mode == Network::Filtered && !granted.is_empty() {
            let _ = writeln!(out, "  hosts you allowed from a prompt:");
            for (host, how) in granted {
                let _ = writeln!(out, "    {host} — {how}");
            }
        }
        out
    }

    /// What the sandbox keeps that the user would not guess, said at the session's start: a
    /// project it keeps read-only (pi loads an extension from it, or a protected link leads
    /// to it), extensions pi loads whose folder holds the project (kept alone: what they
    /// import from beside them stays writable). `None` when there is nothing to say.
    pub(crate) fn kept_notice(&self) -> Option<String> {
        let guard = self.guard().filter(|g| g.active())?;
        let cwd = &guard.env().cwd;
        let mut cache = crate::policy::protected::GitDirCache::default();
        let mut is_git_dir = |p: &Path| guard.is_git_dir_for_writes(p, &mut cache);
        let mut out = Vec::new();
        let read_only = guard.write_protection(cwd, &mut is_git_dir).or_else(|| {
            if self.second_names.borrow().is_none() {
                self.remember(&self.scan(guard));
            }
            let names = self.second_names.borrow();
            names
                .iter()
                .flatten()
                .find(|f| crate::policy::protected::is_under(cwd, &f.path))
                .map(|f| f.why.clone())
        });
        if let Some(why) = read_only {
            out.push(format!(
                "The sandbox keeps this project read-only, to bash and to the file tools: it is the {}. Writes in it are refused until that changes.",
                why.label()
            ));
        }
        for n in guard.pi_loads_narrowed() {
            let kept: Vec<String> = n.kept.iter().map(|p| p.display().to_string()).collect();
            out.push(format!(
                "pi loads {} at its start (its settings list it), and its folder {} holds this project: only {} kept from commands, not the rest of that folder. Move the extension to a folder of its own.",
                n.extension.display(),
                n.folder.display(),
                if kept.is_empty() { "what it imports is".to_string() } else { format!("{} and what it imports are", kept.join(", ")) }
            ));
        }
        (!out.is_empty()).then(|| out.join("\n"))
    }

    /// The effective configuration, each value with the file it came from.
    pub(crate) fn describe(&self, network: Option<Network>) -> String {
        let state = self.state.as_ref().map(|l| (&l.config, &l.guard));
        let mut out = crate::session::report::describe(&self.options.env.cwd, state);
        out.push_str(&self.network_report(network));
        let _ = writeln!(
            out,
            "\nBash's index of the writable trees: {}",
            self.index_status()
        );
        let _ = match (&self.options.env.tmp, self.tmp_error()) {
            (Some(tmp), None) => writeln!(
                out,
                "/tmp: the session's own, shared by bash and the file tools ({} on the host), removed when the session ends",
                shown::path(tmp)
            ),
            (_, why) => writeln!(
                out,
                "/tmp: a private one for each bash command; the file tools' /tmp is the host's ({})",
                shown::lines(why.unwrap_or("not made"))
            ),
        };
        self.describe_project(&mut out);
        let secret = |p: &std::path::Path| self.guard().is_none_or(|g| g.is_secret_env_file(p));
        out.push_str(&self.committed_env.report(&secret));
        if let Some(kept) = self.kept_notice() {
            let _ = writeln!(out, "\n{}", shown::lines(&kept));
        }
        self.describe_grants(&mut out);
        if let Ok(l) = &self.state {
            describe_git_paths(l, &mut out);
            self.describe_env(l, &mut out);
            self.describe_secrets(&mut out);
        }
        out
    }

    /// The project file and whether its widening rules apply.
    fn describe_project(&self, out: &mut String) {
        if let Some(p) = self.project_layer() {
            let _ = writeln!(out, "\nProject config {}: {}", shown::path(&p.file), match (p.widenings.is_empty(), p.trust) {
                (true, _) => "only tightens, applied in full",
                (false, Trust::Trusted) => "trusted by you, applied in full",
                (false, Trust::Declined) => "you declined to trust it: only its tightening rules apply (/sandbox trust to answer again)",
                (false, Trust::Pending) => "NOT TRUSTED YET: only its tightening rules apply (/sandbox trust to review it)",
            });
            for w in p.by_weight() {
                let _ = writeln!(out, "  would {} ({})", w.what, w.key);
            }
        }
    }

    /// The approvals store and what it grants this session, with the writes allowed in memory.
    fn describe_grants(&self, out: &mut String) {
        let store = match &self.store {
            Ok(s) => shown::path(s.path()),
            Err(e) => format!("unusable: {e}"),
        };
        let _ = writeln!(
            out,
            "\nApprovals store {store}: {} grant(s) for this session",
            self.granted.entries.len()
        );
        if let Some(notice) = &self.granted.notice {
            let _ = writeln!(out, "  {}", shown::lines(notice));
        }
        for e in &self.granted.entries {
            let what = match &e.grant {
                Grant::Command { command } => {
                    format!("run unsandboxed: \"{}\"", shown::text(command))
                }
                Grant::CommandPrefix { argv } => {
                    format!(
                        "run unsandboxed: commands starting with \"{}\"",
                        shown::text(&argv.join(" "))
                    )
                }
                Grant::EnvRead { path } => format!("read {}", shown::path(path)),
                Grant::NetworkHost { host } => {
                    format!("connect to {} (any port)", shown::name(host))
                }
                Grant::ProjectTrust { file, trusted, .. } => format!(
                    "{} {}",
                    if *trusted { "trust" } else { "do not trust" },
                    shown::path(file)
                ),
            };
            let _ = writeln!(out, "  {what} — {}", granted_how(e));
        }
        for (dir, how) in &self.session_writes {
            let _ = writeln!(out, "  write in {} — {how}", shown::name(dir));
        }
    }

    /// The variables sandboxed commands do not get.
    fn describe_env(&self, l: &super::Loaded, out: &mut String) {
        let dropped = self.dropped_env();
        let _ = writeln!(
            out,
            "\nEnvironment: sandboxed commands get the variables a build needs (the allow-list: PATH, HOME, LANG, toolchain homes, ...: docs/protection.md lists it) and env.allow, never a credential-shaped value (env.allow: {}; env.deny: {}). Held back:",
            show_list(&l.config.env_allow.value),
            show_list(&l.config.env_deny.value)
        );
        if dropped.is_empty() {
            let _ = writeln!(out, "  none");
        }
        let (unlisted, telling): (Vec<_>, Vec<_>) = dropped
            .iter()
            .partition(|d| d.kind == crate::policy::environment::DropKind::NotListed);
        for d in &telling {
            let _ = writeln!(out, "  {} — {}", shown::name(&d.name), d.why);
        }
        if !unlisted.is_empty() {
            let names: Vec<String> = unlisted.iter().map(|d| shown::name(&d.name)).collect();
            let _ = writeln!(
                out,
                "  not on the allow-list (env.allow brings one back): {}",
                names.join(", ")
            );
        }
    }

    /// The names whose values are hidden from the model.
    fn describe_secrets(&self, out: &mut String) {
        let redactor = self.redactor();
        let _ = writeln!(
            out,
            "\nSecrets hidden from the model in tools' output as [redacted: NAME] (values of {}+ characters; add with redact.values / redact.env):",
            redact::MIN_SECRET_LEN
        );
        if redactor.is_empty() {
            let _ = writeln!(out, "  none");
        }
        for name in redactor.names() {
            let _ = writeln!(out, "  {}", shown::name(name));
        }
    }
}

/// The hooks directories and included config files the guard protects besides .git's own.
fn describe_git_paths(l: &super::Loaded, out: &mut String) {
    let _ = writeln!(
            out,
            "\nGit hooks directories besides .git/hooks (core.hooksPath) and config files git includes, protected like .git/hooks and .git/config (filesystem.allowHooksPath, for the hooks: {}):",
            l.config.allow_hooks_path.value
        );
    if l.guard.git_paths().is_empty() {
        let _ = writeln!(out, "  none");
    }
    for h in l.guard.git_paths() {
        let _ = writeln!(
            out,
            "  {} — {} in {}",
            shown::path(&h.path),
            shown::text(&h.why),
            shown::path(&h.git_dir)
        );
    }
}
