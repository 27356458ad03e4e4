//! One pi session's loaded policy: loads the layers, re-reads them when a file changes, and
//! fails closed while they are broken (every check is refused with the reason).

pub mod approvals;
pub mod commands;
pub mod config_edit;
pub mod prompts;
pub mod report;
pub mod tools;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use self::approvals::{Grant, Scope, Snapshot, Store};
use self::prompts::Prompt;
use self::tools::ToolCheck;
use crate::net::gate::{self, CommandNet, Gate};
use crate::open::{self, OpenError};
use crate::platform::detect::{self, Capability};
use crate::platform::launch::{self, Command, Launch, LaunchError};
use crate::policy::bash::{self as bash_policy, Adapter, BashDecision, BashRequest, Network};
use crate::policy::config::{self, Config, ConfigError, Env, Mode, Source, MODE_HELP};
use crate::policy::environment::{self, EnvPolicy};
use crate::policy::guard::{
    ApprovalMode, Decision, Guard, GuardError, KnownGitDirs, Op, Step, Verdict,
};
use crate::policy::trust::{ProjectLayer, Trust};
use crate::redact::{self, Redactor, Secret};
use crate::session::config_edit::{ListKey, ALLOWED_DOMAINS, ALLOW_WRITE};
use crate::shown;
use crate::surface::audit::{Auditor, Finding};
use crate::surface::hooks::{GitPath, GitPathKind};
use crate::surface::index::Index;
use crate::surface::scan::{Found, Scan};
use crate::violations::{Violation, ViolationLog};

/// Why a session has no usable policy. Each carries a stable code for the JS side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub code: &'static str,
    pub message: String,
    pub file: Option<PathBuf>,
}

impl From<ConfigError> for LoadError {
    fn from(e: ConfigError) -> Self {
        LoadError {
            code: e.code(),
            file: Some(e.file().to_path_buf()),
            message: e.to_string(),
        }
    }
}

impl From<GuardError> for LoadError {
    fn from(e: GuardError) -> Self {
        LoadError {
            code: match e {
                GuardError::Rule { .. } => "E_CONFIG_RULE",
                GuardError::Path(_) => "E_CONFIG_PATH",
            },
            file: None,
            message: e.to_string(),
        }
    }
}

/// What a session needs to know beyond the environment.
#[derive(Debug, Clone)]
pub struct Options {
    pub env: Env,
    /// Raw `PI_SANDBOX_APPROVAL_MODE`, validated here.
    pub approval_mode: Option<String>,
    /// pi's session id: session-scoped approvals belong to it.
    pub session_id: Option<String>,
}

/// The id session-scoped grants are stored under: pi's session id, else this process's.
fn session_id_of(options: &Options) -> String {
    options
        .session_id
        .clone()
        .unwrap_or_else(|| format!("process {}", std::process::id()))
}

/// How the user granted an entry, for rule sources and messages.
fn granted_how(e: &approvals::Entry) -> String {
    match e.scope {
        Scope::Session => format!("allowed by the user for this session at {}", e.granted_at),
        Scope::Always => format!("allowed by the user for good at {}", e.granted_at),
    }
}

/// The env files the user allowed reading, from the store's entries.
fn env_read_grants(granted: &Snapshot) -> Vec<(PathBuf, String)> {
    granted
        .env_read_grants()
        .map(|(path, e)| (path.to_path_buf(), granted_how(e)))
        .collect()
}

/// The network gate's rules: the config's domain lists and the hosts the user allowed.
fn net_rules(config: &Config, granted: &Snapshot, env: &Env) -> Result<gate::Rules, LoadError> {
    let filter = crate::net::domains::DomainFilter::new(
        &config.allowed_domains.value,
        &config.denied_domains.value,
    )
    .map_err(|e| LoadError {
        code: "E_CONFIG_SCHEMA",
        message: format!(
            "{}[{}]: {}",
            e.key,
            e.index,
            shown::text(&e.error.to_string())
        ),
        file: None,
    })?;
    let granted = granted
        .network_grants()
        .filter_map(|(host, e)| {
            let h = crate::net::domains::parse_host(host).ok()?;
            Some((h, granted_how(e)))
        })
        .collect();
    Ok(gate::Rules {
        filter,
        granted,
        files: grant_files(config, env),
    })
}

/// Where "for this project" and "for all projects" write a grant, and whether the project's
/// file applies as written (else such a grant holds for this session only).
fn grant_files(config: &Config, env: &Env) -> prompts::GrantFiles {
    prompts::GrantFiles {
        project: env.project_config(),
        global: env.global_config(),
        project_applies: config.project.as_ref().is_none_or(|p| p.applies()),
    }
}

/// Where a write grant goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteScope {
    /// This session only, in memory.
    Session,
    /// `<cwd>/.pi/sandbox.json`.
    Project,
    /// The global config file.
    Global,
}

impl WriteScope {
    pub fn parse(s: &str) -> Option<WriteScope> {
        match s {
            "session" => Some(WriteScope::Session),
            "project" => Some(WriteScope::Project),
            "global" => Some(WriteScope::Global),
            _ => None,
        }
    }
}

fn built(launch: Result<Launch, LaunchError>) -> Prepared {
    match launch {
        Ok(l) => Prepared::Sandboxed(l),
        Err(e) => Prepared::Denied(format!(
            "Blocked: the sandbox for this command could not be set up: {e}"
        )),
    }
}

fn blocked_reason(findings: &[Finding]) -> String {
    let mut out = String::from(
        "Blocked: an earlier sandboxed command left files on pi's control surface that the sandbox could not move aside, so no command runs until they are gone:",
    );
    for f in findings {
        let _ = write!(out, "\n- {f}");
    }
    out
}

/// The paths an error line names: quoted ones, and the word before `: <error>` (the form of
/// bash, git, coreutils and Python messages).
fn paths_in_error_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in ['\'', '"', '`'] {
        let parts: Vec<&str> = line.split(q).collect();
        out.extend(parts.iter().skip(1).step_by(2).map(|s| s.to_string()));
    }
    for error in [
        ": Read-only file system",
        ": Device or resource busy",
        ": No such file or directory",
        ": Permission denied",
    ] {
        if let Some(i) = line.find(error) {
            let before = &line[..i];
            let word = before.rsplit([' ', '\t']).next().unwrap_or("");
            out.push(word.trim_matches(|c| "'\"`:,".contains(c)).to_string());
        }
    }
    out.retain(|p| !p.is_empty() && !p.contains('\0'));
    out
}

/// The names in pi's environment now (the extension spawns with it; Node's `process.env`
/// writes through to it).
fn process_env_names() -> Vec<String> {
    std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect()
}

/// `PI_SANDBOX_INDEX=off` turns the index off: every command walks the trees in full.
fn index_wanted() -> bool {
    std::env::var_os("PI_SANDBOX_INDEX").is_none_or(|v| v != "off")
}

/// Passes of the audit's structural step before it gives up and blocks bash.
const MAX_STRUCTURAL_PASSES: usize = 64;

/// Why one of pi's file operations did not happen.
#[derive(Debug)]
pub enum FileOpError {
    /// The guard refused it; the reason says why and how to change that.
    Blocked(String),
    Open(OpenError),
}

impl From<OpenError> for FileOpError {
    fn from(e: OpenError) -> Self {
        FileOpError::Open(e)
    }
}

/// The outcome of preparing a command.
#[derive(Debug)]
pub enum Prepared {
    Sandboxed(Launch),
    /// The user turned protection off; run the command as is.
    Unsandboxed(String),
    /// No OS sandbox works: run it unsandboxed only if the user says so now (`prompt`).
    NeedsApproval(Box<Prompt>),
    /// Do not run; the reason says why and how to fix it.
    Denied(String),
}

type Stamp = Vec<Option<(SystemTime, u64)>>;

