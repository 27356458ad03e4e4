//! Read/write decisions for canonical paths.
//!
//! Order for a write: mode → pi's control surface (mandatory) → denyWrite (deny wins) →
//! allowWrite containment → otherwise blocked. For a read: mode → denyRead → env files.
//! Every decision names the rule that decided and where the rule came from.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use globset::{Glob, GlobBuilder};

use crate::paths::{self, PathError};
use crate::policy::config::{Config, Env, Mode, Source, Sourced};
use crate::policy::protected::{self, Anchors, Hit};
use crate::policy::rules::{Rule, RuleSet, RuleSetBuilder};
use crate::surface::hooks::{GitPath, GitPathKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Write,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "read" => Some(Op::Read),
            "write" => Some(Op::Write),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Allowed only if the user says so (no UI: blocked).
    Prompt,
    Deny,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Prompt => "prompt",
            Verdict::Deny => "deny",
        }
    }
}

/// The rule that asks before an env file is read (and hides it in bash meanwhile).
pub const ENV_FILE_RULE: &str = "sensitive env file (.env, .env.*)";

/// `PI_SANDBOX_APPROVAL_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    Ask,
    Always,
    Deny,
}

impl ApprovalMode {
    pub fn parse(s: &str) -> Option<ApprovalMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "ask" => Some(ApprovalMode::Ask),
            "always" => Some(ApprovalMode::Always),
            "deny" => Some(ApprovalMode::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Always => "always",
            ApprovalMode::Deny => "deny",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub op: Op,
    /// The canonical path that was checked (what the kernel will open).
    pub path: PathBuf,
    /// The rule that decided, e.g. `denyWrite pattern '*.pem'`.
    pub rule: String,
    /// Where that rule came from: a file path, `built-in defaults`, ...
    pub source: String,
    /// One sentence for the user and the model: what, why, and how to change it.
    pub reason: String,
}

impl Decision {
    pub fn allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

/// One rule consulted while deciding, for `explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub rule: String,
    pub source: String,
    pub matched: bool,
}

/// Collects steps only when an explanation was asked for: `check` is the hot path.
struct Trace(Option<Vec<Step>>);

impl Trace {
    fn push(&mut self, step: impl FnOnce() -> Step) {
        if let Some(steps) = &mut self.0 {
            steps.push(step());
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardError {
    Path(PathError),
    /// A config entry that cannot be turned into a rule.
    Rule {
        key: String,
        entry: String,
        source: String,
        message: String,
    },
}

impl fmt::Display for GuardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardError::Path(e) => write!(f, "{e}"),
            GuardError::Rule {
                key,
                entry,
                source,
                message,
            } => write!(
                f,
                "{source}: key `{key}`: entry {}: {}",
                crate::shown::quoted(entry),
                crate::shown::text(message)
            ),
        }
    }
}

impl std::error::Error for GuardError {}

impl From<PathError> for GuardError {
    fn from(e: PathError) -> Self {
        GuardError::Path(e)
    }
}

// ---- rules -------------------------------------------------------------------------------

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// denyRead and allowWrite take literal paths. `*` and `?` almost never occur in real paths,
/// so an entry holding one was meant as a pattern: refuse it rather than match nothing.
/// (`[` and `{` do occur in directory names, so they are taken literally.)
fn looks_like_pattern(entry: &str) -> bool {
    entry.contains(['*', '?'])
}

fn compile_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// A directory rule: canonical path plus where it came from.
#[derive(Debug, Clone)]
struct DirRule {
    path: PathBuf,
    raw: String,
    source: String,
}

/// The compiled policy for one session: what the guard consults on every call.
#[derive(Debug, Clone)]
pub struct Guard {
    env: Env,
    enabled: Sourced<bool>,
    mode: Sourced<Mode>,
    approval: ApprovalMode,
    // Shared, not copied, by the clones (the index thread keeps one): thousands of rules.
    deny_read: Arc<RuleSet>,
    deny_write: Arc<RuleSet>,
    /// pi's control surface (`protected::TABLE`) anchored for this session.
    anchors: Anchors,
    /// Extensions pi loads whose folder holds a writable tree: kept alone.
    pi_loads_narrowed: Arc<[crate::policy::pi_loads::Narrowed]>,
    allow_write: Vec<DirRule>,
    /// Git dirs that hold an allowWrite entry (`allowWrite: [".git/objects/info"]`).
    git_dirs_around_allow_write: Vec<PathBuf>,
    /// Canonical denyRead paths, for recursive tools.
    deny_read_paths: Arc<[DirRule]>,
    /// denyWrite as globs over canonical absolute paths (name patterns stay bare), for OS
    /// layers that take patterns (macOS).
    deny_write_globs: Arc<[String]>,
    /// Where git runs hooks from besides `.git/hooks` (`core.hooksPath`): set at load for
    /// the repositories around the session, added to as the session meets nested ones.
    /// Shared by every clone of this guard (the index's too), so that all judge new paths
    /// alike.
    git_paths: Arc<RwLock<Vec<GitPath>>>,
    /// Env files the user allowed reading (canonical path, how it was granted).
    env_read_grants: Arc<[(PathBuf, String)]>,
}

impl Guard {
    /// Compiles `config` for the session described by `env`. Every `~`, `.` and relative
    /// entry is expanded against `env` now, and canonicalised, so later checks compare
    /// canonical paths only.
    pub fn new(config: &Config, env: &Env, approval: ApprovalMode) -> Result<Guard, GuardError> {
        let cwd = paths::canonicalize(&env.cwd)?;
        let home = paths::canonicalize(&env.home)?;
        let env = Env {
            cwd,
            home,
            agent_dir: paths::canonicalize(&env.agent_dir)?,
            // As pi names them: what keeps them (`pi_session::protected_places`) follows
            // their links itself.
            session_dirs: env.session_dirs.clone(),
            session_file: env.session_file.clone(),
            pi_loads: env.pi_loads.clone(),
        };
        let rule_err =
            |key: &str, entry: &str, source: &Source, message: String| GuardError::Rule {
                key: key.to_string(),
                entry: entry.to_string(),
                source: source.to_string(),
                message,
            };

        // denyRead: paths (directories or files). Globs are refused: the OS layer can only
        // mask paths, and one policy must mean the same thing in both layers.
        // Rules share directories: resolve each once.
        let mut canon = paths::Canonicalizer::default();
        let mut deny_read = RuleSetBuilder::default();
        let mut deny_read_paths = Vec::new();
        for raw in &config.deny_read.value {
            if looks_like_pattern(raw) {
                return Err(rule_err(
                    "filesystem.denyRead",
                    raw,
                    &config.deny_read.source,
                    "denyRead takes directories or files, not patterns; list the path itself (patterns belong in denyWrite)".into(),
                ));
            }
            let path = canon.resolve(raw, &env.home, &env.cwd)?;
            let source = config.deny_read.source.to_string();
            let label = match config.deny_read_reasons.get(raw.as_str()) {
                Some(why) if config.deny_read.source == Source::Defaults => {
                    format!("denyRead entry '{}' ({why})", crate::shown::name(raw))
                }
                _ => format!("denyRead entry '{}'", crate::shown::name(raw)),
            };
            deny_read.literal(
                &path,
                Rule {
                    label,
                    source: source.clone(),
                },
            );
            deny_read_paths.push(DirRule {
                path,
                raw: raw.clone(),
                source,
            });
        }

        // denyWrite: a pattern without '/' matches a file or directory name anywhere; one
        // with '/' matches the whole path (relative ones from the project root, `**/...`
        // anywhere).
        let mut deny_write = RuleSetBuilder::default();
        let mut deny_write_globs = Vec::new();
        for raw in &config.deny_write.value {
            let rule = Rule {
                label: format!("denyWrite pattern '{}'", crate::shown::name(raw)),
                source: config.deny_write.source.to_string(),
            };
            let bad = |e: globset::Error| {
                rule_err(
                    "filesystem.denyWrite",
                    raw,
                    &config.deny_write.source,
                    format!("not a valid glob: {}", e.kind()),
                )
            };
            let trimmed = raw.trim_end_matches('/');
            if !trimmed.contains('/') {
                deny_write.name_glob(compile_glob(trimmed).map_err(bad)?, rule);
                deny_write_globs.push(trimmed.to_string());
            } else if !has_glob_chars(trimmed) {
                let path = canon.resolve(trimmed, &env.home, &env.cwd)?;
                deny_write_globs.push(globset::escape(&path.to_string_lossy()));
                deny_write.literal(&path, rule);
            } else {
                let anchored = anchor_pattern(trimmed, &env, &mut canon)?;
                deny_write.path_glob(compile_glob(&anchored).map_err(bad)?, rule);
                deny_write_globs.push(anchored);
            }
        }

        // allowWrite: directories only.
        let mut allow_write = Vec::new();
        for raw in &config.allow_write.value {
            if looks_like_pattern(raw) {
                return Err(rule_err(
                    "filesystem.allowWrite",
                    raw,
                    &config.allow_write.source,
                    "allowWrite takes directories, not patterns; list the directory itself".into(),
                ));
            }
            allow_write.push(DirRule {
                path: canon.resolve(raw, &env.home, &env.cwd)?,
                raw: raw.clone(),
                source: config.allow_write.source.to_string(),
            });
        }

        // The user's answers to write prompts, for this session only.
        for (raw, source) in &config.session_allow_write {
            allow_write.push(DirRule {
                path: canon.resolve(raw, &env.home, &env.cwd)?,
                raw: raw.clone(),
                source: source.to_string(),
            });
        }

        // A linked worktree's git dirs (outside the workspace) hold git's data for it: writable
        // like the workspace, in both layers. Decided once, at session start, and only through
        // git's own back-link (`protected::worktree_git_dirs`).
        for dir in protected::worktree_git_dirs(&env.cwd) {
            allow_write.push(DirRule {
                path: dir,
                raw: "<linked worktree's git dir>".into(),
                source: "the session's git worktree (git's own back-link)".into(),
            });
        }
        let git_dirs_around_allow_write = allow_write
            .iter()
            .flat_map(|r| r.path.ancestors().skip(1))
            .filter(|a| protected::is_git_dir_on_disk(a))
            .map(Path::to_path_buf)
            .collect();
        let writable: Vec<PathBuf> = std::iter::once(env.cwd.clone())
            .chain(allow_write.iter().map(|r| r.path.clone()))
            .collect();
        let session_places = crate::policy::pi_session::protected_places(
            &env.session_dirs,
            env.session_file.as_deref(),
            &writable,
        );
        let pi_loads =
            crate::policy::pi_loads::protected_places(&env.pi_loads, &writable, &env.home);
        let anchors = Anchors::new(&env.home, &env.agent_dir, &session_places, &pi_loads.places);

        Ok(Guard {
            deny_read: Arc::new(deny_read.build()),
            deny_write: Arc::new(deny_write.build()),
            anchors,
            pi_loads_narrowed: pi_loads.narrowed.into(),
            allow_write,
            git_dirs_around_allow_write,
            deny_read_paths: deny_read_paths.into(),
            deny_write_globs: deny_write_globs.into(),
            git_paths: Default::default(),
            env_read_grants: Arc::from(Vec::new()),
            enabled: config.enabled.clone(),
            mode: config.mode.clone(),
            approval,
            env,
        })
    }

