//! One pi session's loaded policy: loads the layers, re-reads them when a file changes, and
//! fails closed while they are broken (every check is refused with the reason).

pub(crate) mod approvals;
mod approvals_upgrade;
pub(crate) mod bash;
mod brief;
pub(crate) mod command_keys;
pub(crate) mod commands;
pub(crate) mod config_edit;
mod describe;
mod failure_notes;
pub(crate) mod files;
pub(crate) mod grants;
pub(crate) mod load_error;
pub(crate) mod network_questions;
pub(crate) mod prompts;
pub(crate) mod report;
pub(crate) mod repos;
pub(crate) mod servers;
mod summary;
mod tmp_dir;
pub(crate) mod tools;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use self::approvals::{Scope, Snapshot, Store};
use self::load_error::LoadError;
use self::network_questions::NetworkQuestions;
use self::repos::{protected_git_paths, repos_around};
use crate::net::gate::{self, Gate};
use crate::platform::launch;
use crate::policy::config::{self, Config, Env, Mode, Source, MODE_HELP};
use crate::policy::environment::{self, EnvPolicy};
use crate::policy::guard::{ApprovalMode, Decision, Guard, KnownGitDirs, Op, Verdict};
use crate::policy::protected::GitPath;
use crate::policy::trust::Trust;
use crate::redact::{self, Redactor, Secret};
use crate::shown;
use crate::surface::audit::Auditor;
use crate::surface::index::Index;
use crate::surface::scan::{Found, Scan};
use crate::violations::{Violation, ViolationLog};

/// A mode name `Mode::parse` does not know.
#[derive(Debug)]
pub(crate) struct UnknownMode(String);

impl std::fmt::Display for UnknownMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown sandbox mode {:?}; use {MODE_HELP}", self.0)
    }
}

/// A mode name or alias as the user typed it.
pub(crate) fn parse_mode(raw: &str) -> Result<Mode, UnknownMode> {
    Mode::parse(raw).ok_or_else(|| UnknownMode(raw.into()))
}

/// What a session needs to know beyond the environment.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) env: Env,
    /// Raw `PI_SANDBOX_APPROVAL_MODE`, validated here.
    pub(crate) approval_mode: Option<String>,
    /// pi's session id: session-scoped approvals belong to it.
    pub(crate) session_id: Option<String>,
}

/// The session's own /tmp (`policy::tmp_map`), where the platform can bind one at /tmp.
fn session_tmp(cwd: &Path) -> Result<tmp_dir::SessionTmp, String> {
    if !cfg!(target_os = "linux") {
        return Err("this platform's sandbox cannot give bash a folder of its own at /tmp".into());
    }
    // pi started in /tmp (or /): the project is the host's /tmp, which bash must see.
    if Path::new(crate::policy::tmp_map::TMP).starts_with(cwd) {
        return Err("pi runs in /tmp itself, which is the project".into());
    }
    let host = tmp_dir::host_tmp();
    tmp_dir::make(&host).map_err(|e| {
        format!(
            "no folder for the session's /tmp could be made in {}: {e}",
            host.display()
        )
    })
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
    .map_err(|e| {
        LoadError::schema(format!(
            "{}[{}]: {}",
            e.key,
            e.index,
            shown::text(&e.error.to_string())
        ))
    })?;
    let granted = granted
        .network_grants()
        .filter_map(|(host, e)| {
            let h = crate::net::domains::parse_host(host).ok()?;
            Some((h, granted_how(e)))
        })
        .collect();
    let allowed_in = allowed_domains_in(config, env);
    let denied_in = match &config.denied_domains.source {
        Source::File(p) => format!("network.deniedDomains in {}", shown::path(p)),
        _ => "network.deniedDomains".to_string(),
    };
    Ok(gate::Rules {
        filter,
        granted,
        allowed_in,
        denied_in,
    })
}

/// Where "for this project" and "for all projects" write a grant, and whether the project's
/// file applies as written (else such a grant holds for this session only).
fn grant_files(config: &Config, env: &Env) -> prompts::GrantFiles {
    prompts::GrantFiles {
        project: env.project_config(),
        global: env.global_config(),
        project_applies: config.project.as_ref().is_none_or(|p| p.applies()),
        allowed_in: allowed_domains_in(config, env),
    }
}

/// Where an entry added to network.allowedDomains takes effect, worded for a note: the file
/// that holds the list in force (a project's list replaces the global one, which replaces the
/// built-in one). While that is the built-in list, the global file, where a list replaces it.
fn allowed_domains_in(config: &Config, env: &Env) -> String {
    match &config.allowed_domains.source {
        Source::File(p) => format!("network.allowedDomains in {}", shown::path(p)),
        _ => format!(
            "network.allowedDomains in {} (a list there replaces the built-in one: keep its entries)",
            shown::path(&env.global_config())
        ),
    }
}

