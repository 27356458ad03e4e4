//! Deciding a read: mode → denyRead → env files.

use std::path::Path;

use super::{
    is_process_file, rule_step, ApprovalMode, Decision, Guard, Step, Trace, Verdict, ENV_FILE_RULE,
};
use crate::policy::config::Source;

impl Guard {
    pub(super) fn decide_read(
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
                    "Blocked read of {shown}: it is covered by {} from {}. To allow it, {}.",
                    rule.label,
                    rule.source,
                    self.how_to_drop("entry", "filesystem.denyRead", &rule.source)
                ),
            );
        }
        if let Some(d) = self.read_env_file(path, &shown, env_alias, steps, &make) {
            return d;
        }
        make(
            Verdict::Allow,
            "no denyRead entry covers it".into(),
            "all layers".into(),
            format!("Read of {shown} is allowed."),
        )
    }
    /// An env file: allowed, asked about or refused as the approval mode says.
    fn read_env_file(
        &self,
        path: &Path,
        shown: &str,
        env_alias: bool,
        steps: &mut Trace,
        make: &impl Fn(Verdict, String, String, String) -> Decision,
    ) -> Option<Decision> {
        // A directory named `.env.d` holds files; it is not one.
        let env_file = (env_alias || self.is_secret_env_file(path))
            && !std::fs::metadata(path).is_ok_and(|m| m.is_dir());
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
                return Some(make(
                    Verdict::Allow,
                    "sensitive env file (.env, .env.*), read granted".into(),
                    scope.1.clone(),
                    format!("Read of {shown} is allowed: {}.", scope.1),
                ));
            }
        }
        if !env_file {
            return None;
        }
        let rule = ENV_FILE_RULE.to_string();
        let source = format!("PI_SANDBOX_APPROVAL_MODE={}", self.approval.as_str());
        Some(match self.approval {
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
                    "Blocked read of {shown}: env files usually hold secrets, reading one needs the user's approval, and there is no UI to ask in. The user can allow it from pi's interactive mode (reading it there asks; its \"always\" answer holds for later runs), or copy what is needed into a file that is not an env file."
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
        })
    }
}