pub struct Session {
    options: Options,
    state: Result<Loaded, LoadError>,
    /// A mode chosen during the session outlives config reloads.
    mode_override: Option<(Mode, String)>,
    stamp: Stamp,
    /// Protected paths seen before each command, to spot what a command created.
    auditor: std::cell::RefCell<Auditor>,
    /// Env files around the indexed trees (`scan::env_files_around`), listed again only
    /// when their directory changes.
    env_listings: std::cell::RefCell<crate::surface::scan::EnvFileListings>,
    /// Second names of protected files from the last scan (see `Scan::second_names`).
    second_names: std::cell::RefCell<Option<Vec<Found>>>,
    /// Files bash hides as env files though their own name is none: what links named like
    /// env files lead to, from the last scan (`indexed`) and the last command's env file
    /// search (`elsewhere`). The file tools ask about them as bash hides them.
    env_aliases: std::cell::RefCell<EnvAliases>,
    /// What the scan finds, kept current from file events (None: full scans; see `scan`).
    index: Option<Index>,
    /// The env files elsewhere in the home directory (started with the first load unless the
    /// approval mode is `always`).
    env_search: Option<crate::surface::env_files::EnvFileSearch>,
    /// The hooks directories of each repository met in the writable trees (nested ones,
    /// submodules' and bare git dirs too), asked of git again only when its config files
    /// change: git dir → (their stamp, what git said).
    repo_git_paths: std::cell::RefCell<HashMap<PathBuf, (Stamp, Vec<GitPath>)>>,
    /// Where every refusal is recorded (`violations`).
    log: ViolationLog,
    /// The secrets hidden from the model, and the stamp of pi's key files they were read at.
    redactor: std::cell::RefCell<Option<(Stamp, Arc<Redactor>)>>,
    /// The user's grants on disk (`approvals`), or why they cannot be read or written.
    store: Result<Store, String>,
    /// What the store grants this session, read at the last load.
    granted: Snapshot,
    /// Directories the user allowed writes to for this session (memory only).
    session_writes: Vec<(String, Source)>,
    /// Paths the user allowed once, for the tool call being run (cleared by the next one).
    once: std::cell::RefCell<Vec<(Op, PathBuf)>>,
    /// The network proxy's decisions for filtered commands (rules replaced at each load).
    gate: Arc<Gate>,
    /// The env files the repository tracks, asked of git once (for a note and `/sandbox`).
    committed_env: Arc<crate::surface::committed_env::CommittedEnv>,
}

struct Loaded {
    config: Config,
    guard: Guard,
    /// The git dirs of the repositories around the session and its allowWrite roots, whose
    /// hooks directories were looked up at load with their worktrees known.
    load_time_repos: Vec<PathBuf>,
    env_policy: EnvPolicy,
    net_rules: gate::Rules,
}

/// What of a repository's hooks directories and included config files the guard protects:
/// all, but the hooks directories when `filesystem.allowHooksPath` opens them.
fn protected_git_paths(config: &Config, paths: Vec<GitPath>) -> Vec<GitPath> {
    let open_hooks = config.allow_hooks_path.value;
    paths
        .into_iter()
        .filter(|p| !(open_hooks && p.kind == GitPathKind::Hooks))
        .collect()
}

/// The config files among a repository's git paths.
fn included_files(paths: &[GitPath]) -> impl Iterator<Item = PathBuf> + '_ {
    paths
        .iter()
        .filter(|p| p.kind == GitPathKind::Config)
        .map(|p| p.path.clone())
}

/// See `Session::env_aliases`.
#[derive(Default)]
struct EnvAliases {
    indexed: HashSet<PathBuf>,
    elsewhere: HashSet<PathBuf>,
}

/// The hidden env files whose own name is no env file's.
fn env_aliases<'a>(hidden: impl Iterator<Item = &'a PathBuf>) -> HashSet<PathBuf> {
    hidden
        .filter(|p| !crate::policy::guard::is_env_file(p))
        .cloned()
        .collect()
}

fn stamp_of(files: &[PathBuf]) -> Stamp {
    files
        .iter()
        .map(|f| {
            std::fs::metadata(f)
                .ok()
                .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
        })
        .collect()
}

impl Session {
    pub fn load(options: Options) -> Session {
        let log = ViolationLog::in_agent_dir(&options.env.agent_dir);
        let store = Store::in_agent_dir(&options.env.agent_dir).map_err(|e| e.to_string());
        let gate = Arc::new(Gate::new(log.clone(), crate::net::proxy::system_resolver()));
        let quarantine = crate::surface::quarantine::Quarantine::for_project(
            &options.env.agent_dir,
            &options.env.cwd,
        );
        let first_session = crate::surface::audit::first_session_time(&options.env.agent_dir);
        let committed_env = Arc::new(crate::surface::committed_env::CommittedEnv::new(
            &options.env.cwd,
            &options.env.home,
        ));
        let mut s = Session {
            committed_env,
            gate,
            store,
            granted: Snapshot::empty(),
            session_writes: vec![],
            once: Default::default(),
            log,
            options,
            state: Err(LoadError {
                code: "E_NOT_LOADED",
                message: String::new(),
                file: None,
            }),
            mode_override: None,
            stamp: vec![],
            auditor: std::cell::RefCell::new(Auditor::new(quarantine, first_session)),
            env_listings: Default::default(),
            second_names: Default::default(),
            env_aliases: Default::default(),
            index: None,
            env_search: None,
            repo_git_paths: Default::default(),
            redactor: Default::default(),
        };
        s.reload();
        s
    }

    /// What a load reads: both config files and the approvals store.
    fn config_files(&self) -> Vec<PathBuf> {
        vec![
            self.options.env.global_config(),
            self.options.env.project_config(),
            self.options.env.agent_dir.join(approvals::FILE_NAME),
        ]
    }

    /// The id session-scoped grants are stored under.
    fn session_id(&self) -> String {
        session_id_of(&self.options)
    }

    /// The network gate, to answer its questions from outside the session's lock.
    pub fn gate(&self) -> Arc<Gate> {
        self.gate.clone()
    }

    /// Re-reads every layer now.
    pub fn reload(&mut self) {
        self.granted = match &self.store {
            Ok(store) => store.load(&self.session_id()).unwrap_or_else(|e| Snapshot {
                entries: vec![],
                notice: Some(e.to_string()),
            }),
            Err(e) => Snapshot {
                entries: vec![],
                notice: Some(e.clone()),
            },
        };
        self.stamp = stamp_of(&self.config_files());
        self.state = self.build();
        *self.redactor.get_mut() = None;
        if let (Ok(loaded), Some((mode, how))) = (&mut self.state, &self.mode_override) {
            loaded.guard.set_mode(*mode, how);
        }
        self.gate.set_rules(match &self.state {
            Ok(loaded) => loaded.net_rules.clone(),
            // Nothing runs meanwhile; if something asks, nothing is allowed.
            Err(_) => gate::Rules::default(),
        });
        // The repositories met earlier keep their hooks directories and included config
        // files in the new guard.
        if let Ok(loaded) = &self.state {
            for (git_dir, (_, paths)) in self.repo_git_paths.get_mut().iter() {
                if !loaded.load_time_repos.contains(git_dir) {
                    let paths = protected_git_paths(&loaded.config, paths.clone());
                    loaded.guard.replace_git_paths_of(git_dir, paths);
                }
            }
        }
        // A new policy judges paths differently: a new index, built in the background.
        self.index = match &self.state {
            Ok(loaded) if index_wanted() => Some(Index::start(&loaded.guard)),
            _ => None,
        };
        // The search does not depend on the rules: started once, with the first load, unless
        // the approval mode (fixed for the process) never hides env files.
        let hides = !matches!(
            self.options
                .approval_mode
                .as_deref()
                .and_then(ApprovalMode::parse),
            Some(ApprovalMode::Always)
        );
        if self.env_search.is_none() && hides {
            self.env_search = Some(crate::surface::env_files::EnvFileSearch::start(
                &self.options.env.home,
            ));
        }
    }

    /// Stops what runs in the background for this session (the index, the search for env
    /// files): pi's session is over. Both start again if the session is used after all.
    pub fn dispose(&mut self) {
        self.index = None;
        self.env_search = None;
    }

    /// What the guard keeps read-only in bash's writable trees now: from the index, or by a
    /// full walk when there is none.
    fn scan(&self, guard: &Guard) -> Scan {
        match &self.index {
            Some(index) => index.scan(guard),
            None => launch::scan(guard),
        }
    }

