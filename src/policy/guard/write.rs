//! Deciding a write: mode → pi's control surface (mandatory) → denyWrite (deny wins) →
//! allowWrite containment → otherwise blocked.

use std::path::{Path, PathBuf};

use super::{
    git_path_label, rule_step, surface_label, ApprovalMode, Decision, Guard, KnownGitDirs, Step,
    Trace, Verdict, DEPENDENCY_TREES, ENV_FILE_RULE,
};
use crate::policy::config::Source;
use crate::policy::protected;
use crate::policy::protected::GitPathKind;

impl Guard {
    pub(super) fn decide_write(
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
        if let Some(d) = self.write_to_mandatory(path, &shown, steps, &mut is_git_dir, &make) {
            return d;
        }
        if let Some(d) = self.write_denied(path, &shown, steps, &mut is_git_dir, &make) {
            return d;
        }
        let allow = self
            .allow_write_root(path)
            .or_else(|| self.write_file_grant(path));
        steps.push(|| Step {
            rule: "allowWrite".into(),
            source: allow
                .map(|d| d.source.clone())
                .unwrap_or_else(|| "all layers".into()),
            matched: allow.is_some(),
        });
        if let Some(d) =
            self.write_to_env_file(path, &shown, env_alias, allow.is_some(), steps, &make)
        {
            return d;
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
        self.write_outside(&shown, &make)
    }

    /// pi's control surface and the git paths around it: never writable, whatever the config.
    fn write_to_mandatory(
        &self,
        path: &Path,
        shown: &str,
        steps: &mut Trace,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
        make: &impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Option<Decision> {
        let surface = self.control_surface(path, is_git_dir);
        steps.push(|| Step {
            rule: "pi control surface".into(),
            source: Source::Mandatory.to_string(),
            matched: surface.is_some(),
        });
        if let Some(hit) = surface {
            return Some(make(
                Verdict::Deny,
                surface_label(&hit),
                Source::Mandatory.to_string(),
                format!(
                    "Blocked write to {shown}: it is part of pi's control surface ({}: {}), which the agent may never change, whatever the config says. Edit it yourself outside pi if the change is wanted.",
                    surface_label(&hit),
                    hit.entry.why
                ),
            ));
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
            return Some(make(
                Verdict::Deny,
                git_path_label(&g),
                Source::Mandatory.to_string(),
                reason,
            ));
        }
        None
    }

    /// denyRead (a hidden directory is read-only in bash too), then denyWrite.
    fn write_denied(
        &self,
        path: &Path,
        shown: &str,
        steps: &mut Trace,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
        make: &impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Option<Decision> {
        // A denyRead directory is an empty read-only mask inside bash: nothing can be
        // written into it there, and the file tools must not either.
        let hidden = self.deny_read.first_match(path);
        steps.push(|| rule_step("denyRead (writes into hidden paths)", hidden));
        if let Some(rule) = hidden {
            return Some(make(
                Verdict::Deny,
                rule.label.clone(),
                rule.source.clone(),
                format!(
                    "Blocked write to {shown}: it lies in {} from {}, which is hidden from the agent (and read-only inside the sandbox). To allow it, {}.",
                    rule.label,
                    rule.source,
                    self.how_to_drop("entry", "filesystem.denyRead", &rule.source)
                ),
            ));
        }
        let exempt = self.deny_write_exemption(path, is_git_dir);
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
            return Some(make(
                Verdict::Deny,
                rule.label.clone(),
                rule.source.clone(),
                format!(
                    "Blocked write to {shown}: it matches {} from {} (denyWrite wins over allowWrite). To allow it, {}.",
                    rule.label,
                    rule.source,
                    self.how_to_drop("pattern", "filesystem.denyWrite", &rule.source)
                ),
            ));
        }
        None
    }

    /// An existing env file inside allowWrite, while its reading is not allowed.
    fn write_to_env_file(
        &self,
        path: &Path,
        shown: &str,
        env_alias: bool,
        allowed: bool,
        steps: &mut Trace,
        make: &impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Option<Decision> {
        // An existing env file the user has not allowed reading is hidden in bash; the tools
        // may not overwrite it blind either: the same question as a read.
        let hidden_env = allowed
            && self.masks_env_file_named(path, env_alias)
            && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
        if allowed {
            steps.push(|| Step {
                rule: format!("{ENV_FILE_RULE}, existing"),
                source: format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str()),
                matched: hidden_env,
            });
        }
        if !hidden_env {
            return None;
        }
        let source = format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str());
        Some(match self.approval {
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
                    "Blocked write to {shown}: it is an env file, which usually holds secrets; changing it needs the user's approval, and there is no UI to ask in. The user can allow it from pi's interactive mode (changing it there asks), or make the change themselves."
                ),
            ),
        })
    }

    /// Outside every allowWrite directory.
    fn write_outside(
        &self,
        shown: &str,
        make: &impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Decision {
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

    /// Why denyWrite does not apply to `path`: it lies in a rebuildable dependency tree or
    /// in a git dir's data, below an allowWrite root. Files there are the package
    /// manager's or git's, not the user's (pip's `cacert.pem`), and pinning them would make
    /// the tree impossible to remove or rebuild. pi's control surface still applies there.
    /// Returns the exempt directory (its contents are exempt, not itself) and why.
    pub(super) fn deny_write_exemption(
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
}
