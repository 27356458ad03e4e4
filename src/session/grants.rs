//! The user's answers: grants from the write, env, network and command prompts (in memory,
//! in the approvals store, or written into a config file), and project trust.

use std::path::{Path, PathBuf};

use super::approvals::{Grant, Scope, Store};
use super::command_keys;
use super::prompts::{self, Prompt};
use super::{grant_files, Session};
use crate::net::gate;
use crate::policy::config::{self, Config, Env, Source};
use crate::policy::guard::{Decision, Op, Verdict};
use crate::policy::trust::{ProjectLayer, Trust};
use crate::session::config_edit::{ListKey, ALLOWED_DOMAINS, ALLOW_WRITE};
use crate::shown;

/// Why a grant was not made; said to the user as it is.
#[derive(Debug)]
pub(crate) enum GrantError {
    /// The guard does not ask about the path: a prompt's answer never lifts a hard block.
    NotAskable {
        path: PathBuf,
        reason: String,
    },
    /// An env file is allowed through `grant_env_file`, not as a write.
    EnvFileAsWrite,
    /// The directory holds the home or the project's parents.
    TooBroad(PathBuf),
    /// A file-only grant of something that is not a regular file (a folder, a device).
    NotAFile(PathBuf),
    /// Not a host name or address.
    BadHost(String),
    /// deniedDomains lists the host.
    DeniedHost {
        host: String,
        rule: String,
    },
    UnknownScope {
        given: String,
        takes: &'static str,
    },
    /// A command grant's key that is neither `exact` nor `prefix:N`.
    UnknownKey(String),
    BadPrefixLength(String),
    NotSimpleCommand,
    /// The project file changed since the user was asked about it.
    TrustChanged(PathBuf),
    /// The approvals store or a config file could not be read or written.
    Storage(String),
}

impl GrantError {
    fn storage(e: impl std::fmt::Display) -> GrantError {
        GrantError::Storage(e.to_string())
    }
}

impl std::fmt::Display for GrantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantError::NotAskable { path, reason } => write!(
                f,
                "{} cannot be allowed from a prompt: {reason}",
                shown::path(path)
            ),
            GrantError::EnvFileAsWrite => f.write_str("an env file is allowed through grantEnvFile"),
            GrantError::TooBroad(dir) => write!(
                f,
                "{} holds your home or this project's parents: too wide to grant from a prompt; add a narrower directory to filesystem.allowWrite yourself",
                shown::path(dir)
            ),
            GrantError::NotAFile(path) => write!(
                f,
                "{} is not a regular file: only a file can be allowed alone",
                shown::path(path)
            ),
            GrantError::BadHost(why) | GrantError::Storage(why) => f.write_str(why),
            GrantError::DeniedHost { host, rule } => write!(
                f,
                "{host} cannot be allowed from a prompt: it is denied by {rule}"
            ),
            GrantError::UnknownScope { given, takes } => {
                write!(f, "unknown scope {given:?}: {takes}")
            }
            GrantError::UnknownKey(key) => write!(f, "unknown key {key:?}: exact or prefix:N"),
            GrantError::BadPrefixLength(key) => write!(f, "bad prefix length in {key:?}"),
            GrantError::NotSimpleCommand => f.write_str(
                "only a simple command (no ; && | $(...), redirections or newlines) can be allowed by prefix",
            ),
            GrantError::TrustChanged(file) => write!(
                f,
                "{} changed since you were asked; it will be shown again",
                shown::path(file)
            ),
        }
    }
}

/// Where a write grant goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteScope {
    /// This session only, in memory.
    Session,
    /// `<cwd>/.pi/sandbox.json`.
    Project,
    /// The global config file.
    Global,
}

impl WriteScope {
    pub(crate) fn parse(s: &str) -> Option<WriteScope> {
        match s {
            "session" => Some(WriteScope::Session),
            "project" => Some(WriteScope::Project),
            "global" => Some(WriteScope::Global),
            _ => None,
        }
    }
}

/// Adds `dir` to `file`'s allowWrite (see `config_edit`).
fn add_list_entry(
    file: &Path,
    at: ListKey,
    inherited: &[String],
    entry: &str,
    lock: &Path,
) -> Result<(), GrantError> {
    let _turn = config_lock(lock)?;
    let text = read_config_text(file)?;
    let new = crate::session::config_edit::with_entry(file, text.as_deref(), at, inherited, entry)
        .map_err(GrantError::storage)?;
    crate::session::config_edit::replace_file(file, &new).map_err(GrantError::storage)
}

