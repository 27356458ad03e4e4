//! What the model is told before it runs anything: how bash differs inside the sandbox, in a
//! few lines (added to the system prompt by the extension). Told up front, the model does not
//! spend turns guessing why `cat .env` says "Permission denied".

use std::path::Path;

use super::Session;
use crate::policy::bash::Network;
use crate::policy::config_values::Mode;
use crate::policy::guard::ApprovalMode;
use crate::shown;

/// How many writable folders the brief names; the rest are counted.
const NAMED_ROOTS: usize = 4;

impl Session {
    /// The brief for bash's network `asked` (None: the session's default). None when the
    /// sandbox is off (yolo, disabled): nothing differs then.
    pub(crate) fn model_brief(&self, asked: Option<Network>) -> Option<String> {
        let guard = self.guard().filter(|g| g.active())?;
        let env = guard.env();
        let mut lines = vec![
            "pi-sandbox: the bash tool runs each command inside a sandbox (`bash -c`, no login profile). What differs from a plain shell:".to_string(),
        ];
        lines.push(match guard.mode().value {
            Mode::ReadOnly => "- Read-only mode: no command may write anywhere but /tmp; the write and edit tools are refused.".into(),
            _ => format!("- Writable: {}; everything else is read-only (\"Read-only file system\"). pi's own settings, git hooks and similar control files stay read-only even inside the project.", writable(guard.allow_write_paths(), &env.cwd, env.tmp.as_deref())),
        });
        if env.tmp.is_some() {
            lines.push("- /tmp is this session's own: the file tools and every bash command see the same one, and it is kept until the session ends. The host's /tmp is not visible.".into());
        }
        if guard.hides_env_files() {
            let ask = if guard.approval_mode() == ApprovalMode::Ask {
                "reading one with the read tool asks the user, whose answer also opens it to bash"
            } else {
                "they cannot be read in this session"
            };
            lines.push(format!("- Secrets are hidden: env files (.env, .env.local, …; templates such as .env.example are not) read as empty or \"Permission denied\" in bash, and credential folders (~/.ssh, ~/.aws, …) look empty; {ask}."));
        }
        lines.push("- The environment holds only what builds need (PATH, HOME, the locale, toolchain homes such as CARGO_HOME or VIRTUAL_ENV, ...): other variables, and any value shaped like a credential, are held back. If a command needs one, say so: the user can add its name to env.allow.".into());
        let network = asked.unwrap_or_else(|| self.default_network());
        lines.push(match network {
            Network::Off => "- No network: connections fail. The user can start pi with --sandbox-network filtered or on.".into(),
            Network::Filtered => "- Network goes through the session's proxy (HTTP_PROXY/HTTPS_PROXY are set): allowed hosts work, others are asked about or refused; a refusal is explained after the command. The host's own 127.0.0.1 services are not reachable unless allowed.".into(),
            Network::On => "- Network: the host's, unfiltered.".into(),
        });
        lines.push(if cfg!(target_os = "linux") {
            "- A process a command leaves running in the background (a dev server, `cmd &`) keeps running in the sandbox until the session ends; later commands reach it on 127.0.0.1 and localhost, but cannot see or kill it (each command has its own processes). Use a different port if one is taken.".into()
        } else {
            "- Processes a command starts in the background end when the command ends.".into()
        });
        lines.push("- When the sandbox causes a failure, a line starting with [pi-sandbox] after the output says what was refused and how the user can allow it; do not work around it.".into());
        Some(lines.join("\n"))
    }
}

/// The writable folders as the brief names them: the project as "the project (<path>)", the
/// session's /tmp left out (its own line says it).
fn writable<'a>(roots: impl Iterator<Item = &'a Path>, cwd: &Path, tmp: Option<&Path>) -> String {
    let mut named = vec![format!("the project ({})", shown::path(cwd))];
    let mut more = 0;
    for r in roots.filter(|r| *r != cwd && Some(*r) != tmp) {
        if named.len() <= NAMED_ROOTS {
            named.push(shown::path(r));
        } else {
            more += 1;
        }
    }
    if tmp.is_some() {
        named.push("/tmp".into());
    }
    if more > 0 {
        named.push(format!("{more} more"));
    }
    named.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_comes_first_and_long_lists_are_counted() {
        let cwd = Path::new("/w/p");
        let tmp = Path::new("/t/s");
        let roots: Vec<&Path> = ["/w/p", "/t/s", "/a", "/b", "/c", "/d", "/e", "/f"]
            .into_iter()
            .map(Path::new)
            .collect();
        assert_eq!(
            writable(roots.into_iter(), cwd, Some(tmp)),
            "the project (/w/p), /a, /b, /c, /d, /tmp, 2 more"
        );
    }
}