    pub fn env(&self) -> &Env {
        &self.env
    }

    pub fn mode(&self) -> &Sourced<Mode> {
        &self.mode
    }

    pub fn set_mode(&mut self, mode: Mode, how: &str) {
        self.mode = Sourced {
            value: mode,
            source: Source::Runtime(how.to_string()),
        };
    }

    pub fn enabled(&self) -> &Sourced<bool> {
        &self.enabled
    }

    pub fn approval_mode(&self) -> ApprovalMode {
        self.approval
    }

    /// Decides `op` on an already absolute path (canonicalised here).
    pub fn check(&self, op: Op, path: &Path) -> Decision {
        self.run(op, path, Trace(None), &|_| None).0
    }

    /// Decides and returns every rule consulted, in order.
    pub fn explain(&self, op: Op, path: &Path) -> (Decision, Vec<Step>) {
        self.run(op, path, Trace(Some(Vec::new())), &|_| None)
    }

    /// `check` of `canonical`, known to be an env file under another name (what a link named
    /// like one leads to, as the scan found it).
    pub fn check_as_env_file(&self, op: Op, canonical: &Path) -> Decision {
        self.decide(op, canonical, true, &mut Trace(None), &|_| None)
    }

    /// `check` and `explain`, with `known` answering whether a directory is a git dir where
    /// it can (an index kept current); None sends the question to the disk.
    pub fn check_with(&self, op: Op, path: &Path, known: KnownGitDirs) -> Decision {
        self.run(op, path, Trace(None), known).0
    }