    /// Runs `f` with what the index knows of git dirs (nothing without an index).
    fn with_git_dirs<R>(&self, f: impl FnOnce(KnownGitDirs) -> R) -> R {
        match &self.index {
            Some(index) => index.with_git_dirs(f),
            None => f(&|_| None),
        }
    }

    /// The index, to wait for its build without holding the session (see `Commands`).
    pub fn index(&self) -> Option<Index> {
        self.index.clone()
    }

    /// Where grants written into config files take turns (see `config_lock`).
    fn config_lock_path(&self) -> PathBuf {
        self.options.env.agent_dir.join("sandbox-config.lock")
    }

    /// The search for env files in the home directory, to wait for its first pass without
    /// holding the session (see `Commands`).
    pub fn env_search(&self) -> Option<crate::surface::env_files::EnvFileSearch> {
        self.env_search.clone()
    }

    /// How bash finds what to protect: the index's state, or why there is none.
    pub fn index_status(&self) -> String {
        match &self.index {
            Some(index) => index.status().to_string(),
            None if !index_wanted() => {
                "off (PI_SANDBOX_INDEX=off): a full scan for every command".into()
            }
            None => "none (no policy loaded)".into(),
        }
    }

    /// Re-reads the layers if one was created, changed or removed since the last load.
    pub fn refresh(&mut self) -> bool {
        let changed = stamp_of(&self.config_files()) != self.stamp;
        if changed {
            self.reload();
        }
        changed
    }

    fn build(&self) -> Result<Loaded, LoadError> {
        let approval = match &self.options.approval_mode {
            None => ApprovalMode::Ask,
            Some(raw) => ApprovalMode::parse(raw).ok_or_else(|| LoadError {
                code: "E_APPROVAL_MODE",
                message: format!(
                    "PI_SANDBOX_APPROVAL_MODE={raw:?} is not one of ask, always, deny; set one of those or unset it (ask)"
                ),
                file: None,
            })?,
        };
        let granted = &self.granted;
        let trust_of = |file: &Path, sha256: &str| match granted.trust(file) {
            Some((hash, true)) if hash == sha256 => Trust::Trusted,
            Some((hash, false)) if hash == sha256 => Trust::Declined,
            _ => Trust::Pending,
        };
        let mut config = config::load(&self.options.env, &trust_of)?;
        config.session_allow_write = self.session_writes.clone();
        let mut guard = Guard::new(&config, &self.options.env, approval)?;
        guard.set_env_read_grants(env_read_grants(granted));
        let repos = repos_around(&guard);
        let home = &self.options.env.home;
        guard.set_git_paths(
            repos
                .iter()
                .flat_map(|(git_dir, worktree)| {
                    let paths = crate::surface::hooks::git_paths(git_dir, worktree, home);
                    protected_git_paths(&config, paths)
                })
                .collect(),
        );
        let load_time_repos = repos.into_iter().map(|(git_dir, _)| git_dir).collect();
        let names = process_env_names();
        let read_by_pi = environment::models_json_vars(
            &self.options.env.agent_dir,
            names.iter().map(String::as_str),
        );
        let env_policy =
            EnvPolicy::new(&config.env_allow.value, &config.env_deny.value, read_by_pi).map_err(
                |e| LoadError {
                    code: "E_CONFIG_SCHEMA",
                    message: format!(
                        "{}: '{}': {}",
                        e.key,
                        shown::name(&e.entry),
                        shown::text(&e.message)
                    ),
                    file: None,
                },
            )?;
        let net_rules = net_rules(&config, granted, &self.options.env)?;
        Ok(Loaded {
            config,
            guard,
            load_time_repos,
            env_policy,
            net_rules,
        })
    }

    pub fn error(&self) -> Option<&LoadError> {
        self.state.as_ref().err()
    }

    pub fn guard(&self) -> Option<&Guard> {
        self.state.as_ref().ok().map(|l| &l.guard)
    }

    /// `network.allowUnixSockets` as it stands now (each entry resolved like a path rule; one
    /// that is no socket yet is left out), and `allowAllUnixSockets`.
    fn sockets(&self) -> launch::Sockets {
        let Ok(l) = &self.state else {
            return launch::Sockets::default();
        };
        let env = &self.options.env;
        let paths: Vec<PathBuf> = l
            .config
            .allow_unix_sockets
            .value
            .iter()
            .filter_map(|raw| crate::paths::resolve(raw, &env.home, &env.cwd).ok())
            .collect();
        launch::Sockets {
            #[cfg(target_os = "linux")]
            allowed: crate::platform::linux::supervisor::resolve_allowed(&paths),
            #[cfg(not(target_os = "linux"))]
            allowed: {
                let _ = paths;
                vec![]
            },
            allow_all: l.config.allow_all_unix_sockets.value,
        }
    }

    /// See `Sandbox.hostPath`: `path` without relative entries and entries the agent could
    /// write into (all of them, with no policy loaded).
    pub fn host_path(&self, path: &str) -> String {
        let Some(guard) = self.guard() else {
            // No policy: only the system directories.
            return path
                .split(':')
                .filter(|e| detect::SYSTEM_DIRS.contains(e))
                .collect::<Vec<_>>()
                .join(":");
        };
        let roots: Vec<&Path> = guard.allow_write_paths().collect();
        path.split(':')
            .filter(|entry| {
                let p = Path::new(entry);
                if !p.is_absolute() {
                    return false;
                }
                let real = crate::paths::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
                !roots.iter().any(|r| {
                    crate::policy::protected::is_under(p, r)
                        || crate::policy::protected::is_under(&real, r)
                })
            })
            .collect::<Vec<_>>()
            .join(":")
    }

    /// The variables of pi's environment a sandboxed command does not get, and why.
    pub fn dropped_env(&self) -> Vec<environment::Dropped> {
        match &self.state {
            Ok(l) => {
                let names = process_env_names();
                l.env_policy.dropped(names.iter().map(String::as_str))
            }
            Err(_) => vec![],
        }
    }

    /// The secrets to hide from the model in tools' output: the values of the variables
    /// dropped from the environment, pi's keys (`redact::pi_file_secrets`), and the config's
    /// `redact` lists. Built again when pi's key files or the policy change.
    pub fn redactor(&self) -> Arc<Redactor> {
        let agent_dir = &self.options.env.agent_dir;
        let stamp = stamp_of(&[agent_dir.join("auth.json"), agent_dir.join("models.json")]);
        let mut cached = self.redactor.borrow_mut();
        if let Some((at, r)) = &*cached {
            if *at == stamp {
                return r.clone();
            }
        }
        let env: std::collections::BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let value_of = |name: &str| {
            env.get(name).map(|v| Secret {
                name: name.to_string(),
                value: v.clone(),
            })
        };
        // A dropped variable that holds the path of a file (AWS_CA_BUNDLE, a credentials
        // file's location) names where a secret is, not the secret: hiding every mention of
        // the path would only garble output.
        let mut secrets: Vec<Secret> = self
            .dropped_env()
            .iter()
            .filter_map(|d| value_of(&d.name))
            .filter(|s| !(s.value.starts_with('/') && Path::new(&s.value).exists()))
            .collect();
        secrets.extend(redact::pi_file_secrets(agent_dir, &env));
        if let Ok(l) = &self.state {
            secrets.extend(l.config.redact_env.value.iter().filter_map(|n| value_of(n)));
            secrets.extend(l.config.redact_values.value.iter().map(|v| Secret {
                name: "redact.values".into(),
                value: v.clone(),
            }));
        }
        let r = Arc::new(Redactor::new(secrets));
        *cached = Some((stamp, r.clone()));
        r
    }

    pub fn env(&self) -> &Env {
        &self.options.env
    }

    /// A decision that refuses because the config is broken.
    fn refused(&self, op: Op, path: &Path) -> Decision {
        let e = self.error().expect("only called when broken");
        Decision {
            verdict: Verdict::Deny,
            op,
            path: path.to_path_buf(),
            rule: format!("broken sandbox config ({})", e.code),
            source: e
                .file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_else(|| "sandbox setup".into()),
            reason: format!(
                "Blocked: the sandbox cannot load its policy, so it refuses every guarded operation. {} (Changes are picked up on the next tool call.)",
                e.message
            ),
        }
    }