/// pi's environment now, names and values (the extension spawns with it; Node's
/// `process.env` writes through to it).
fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Whether `value` is an existing absolute path, or a `:`-separated list of them.
fn existing_paths(value: &str) -> bool {
    value
        .split(':')
        .all(|p| p.starts_with('/') && Path::new(p).exists())
}

/// `PI_SANDBOX_INDEX=off` turns the index off: every command walks the trees in full.
fn index_wanted() -> bool {
    std::env::var_os("PI_SANDBOX_INDEX").is_none_or(|v| v != "off")
}

type Stamp = Vec<Option<(SystemTime, u64)>>;

// `pub`, not `pub(crate)`: an N-API task's output (napi/), which napi-rs declares public.
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
    /// The env files the last sandboxed command had hidden, for the notes after it.
    hidden_env: std::cell::RefCell<Vec<PathBuf>>,
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
    /// The session's own /tmp on the host (removed with it), or why none could be made.
    tmp: Result<tmp_dir::SessionTmp, String>,
    /// The secrets hidden from the model, and the stamp of pi's key files they were read at.
    redactor: std::cell::RefCell<Option<(Stamp, Arc<Redactor>)>>,
    /// The user's grants on disk (`approvals`), or why they cannot be read or written.
    store: Result<Store, String>,
    /// What the store grants this session, read at the last load.
    granted: Snapshot,
    /// Directories the user allowed writes to for this session (memory only).
    session_writes: Vec<(String, Source)>,
    /// Single files the user allowed writing for this session (the file tools only).
    session_write_files: Vec<(String, Source)>,
    /// Paths the user allowed once, for the tool call being run (cleared by the next one).
    once: std::cell::RefCell<Vec<(Op, PathBuf)>>,
    /// The network proxy's decisions for filtered commands (rules replaced at each load).
    gate: Arc<Gate>,
    /// The gate's questions, worded with this session's config files and shown to the user.
    questions: Arc<NetworkQuestions>,
    /// The env files the repository tracks, asked of git once (for a note and `/sandbox`).
    committed_env: Arc<crate::surface::committed_env::CommittedEnv>,
    /// What commands leave running, and the pods it runs in (`servers`).
    servers: std::cell::RefCell<servers::Servers>,
}