    pub fn explain_with(&self, op: Op, path: &Path, known: KnownGitDirs) -> (Decision, Vec<Step>) {
        self.run(op, path, Trace(Some(Vec::new())), known)
    }

    fn run(
        &self,
        op: Op,
        path: &Path,
        mut steps: Trace,
        known: KnownGitDirs,
    ) -> (Decision, Vec<Step>) {
        let (canonical, through) = match paths::canonicalize_traced(path) {
            Ok(p) => p,
            Err(e) => {
                let d = Decision {
                    verdict: Verdict::Deny,
                    op,
                    path: path.to_path_buf(),
                    rule: "path resolution".into(),
                    source: Source::Mandatory.to_string(),
                    reason: format!(
                        "Blocked {} of {}: {e}. The sandbox cannot tell which file this is, so it refuses.",
                        op.as_str(),
                        crate::shown::path(path)
                    ),
                };
                return (d, steps.0.unwrap_or_default());
            }
        };
        let env_alias = reached_through_env_named_link(path, &canonical);
        let d = self.decide(op, &canonical, env_alias, &mut steps, known);
        let d = self.through_denied_dir(d, &through, &mut steps);
        (d, steps.0.unwrap_or_default())
    }

    /// A path that leads through a denyRead directory (a link inside `~/.ssh` pointing out
    /// of it) is refused like the directory: inside the sandbox that directory is an empty
    /// mask, so the path does not exist there, and the layers must agree.
    fn through_denied_dir(&self, d: Decision, through: &[PathBuf], steps: &mut Trace) -> Decision {
        if d.verdict == Verdict::Deny || !self.active() || through.is_empty() {
            return d;
        }
        let hit = through
            .iter()
            .find_map(|dir| self.deny_read.first_match(dir).map(|r| (dir, r)));
        steps.push(|| Step {
            rule: "path leads through a denyRead directory".into(),
            source: hit.map_or_else(|| "all layers".into(), |(_, r)| r.source.clone()),
            matched: hit.is_some(),
        });
        let Some((dir, rule)) = hit else {
            return d;
        };
        Decision {
            verdict: Verdict::Deny,
            rule: rule.label.clone(),
            source: rule.source.clone(),
            reason: format!(
                "Blocked {} of {}: the path leads through {}, which {} from {} hides (a link inside it points here). Use the path {} directly.",
                d.op.as_str(),
                crate::shown::path(&d.path),
                crate::shown::path(dir),
                rule.label,
                rule.source,
                crate::shown::path(&d.path)
            ),
            ..d
        }
    }

