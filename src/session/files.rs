//! pi's file tools: each call judged by the guard (with the names a protected file has
//! besides its own, and the env files bash hides under other names), then opened without
//! following links.

use std::path::Path;

use serde_json::Value;

use super::tools::{self, ToolCheck};
use super::{env_aliases, Session};
use crate::open::{self, OpenError};
use crate::policy::config::Source;
use crate::policy::guard::{Decision, Guard, Op, Step, Verdict};
use crate::surface::scan::Scan;
use crate::violations::Violation;

/// Why one of pi's file operations did not happen.
#[derive(Debug)]
pub(crate) enum FileOpError {
    /// The guard refused it; the reason says why and how to change that.
    Blocked(String),
    Open(OpenError),
}

impl From<OpenError> for FileOpError {
    fn from(e: OpenError) -> Self {
        FileOpError::Open(e)
    }
}

impl Session {
    /// What a scan found, kept for the guard's second-name check.
    pub(crate) fn remember(&self, scan: &Scan) {
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
    pub(crate) fn second_name_check(&self, guard: &Guard, decision: Decision) -> Decision {
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

    pub(crate) fn check(&self, op: Op, path: &Path) -> Decision {
        match self.guard() {
            Some(g) => {
                let path = &g.session_path(path);
                // Which directories are git dirs is a write's question: the index answers
                // where it knows.
                let d = match op {
                    Op::Write => self.judged_with_hooks(
                        g,
                        || self.with_git_dirs(|known| g.check_with(op, path, known)),
                        |d| Some(d),
                    ),
                    Op::Read => self.committed_env_read(g, g.check(op, path)),
                };
                self.second_name_check(g, d)
            }
            None => self.refused(op, path),
        }
    }

    /// A read the guard would ask about, of an env file whose content git held before
    /// (`CommittedEnv::hides_nothing`): allowed, as bash shows it (approval mode ask only).
    fn committed_env_read(&self, guard: &Guard, d: Decision) -> Decision {
        if d.verdict != Verdict::Prompt
            || d.rule != crate::policy::guard::ENV_FILE_RULE
            || !self.committed_env.hides_nothing(&d.path, guard)
        {
            return d;
        }
        Decision {
            verdict: Verdict::Allow,
            rule: format!("{}, content held by git", crate::policy::guard::ENV_FILE_RULE),
            source: "the repository's objects".into(),
            reason: format!(
                "Read of {} is allowed: git's objects held this exact content before the sandbox's first session, so `git show` reads it anyway.",
                crate::shown::path(&d.path)
            ),
            ..d
        }
    }

    pub(crate) fn explain(&self, op: Op, path: &Path) -> (Decision, Vec<Step>) {
        match self.guard() {
            Some(g) => {
                let path = &g.session_path(path);
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

    /// `d` as the user reads it (`check`, `explain`): a path in the session's own /tmp is
    /// named `/tmp/...`, as the session's tools and commands name it.
    pub(crate) fn shown(&self, d: Decision) -> Decision {
        let Some(g) = self.guard() else { return d };
        let Some(tmp) = &g.env().tmp else { return d };
        // The folder's name is the session's own (a random part): only it is replaced.
        let host = tmp.to_string_lossy();
        let named = |text: &str| text.replace(host.as_ref(), crate::policy::tmp_map::TMP);
        Decision {
            rule: named(&d.rule),
            reason: named(&d.reason),
            path: crate::policy::tmp_map::shown_in_session(&d.path, tmp).unwrap_or(d.path),
            ..d
        }
    }

    /// Checks a pi tool call; `None` when the tool is not a guarded file tool.
    pub(crate) fn check_tool(&self, tool: &str, input: &Value) -> Option<ToolCheck> {
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
                    if c.decision.op == Op::Read {
                        c.decision = self.committed_env_read(g, c.decision);
                    }
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
                patch: vec![],
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
    pub(crate) fn read_file(&self, path: &Path) -> Result<Vec<u8>, FileOpError> {
        let d = self.judged(Op::Read, path)?;
        Ok(open::read(&d.path)?)
    }

    /// pi's write and edit: the judged file's content replaced, links refused.
    pub(crate) fn write_file(&self, path: &Path, content: &[u8]) -> Result<(), FileOpError> {
        let d = self.judged(Op::Write, path)?;
        Ok(open::write(&d.path, content, open::link_count(&d.path))?)
    }

    /// pi's `access` before a read (or an edit, which reads and writes).
    pub(crate) fn access_file(&self, path: &Path, write: bool) -> Result<(), FileOpError> {
        let d = self.judged(Op::Read, path)?;
        if write {
            self.judged(Op::Write, path)?;
        }
        Ok(open::access(&d.path, write)?)
    }

    /// pi's write creates the file's directory first: judged as a write of the directory,
    /// unless it is there already (nothing is made; the file's own write is judged next, so
    /// a file allowed alone can be written in a folder that is not writable).
    pub(crate) fn mkdir(&self, dir: &Path) -> Result<(), FileOpError> {
        // Only where reading is allowed: a hidden folder's existence is not told.
        let d = self.check(Op::Read, dir);
        if d.allowed() && std::fs::symlink_metadata(&d.path).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        let d = self.judged(Op::Write, dir)?;
        Ok(open::mkdir_all(&d.path)?)
    }

    /// Records a guard decision that refused (prompts are the user's to answer).
    pub(crate) fn log_denied(&self, operation: &str, d: &Decision) {
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
}