    /// What a scan found, kept for the guard's second-name check.
    fn remember(&self, scan: &Scan) {
        *self.second_names.borrow_mut() = Some(scan.second_names.clone());
        self.env_aliases.borrow_mut().indexed = env_aliases(
            scan.protected
                .iter()
                .filter(|f| matches!(f.why, crate::policy::guard::Protection::EnvFile { .. }))
                .map(|f| &f.path),
        );
    }

    /// A search that reads contents (grep) below a file bash hides as an env file under
    /// another name would read it: its glob keeps out env files by name only.
    fn env_alias_below(&self, decision: Decision, tool: &str) -> Decision {
        if !decision.allowed() {
            return decision;
        }
        let aliases = self.env_aliases.borrow();
        let root = &decision.path;
        let Some(hidden) = (aliases.indexed.iter())
            .chain(&aliases.elsewhere)
            .find(|p| *p != root && p.starts_with(root))
        else {
            return decision;
        };
        Decision {
            verdict: Verdict::Deny,
            rule: crate::policy::guard::ENV_FILE_RULE.into(),
            source: Source::Mandatory.to_string(),
            reason: format!(
                "Blocked {tool} in {}: it would read {}, an env file under another name (a link named like one leads to it). Search a narrower path, or read it with the read tool, which asks first.",
                crate::shown::path(root),
                crate::shown::path(hidden)
            ),
            ..decision
        }
    }

    /// An allowed read or write of a file bash hides as an env file under another name is
    /// judged as one: the layers agree.
    fn env_alias_check(&self, guard: &Guard, decision: Decision) -> Decision {
        if !decision.allowed() || !guard.hides_env_files() {
            return decision;
        }
        let aliases = self.env_aliases.borrow();
        if !aliases.indexed.contains(&decision.path) && !aliases.elsewhere.contains(&decision.path)
        {
            return decision;
        }
        guard.check_as_env_file(decision.op, &decision.path)
    }

    /// A protected file is protected under every name: an allowed write is refused when the
    /// path is a hard link to a protected file, or lies in what a protected symlink points
    /// to (`.git/hooks -> ../githooks`). The scan finds those names, as it does for bash's
    /// mounts; a file with several links is always checked against a fresh scan.
    fn second_name_check(&self, guard: &Guard, decision: Decision) -> Decision {
        use std::os::unix::fs::MetadataExt;
        if !decision.allowed() || !guard.active() {
            return decision;
        }
        let linked = decision.op == Op::Write
            && std::fs::symlink_metadata(&decision.path)
                .is_ok_and(|m| m.is_file() && m.nlink() > 1);
        // A write asks the index again (cheap: it follows events, and the folders whose links
        // it walks are listed again only when changed): a link the user made into a
        // protected folder since the last command counts at once.
        let fresh = decision.op == Op::Write && self.index.is_some();
        if linked || fresh || self.second_names.borrow().is_none() {
            self.remember(&self.scan(guard));
        }
        let decision = self.env_alias_check(guard, decision);
        if decision.op != Op::Write || !decision.allowed() {
            return decision;
        }
        let names = self.second_names.borrow();
        let Some(found) = names
            .iter()
            .flatten()
            .find(|f| crate::policy::protected::is_under(&decision.path, &f.path))
        else {
            return decision;
        };
        let label = found.why.label();
        Decision {
            verdict: Verdict::Deny,
            rule: label.clone(),
            source: Source::Mandatory.to_string(),
            reason: format!(
                "Blocked write to {}: it is the {label}, the same file under another name; a write would change that file too. Edit it yourself outside pi if the change is wanted.",
                decision.path.display()
            ),
            ..decision
        }
    }

    /// Brings the guard's hooks directories up to date for `repos` (git dir, and worktree when
    /// known): each one not met yet, or whose config files changed, is asked of git. The
    /// repositories looked up at load keep what they got then; an answer git could not give
    /// leaves what is known and is asked again next time. True when the guard's set changed
    /// (the index then rebuilds before it answers again).
    fn update_git_paths(
        &self,
        guard: &Guard,
        repos: impl Iterator<Item = (PathBuf, Option<PathBuf>)>,
    ) -> bool {
        let Ok(loaded) = &self.state else {
            return false;
        };
        let home = &self.options.env.home;
        // What git reads for `git_dir`: the user's and system's config (stamped once for
        // all), its own config files and the ones they include.
        let users = stamp_of(&crate::surface::hooks::user_config_files(home));
        let stamp_for = |git_dir: &Path, paths: &[GitPath]| {
            let mut files = crate::surface::hooks::repo_config_files(git_dir).to_vec();
            files.extend(included_files(paths));
            let mut stamp = users.clone();
            stamp.extend(stamp_of(&files));
            stamp
        };
        let mut known = self.repo_git_paths.borrow_mut();
        let mut changed = false;
        for (git_dir, worktree) in repos {
            if loaded.load_time_repos.contains(&git_dir) {
                continue;
            }
            let before = known.get(&git_dir);
            let stamp = stamp_for(&git_dir, before.map_or(&[], |(_, p)| p));
            if before.is_some_and(|(s, _)| *s == stamp) {
                continue;
            }
            let paths = match &worktree {
                Some(w) => crate::surface::hooks::git_paths_in(&git_dir, w, home),
                None => crate::surface::hooks::git_paths_of(&git_dir, home),
            };
            let Some(paths) = paths else {
                continue;
            };
            // Taken before git was asked, so that a change meanwhile is seen next time; a
            // newly included file is stamped now.
            let same_includes =
                before.is_some_and(|(_, p)| included_files(p).eq(included_files(&paths)));
            let stamp = if same_includes {
                stamp
            } else {
                stamp_for(&git_dir, &paths)
            };
            let protected = protected_git_paths(&loaded.config, paths.clone());
            changed |= guard.replace_git_paths_of(&git_dir, protected);
            known.insert(git_dir, (stamp, paths));
        }
        if changed {
            if let Some(index) = &self.index {
                index.invalidate();
            }
        }
        changed
    }

    /// `scan`, or a new one when its git dirs taught the guard a hooks directory (the index
    /// rebuilds under the new judgement).
    fn with_hooks_of(&self, guard: &Guard, scan: Scan) -> Scan {
        let repos = scan.git_dirs.iter().map(|g| (g.clone(), None));
        if self.update_git_paths(guard, repos) {
            self.scan(guard)
        } else {
            scan
        }
    }

    /// `judge()`, and again when the write it decided (`decision`) taught the guard the
    /// hooks directory of the repository it lies in.
    fn judged_with_hooks<T>(
        &self,
        guard: &Guard,
        judge: impl Fn() -> T,
        decision: impl Fn(&T) -> Option<&Decision>,
    ) -> T {
        let first = judge();
        if decision(&first).is_some_and(|d| self.learn_hooks_around(guard, d)) {
            judge()
        } else {
            first
        }
    }

    /// For a write the guard would allow: the hooks directory of the repository the path
    /// lies in (a `.git` directory or gitfile between it and its writable tree's root), if
    /// git was not asked yet. True when that changed the guard, so the write must be judged
    /// again.
    fn learn_hooks_around(&self, guard: &Guard, d: &Decision) -> bool {
        if d.op != Op::Write || d.verdict == Verdict::Deny {
            return false;
        }
        let (Some(root), Some(dir)) = (guard.writable_root(&d.path), d.path.parent()) else {
            return false;
        };
        // The index knows where the `.git`s are; the disk answers where it cannot say.
        let found = self
            .index
            .as_ref()
            .and_then(|i| i.repo_within(dir, root))
            .unwrap_or_else(|| crate::surface::hooks::repo_within(dir, root));
        match found {
            Some((git_dir, worktree)) => {
                self.update_git_paths(guard, std::iter::once((git_dir, Some(worktree))))
            }
            None => false,
        }
    }

    pub fn check(&self, op: Op, path: &Path) -> Decision {
        match self.guard() {
            Some(g) => {
                // Which directories are git dirs is a write's question: the index answers
                // where it knows.
                let d = match op {
                    Op::Write => self.judged_with_hooks(
                        g,
                        || self.with_git_dirs(|known| g.check_with(op, path, known)),
                        |d| Some(d),
                    ),
                    Op::Read => g.check(op, path),
                };
                self.second_name_check(g, d)
            }
            None => self.refused(op, path),
        }
    }