    /// `env_alias`: `path` was reached through a link named like an env file (`.env ->
    /// ~/secrets/api.env`), so it is one whatever its own name.
    fn decide(
        &self,
        op: Op,
        path: &Path,
        env_alias: bool,
        steps: &mut Trace,
        known: KnownGitDirs,
    ) -> Decision {
        // The path is the model's or the disk's: shown escaped in every reason.
        let shown = crate::shown::path(path);
        let make = |verdict, rule: String, source: String, reason: String| Decision {
            verdict,
            op,
            path: path.to_path_buf(),
            rule,
            source,
            reason,
        };

        steps.push(|| Step {
            rule: format!("enabled = {}", self.enabled.value),
            source: self.enabled.source.to_string(),
            matched: !self.enabled.value,
        });
        if !self.enabled.value {
            return make(
                Verdict::Allow,
                "enabled = false".into(),
                self.enabled.source.to_string(),
                format!("The sandbox is disabled ({}).", self.enabled.source),
            );
        }
        let mode = self.mode.value;
        steps.push(|| Step {
            rule: format!("mode {}", mode.as_str()),
            source: self.mode.source.to_string(),
            matched: mode == Mode::Yolo || (mode == Mode::ReadOnly && op == Op::Write),
        });
        if mode == Mode::Yolo {
            return make(
                Verdict::Allow,
                "mode yolo".into(),
                self.mode.source.to_string(),
                "Sandbox mode is yolo: nothing is checked.".into(),
            );
        }

        match op {
            Op::Read => self.decide_read(path, env_alias, steps, make),
            Op::Write => {
                if mode == Mode::ReadOnly {
                    return make(
                        Verdict::Deny,
                        "mode read-only".into(),
                        self.mode.source.to_string(),
                        format!(
                            "Blocked write to {shown}: the sandbox is in read-only mode (set by {}). Switch with /sandbox-mode read-write or Alt+S.",
                            self.mode.source
                        ),
                    );
                }
                self.decide_write(path, env_alias, steps, known, make)
            }
        }
    }

    fn decide_read(
        &self,
        path: &Path,
        env_alias: bool,
        steps: &mut Trace,
        make: impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Decision {
        // The path is the model's or the disk's: shown escaped in every reason.
        let shown = crate::shown::path(path);
        let process = is_process_file(path);
        steps.push(|| Step {
            rule: "a process's files (/proc/<pid>)".into(),
            source: Source::Mandatory.to_string(),
            matched: process,
        });
        if process {
            return make(
                Verdict::Deny,
                "a process's files (/proc/<pid>)".into(),
                Source::Mandatory.to_string(),
                format!(
                    "Blocked read of {shown}: it is a running process's own state (its environment, memory, command line, open files), pi's own included; it can hold API keys and tokens. Ask the user for what you need instead."
                ),
            );
        }
        let hit = self.deny_read.first_match(path);
        steps.push(|| rule_step("denyRead", hit));
        if let Some(rule) = hit {
            return make(
                Verdict::Deny,
                rule.label.clone(),
                rule.source.clone(),
                format!(
                    "Blocked read of {shown}: it is covered by {} from {}. To allow it, remove that entry from filesystem.denyRead in {}.",
                    rule.label,
                    rule.source,
                    self.where_to_edit(&rule.source)
                ),
            );
        }
        // A directory named `.env.d` holds files; it is not one.
        let env_file =
            (env_alias || is_env_file(path)) && !std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        steps.push(|| Step {
            rule: format!(
                "sensitive env file (approval mode {})",
                self.approval.as_str()
            ),
            source: "PI_SANDBOX_APPROVAL_MODE".into(),
            matched: env_file,
        });
        if env_file && self.approval != ApprovalMode::Deny {
            if let Some(scope) = self.env_read_grants.iter().find(|(p, _)| p == path) {
                return make(
                    Verdict::Allow,
                    "sensitive env file (.env, .env.*), read granted".into(),
                    scope.1.clone(),
                    format!("Read of {shown} is allowed: {}.", scope.1),
                );
            }
        }
        if env_file {
            let rule = ENV_FILE_RULE.to_string();
            let source = format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str());
            return match self.approval {
                ApprovalMode::Always => make(
                    Verdict::Allow,
                    rule,
                    source,
                    format!("{shown} is an env file; approval mode 'always' allows reading it."),
                ),
                ApprovalMode::Ask => make(
                    Verdict::Prompt,
                    rule,
                    source,
                    format!(
                        "Blocked read of {shown}: env files usually hold secrets, reading one needs the user's approval, and there is no UI to ask in. Set PI_SANDBOX_APPROVAL_MODE=always to allow such reads."
                    ),
                ),
                ApprovalMode::Deny => make(
                    Verdict::Deny,
                    rule,
                    source,
                    format!(
                        "Blocked read of {shown}: env files usually hold secrets and PI_SANDBOX_APPROVAL_MODE=deny refuses them. Unset it (or set ask) to be asked instead."
                    ),
                ),
            };
        }
        make(
            Verdict::Allow,
            "no denyRead entry covers it".into(),
            "all layers".into(),
            format!("Read of {shown} is allowed."),
        )
    }