/// The lock every grant written into a config file takes, in pi's agent dir (not beside the
/// project's file, which would leave a lock file in the repository): two pi sessions
/// granting into one file at once, each reading it, editing and replacing it, lose nothing.
fn config_lock(lock: &Path) -> Result<std::fs::File, GrantError> {
    if let Some(dir) = lock.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    crate::session::config_edit::exclusive_lock(lock).map_err(|e| {
        GrantError::Storage(format!(
            "cannot lock {} to write the grant: {e}",
            lock.display()
        ))
    })
}

/// A config file's text; None when it does not exist (as a load reads it).
fn read_config_text(file: &Path) -> Result<Option<String>, GrantError> {
    config::read_layer(file).map_err(GrantError::storage)
}

impl Session {
    /// The prompt for a guard decision that asks the user.
    pub(crate) fn prompt_for(&self, decision: &Decision) -> Prompt {
        let env = &self.options.env;
        let broad =
            decision.op == Op::Write && self.too_broad(prompts::write_grant_dir(&decision.path));
        let files = match &self.state {
            Ok(l) => grant_files(&l.config, env),
            Err(_) => grant_files(&Config::defaults_for(env), env),
        };
        prompts::for_decision(decision, &files, broad)
    }

    /// A directory too wide to grant from a prompt: the root, the home directory, or one that
    /// holds the home or the session's directory.
    pub(crate) fn too_broad(&self, dir: &Path) -> bool {
        let (home, cwd) = match self.guard() {
            Some(g) => (g.env().home.clone(), g.env().cwd.clone()),
            None => (self.options.env.home.clone(), self.options.env.cwd.clone()),
        };
        // The host's /tmp (or whatever holds every session's /tmp): other users' and
        // programs' sockets and files, other sessions' folders.
        let holds_sessions = self
            .guard()
            .and_then(|g| g.sessions_tmp_parent())
            .is_some_and(|all| all.starts_with(dir));
        dir.parent().is_none()
            || home.starts_with(dir)
            || cwd.starts_with(dir)
            || holds_sessions
            || dir == Path::new(crate::policy::tmp_map::TMP)
    }

    fn store(&self) -> Result<&Store, GrantError> {
        self.store
            .as_ref()
            .map_err(|e| GrantError::Storage(e.clone()))
    }

    /// The guard's decision on `path` if it is one the user may grant (it asks), else why
    /// not: a prompt's answer never lifts a hard block.
    fn askable(&self, op: Op, path: &Path) -> Result<Decision, GrantError> {
        let decision = self.check(op, path);
        if decision.verdict != Verdict::Prompt {
            return Err(GrantError::NotAskable {
                path: decision.path,
                reason: decision.reason,
            });
        }
        Ok(decision)
    }

    /// The guard's asking decision for a write of `path`, which a write grant may answer (an
    /// env file is allowed through `grant_env_file`).
    fn askable_write(&self, path: &Path) -> Result<Decision, GrantError> {
        let decision = self.askable(Op::Write, path)?;
        if decision.rule == crate::policy::guard::ENV_FILE_RULE {
            return Err(GrantError::EnvFileAsWrite);
        }
        Ok(decision)
    }

    /// The user allowed writing `path` alone (the write prompt, where a folder grant would be
    /// too wide): `once` for the tool call being run, else for this session in memory. The
    /// file tools only: bash's mounts take folders.
    pub(crate) fn grant_file_write(
        &mut self,
        path: &Path,
        once: bool,
    ) -> Result<String, GrantError> {
        let decision = self.askable_write(path)?;
        // A folder (the home, `/`) allowed "alone" would open everything below it.
        if std::fs::symlink_metadata(&decision.path).is_ok_and(|m| !m.is_file()) {
            return Err(GrantError::NotAFile(decision.path));
        }
        if once {
            self.once.borrow_mut().push((Op::Write, decision.path));
            return Ok("Allowed for this write only.".into());
        }
        let shown = shown::path(&decision.path);
        // Matched by the exact name, never a root: not below it, not for bash's mounts.
        self.session_write_files.push((
            decision.path.display().to_string(),
            Source::Runtime("allowed by the user for this session (this file only)".into()),
        ));
        self.reload();
        Ok(format!(
            "Writes to {shown} are allowed for this session (this file only, with the file tools)."
        ))
    }