    pub fn explain(&self, op: Op, path: &Path) -> (Decision, Vec<Step>) {
        match self.guard() {
            Some(g) => {
                let (d, mut steps) = self.judged_with_hooks(
                    g,
                    || self.with_git_dirs(|known| g.explain_with(op, path, known)),
                    |(d, _)| Some(d),
                );
                let checked = self.second_name_check(g, d.clone());
                if checked != d {
                    steps.push(Step {
                        rule: checked.rule.clone(),
                        source: checked.source.clone(),
                        matched: true,
                    });
                }
                (checked, steps)
            }
            None => (self.refused(op, path), vec![]),
        }
    }

    /// Checks a pi tool call; `None` when the tool is not a guarded file tool.
    pub fn check_tool(&self, tool: &str, input: &Value) -> Option<ToolCheck> {
        // A new tool call: what the user allowed once was for the one before.
        self.once.borrow_mut().clear();
        match self.guard() {
            Some(g) => {
                let home = &self.options.env.home;
                let checked = self.judged_with_hooks(
                    g,
                    || {
                        self.with_git_dirs(|known| {
                            tools::check_tool_with(g, tool, input, home, known)
                        })
                    },
                    |c| c.as_ref().map(|c| &c.decision),
                );
                checked.map(|mut c| {
                    c.decision = self.second_name_check(g, c.decision);
                    if tool == "grep" {
                        c.decision = self.env_alias_below(c.decision, tool);
                    }
                    self.log_denied(tool, &c.decision);
                    c
                })
            }
            None if tools::GUARDED_TOOLS.contains(&tool) => Some(ToolCheck {
                decision: self.refused(Op::Read, &self.options.env.cwd),
                patch: None,
            }),
            None => None,
        }
    }

    /// The judged file for one of pi's file-tool operations: refused with the guard's reason
    /// unless allowed: by the rules, or once by the user for the tool call being run.
    fn judged(&self, op: Op, path: &Path) -> Result<Decision, FileOpError> {
        let d = self.check(op, path);
        let once = || {
            self.once
                .borrow()
                .iter()
                .any(|(o, p)| *o == op && *p == d.path)
        };
        match d.verdict {
            Verdict::Allow => Ok(d),
            Verdict::Prompt if once() => Ok(d),
            _ => {
                self.log_denied(op.as_str(), &d);
                Err(FileOpError::Blocked(d.reason))
            }
        }
    }

    /// pi's read: the file the guard judged, opened without following links.
    pub fn read_file(&self, path: &Path) -> Result<Vec<u8>, FileOpError> {
        let d = self.judged(Op::Read, path)?;
        Ok(open::read(&d.path)?)
    }

    /// pi's write and edit: the judged file's content replaced, links refused.
    pub fn write_file(&self, path: &Path, content: &[u8]) -> Result<(), FileOpError> {
        let d = self.judged(Op::Write, path)?;
        Ok(open::write(&d.path, content, open::link_count(&d.path))?)
    }

    /// pi's `access` before a read (or an edit, which reads and writes).
    pub fn access_file(&self, path: &Path, write: bool) -> Result<(), FileOpError> {
        let d = self.judged(Op::Read, path)?;
        if write {
            self.judged(Op::Write, path)?;
        }
        Ok(open::access(&d.path, write)?)
    }

    /// pi's write creates the file's directory first: judged as a write of the directory.
    pub fn mkdir(&self, dir: &Path) -> Result<(), FileOpError> {
        let d = self.judged(Op::Write, dir)?;
        Ok(open::mkdir_all(&d.path)?)
    }

    /// How a shell command runs: the policy's decision, and for a sandboxed run the launch.
    /// `network`: what the user asked for (`--sandbox-network`), None for the default.
    pub fn prepare_bash(&self, command: &str, network: Option<Network>) -> Prepared {
        self.prepare(Command::Shell(command), network)
    }

    /// Like `prepare_bash` for an argv run without a shell (the CLI's `run -- CMD ARGS`).
    pub fn prepare_argv(&self, argv: &[std::ffi::OsString], network: Option<Network>) -> Prepared {
        self.prepare(Command::Argv(argv), network)
    }

    fn prepare(&self, command: Command, network: Option<Network>) -> Prepared {
        let guard = match self.guard() {
            Some(g) => g,
            None => {
                return Prepared::Denied(self.refused(Op::Write, &self.options.env.cwd).reason);
            }
        };
        let network = network.unwrap_or_else(|| self.default_network());
        let capability = detect::detect();
        let text = match &command {
            Command::Shell(text) => Some(*text),
            Command::Argv(_) => None,
        };
        let approved = text
            .and_then(|t| self.granted.command_grant(t))
            .map(granted_how);
        let decision = bash_policy::decide(&BashRequest {
            capability: &capability,
            enabled: guard.enabled().value,
            mode: guard.mode().value,
            network,
            approval: guard.approval_mode(),
            approved,
        });
        let (adapter, network) = match decision {
            BashDecision::Sandboxed { adapter, network } => (adapter, network),
            BashDecision::Unsandboxed { reason } => return Prepared::Unsandboxed(reason),
            BashDecision::NeedsApproval { reason } => {
                return match text {
                    Some(t) => {
                        Prepared::NeedsApproval(Box::new(prompts::unsandboxed_command(t, &reason)))
                    }
                    None => Prepared::Denied(prompts::unsandboxed_command("", &reason).no_ui),
                }
            }
            BashDecision::Denied { reason } => return Prepared::Denied(reason),
        };
        if let Some(reason) = program_in_reach(guard, &capability) {
            return Prepared::Denied(reason);
        }
        let mut auditor = self.auditor.borrow_mut();
        // Fail closed: what an earlier command left that could not be neutralised blocks
        // every command until it is gone or safe.
        let blocking = auditor.retry_blocked();
        if !blocking.is_empty() {
            return Prepared::Denied(blocked_reason(&blocking));
        }
        // The baseline of the audit after the command, whichever OS layer runs it.
        // A repository whose hooks directory was not known: what lies there is protected
        // from this command on.
        let mut scan = self.with_hooks_of(guard, self.scan(guard));
        scan.hidden_env_files =
            crate::surface::scan::env_files_around(guard, &mut self.env_listings.borrow_mut());
        if guard.hides_env_files() {
            // Fail closed: without the search's answer bash cannot know what to hide.
            let elsewhere = match &self.env_search {
                Some(search) => match search.found() {
                    Ok(found) => found,
                    Err(why) => return Prepared::Denied(why),
                },
                None => {
                    return Prepared::Denied(
                        "the search for env files in the home directory is not running".into(),
                    )
                }
            };
            let known: HashSet<PathBuf> = scan.hidden_env_files.iter().cloned().collect();
            scan.hidden_env_files.extend(
                elsewhere
                    .iter()
                    .filter_map(|p| crate::surface::scan::env_file_to_mask(guard, p))
                    .filter(|p| !known.contains(p)),
            );
        }
        auditor.baseline(&scan);
        self.remember(&scan);
        self.env_aliases.borrow_mut().elsewhere = env_aliases(scan.hidden_env_files.iter());
        let tmp = std::env::temp_dir();
        let unset_env: Vec<String> = self.dropped_env().into_iter().map(|d| d.name).collect();
        let set_env = environment::cache_redirects(
            |name| std::env::var(name).ok(),
            &self.options.env.home,
            |p| guard.check(Op::Write, p).allowed(),
        );
        let sockets = self.sockets();
        let net = (network == Network::Filtered).then(|| CommandNet::new(self.gate.clone()));
        let mut set_env = set_env;
        if network == Network::Filtered {
            let no_proxy = self.gate.no_proxy();
            for name in ["NO_PROXY", "no_proxy", "npm_config_noproxy"] {
                set_env.push((name.into(), no_proxy.into()));
            }
            // Node's own fetch and http honour the proxy variables only when told to (22.21+).
            set_env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        }
        let setup = |program, features| launch::Setup {
            net: net.as_ref(),
            guard,
            program,
            features,
            unset_env: &unset_env,
            set_env: &set_env,
            sockets: &sockets,
            network,
            tmp_dir: &tmp,
            scan: &scan,
        };
        let launch = match (adapter, &capability, command) {
            (Adapter::Bwrap, Capability::Bwrap { program, features }, _) => {
                launch::bwrap(&setup(program, *features), command)
            }
            (Adapter::Seatbelt, Capability::SandboxExec { program }, Command::Shell(text)) => {
                launch::seatbelt(&setup(program, launch::NO_BWRAP_FEATURES), text)
            }
            (Adapter::Seatbelt, _, Command::Argv(_)) => return Prepared::Denied(
                "Blocked: on macOS, `pi-sandbox run` takes a shell command: pi-sandbox run -- bash -c '...'".into(),
            ),
            _ => {
                return Prepared::Denied(
                    "Blocked: the sandbox adapter does not match this platform.".into(),
                )
            }
        };
        // Placeholders are ours: the audit must not take them for the command's work.
        if let Ok(l) = &launch {
            auditor.baseline_paths(&l.placeholders);
        }
        built(launch)
    }

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