    fn decide_write(
        &self,
        path: &Path,
        env_alias: bool,
        steps: &mut Trace,
        known: KnownGitDirs,
        make: impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Decision {
        // The path is the model's or the disk's: shown escaped in every reason.
        let shown = crate::shown::path(path);
        // Both questions below ask about the same ancestors: answer each once, from `known`
        // where it can.
        let mut git_dirs = protected::GitDirCache::default();
        let mut is_git_dir = |p: &Path| {
            if self.allow_write_root(p).is_some() {
                git_dirs.remembered(p, || known(p))
            } else {
                self.is_git_dir_for_writes(p, &mut git_dirs)
            }
        };
        let surface = self.control_surface(path, &mut is_git_dir);
        steps.push(|| Step {
            rule: "pi control surface".into(),
            source: Source::Mandatory.to_string(),
            matched: surface.is_some(),
        });
        if let Some(hit) = surface {
            return make(
                Verdict::Deny,
                surface_label(&hit),
                Source::Mandatory.to_string(),
                format!(
                    "Blocked write to {shown}: it is part of pi's control surface ({}: {}), which the agent may never change, whatever the config says. Edit it yourself outside pi if the change is wanted.",
                    surface_label(&hit),
                    hit.entry.why
                ),
            );
        }
        let git_path = self.git_path(path);
        steps.push(|| Step {
            rule: "git hooks directory (core.hooksPath) or included git config".into(),
            source: Source::Mandatory.to_string(),
            matched: git_path.is_some(),
        });
        if let Some(g) = git_path {
            let reason = match g.kind {
                GitPathKind::Hooks => format!(
                    "Blocked write to {shown}: it lies in the git hooks directory {} ({}, for {}); the user's next git command would run what is written there. Edit the hooks yourself outside pi if the change is wanted, or set filesystem.allowHooksPath.",
                    g.path.display(),
                    g.why,
                    g.git_dir.display()
                ),
                GitPathKind::Config => format!(
                    "Blocked write to {shown}: {} is a git config file of the repository {}, {}; git reads it on the host, and keys like core.fsmonitor or an alias run commands there. Edit it yourself outside pi if the change is wanted.",
                    g.path.display(),
                    g.git_dir.display(),
                    g.why
                ),
            };
            return make(
                Verdict::Deny,
                git_path_label(&g),
                Source::Mandatory.to_string(),
                reason,
            );
        }
        // A denyRead directory is an empty read-only mask inside bash: nothing can be
        // written into it there, and the file tools must not either.
        let hidden = self.deny_read.first_match(path);
        steps.push(|| rule_step("denyRead (writes into hidden paths)", hidden));
        if let Some(rule) = hidden {
            return make(
                Verdict::Deny,
                rule.label.clone(),
                rule.source.clone(),
                format!(
                    "Blocked write to {shown}: it lies in {} from {}, which is hidden from the agent (and read-only inside the sandbox). To allow it, remove that entry from filesystem.denyRead in {}.",
                    rule.label,
                    rule.source,
                    self.where_to_edit(&rule.source)
                ),
            );
        }
        let exempt = self.deny_write_exemption(path, &mut is_git_dir);
        let deny = self
            .deny_write
            .first_match_outside(path, exempt.as_ref().map(|(dir, _)| dir.as_path()));
        steps.push(|| match &exempt {
            Some((_, why)) if deny.is_none() => Step {
                rule: format!("denyWrite not applied: {why}"),
                source: Source::Mandatory.to_string(),
                matched: false,
            },
            _ => rule_step("denyWrite", deny),
        });
        if let Some(rule) = deny {
            return make(
                Verdict::Deny,
                rule.label.clone(),
                rule.source.clone(),
                format!(
                    "Blocked write to {shown}: it matches {} from {} (denyWrite wins over allowWrite). To allow it, remove that pattern from filesystem.denyWrite in {}.",
                    rule.label,
                    rule.source,
                    self.where_to_edit(&rule.source)
                ),
            );
        }
        let allow = self.allow_write_root(path);
        steps.push(|| Step {
            rule: "allowWrite".into(),
            source: allow
                .map(|d| d.source.clone())
                .unwrap_or_else(|| "all layers".into()),
            matched: allow.is_some(),
        });
        // An existing env file the user has not allowed reading is hidden in bash; the tools
        // may not overwrite it blind either: the same question as a read.
        let hidden_env = allow.is_some()
            && self.masks_env_file_named(path, env_alias)
            && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        if allow.is_some() {
            steps.push(|| Step {
                rule: format!("{ENV_FILE_RULE}, existing"),
                source: format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str()),
                matched: hidden_env,
            });
        }
        if hidden_env {
            let source = format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str());
            return match self.approval {
                ApprovalMode::Deny => make(
                    Verdict::Deny,
                    ENV_FILE_RULE.into(),
                    source,
                    format!(
                        "Blocked write to {shown}: it is an env file, which usually holds secrets, and PI_SANDBOX_APPROVAL_MODE=deny keeps env files away from the agent. Unset it (or set ask) to be asked instead."
                    ),
                ),
                _ => make(
                    Verdict::Prompt,
                    ENV_FILE_RULE.into(),
                    source,
                    format!(
                        "Blocked write to {shown}: it is an env file, which usually holds secrets; changing it needs the user's approval, and there is no UI to ask in. Set PI_SANDBOX_APPROVAL_MODE=always to allow it."
                    ),
                ),
            };
        }
        if let Some(dir) = allow {
            return make(
                Verdict::Allow,
                format!("allowWrite entry '{}'", crate::shown::name(&dir.raw)),
                dir.source.clone(),
                format!(
                    "Write to {shown} is allowed by allowWrite entry '{}' from {}.",
                    crate::shown::name(&dir.raw),
                    dir.source
                ),
            );
        }
        let listed: Vec<String> = self
            .allow_write
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        let source = self
            .allow_write
            .first()
            .map(|d| d.source.clone())
            .unwrap_or_else(|| "all layers".into());
        // Not a hard block: the user may grant it (`prompts`); without a UI, refused.
        make(
            Verdict::Prompt,
            "outside allowWrite".into(),
            source.clone(),
            format!(
                "Blocked write to {shown}: it is outside every allowWrite directory ({}; from {}), and there is no UI to ask the user in. To allow it, add its directory to filesystem.allowWrite in {}.",
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") },
                source,
                self.env.project_config().display()
            ),
        )
    }