    /// The user allowed writes in `path`'s directory (the write prompt): for this session in
    /// memory, or written into the project's or the global config file. The policy is
    /// reloaded, so the next check and the next bash command's mounts include it. Returns
    /// where the grant went.
    pub(crate) fn grant_write(
        &mut self,
        path: &Path,
        scope: WriteScope,
    ) -> Result<String, GrantError> {
        let decision = self.askable_write(path)?;
        if self.too_broad(prompts::write_grant_dir(&decision.path)) {
            return Err(GrantError::TooBroad(
                prompts::write_grant_dir(&decision.path).to_path_buf(),
            ));
        }
        let dir = prompts::write_grant_dir(&decision.path)
            .display()
            .to_string();
        let env = self.options.env.clone();
        let landed = match scope {
            WriteScope::Session => {
                self.session_writes.push((
                    dir.clone(),
                    Source::Runtime("allowed by the user for this session".into()),
                ));
                "for this session (in memory only)".to_string()
            }
            WriteScope::Project => {
                let file = env.project_config();
                let inherited = self.inherited_list(&env, |c| c.allow_write.value)?;
                let trusted = self.add_to_project_file(
                    ALLOW_WRITE,
                    &inherited,
                    &dir,
                    "user: write prompt (allow for this project)",
                )?;
                if trusted {
                    format!("in {}", shown::path(&file))
                } else {
                    // The file's other widening rules are not trusted, so the file does not
                    // apply as a whole: the grant holds for this session meanwhile.
                    self.session_writes.push((
                        dir.clone(),
                        Source::Runtime(format!(
                            "allowed by the user for this project ({} is not trusted)",
                            shown::path(&file)
                        )),
                    ));
                    format!(
                        "for this session only: it is added to {}, which applies once you trust it (/sandbox trust)",
                        shown::path(&file)
                    )
                }
            }
            WriteScope::Global => {
                let defaults = Config::defaults_for(&env).allow_write.value;
                let (landed, trusted) = self.add_for_all_projects(
                    ALLOW_WRITE,
                    &defaults,
                    &dir,
                    "user: write prompt (allow for all projects)",
                )?;
                if !trusted {
                    self.session_writes.push((
                        dir.clone(),
                        Source::Runtime("allowed by the user for all projects (this project's file is not trusted)".into()),
                    ));
                }
                landed
            }
        };
        self.reload();
        Ok(format!(
            "Writes in {} are allowed {landed}.",
            shown::name(&dir)
        ))
    }

    /// A list as it stands below the project file: the defaults, or the global file's.
    fn inherited_list(
        &self,
        env: &Env,
        pick: impl Fn(Config) -> Vec<String>,
    ) -> Result<Vec<String>, GrantError> {
        let global = env.global_config();
        let text = std::fs::read_to_string(&global).ok();
        config::merge(Config::defaults_for(env), &[(global, text)])
            .map(pick)
            .map_err(GrantError::storage)
    }

    /// Adds `entry` to the list `at` of the project's config file. The answer about the
    /// content it had just before the edit (trusted, or declined) carries over to the edited
    /// content: the change is the user's own. That answer is looked up for the text read
    /// here, not for what was loaded when the prompt opened (a change someone else made while
    /// the dialog was open is not trusted by it), and the new key is computed from the text
    /// written, not read back. Returns whether the file applies (is trusted) after the change.
    fn add_to_project_file(
        &mut self,
        at: ListKey,
        inherited: &[String],
        entry: &str,
        granted_by: &str,
    ) -> Result<bool, GrantError> {
        let env = self.options.env.clone();
        let file = env.project_config();
        // The store as it is now (another pi may have answered meanwhile).
        let granted = self
            .store()?
            .load(&self.session_id())
            .map_err(GrantError::storage)?;
        let turn = config_lock(&self.config_lock_path())?;
        let before = read_config_text(&file)?;
        let answered = match &before {
            None => Some(true),
            Some(text) => {
                let (key, widens) =
                    config::project_trust_key(&env, text).map_err(GrantError::storage)?;
                match granted.trust(&file) {
                    _ if !widens => Some(true),
                    Some((hash, trusted)) if hash == key => Some(trusted),
                    _ => None,
                }
            }
        };
        let after =
            crate::session::config_edit::with_entry(&file, before.as_deref(), at, inherited, entry)
                .map_err(GrantError::storage)?;
        crate::session::config_edit::replace_file(&file, &after).map_err(GrantError::storage)?;
        drop(turn);
        let recorded = match answered {
            Some(trusted) => self.record_project_trust(&env, &after, trusted, granted_by),
            None => Ok(()),
        };
        // The file changed whether or not the answer could be stored: the rules follow it.
        self.reload();
        recorded?;
        Ok(answered == Some(true))
    }