    /// The network mode when the user chose none: filtered when the config lists domains.
    pub fn default_network(&self) -> Network {
        match &self.state {
            Ok(l) => Network::default_for(
                !l.config.allowed_domains.value.is_empty()
                    || !l.config.denied_domains.value.is_empty(),
            ),
            Err(_) => Network::Off,
        }
    }

    /// After a sandboxed command: neutralises control-surface paths it created (a `.pi`
    /// directory, a new repository's live hooks or command-running config) and reports them,
    /// with new denyWrite matches.
    pub fn audit_after_command(&self) -> Vec<Finding> {
        let Some(guard) = self.guard() else {
            return vec![];
        };
        if !guard.active() {
            return vec![];
        }
        let mut auditor = self.auditor.borrow_mut();
        let mut now = self.scan(guard);
        // First what changes which directories are git dirs; then, on the tree as it is
        // without those, everything else: a new `commondir` would otherwise make the new
        // files beside it git's data (exempt from denyWrite) or git config to judge.
        let mut findings = Vec::new();
        // Each pass can uncover more (a commondir inside a directory that was git's data).
        // Every pass that goes on has moved a path off the tree, so it ends; a bound keeps a
        // path that keeps coming back from stalling pi (then bash is blocked: fail closed).
        for pass in 0.. {
            let structural = auditor.after_structural(&now);
            let moved: Vec<PathBuf> = structural
                .iter()
                .filter(|f| f.moved_to.is_some())
                .map(|f| f.path.clone())
                .collect();
            findings.extend(structural);
            if moved.is_empty() {
                break;
            }
            if pass == MAX_STRUCTURAL_PASSES {
                findings.push(auditor.block(
                    &moved[0],
                    "it came back each time it was moved aside; the sandbox cannot tell what the command left here",
                ));
                break;
            }
            now = self.scan(guard);
        }
        // A hooks directory the command made git look at (a submodule's `core.worktree`
        // changed, say): what it put there is judged as a hook.
        let now = self.with_hooks_of(guard, now);
        let rest = auditor.after(&now);
        let moved = rest.iter().any(|f| f.moved_to.is_some());
        findings.extend(rest);
        // What the audit moved aside is gone: scan again only if it moved anything.
        self.remember(&if moved { self.scan(guard) } else { now });
        for f in &findings {
            let operation = match (&f.moved_to, f.blocking) {
                (_, true) => "left by a command (bash blocked)".to_string(),
                (Some(to), _) => format!("left by a command, moved to {}", to.display()),
                (None, _) => "left by a command".to_string(),
            };
            self.log.append(&Violation::now(
                "audit",
                &operation,
                &f.path.display().to_string(),
                &f.why,
                "",
            ));
        }
        findings
    }

    /// Records a guard decision that refused (prompts are the user's to answer).
    fn log_denied(&self, operation: &str, d: &Decision) {
        if d.verdict == Verdict::Deny {
            self.log.append(&Violation::now(
                "guard",
                operation,
                &d.path.display().to_string(),
                &d.rule,
                &d.source,
            ));
        }
    }

    /// Records the unix-socket connections the supervisor refused during a command.
    pub fn log_socket_refusals(&self, refused: &[launch::Refusal]) {
        for r in refused {
            self.log.append(&Violation::now(
                "sockets",
                "connect",
                &r.socket,
                "a unix socket outside the sandbox (network.allowUnixSockets)",
                "",
            ));
        }
    }

    /// The violation log's last `n` entries, oldest first.
    pub fn recent_violations(&self, n: usize) -> Vec<Violation> {
        self.log.recent(n)
    }

    pub fn violation_log_path(&self) -> &Path {
        self.log.path()
    }

    /// Notes for a sandboxed command's output: each path an error line says could not be
    /// written because the file system is read-only or busy (the sandbox's mounts), and each
    /// path it could not find or open that denyRead hides in the sandbox, with the rule.
    /// Without them the model sees only "Read-only file system" or "No such file or
    /// directory", and no word that the sandbox did it.
    pub fn explain_write_failures(&self, output: &str) -> Vec<String> {
        let Some(guard) = self.guard() else {
            return vec![];
        };
        let cwd = &self.options.env.cwd;
        let mut notes: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for line in output.lines() {
            let op = if line.contains("Read-only file system")
                || line.contains("Device or resource busy")
            {
                Op::Write
            } else if line.contains("No such file or directory")
                || line.contains("Permission denied")
            {
                Op::Read
            } else {
                continue;
            };
            for candidate in paths_in_error_line(line) {
                let Ok(p) = crate::paths::expand(&candidate, &self.options.env.home, cwd) else {
                    continue;
                };
                let d = match op {
                    Op::Write => self.second_name_check(guard, guard.check(Op::Write, &p)),
                    Op::Read => guard.check(Op::Read, &p),
                };
                if d.verdict != Verdict::Deny || !seen.insert((op, d.path.clone())) {
                    continue;
                }
                notes.push(match op {
                    Op::Write => format!(
                        "{} is read-only in the sandbox ({}). {}",
                        d.path.display(),
                        d.rule,
                        d.reason
                    ),
                    Op::Read => format!(
                        "{} is hidden in the sandbox ({} from {}): it looks missing or empty to commands there. {}",
                        d.path.display(),
                        d.rule,
                        d.source,
                        d.reason
                    ),
                });
            }
            if notes.len() >= 5 {
                break;
            }
        }
        notes
    }