    /// Whether `dir` is a git dir, as far as writes care: one inside allowWrite (asked on
    /// disk, through `cache`), or one holding an allowWrite entry (found at load). Others
    /// cannot matter: a write anywhere else is refused whatever it is, and each directory
    /// asked about costs a lookup on disk. The path guard and bash's scan both use this.
    pub fn is_git_dir_for_writes(&self, dir: &Path, cache: &mut protected::GitDirCache) -> bool {
        if self.allow_write_root(dir).is_some() {
            cache.is_git_dir(dir)
        } else {
            self.git_dirs_around_allow_write.iter().any(|g| g == dir)
        }
    }

    /// The hooks directory (`core.hooksPath`) `path` is or lies in, if any.
    fn git_path(&self, path: &Path) -> Option<GitPath> {
        self.git_paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|h| protected::is_under(path, &h.path))
            .cloned()
    }

    /// The directories git runs hooks from besides `.git/hooks`, found by the session.
    pub fn set_git_paths(&mut self, dirs: Vec<GitPath>) {
        self.git_paths = Arc::new(RwLock::new(dirs));
    }

    /// Makes `dirs` the hooks directories of the repository `git_dir` (for this guard and
    /// its clones); true when that changed them.
    pub fn replace_git_paths_of(&self, git_dir: &Path, dirs: Vec<GitPath>) -> bool {
        let mut all = self.git_paths.write().unwrap_or_else(|e| e.into_inner());
        let old: Vec<&GitPath> = all.iter().filter(|h| h.git_dir == git_dir).collect();
        if old.len() == dirs.len() && old.iter().zip(&dirs).all(|(a, b)| *a == b) {
            return false;
        }
        all.retain(|h| h.git_dir != git_dir);
        all.extend(dirs);
        true
    }

    /// The env files the user allowed reading, each with how (replaces the earlier list).
    pub fn set_env_read_grants(&mut self, grants: Vec<(PathBuf, String)>) {
        self.env_read_grants = grants.into();
    }

    pub fn env_read_grants(&self) -> &[(PathBuf, String)] {
        &self.env_read_grants
    }

    pub fn git_paths(&self) -> Vec<GitPath> {
        self.git_paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Extensions pi loads that are kept without the folder they import from (it holds
    /// the project or an allowWrite root).
    pub(crate) fn pi_loads_narrowed(&self) -> &[crate::policy::pi_loads::Narrowed] {
        &self.pi_loads_narrowed
    }

    /// The allowWrite directory `path` lies in, if any.
    pub fn writable_root(&self, path: &Path) -> Option<&Path> {
        self.allow_write_root(path).map(|d| d.path.as_path())
    }

    /// The allowWrite entry containing `path`, if any.
    fn allow_write_root(&self, path: &Path) -> Option<&DirRule> {
        self.allow_write
            .iter()
            .find(|d| protected::is_under(path, &d.path))
    }

    /// The entry of pi's control surface covering `canonical`, if any.
    pub fn control_surface(
        &self,
        canonical: &Path,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
    ) -> Option<Hit> {
        self.anchors.classify(canonical, is_git_dir)
    }

    /// Why denyWrite does not apply to `path`: it lies in a rebuildable dependency tree or
    /// in a git dir's data, below an allowWrite root. Files there are the package
    /// manager's or git's, not the user's (pip's `cacert.pem`), and pinning them would make
    /// the tree impossible to remove or rebuild. pi's control surface still applies there.
    /// Returns the exempt directory (its contents are exempt, not itself) and why.
    fn deny_write_exemption(
        &self,
        path: &Path,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
    ) -> Option<(PathBuf, String)> {
        let root = self.allow_write_root(path)?;
        let mut dir = root.path.clone();
        // A root that is a git dir itself (a linked worktree's common dir) holds git's data.
        if is_git_dir(&dir) {
            let why = format!("{} is git's data", dir.display());
            return Some((dir, why));
        }
        let below = path.strip_prefix(&root.path).ok()?;
        let mut comps = below.components().peekable();
        while let Some(c) = comps.next() {
            // Only directories count: the path itself is what is being written.
            comps.peek()?;
            dir.push(c);
            if let Some(name) = c.as_os_str().to_str() {
                if DEPENDENCY_TREES.contains(&name) {
                    let why = format!(
                        "{} is a rebuildable dependency tree ({name})",
                        dir.display()
                    );
                    return Some((dir, why));
                }
            }
            if is_git_dir(&dir) {
                let why = format!("{} is git's data", dir.display());
                return Some((dir, why));
            }
        }
        None
    }

    /// For recursive tools (grep, find): the root must be readable, and no denyRead entry may
    /// lie below it, since those tools would list or search inside it.
    pub fn check_search(&self, root: &Path, tool: &str) -> Decision {
        let d = self.check(Op::Read, root);
        if d.verdict != Verdict::Allow || !self.active() {
            return d;
        }
        let root = d.path.clone();
        if Path::new("/proc").starts_with(&root) {
            return Decision {
                verdict: Verdict::Deny,
                op: Op::Read,
                path: root.clone(),
                rule: "a process's files (/proc/<pid>)".into(),
                source: Source::Mandatory.to_string(),
                reason: format!(
                    "Blocked {tool} in {}: it would look inside /proc, where every process's environment and memory can be read. Search a narrower path.",
                    crate::shown::path(&root)
                ),
            };
        }
        let inside = self
            .deny_read_paths
            .iter()
            .find(|r| r.path != root && r.path.starts_with(&root) && r.path.exists());
        if let Some(r) = inside {
            return Decision {
                verdict: Verdict::Deny,
                op: Op::Read,
                path: root.clone(),
                rule: format!("denyRead entry '{}'", crate::shown::name(&r.raw)),
                source: r.source.clone(),
                reason: format!(
                    "Blocked {tool} in {}: it would look inside {}, which denyRead entry '{}' from {} protects. Search a narrower path that does not contain it.",
                    crate::shown::path(&root),
                    crate::shown::path(&r.path),
                    crate::shown::name(&r.raw),
                    r.source
                ),
            };
        }
        d
    }

    /// Whether checks apply at all (enabled and not yolo).
    /// Whether bash hides `canonical`, a regular file: an env file the user has not allowed
    /// reading. The read tool asks about it; bash cannot ask per file, so until the user
    /// allows it (approval mode ask) or for good (deny), `cat .env` must not undo a No.
    pub fn masks_env_file(&self, canonical: &Path) -> bool {
        self.masks_env_file_named(canonical, false)
    }

    /// `masks_env_file`, for a file that may also be reached under an env file's name
    /// (`named_env`: a link `.env` leads to it): it is an env file by either name.
    pub fn masks_env_file_named(&self, canonical: &Path, named_env: bool) -> bool {
        self.hides_env_files()
            && (named_env || is_env_file(canonical))
            && match self.approval {
                ApprovalMode::Always => false,
                ApprovalMode::Deny => true,
                ApprovalMode::Ask => !self.env_read_grants.iter().any(|(p, _)| p == canonical),
            }
    }

    /// Whether bash hides env files at all (approval mode ask or deny).
    pub fn hides_env_files(&self) -> bool {
        self.active() && self.approval != ApprovalMode::Always
    }

    pub fn active(&self) -> bool {
        self.enabled.value && self.mode.value != Mode::Yolo
    }

    fn where_to_edit(&self, source: &str) -> String {
        if source == Source::Defaults.to_string() {
            format!(
                "{} or {} (a layer's list replaces the defaults)",
                self.env.global_config().display(),
                self.env.project_config().display()
            )
        } else {
            source.to_string()
        }
    }

    /// Canonical denyRead paths (for display and for the OS layer).
    pub fn deny_read_paths(&self) -> impl Iterator<Item = &Path> {
        self.deny_read_paths.iter().map(|r| r.path.as_path())
    }

    /// Canonical allowWrite directories.
    pub fn allow_write_paths(&self) -> impl Iterator<Item = &Path> {
        self.allow_write.iter().map(|r| r.path.as_path())
    }

    /// What keeps `canonical` read-only whatever allowWrite says: pi's control surface, or a
    /// denyWrite pattern (unless exempt). The OS layer binds such paths read-only; it asks
    /// with the same git-dir test the guard uses, so the layers cannot disagree.
    pub fn write_protection(
        &self,
        canonical: &Path,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
    ) -> Option<Protection> {
        if let Some(hit) = self.control_surface(canonical, is_git_dir) {
            return Some(Protection::Surface(hit));
        }
        if let Some(h) = self.git_path(canonical) {
            return Some(Protection::GitPath {
                label: git_path_label(&h),
                kind: h.kind,
            });
        }
        let exempt = self.deny_write_exemption(canonical, is_git_dir);
        self.deny_write
            .first_match_outside(canonical, exempt.as_ref().map(|(dir, _)| dir.as_path()))
            .map(|r| Protection::DenyWrite(r.label.clone()))
    }

    /// denyWrite patterns as globs over canonical paths (bare name patterns unchanged).
    pub fn deny_write_globs(&self) -> &[String] {
        &self.deny_write_globs
    }

    pub fn anchors(&self) -> &Anchors {
        &self.anchors
    }
}

/// Whether a directory is a git dir, where the caller knows (None: ask the disk).
pub type KnownGitDirs<'a> = &'a dyn Fn(&Path) -> Option<bool>;

/// Why a path stays read-only in bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// pi's control surface: an entry of `protected::TABLE`.
    Surface(Hit),
    /// A denyWrite pattern (its label).
    DenyWrite(String),
    /// A directory git runs hooks from by `core.hooksPath`, or a config file git includes
    /// (`hooks`): its label.
    GitPath { label: String, kind: GitPathKind },
    /// What a protected name that is a symlink points to (`.git/hooks -> ../githooks`).
    LinkTarget { link: PathBuf, of: Box<Protection> },
    /// Another name (hard link) of the protected file `of`.
    HardLink { of: PathBuf },
    /// A symlink followed on the way from the protected link `link` to its target
    /// (`.git/hooks/pre-commit -> ../../hook`, `hook -> scripts/pre-commit`): replacing it
    /// sends the protected link elsewhere, so the audit puts it back.
    WayLink { link: PathBuf, of: Box<Protection> },
    /// An env file the user has not allowed reading (approval mode ask or deny): hidden in
    /// bash like a denyRead file, since bash cannot ask per file. `also`: what protects it
    /// besides (a denyWrite match), which the audit applies to one a command creates.
    EnvFile { also: Option<Box<Protection>> },
}

