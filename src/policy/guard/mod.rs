//! Read/write decisions for canonical paths.
//!
//! Order for a write: mode → pi's control surface (mandatory) → denyWrite (deny wins) →
//! allowWrite containment → otherwise blocked. For a read: mode → denyRead → env files.
//! Every decision names the rule that decided and where the rule came from.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::paths::{self, PathError};
use crate::policy::config::{Env, Mode, Source, Sourced};
use crate::policy::protected::{self, Anchors, Hit};
use crate::policy::protected::{GitPath, GitPathKind};
use crate::policy::rules::{Rule, RuleSet};

mod build;
mod read;
mod write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Read,
    Write,
}

impl Op {
    pub(crate) fn parse(s: &str) -> Option<Op> {
        match s {
            "read" => Some(Op::Read),
            "write" => Some(Op::Write),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allow,
    /// Allowed only if the user says so (no UI: blocked).
    Prompt,
    Deny,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Prompt => "prompt",
            Verdict::Deny => "deny",
        }
    }
}

/// The rule that asks before an env file is read (and hides it in bash meanwhile).
pub(crate) const ENV_FILE_RULE: &str = "sensitive env file (.env, .env.*)";

/// `PI_SANDBOX_APPROVAL_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalMode {
    Ask,
    Always,
    Deny,
}

impl ApprovalMode {
    pub(crate) fn parse(s: &str) -> Option<ApprovalMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "ask" => Some(ApprovalMode::Ask),
            "always" => Some(ApprovalMode::Always),
            "deny" => Some(ApprovalMode::Deny),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Always => "always",
            ApprovalMode::Deny => "deny",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) verdict: Verdict,
    pub(crate) op: Op,
    /// The canonical path that was checked (what the kernel will open).
    pub(crate) path: PathBuf,
    /// The rule that decided, e.g. `denyWrite pattern '*.pem'`.
    pub(crate) rule: String,
    /// Where that rule came from: a file path, `built-in defaults`, ...
    pub(crate) source: String,
    /// One sentence for the user and the model: what, why, and how to change it.
    pub(crate) reason: String,
}