    /// Stores the answer `trusted` about the project file holding `text`.
    fn record_project_trust(
        &self,
        env: &Env,
        text: &str,
        trusted: bool,
        granted_by: &str,
    ) -> Result<(), GrantError> {
        let (key, _) = config::project_trust_key(env, text).map_err(GrantError::storage)?;
        self.store()?
            .grant(
                Scope::Always,
                Grant::ProjectTrust {
                    file: env.project_config(),
                    sha256: key,
                    trusted,
                },
                &self.session_id(),
                granted_by,
            )
            .map(|_| ())
            .map_err(GrantError::storage)
    }

    /// Adds `entry` to the list `at` of the global config file. A project file that sets
    /// that list itself replaces the global one here, so "for all projects" would not hold
    /// in this project: the entry goes into the project's file too. Returns where it landed
    /// and whether it applies here from the files (false: the project's file is not trusted).
    fn add_for_all_projects(
        &mut self,
        at: ListKey,
        defaults: &[String],
        entry: &str,
        granted_by: &str,
    ) -> Result<(String, bool), GrantError> {
        let global = self.options.env.global_config();
        add_list_entry(&global, at, defaults, entry, &self.config_lock_path())?;
        let project = self.options.env.project_config();
        if !crate::session::config_edit::sets_list(read_config_text(&project)?.as_deref(), at) {
            return Ok((format!("in {}", shown::path(&global)), true));
        }
        let trusted = self.add_to_project_file(at, &[], entry, granted_by)?;
        let landed = format!(
            "in {} and in {}, whose own {}.{} replaces the global list in this project{}",
            shown::path(&global),
            shown::path(&project),
            at.section,
            at.key,
            if trusted {
                ""
            } else {
                " (and for this session, as that file is not trusted: /sandbox trust)"
            }
        );
        Ok((landed, trusted))
    }

    /// The user allowed a host from the network prompt "for this project" or "for all
    /// projects": added to network.allowedDomains of that config file (for this project,
    /// while the file is not trusted, for this session instead). `host` is refused if the
    /// rules deny it: a prompt's answer never lifts deniedDomains. Returns what was done.
    pub(crate) fn grant_domain(
        &mut self,
        host: &str,
        scope: WriteScope,
    ) -> Result<String, GrantError> {
        let parsed = crate::net::domains::parse_host(host)
            .map_err(|e| GrantError::BadHost(e.to_string()))?;
        let host = parsed.to_string();
        if let gate::Judgement::Denied(rule) = self.gate.judge(&parsed) {
            return Err(GrantError::DeniedHost { host, rule });
        }
        let env = self.options.env.clone();
        let landed = match scope {
            WriteScope::Session => {
                self.gate.allow_for_session(&parsed);
                "for this session (in memory only)".to_string()
            }
            WriteScope::Project => {
                let file = env.project_config();
                let inherited = self.inherited_list(&env, |c| c.allowed_domains.value)?;
                if self.add_to_project_file(
                    ALLOWED_DOMAINS,
                    &inherited,
                    &host,
                    "user: network prompt (allow for this project)",
                )? {
                    format!("in {}", shown::path(&file))
                } else {
                    self.gate.allow_for_session(&parsed);
                    format!(
                        "for this session only: it is added to {}, which applies once you trust it (/sandbox trust)",
                        shown::path(&file)
                    )
                }
            }
            WriteScope::Global => {
                let defaults = Config::defaults_for(&env).allowed_domains.value;
                let (landed, trusted) = self.add_for_all_projects(
                    ALLOWED_DOMAINS,
                    &defaults,
                    &host,
                    "user: network prompt (allow for all projects)",
                )?;
                if !trusted {
                    self.gate.allow_for_session(&parsed);
                }
                landed
            }
        };
        self.reload();
        Ok(format!("Connections to {host} are allowed {landed}."))
    }