impl Protection {
    /// The rule, as the guard names rules.
    pub fn label(&self) -> String {
        match self {
            Protection::Surface(h) => surface_label(h),
            Protection::DenyWrite(l) | Protection::GitPath { label: l, .. } => l.clone(),
            Protection::LinkTarget { link, .. } => {
                format!("target of protected link {}", link.display())
            }
            Protection::HardLink { of } => format!("hard link to protected {}", of.display()),
            Protection::WayLink { link, .. } => {
                format!("link on the way of protected link {}", link.display())
            }
            Protection::EnvFile { .. } => ENV_FILE_RULE.to_string(),
        }
    }
}

/// Dependency trees exempt from denyWrite (in both layers); see `deny_write_exemption`.
pub const DEPENDENCY_TREES: &[&str] = &["node_modules", ".venv", "target"];

fn git_path_label(g: &GitPath) -> String {
    match g.kind {
        GitPathKind::Hooks => format!("git hooks directory {} ({})", g.path.display(), g.why),
        GitPathKind::Config => format!("git config file {} ({})", g.path.display(), g.why),
    }
}

fn surface_label(hit: &Hit) -> String {
    format!("{} {}", hit.entry.what, hit.root.display())
}

/// The explain step for a rule list: which rule matched, or that none did.
fn rule_step(list: &str, hit: Option<&Rule>) -> Step {
    Step {
        rule: list.to_string(),
        source: hit.map_or_else(|| "all layers".into(), |r| r.source.clone()),
        matched: hit.is_some(),
    }
}

