//! Where a session's things are: home, project, pi's agent dir, the transcripts, the
//! extensions pi loads. Below the config and the default denyRead list, which both read it.

use std::path::{Path, PathBuf};

/// The directories a session depends on, read from the environment once, at the edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Env {
    pub(crate) home: PathBuf,
    pub(crate) cwd: PathBuf,
    pub(crate) agent_dir: PathBuf,
    /// The folders pi keeps this session's transcripts in, as pi names them (absolute, not
    /// canonical): the live one first (pi's own answer, else `pi_session::configured_dir`),
    /// then where the environment or the settings would put the next session. Empty: pi's
    /// per-project folder in the agent dir.
    pub(crate) session_dirs: Vec<PathBuf>,
    /// The live transcript, when pi said which (pi appends to it on the host).
    pub(crate) session_file: Option<PathBuf>,
    /// The extensions pi's settings make it load at start, as pi's package manager named
    /// them (`pi_loads`). Empty without pi (the CLI).
    pub(crate) pi_loads: Vec<crate::policy::pi_loads::PiLoad>,
    /// The session's own /tmp: a host folder bash sees at `/tmp`, and what the file tools'
    /// `/tmp/...` means (`tmp_map`). None: bash gets a private /tmp per command (no folder
    /// could be made, or the platform cannot bind one there).
    pub(crate) tmp: Option<PathBuf>,
}

impl Env {
    /// `PI_CODING_AGENT_DIR` (default `~/.pi/agent`) and `HOME`; pi expands a leading `~` in
    /// these variables, so we do too. Where pi keeps its transcripts: `with_sessions`.
    pub(crate) fn from_process(cwd: &Path) -> Env {
        let home = dirs::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        let agent_dir = std::env::var("PI_CODING_AGENT_DIR")
            .ok()
            .filter(|v| !v.is_empty())
            .and_then(|v| crate::paths::expand(&v, &home, cwd).ok())
            .unwrap_or_else(|| home.join(".pi/agent"));
        Env {
            home: home.clone(),
            cwd: cwd.to_path_buf(),
            agent_dir,
            session_dirs: vec![],
            session_file: None,
            pi_loads: vec![],
            tmp: None,
        }
    }

    /// Where pi keeps this session's transcripts: the live transcript `file` and the folder
    /// `dir` as pi named them (absolute), then the folder `PI_CODING_AGENT_SESSION_DIR` or the
    /// settings of this env's agent dir and project name (`pi_session::configured_dir`), where
    /// pi puts the next session. Without pi's answer, that last one is the live folder.
    pub(crate) fn with_sessions(&mut self, dir: Option<PathBuf>, file: Option<PathBuf>) {
        let var = std::env::var("PI_CODING_AGENT_SESSION_DIR").ok();
        let configured = crate::policy::pi_session::configured_dir(
            var.as_deref(),
            &self.home,
            &self.agent_dir,
            &self.cwd,
        );
        let live = file
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf);
        self.session_dirs.clear();
        for d in [live, dir, configured].into_iter().flatten() {
            if !self.session_dirs.contains(&d) {
                self.session_dirs.push(d);
            }
        }
        self.session_file = file;
    }

    /// The layout tests use: `<root>/home`, `<root>/proj`, the agent dir in its default place.
    #[cfg(test)]
    pub(crate) fn under(root: &Path) -> Env {
        Env {
            home: root.join("home"),
            cwd: root.join("proj"),
            agent_dir: root.join("home/.pi/agent"),
            session_dirs: vec![],
            session_file: None,
            pi_loads: vec![],
            tmp: None,
        }
    }

    pub(crate) fn global_config(&self) -> PathBuf {
        self.agent_dir.join("extensions").join("sandbox.json")
    }

    pub(crate) fn project_config(&self) -> PathBuf {
        self.cwd.join(".pi").join("sandbox.json")
    }
}