struct Loaded {
    config: Config,
    guard: Guard,
    /// The git dirs of the repositories around the session and its allowWrite roots, whose
    /// hooks directories were looked up at load with their worktrees known.
    load_time_repos: Vec<PathBuf>,
    env_policy: EnvPolicy,
    net_rules: gate::Rules,
    /// The config files the gate's questions name.
    grant_files: prompts::GrantFiles,
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
    pub(crate) fn load(mut options: Options) -> Session {
        let tmp = session_tmp(&options.env.cwd);
        options.env.tmp = tmp.as_ref().ok().map(|t| t.path().to_path_buf());
        let log = ViolationLog::in_agent_dir(&options.env.agent_dir);
        let store = Store::in_agent_dir(&options.env.agent_dir).map_err(|e| e.to_string());
        let gate = Arc::new(Gate::new(log.clone(), crate::net::proxy::system_resolver()));
        let questions = Arc::new(NetworkQuestions::default());
        gate.set_asker(Some(questions.asker()));
        let quarantine = crate::surface::quarantine::Quarantine::for_project(
            &options.env.agent_dir,
            &options.env.cwd,
        );
        let first_session = crate::surface::audit::first_session_time(&options.env.agent_dir);
        let committed_env = Arc::new(crate::surface::committed_env::CommittedEnv::new(
            &options.env.cwd,
            &options.env.home,
            first_session,
        ));
        let mut s = Session {
            committed_env,
            gate,
            questions,
            store,
            granted: Snapshot::empty(),
            session_writes: vec![],
            session_write_files: vec![],
            once: Default::default(),
            log,
            options,
            state: Err(LoadError::not_loaded()),
            mode_override: None,
            stamp: vec![],
            auditor: std::cell::RefCell::new(Auditor::new(quarantine, first_session)),
            env_listings: Default::default(),
            second_names: Default::default(),
            env_aliases: Default::default(),
            hidden_env: Default::default(),
            index: None,
            env_search: None,
            repo_git_paths: Default::default(),
            redactor: Default::default(),
            tmp,
            servers: Default::default(),
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
    pub(crate) fn gate(&self) -> Arc<Gate> {
        self.gate.clone()
    }

    /// The gate's questions, to show and answer from outside the session's lock.
    pub(crate) fn network_questions(&self) -> Arc<NetworkQuestions> {
        self.questions.clone()
    }

    /// Re-reads every layer now.
    pub(crate) fn reload(&mut self) {
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
        self.questions.set_files(match &self.state {
            Ok(loaded) => loaded.grant_files.clone(),
            Err(_) => prompts::GrantFiles::default(),
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
    /// `audit_due`: what ran since the last audit was not audited (`Commands::dispose`).
    pub(crate) fn dispose(&mut self, audit_due: bool) {
        // What commands left running goes first; what it did since the last audit is judged.
        if self.servers.get_mut().stop() > 0 || audit_due {
            self.audit_after_command();
        }
        self.index = None;
        self.env_search = None;
        // The session's /tmp goes with it, servers' files and all.
        self.tmp = Err("the session ended".into());
    }

    /// Why the session has no /tmp of its own (bash then gets a private one per command).
    pub(crate) fn tmp_error(&self) -> Option<&str> {
        self.tmp.as_ref().err().map(String::as_str)
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
    pub(crate) fn index(&self) -> Option<Index> {
        self.index.clone()
    }

    /// Where grants written into config files take turns (see `config_lock`).
    fn config_lock_path(&self) -> PathBuf {
        self.options.env.agent_dir.join("sandbox-config.lock")
    }

    /// The search for env files in the home directory, to wait for its first pass without
    /// holding the session (see `Commands`).
    pub(crate) fn env_search(&self) -> Option<crate::surface::env_files::EnvFileSearch> {
        self.env_search.clone()
    }

    /// How bash finds what to protect: the index's state, or why there is none.
    pub(crate) fn index_status(&self) -> String {
        match &self.index {
            Some(index) => index.status().to_string(),
            None if !index_wanted() => {
                "off (PI_SANDBOX_INDEX=off): a full scan for every command".into()
            }
            None => "none (no policy loaded)".into(),
        }
    }

    /// Re-reads the layers if one was created, changed or removed since the last load.
    pub(crate) fn refresh(&mut self) -> bool {
        let changed = stamp_of(&self.config_files()) != self.stamp;
        if changed {
            self.reload();
        }
        changed
    }

    fn build(&self) -> Result<Loaded, LoadError> {
        let approval = match &self.options.approval_mode {
            None => ApprovalMode::Ask,
            Some(raw) => ApprovalMode::parse(raw).ok_or_else(|| LoadError::approval_mode(raw))?,
        };
        let granted = &self.granted;
        let trust_of = |file: &Path, sha256: &str| match granted.trust(file) {
            Some((hash, true)) if hash == sha256 => Trust::Trusted,
            Some((hash, false)) if hash == sha256 => Trust::Declined,
            _ => Trust::Pending,
        };
        let mut config = config::load(&self.options.env, &trust_of)?;
        config.session_allow_write = self.session_writes.clone();
        config.session_write_files = self.session_write_files.clone();
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
        let vars = process_env();
        let read_by_pi = environment::models_json_vars(
            &self.options.env.agent_dir,
            vars.iter().map(|(n, _)| n.as_str()),
        );
        let env_policy =
            EnvPolicy::new(&config.env_allow.value, &config.env_deny.value, read_by_pi).map_err(
                |e| {
                    LoadError::schema(format!(
                        "{}: '{}': {}",
                        e.key,
                        shown::name(&e.entry),
                        shown::text(&e.message)
                    ))
                },
            )?;
        let net_rules = net_rules(&config, granted, &self.options.env)?;
        let grant_files = grant_files(&config, &self.options.env);
        Ok(Loaded {
            config,
            guard,
            load_time_repos,
            env_policy,
            net_rules,
            grant_files,
        })
    }

    pub(crate) fn error(&self) -> Option<&LoadError> {
        self.state.as_ref().err()
    }

    pub(crate) fn guard(&self) -> Option<&Guard> {
        self.state.as_ref().ok().map(|l| &l.guard)
    }

    /// See `Sandbox.hostPath`: `path` without relative entries and entries the agent could
    /// write into (all of them, with no policy loaded).
    pub(crate) fn host_path(&self, path: &str) -> String {
        let Some(guard) = self.guard() else {
            // No policy: only the system directories.
            return path
                .split(':')
                .filter(|e| crate::process::SYSTEM_DIRS.contains(e))
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
    pub(crate) fn dropped_env(&self) -> Vec<environment::Dropped> {
        match &self.state {
            Ok(l) => {
                let vars = process_env();
                l.env_policy
                    .dropped(vars.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            }
            Err(_) => vec![],
        }
    }

    /// The variables of `given` (what pi would give a shell: its environment and what it
    /// adds) a sandboxed command gets. Without a policy, the allow-list alone.
    pub(crate) fn command_env(&self, given: Vec<(String, String)>) -> Vec<(String, String)> {
        let fallback;
        let policy = match &self.state {
            Ok(l) => &l.env_policy,
            Err(_) => {
                fallback =
                    EnvPolicy::new(&[], &[], Default::default()).expect("an empty policy compiles");
                &fallback
            }
        };
        given
            .into_iter()
            .filter(|(n, v)| policy.judge(n, v).is_none())
            .collect()
    }

    /// The secrets to hide from the model in tools' output: the values of the variables
    /// dropped from the environment, pi's keys (`redact::pi_file_secrets`), and the config's
    /// `redact` lists. Built again when pi's key files or the policy change.
    pub(crate) fn redactor(&self) -> Arc<Redactor> {
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
        // file's location), or a list of them (a plugin search path), names where things
        // are, not a secret: hiding every mention of the path would only garble output.
        // (Short values, `1` or `true`, the redactor leaves alone itself.)
        let mut secrets: Vec<Secret> = self
            .dropped_env()
            .iter()
            .filter_map(|d| value_of(&d.name))
            .filter(|s| !existing_paths(&s.value))
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

    pub(crate) fn env(&self) -> &Env {
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

    /// The violation log's last `n` entries, oldest first.
    pub(crate) fn recent_violations(&self, n: usize) -> Vec<Violation> {
        self.log.recent(n)
    }

    pub(crate) fn violation_log_path(&self) -> &Path {
        self.log.path()
    }

    /// The effective mode: the session's choice, else the config's, else read-write.
    pub(crate) fn mode(&self) -> Mode {
        match (&self.mode_override, self.guard()) {
            (Some((m, _)), _) => *m,
            (None, Some(g)) => g.mode().value,
            (None, None) => Mode::ReadWrite,
        }
    }

    /// Whether the config turned the sandbox off (`enabled: false`).
    pub(crate) fn enabled(&self) -> bool {
        self.guard().is_none_or(|g| g.enabled().value)
    }

    pub(crate) fn set_mode(&mut self, raw: &str, how: &str) -> Result<Mode, UnknownMode> {
        let mode = parse_mode(raw)?;
        self.mode_override = Some((mode, how.to_string()));
        if let Ok(loaded) = &mut self.state {
            loaded.guard.set_mode(mode, how);
        }
        Ok(mode)
    }

    /// read-only → read-write → yolo → read-only.
    pub(crate) fn cycle_mode(&mut self, how: &str) -> Mode {
        let next = self.mode().next();
        self.set_mode(next.as_str(), how).expect("valid mode");
        next
    }

    /// The env files the repository tracks (for the session's first note), shared so that
    /// git is asked without the session's lock.
    pub(crate) fn committed_env(&self) -> Arc<crate::surface::committed_env::CommittedEnv> {
        self.committed_env.clone()
    }
}

/// A session for tests in `dir`: home, project (`proj`, the cwd) and agent dir below it.
#[cfg(test)]
pub(crate) fn session_in(
    dir: &Path,
    approval_mode: Option<&str>,
    session_id: Option<&str>,
) -> Session {
    let env = Env {
        home: dir.join("home"),
        cwd: dir.join("proj"),
        agent_dir: dir.join("agent"),
        session_dirs: vec![],
        session_file: None,
        pi_loads: vec![],
        tmp: None,
    };
    std::fs::create_dir_all(&env.cwd).unwrap();
    std::fs::create_dir_all(&env.home).unwrap();
    Session::load(Options {
        env,
        approval_mode: approval_mode.map(Into::into),
        session_id: session_id.map(Into::into),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_started_in_tmp_or_the_root_keeps_a_private_tmp_per_command() {
        for cwd in ["/tmp", "/"] {
            let e = session_tmp(Path::new(cwd)).unwrap_err();
            assert!(e.contains("pi runs in /tmp itself"), "{cwd}: {e}");
        }
        assert!(session_tmp(Path::new("/tmp/proj")).is_ok());
    }

    fn session(dir: &Path) -> Session {
        session_in(dir, None, None)
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
        assert!(s
            .set_mode("bogus", "x")
            .unwrap_err()
            .to_string()
            .contains("read-only"));
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