/// `.env` or `.env.<anything>` (seed 000).
/// `/proc/<pid>/...` (and so `/proc/self`, `/proc/thread-self`, which resolve to it): a
/// process's environment, memory, command line and file descriptors.
pub fn is_process_file(path: &Path) -> bool {
    let mut c = path.components();
    c.next() == Some(std::path::Component::RootDir)
        && c.next().is_some_and(|p| p.as_os_str() == "proc")
        && c.next().is_some_and(|pid| {
            let b = pid.as_os_str().as_encoded_bytes();
            !b.is_empty() && b.iter().all(u8::is_ascii_digit)
        })
}

/// Whether resolving `path` to `canonical` went through a symlink named like an env file that
/// leads to `canonical` itself (not a directory on the way): the file is then an env file by
/// that name too. Asked only when a link was involved at all.
pub fn reached_through_env_named_link(path: &Path, canonical: &Path) -> bool {
    if paths::lexical_normalize(path) == canonical {
        return false;
    }
    paths::symlinks_followed(path).is_ok_and(|(_, links)| {
        links.iter().any(|link| {
            is_env_file(link) && paths::canonicalize(link).is_ok_and(|t| t == canonical)
        })
    })
}

pub fn is_env_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == ".env" || n.starts_with(".env."))
}

/// Anchors a path pattern: `~/` and `/` are absolute, `**/` matches anywhere, anything else
/// is relative to the project root. Literal prefixes are canonicalised and glob-escaped.
fn anchor_pattern(
    pattern: &str,
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<String, PathError> {
    if pattern.starts_with("**") {
        return Ok(pattern.to_string());
    }
    // The base is literal whatever characters it holds; only the user's part is a glob.
    let (base, user_part) = if let Some(rest) = pattern.strip_prefix("~/") {
        (env.home.clone(), rest)
    } else if let Some(rest) = pattern.strip_prefix('/') {
        (PathBuf::from("/"), rest)
    } else {
        (env.cwd.clone(), pattern)
    };
    // Literal leading components of the user's part join the base and are canonicalised.
    let mut literal = base;
    let mut rest: Vec<&str> = Vec::new();
    for part in user_part.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if rest.is_empty() && !has_glob_chars(part) {
            literal.push(part);
        } else {
            rest.push(part);
        }
    }
    let literal = canon.canonicalize(&literal)?;
    let mut out = globset::escape(&literal.to_string_lossy());
    for part in rest {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(part);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