impl Decision {
    pub(crate) fn allowed(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

/// One rule consulted while deciding, for `explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) rule: String,
    pub(crate) source: String,
    pub(crate) matched: bool,
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
pub(crate) enum GuardError {
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

/// A directory rule: canonical path plus where it came from.
#[derive(Debug, Clone)]
struct DirRule {
    path: PathBuf,
    raw: String,
    source: String,
}

/// The compiled policy for one session: what the guard consults on every call.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
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
    /// Writable roots below /tmp that bash gets at their host path (`tmp_map`).
    tmp_host_bound: Arc<[PathBuf]>,
    /// Single files the user allowed writing for this session, matched exactly.
    write_files: Arc<[DirRule]>,
    /// `filesystem.envTemplatesSecret`: templates (`.env.example`) are asked about and
    /// hidden like `.env`.
    env_templates_secret: bool,
}

impl Guard {
    pub(crate) fn env(&self) -> &Env {
        &self.env
    }

    /// `path` (absolute) as the session's commands mean it: `/tmp/...` is the session's own
    /// /tmp unless bash gets that host folder bound in (`tmp_map`).
    pub(crate) fn session_path(&self, path: &Path) -> PathBuf {
        let Some(tmp) = &self.env.tmp else {
            return path.to_path_buf();
        };
        crate::policy::tmp_map::in_session_tmp(path, tmp, &self.tmp_host_bound)
            .unwrap_or_else(|| path.to_path_buf())
    }

    pub(crate) fn mode(&self) -> &Sourced<Mode> {
        &self.mode
    }

    pub(crate) fn set_mode(&mut self, mode: Mode, how: &str) {
        self.mode = Sourced {
            value: mode,
            source: Source::Runtime(how.to_string()),
        };
    }

    pub(crate) fn enabled(&self) -> &Sourced<bool> {
        &self.enabled
    }

    pub(crate) fn approval_mode(&self) -> ApprovalMode {
        self.approval
    }

    /// Decides `op` on an already absolute path (canonicalised here).
    pub(crate) fn check(&self, op: Op, path: &Path) -> Decision {
        self.run(op, path, Trace(None), &|_| None).0
    }

    /// Decides and returns every rule consulted, in order.
    #[cfg(test)]
    pub(crate) fn explain(&self, op: Op, path: &Path) -> (Decision, Vec<Step>) {
        self.run(op, path, Trace(Some(Vec::new())), &|_| None)
    }

    /// `check` of `canonical`, known to be an env file under another name (what a link named
    /// like one leads to, as the scan found it).
    pub(crate) fn check_as_env_file(&self, op: Op, canonical: &Path) -> Decision {
        self.decide(op, canonical, true, &mut Trace(None), &|_| None)
    }

    /// `check` and `explain`, with `known` answering whether a directory is a git dir where
    /// it can (an index kept current); None sends the question to the disk.
    pub(crate) fn check_with(&self, op: Op, path: &Path, known: KnownGitDirs) -> Decision {
        self.run(op, path, Trace(None), known).0
    }

    pub(crate) fn explain_with(
        &self,
        op: Op,
        path: &Path,
        known: KnownGitDirs,
    ) -> (Decision, Vec<Step>) {
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
        if self.active() && self.in_other_sessions_tmp(&canonical) {
            let d = Decision {
                verdict: Verdict::Deny,
                op,
                path: canonical.clone(),
                rule: "another pi session's /tmp".into(),
                source: Source::Mandatory.to_string(),
                reason: format!(
                    "Blocked {} of {}: it is in another pi session's /tmp (each session has its own; this one's is /tmp).",
                    op.as_str(),
                    crate::shown::path(&canonical)
                ),
            };
            return (d, steps.0.unwrap_or_default());
        }
        let env_alias = self.reached_through_env_named_link(path, &canonical);
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

    /// Whether `dir` is a git dir, as far as writes care: one inside allowWrite (asked on
    /// disk, through `cache`), or one holding an allowWrite entry (found at load). Others
    /// cannot matter: a write anywhere else is refused whatever it is, and each directory
    /// asked about costs a lookup on disk. The path guard and bash's scan both use this.
    pub(crate) fn is_git_dir_for_writes(
        &self,
        dir: &Path,
        cache: &mut protected::GitDirCache,
    ) -> bool {
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
    pub(crate) fn set_git_paths(&mut self, dirs: Vec<GitPath>) {
        self.git_paths = Arc::new(RwLock::new(dirs));
    }

    /// Makes `dirs` the hooks directories of the repository `git_dir` (for this guard and
    /// its clones); true when that changed them.
    pub(crate) fn replace_git_paths_of(&self, git_dir: &Path, dirs: Vec<GitPath>) -> bool {
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
    pub(crate) fn set_env_read_grants(&mut self, grants: Vec<(PathBuf, String)>) {
        self.env_read_grants = grants.into();
    }

    pub(crate) fn git_paths(&self) -> Vec<GitPath> {
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
    pub(crate) fn writable_root(&self, path: &Path) -> Option<&Path> {
        self.allow_write_root(path).map(|d| d.path.as_path())
    }

    /// The allowWrite entry containing `path`, if any.
    fn allow_write_root(&self, path: &Path) -> Option<&DirRule> {
        self.allow_write
            .iter()
            .find(|d| protected::is_under(path, &d.path))
    }

    /// The user's grant of `path` alone (never of what is below it).
    fn write_file_grant(&self, path: &Path) -> Option<&DirRule> {
        self.write_files.iter().find(|d| d.path == path)
    }

    /// Below the folder that holds every pi session's /tmp, outside this session's own:
    /// another session's files (same user, same folder), hidden from both layers.
    pub(crate) fn in_other_sessions_tmp(&self, path: &Path) -> bool {
        let Some(tmp) = &self.env.tmp else {
            return false;
        };
        let Some(all) = tmp.parent() else {
            return false;
        };
        protected::is_under(path, all) && !protected::is_under(path, tmp)
    }

    /// The folder that holds every pi session's /tmp (this one's parent), when there is one.
    pub(crate) fn sessions_tmp_parent(&self) -> Option<&Path> {
        self.env.tmp.as_deref().and_then(Path::parent)
    }

    /// The entry of pi's control surface covering `canonical`, if any.
    pub(crate) fn control_surface(
        &self,
        canonical: &Path,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
    ) -> Option<Hit> {
        self.anchors.classify(canonical, is_git_dir)
    }

    /// For recursive tools (grep, find): the root must be readable, and no denyRead entry may
    /// lie below it, since those tools would list or search inside it.
    pub(crate) fn check_search(&self, root: &Path, tool: &str) -> Decision {
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
    pub(crate) fn masks_env_file(&self, canonical: &Path) -> bool {
        self.masks_env_file_named(canonical, false)
    }

    /// `masks_env_file`, for a file that may also be reached under an env file's name
    /// (`named_env`: a link `.env` leads to it): it is an env file by either name.
    pub(crate) fn masks_env_file_named(&self, canonical: &Path, named_env: bool) -> bool {
        self.hides_env_files()
            && (named_env || self.is_secret_env_file(canonical))
            && match self.approval {
                ApprovalMode::Always => false,
                ApprovalMode::Deny => true,
                ApprovalMode::Ask => !self.env_read_grants.iter().any(|(p, _)| p == canonical),
            }
    }

    /// The one test of which env files may hold secrets, for every layer (the file tools,
    /// the mount plan, the index, the audit): named `.env` or `.env.<anything>`, templates
    /// (`is_env_template`) only when `filesystem.envTemplatesSecret` says so.
    pub(crate) fn is_secret_env_file(&self, path: &Path) -> bool {
        is_env_file(path) && (self.env_templates_secret || !is_env_template(path))
    }

    /// Whether resolving `path` to `canonical` went through a symlink named like a secret env
    /// file that leads to `canonical` itself (not a directory on the way): the file is then
    /// an env file by that name too. Asked only when a link was involved at all.
    pub(crate) fn reached_through_env_named_link(&self, path: &Path, canonical: &Path) -> bool {
        if paths::lexical_normalize(path) == canonical {
            return false;
        }
        paths::symlinks_followed(path).is_ok_and(|(_, links)| {
            links.iter().any(|link| {
                self.is_secret_env_file(link)
                    && paths::canonicalize(link).is_ok_and(|t| t == canonical)
            })
        })
    }

    /// Whether bash hides env files at all (approval mode ask or deny).
    pub(crate) fn hides_env_files(&self) -> bool {
        self.active() && self.approval != ApprovalMode::Always
    }

    pub(crate) fn active(&self) -> bool {
        self.enabled.value && self.mode.value != Mode::Yolo
    }

    /// How to drop an entry of `key` that came from `source`: from the file that holds it,
    /// or, for a built-in default (which no file holds), by setting the list without it.
    fn how_to_drop(&self, what: &str, key: &str, source: &str) -> String {
        if source == Source::Defaults.to_string() {
            format!(
                "set {key} in {} to the list without it (it is a built-in default, in no file; a list you set replaces the defaults, which /sandbox full shows)",
                self.env.global_config().display()
            )
        } else {
            format!("remove that {what} from {key} in {source}")
        }
    }

    /// Canonical denyRead paths (for display and for the OS layer).
    pub(crate) fn deny_read_paths(&self) -> impl Iterator<Item = &Path> {
        self.deny_read_paths.iter().map(|r| r.path.as_path())
    }

    /// Canonical allowWrite directories.
    pub(crate) fn allow_write_paths(&self) -> impl Iterator<Item = &Path> {
        self.allow_write.iter().map(|r| r.path.as_path())
    }

    /// What keeps `canonical` read-only whatever allowWrite says: pi's control surface, or a
    /// denyWrite pattern (unless exempt). The OS layer binds such paths read-only; it asks
    /// with the same git-dir test the guard uses, so the layers cannot disagree.
    pub(crate) fn write_protection(
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
    pub(crate) fn deny_write_globs(&self) -> &[String] {
        &self.deny_write_globs
    }

    pub(crate) fn anchors(&self) -> &Anchors {
        &self.anchors
    }
}

/// Whether a directory is a git dir, where the caller knows (None: ask the disk).
pub(crate) type KnownGitDirs<'a> = &'a dyn Fn(&Path) -> Option<bool>;

/// Why a path stays read-only in bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Protection {
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
    pub(crate) fn label(&self) -> String {
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
pub(crate) const DEPENDENCY_TREES: &[&str] = &["node_modules", ".venv", "target"];

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

/// `/proc/<pid>/...` (and so `/proc/self`, `/proc/thread-self`, which resolve to it): a
/// process's environment, memory, command line and file descriptors.
pub(crate) fn is_process_file(path: &Path) -> bool {
    let mut c = path.components();
    c.next() == Some(std::path::Component::RootDir)
        && c.next().is_some_and(|p| p.as_os_str() == "proc")
        && c.next().is_some_and(|pid| {
            let b = pid.as_os_str().as_encoded_bytes();
            !b.is_empty() && b.iter().all(u8::is_ascii_digit)
        })
}

/// Named like an env file: `.env` or `.env.<anything>`, templates included. Which of them
/// may hold secrets is `Guard::is_secret_env_file`'s to say.
pub(crate) fn is_env_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == ".env" || n.starts_with(".env."))
}

/// The last word of an env template's name (`.env.example`, `.env.local.dist`): a template
/// is committed for others to copy, and holds no secrets by convention.
pub(crate) const ENV_TEMPLATE_WORDS: &[&str] = &["example", "sample", "template", "dist"];

/// An env file named as a template (`ENV_TEMPLATE_WORDS`).
pub(crate) fn is_env_template(path: &Path) -> bool {
    is_env_file(path)
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.rsplit_once('.'))
            .is_some_and(|(_, last)| ENV_TEMPLATE_WORDS.contains(&last))
}

#[cfg(test)]
pub(crate) mod tests;