    /// The prompt for a guard decision that asks the user.
    pub fn prompt_for(&self, decision: &Decision) -> Prompt {
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
    fn too_broad(&self, dir: &Path) -> bool {
        let (home, cwd) = match self.guard() {
            Some(g) => (g.env().home.clone(), g.env().cwd.clone()),
            None => (self.options.env.home.clone(), self.options.env.cwd.clone()),
        };
        dir.parent().is_none() || home.starts_with(dir) || cwd.starts_with(dir)
    }

    fn store(&self) -> Result<&Store, String> {
        self.store.as_ref().map_err(Clone::clone)
    }

    /// The guard's decision on `path` if it is one the user may grant (it asks), else why
    /// not: a prompt's answer never lifts a hard block.
    fn askable(&self, op: Op, path: &Path) -> Result<Decision, String> {
        let decision = self.check(op, path);
        if decision.verdict != Verdict::Prompt {
            return Err(format!(
                "{} cannot be allowed from a prompt: {}",
                shown::path(&decision.path),
                decision.reason
            ));
        }
        Ok(decision)
    }

    /// The user allowed writes in `path`'s directory (the write prompt): for this session in
    /// memory, or written into the project's or the global config file. The policy is
    /// reloaded, so the next check and the next bash command's mounts include it. Returns
    /// where the grant went.
    pub fn grant_write(&mut self, path: &Path, scope: WriteScope) -> Result<String, String> {
        let decision = self.askable(Op::Write, path)?;
        if decision.rule == crate::policy::guard::ENV_FILE_RULE {
            return Err("an env file is allowed through grantEnvFile".into());
        }
        if self.too_broad(prompts::write_grant_dir(&decision.path)) {
            return Err(format!(
                "{} holds your home or this project's parents: too wide to grant from a prompt; add a narrower directory to filesystem.allowWrite yourself",
                shown::path(prompts::write_grant_dir(&decision.path))
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
    ) -> Result<Vec<String>, String> {
        let global = env.global_config();
        let text = std::fs::read_to_string(&global).ok();
        config::merge(Config::defaults_for(env), &[(global, text)])
            .map(pick)
            .map_err(|e| e.to_string())
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
    ) -> Result<bool, String> {
        let env = self.options.env.clone();
        let file = env.project_config();
        // The store as it is now (another pi may have answered meanwhile).
        let granted = self
            .store()?
            .load(&self.session_id())
            .map_err(|e| e.to_string())?;
        let turn = config_lock(&self.config_lock_path())?;
        let before = read_config_text(&file)?;
        let answered = match &before {
            None => Some(true),
            Some(text) => {
                let (key, widens) =
                    config::project_trust_key(&env, text).map_err(|e| e.to_string())?;
                match granted.trust(&file) {
                    _ if !widens => Some(true),
                    Some((hash, trusted)) if hash == key => Some(trusted),
                    _ => None,
                }
            }
        };
        let after =
            crate::session::config_edit::with_entry(&file, before.as_deref(), at, inherited, entry)
                .map_err(|e| e.to_string())?;
        crate::session::config_edit::replace_file(&file, &after).map_err(|e| e.to_string())?;
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
    ) -> Result<(), String> {
        let (key, _) = config::project_trust_key(env, text).map_err(|e| e.to_string())?;
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
            .map_err(|e| e.to_string())
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
    ) -> Result<(String, bool), String> {
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
    pub fn grant_domain(&mut self, host: &str, scope: WriteScope) -> Result<String, String> {
        let parsed = crate::net::domains::parse_host(host).map_err(|e| e.to_string())?;
        let host = parsed.to_string();
        if let gate::Judgement::Denied(rule) = self.gate.judge(&parsed) {
            return Err(format!(
                "{host} cannot be allowed from a prompt: it is denied by {rule}"
            ));
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
    pub fn grant_env_file(&mut self, path: &Path, scope: &str, write: bool) -> Result<(), String> {
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
            other => return Err(format!("unknown scope {other:?}: once, session or always")),
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
            .map_err(|e| e.to_string())?;
        self.reload();
        Ok(())
    }

    /// The prompt that asks what a command grant covers (after session / always).
    pub fn command_key_prompt(&self, command: &str) -> Prompt {
        prompts::command_key(command, &approvals::prefix_choices(command))
    }

    /// The user allowed `command` to run unsandboxed for the session or for good, keyed as
    /// they chose: `exact`, or `prefix:N` (its first N words, simple commands only).
    pub fn grant_command(&mut self, command: &str, scope: &str, key: &str) -> Result<(), String> {
        let scope = match scope {
            "session" => Scope::Session,
            "always" => Scope::Always,
            other => return Err(format!("unknown scope {other:?}: session or always")),
        };
        let grant = match key.strip_prefix("prefix:") {
            None if key == "exact" => Grant::Command {
                command: command.to_string(),
            },
            Some(n) => {
                let words = approvals::simple_argv(command).ok_or_else(|| {
                    "only a simple command (no ; && | $(...), redirections or newlines) can be allowed by prefix".to_string()
                })?;
                let n: usize = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=words.len()).contains(n))
                    .ok_or_else(|| format!("bad prefix length in {key:?}"))?;
                Grant::CommandPrefix {
                    argv: words[..n].to_vec(),
                }
            }
            None => return Err(format!("unknown key {key:?}: exact or prefix:N")),
        };
        self.store()?
            .grant(
                scope,
                grant,
                &self.session_id(),
                "user: unsandboxed bash prompt",
            )
            .map_err(|e| e.to_string())?;
        self.reload();
        Ok(())
    }

    /// The project file as loaded: what it would widen and whether that applies.
    pub fn project_layer(&self) -> Option<&ProjectLayer> {
        self.state.as_ref().ok()?.config.project.as_ref()
    }

    /// The trust prompt, when the project file widens the rules and its current content has
    /// not been answered yet (`again`: or was declined).
    pub fn trust_prompt(&self, again: bool) -> Option<Prompt> {
        self.project_layer()
            .filter(|p| p.needs_answer() || (again && p.trust == Trust::Declined))
            .map(prompts::project_trust)
    }

    /// The user's answer about the project file's current content (`sha256`, as shown in the
    /// prompt: a file changed since is not what they saw, and is not trusted by it).
    pub fn answer_trust(&mut self, sha256: &str, trusted: bool) -> Result<(), String> {
        let file = self.options.env.project_config();
        self.refresh();
        if self.project_layer().map(|p| p.sha256.as_str()) != Some(sha256) {
            return Err(format!(
                "{} changed since you were asked; it will be shown again",
                shown::path(&file)
            ));
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
            .map_err(|e| e.to_string())?;
        self.reload();
        Ok(())
    }

    /// Why the approvals store could not be read (a corrupt file moved aside, a newer
    /// version), if it could not.
    pub fn approvals_notice(&self) -> Option<&str> {
        self.granted.notice.as_deref()
    }

    /// The effective mode: the session's choice, else the config's, else read-write.
    pub fn mode(&self) -> Mode {
        match (&self.mode_override, self.guard()) {
            (Some((m, _)), _) => *m,
            (None, Some(g)) => g.mode().value,
            (None, None) => Mode::ReadWrite,
        }
    }

    /// Whether the config turned the sandbox off (`enabled: false`).
    pub fn enabled(&self) -> bool {
        self.guard().is_none_or(|g| g.enabled().value)
    }

    pub fn set_mode(&mut self, raw: &str, how: &str) -> Result<Mode, String> {
        let mode = Mode::parse(raw)
            .ok_or_else(|| format!("unknown sandbox mode {raw:?}; use {MODE_HELP}"))?;
        self.mode_override = Some((mode, how.to_string()));
        if let Ok(loaded) = &mut self.state {
            loaded.guard.set_mode(mode, how);
        }
        Ok(mode)
    }

    /// read-only → read-write → yolo → read-only.
    pub fn cycle_mode(&mut self, how: &str) -> Mode {
        let next = self.mode().next();
        self.set_mode(next.as_str(), how).expect("valid mode");
        next
    }

    /// What the sandbox keeps that the user would not guess, said at the session's start: a
    /// project it keeps read-only (pi loads an extension from it, or a protected link leads
    /// to it), extensions pi loads whose folder holds the project (kept alone: what they
    /// import from beside them stays writable). `None` when there is nothing to say.
    pub fn kept_notice(&self) -> Option<String> {
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

    /// The env files the repository tracks (for the session's first note), shared so that
    /// git is asked without the session's lock.
    pub(crate) fn committed_env(&self) -> Arc<crate::surface::committed_env::CommittedEnv> {
        self.committed_env.clone()
    }

    /// The effective configuration, each value with the file it came from.
    pub fn describe(&self, network: Option<Network>) -> String {
        let state = self.state.as_ref().map(|l| (&l.config, &l.guard));
        let mut out = crate::session::report::describe(&self.options.env.cwd, state);
        out.push_str(&self.network_report(network));
        let _ = writeln!(
            out,
            "\nBash's index of the writable trees: {}",
            self.index_status()
        );
        let dropped = self.dropped_env();
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
        out.push_str(&self.committed_env.report());
        if let Some(kept) = self.kept_notice() {
            let _ = writeln!(out, "\n{}", shown::lines(&kept));
        }
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
        if let Ok(l) = &self.state {
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
            let _ = writeln!(
                out,
                "\nEnvironment variables sandboxed commands do not get (env.allow: {}; env.deny: {}):",
                show_list(&l.config.env_allow.value),
                show_list(&l.config.env_deny.value)
            );
            if dropped.is_empty() {
                let _ = writeln!(out, "  none");
            }
            for d in &dropped {
                let _ = writeln!(out, "  {} — {}", shown::name(&d.name), d.why);
            }
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
        out
    }
}

/// Adds `dir` to `file`'s allowWrite (see `config_edit`).
fn add_list_entry(
    file: &Path,
    at: ListKey,
    inherited: &[String],
    entry: &str,
    lock: &Path,
) -> Result<(), String> {
    let _turn = config_lock(lock)?;
    let text = read_config_text(file)?;
    let new = crate::session::config_edit::with_entry(file, text.as_deref(), at, inherited, entry)
        .map_err(|e| e.to_string())?;
    crate::session::config_edit::replace_file(file, &new).map_err(|e| e.to_string())
}

/// The lock every grant written into a config file takes, in pi's agent dir (not beside the
/// project's file, which would leave a lock file in the repository): two pi sessions
/// granting into one file at once, each reading it, editing and replacing it, lose nothing.
fn config_lock(lock: &Path) -> Result<std::fs::File, String> {
    if let Some(dir) = lock.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    crate::session::config_edit::exclusive_lock(lock)
        .map_err(|e| format!("cannot lock {} to write the grant: {e}", lock.display()))
}

/// A config file's text; None when it does not exist (as a load reads it).
fn read_config_text(file: &Path) -> Result<Option<String>, String> {
    config::read_layer(file).map_err(|e| e.to_string())
}

/// The repositories the session works in, as (git dir, worktree): the one around its
/// directory and around each allowWrite root.
fn repos_around(guard: &Guard) -> Vec<(PathBuf, PathBuf)> {
    let env = guard.env();
    let mut repos = Vec::new();
    for dir in std::iter::once(env.cwd.as_path()).chain(guard.allow_write_paths()) {
        if let Some(repo) = crate::surface::hooks::enclosing_repo(dir) {
            if !repos.contains(&repo) {
                repos.push(repo);
            }
        }
    }
    repos
}

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

/// The sandbox program runs on the host, outside every sandbox: one the agent could have
/// replaced (in or below a directory it may write) is refused, whatever found it.
fn program_in_reach(guard: &Guard, capability: &detect::Capability) -> Option<String> {
    let program = match capability {
        detect::Capability::Bwrap { program, .. } | detect::Capability::SandboxExec { program } => {
            program
        }
        detect::Capability::Unavailable { .. } => return None,
    };
    let real = crate::paths::canonicalize(program).unwrap_or_else(|_| program.clone());
    let root = guard.allow_write_paths().find(|root| {
        [program, &real]
            .iter()
            .any(|p| crate::policy::protected::is_under(p, root))
    })?;
    Some(format!(
        "Blocked: the sandbox program {} lies in {}, which the agent may write; a program there could have been replaced, and it runs outside the sandbox. Install it in a system directory, or point {} elsewhere.",
        program.display(),
        root.display(),
        detect::SYSTEM_DIRS_VAR
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(dir: &Path) -> Session {
        let env = Env {
            home: dir.join("home"),
            cwd: dir.join("proj"),
            agent_dir: dir.join("agent"),
            session_dirs: vec![],
            session_file: None,
            pi_loads: vec![],
        };
        std::fs::create_dir_all(&env.cwd).unwrap();
        std::fs::create_dir_all(&env.home).unwrap();
        Session::load(Options {
            env,
            approval_mode: None,
            session_id: None,
        })
    }

    #[test]
    fn second_names_of_protected_files_are_refused_to_the_file_tools() {
        let t = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(t.path()).unwrap();
        let proj = dir.join("proj");
        std::fs::create_dir_all(proj.join(".git/objects")).unwrap();
        std::fs::create_dir_all(proj.join(".git/refs")).unwrap();
        std::fs::write(proj.join(".git/config"), "[core]\n").unwrap();
        // .git/hooks is a link to a directory outside the project (the file tools could
        // write there if allowWrite reaches it: allow it to show the link is what refuses)
        let outside = dir.join("outside-hooks");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, proj.join(".git/hooks")).unwrap();
        std::fs::hard_link(proj.join(".git/config"), proj.join("cfg")).unwrap();
        // The user's own (global) file: a project file listing it would need trust first.
        std::fs::create_dir_all(dir.join("agent/extensions")).unwrap();
        std::fs::write(
            dir.join("agent/extensions/sandbox.json"),
            format!(
                r#"{{"filesystem":{{"allowWrite":[".","{}"]}}}}"#,
                outside.display()
            ),
        )
        .unwrap();
        let s = session(&dir);
        let d = s.check(Op::Write, &outside.join("pre-commit"));
        assert_eq!(d.verdict, Verdict::Deny, "{d:?}");
        assert!(d.rule.starts_with("target of protected link"), "{}", d.rule);
        let d = s.check(Op::Write, &proj.join("cfg"));
        assert_eq!(d.verdict, Verdict::Deny, "{d:?}");
        assert!(d.rule.starts_with("hard link to protected"), "{}", d.rule);
        // an ordinary file next to them stays writable
        assert!(s.check(Op::Write, &proj.join("src.txt")).allowed());
    }

    #[test]
    fn error_lines_name_their_paths() {
        assert_eq!(
            paths_in_error_line(
                "error: could not write config file .git/config: Device or resource busy"
            ),
            [".git/config"]
        );
        assert_eq!(
            paths_in_error_line(
                "/tmp/pi-bash-1.sh: line 1: githooks/pre-commit: Read-only file system"
            ),
            ["githooks/pre-commit"]
        );
        assert!(
            paths_in_error_line("touch: cannot touch 'a b': Read-only file system")
                .contains(&"a b".to_string())
        );
        assert!(
            paths_in_error_line("OSError: [Errno 30] Read-only file system: '/w/x'")
                .contains(&"/w/x".to_string())
        );
    }

    #[test]
    fn a_broken_config_refuses_every_check_and_recovers_when_fixed() {
        let t = tempfile::tempdir().unwrap();
        let mut s = session(t.path());
        let file = s.env().cwd.join("src.rs");
        assert!(s.check(Op::Write, &file).allowed());
        std::fs::create_dir_all(s.env().cwd.join(".pi")).unwrap();
        std::fs::write(s.env().project_config(), "{ \"enabled\": fals }").unwrap();
        s.refresh();
        let d = s.check(Op::Write, &file);
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(d.reason.contains("sandbox.json:1:"), "{}", d.reason);
        assert!(d.rule.contains("E_CONFIG_PARSE"));
        // reads are refused too: no rules is not the same as "no restrictions"
        assert_eq!(s.check(Op::Read, &file).verdict, Verdict::Deny);
        let tc = s
            .check_tool("read", &serde_json::json!({"path": "src.rs"}))
            .unwrap();
        assert_eq!(tc.decision.verdict, Verdict::Deny);
        assert!(s.describe(None).contains("BROKEN"));
        std::fs::write(
            s.env().project_config(),
            "{ \"enabled\": true, \"mode\": \"ro\" }",
        )
        .unwrap();
        s.refresh();
        assert!(s.error().is_none());
        assert_eq!(s.check(Op::Write, &file).verdict, Verdict::Deny);
        assert!(s.check(Op::Read, &file).allowed());
    }

    #[test]
    fn a_mode_chosen_in_the_session_survives_a_reload() {
        let t = tempfile::tempdir().unwrap();
        let mut s = session(t.path());
        assert_eq!(s.mode(), Mode::ReadWrite);
        assert_eq!(s.cycle_mode("Ctrl+X"), Mode::Yolo);
        assert_eq!(s.cycle_mode("Ctrl+X"), Mode::ReadOnly);
        s.reload();
        assert_eq!(s.mode(), Mode::ReadOnly);
        let d = s.check(Op::Write, &s.env().cwd.join("a"));
        assert_eq!(d.source, "Ctrl+X");
        assert!(s.set_mode("bogus", "x").unwrap_err().contains("read-only"));
    }

    #[test]
    fn a_bad_approval_mode_fails_closed() {
        let t = tempfile::tempdir().unwrap();
        let mut s = session(t.path());
        s.options.approval_mode = Some("sometimes".into());
        s.reload();
        assert_eq!(s.error().unwrap().code, "E_APPROVAL_MODE");
        assert_eq!(
            s.check(Op::Read, &s.env().cwd.join("a")).verdict,
            Verdict::Deny
        );
    }
}