    /// The user allowed an env file (the env prompt): `once` for the tool call being run (a
    /// read, or with `write` a change, which an edit makes after reading), `session` or
    /// `always` through the approvals store (reading and changing it, in both layers).
    pub(crate) fn grant_env_file(
        &mut self,
        path: &Path,
        scope: &str,
        write: bool,
    ) -> Result<(), GrantError> {
        let decision = self.askable(Op::Read, path)?;
        let scope = match scope {
            "once" => {
                let mut once = self.once.borrow_mut();
                once.push((Op::Read, decision.path.clone()));
                if write {
                    once.push((Op::Write, decision.path));
                }
                return Ok(());
            }
            "session" => Scope::Session,
            "always" => Scope::Always,
            other => {
                return Err(GrantError::UnknownScope {
                    given: other.into(),
                    takes: "once, session or always",
                })
            }
        };
        self.store()?
            .grant(
                scope,
                Grant::EnvRead {
                    path: decision.path,
                },
                &self.session_id(),
                "user: env file read prompt",
            )
            .map_err(GrantError::storage)?;
        self.reload();
        Ok(())
    }

    /// The prompt that asks what a command grant covers (after session / always).
    pub(crate) fn command_key_prompt(&self, command: &str) -> Prompt {
        prompts::command_key(command, &command_keys::prefix_choices(command))
    }

    /// The user allowed `command` to run unsandboxed for the session or for good, keyed as
    /// they chose: `exact`, or `prefix:N` (its first N words, simple commands only).
    pub(crate) fn grant_command(
        &mut self,
        command: &str,
        scope: &str,
        key: &str,
    ) -> Result<(), GrantError> {
        let scope = match scope {
            "session" => Scope::Session,
            "always" => Scope::Always,
            other => {
                return Err(GrantError::UnknownScope {
                    given: other.into(),
                    takes: "session or always",
                })
            }
        };
        let grant = match key.strip_prefix("prefix:") {
            None if key == "exact" => Grant::Command {
                command: command.to_string(),
            },
            Some(n) => {
                let words =
                    command_keys::simple_argv(command).ok_or(GrantError::NotSimpleCommand)?;
                let n: usize = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=words.len()).contains(n))
                    .ok_or_else(|| GrantError::BadPrefixLength(key.into()))?;
                Grant::CommandPrefix {
                    argv: words[..n].to_vec(),
                }
            }
            None => return Err(GrantError::UnknownKey(key.into())),
        };
        self.store()?
            .grant(
                scope,
                grant,
                &self.session_id(),
                "user: unsandboxed bash prompt",
            )
            .map_err(GrantError::storage)?;
        self.reload();
        Ok(())
    }

    /// The project file as loaded: what it would widen and whether that applies.
    pub(crate) fn project_layer(&self) -> Option<&ProjectLayer> {
        self.state.as_ref().ok()?.config.project.as_ref()
    }

    /// The trust prompt, when the project file widens the rules and its current content has
    /// not been answered yet (`again`: or was declined).
    pub(crate) fn trust_prompt(&self, again: bool) -> Option<Prompt> {
        self.project_layer()
            .filter(|p| p.needs_answer() || (again && p.trust == Trust::Declined))
            .map(prompts::project_trust)
    }

    /// The user's answer about the project file's current content (`sha256`, as shown in the
    /// prompt: a file changed since is not what they saw, and is not trusted by it).
    pub(crate) fn answer_trust(&mut self, sha256: &str, trusted: bool) -> Result<(), GrantError> {
        let file = self.options.env.project_config();
        self.refresh();
        if self.project_layer().map(|p| p.sha256.as_str()) != Some(sha256) {
            return Err(GrantError::TrustChanged(file));
        }
        self.store()?
            .grant(
                Scope::Always,
                Grant::ProjectTrust {
                    file,
                    sha256: sha256.to_string(),
                    trusted,
                },
                &self.session_id(),
                "user: project trust prompt",
            )
            .map_err(GrantError::storage)?;
        self.reload();
        Ok(())
    }

    /// Why the approvals store could not be read (a corrupt file moved aside, a newer
    /// version), if it could not.
    pub(crate) fn approvals_notice(&self) -> Option<&str> {
        self.granted.notice.as_deref()
    }
}

#[cfg(test)]
#[path = "grants_tests.rs"]
mod tests;
