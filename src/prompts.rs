//! The words of every permission prompt: the question (what, why, which rule), what the model
//! is told after the user declines, and what it is told when there is no UI to ask in. Pure;
//! the extension shows them and sends back the chosen option's id.

use std::path::Path;

use crate::guard::{Decision, Op, ENV_FILE_RULE};
use crate::trust::ProjectLayer;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What the extension sends back: `abort`, `once`, `session`, `project`, `global`,
    /// `always`, `trust`, `exact`, `prefix:N`.
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// `write`, `envRead`, `command`, `commandKey`, `trust`.
    pub kind: &'static str,
    /// The question, with what and why (shown as the dialog's title).
    pub title: String,
    /// The first choice is the default and always the one that keeps things blocked.
    pub choices: Vec<Choice>,
    /// Told to the model after the user chose the first choice (or dismissed the dialog).
    pub declined: String,
    /// Told to the model when there is no UI to ask in.
    pub no_ui: String,
}

fn choice(id: &str, label: impl Into<String>) -> Choice {
    Choice {
        id: id.to_string(),
        label: label.into(),
    }
}

/// The directory a write grant adds to allowWrite: the one the file is written in.
pub fn write_grant_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(path)
}

/// A write or edit outside allowWrite (the guard's `prompt` for a write).
pub fn write_outside(decision: &Decision, project_file: &Path, global_file: &Path) -> Prompt {
    let path = decision.path.display();
    let dir = write_grant_dir(&decision.path).display();
    Prompt {
        kind: "write",
        title: format!(
            "Sandbox: allow writing {path}?\n\nIt is outside every directory the sandbox lets the agent write ({} from {}). Allowing adds {dir} to filesystem.allowWrite; denyWrite, denyRead and pi's own files stay blocked inside it.",
            decision.rule, decision.source
        ),
        choices: vec![
            choice("abort", "Abort (keep it blocked)"),
            choice("session", format!("Allow writes in {dir} for this session")),
            choice(
                "project",
                format!("Allow for this project (saved in {})", project_file.display()),
            ),
            choice(
                "global",
                format!("Allow for all projects (saved in {})", global_file.display()),
            ),
        ],
        declined: format!(
            "Blocked write to {path}: the user was asked and declined to allow writes in {dir}. Do not try to write there another way; continue within the writable directories or ask the user."
        ),
        no_ui: decision.reason.clone(),
    }
}

/// A read of a sensitive env file in approval mode `ask`.
pub fn env_read(decision: &Decision) -> Prompt {
    let path = decision.path.display();
    Prompt {
        kind: "envRead",
        title: format!(
            "Sandbox: allow the agent to read {path}?\n\nEnv files usually hold secrets (API keys, passwords); the model would see its content. Until you allow it, the file is also hidden inside sandboxed bash.",
        ),
        choices: vec![
            choice("abort", "Deny"),
            choice("once", "Allow this read once"),
            choice("session", "Allow for this session"),
            choice("always", "Always allow reading this file"),
        ],
        declined: format!(
            "Blocked read of {path}: it is an env file and the user declined to let you read it. Do not try to read it another way; ask the user for the values you need."
        ),
        no_ui: decision.reason.clone(),
    }
}

/// A bash command that would run without an OS sandbox (none works here).
pub fn unsandboxed_command(command: &str, why_no_sandbox: &str) -> Prompt {
    Prompt {
        kind: "command",
        title: format!(
            "Sandbox: no OS sandbox works here, so this command would run with all your rights:\n\n  {}\n\n{why_no_sandbox}",
            shown_command(command)
        ),
        choices: vec![
            choice("abort", "Deny"),
            choice("once", "Run it once, unsandboxed"),
            choice("session", "Allow for this session…"),
            choice("always", "Always allow…"),
        ],
        declined: "Blocked: bash cannot be sandboxed here and the user declined to run this command unsandboxed. Do not retry it in another form; ask the user.".into(),
        no_ui: format!(
            "Blocked: bash cannot be sandboxed here, and running a command unsandboxed needs the user's approval, which cannot be asked for without a UI. {why_no_sandbox} Set PI_SANDBOX_APPROVAL_MODE=always to run such commands unsandboxed without asking, or install bubblewrap."
        ),
    }
}

/// After "allow for this session / always": what exactly the grant covers.
pub fn command_key(command: &str, prefixes: &[Vec<String>]) -> Prompt {
    let mut choices = vec![
        choice("abort", "Cancel (do not run it)"),
        choice(
            "exact",
            format!("Exactly this command: {}", shown_command(command)),
        ),
    ];
    for p in prefixes {
        choices.push(choice(
            &format!("prefix:{}", p.len()),
            format!("Any command starting with: {} …", p.join(" ")),
        ));
    }
    Prompt {
        kind: "commandKey",
        title: "Sandbox: which commands should run unsandboxed without asking? A prefix covers only simple commands: one command, no ; && | $(...) redirections, variables or newlines.".into(),
        choices,
        declined: "Blocked: the user cancelled running this command unsandboxed.".into(),
        no_ui: String::new(),
    }
}

/// A project config file that would widen the rules, first seen or changed.
pub fn project_trust(layer: &ProjectLayer) -> Prompt {
    let list: Vec<String> = layer
        .widenings
        .iter()
        .map(|w| format!("  • {} ({})", w.what, w.key))
        .collect();
    Prompt {
        kind: "trust",
        title: format!(
            "Sandbox: this project's {} would loosen the sandbox:\n\n{}\n\nA repository can ship this file; trust it only if you wrote it or checked it. Until then only its tightening rules apply.",
            layer.file.display(),
            list.join("\n")
        ),
        choices: vec![
            choice("abort", "Do not trust it (apply only what tightens)"),
            choice("trust", "Trust this file as it is now"),
        ],
        declined: String::new(),
        no_ui: String::new(),
    }
}

/// A command as one line for a dialog: control characters shown as escapes.
fn shown_command(command: &str) -> String {
    let mut out = String::new();
    for c in command.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The prompt for a guard decision that asks (`Verdict::Prompt`), by its operation.
pub fn for_decision(decision: &Decision, project_file: &Path, global_file: &Path) -> Prompt {
    if decision.op == Op::Write && decision.rule != ENV_FILE_RULE {
        write_outside(decision, project_file, global_file)
    } else {
        // Reading an env file, or overwriting one the agent may not read yet.
        env_read(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Verdict;
    use std::path::PathBuf;

    fn decision(op: Op, path: &str) -> Decision {
        Decision {
            verdict: Verdict::Prompt,
            op,
            path: PathBuf::from(path),
            rule: "outside allowWrite".into(),
            source: "built-in defaults".into(),
            reason: "no UI text".into(),
        }
    }

    #[test]
    fn each_situation_has_its_own_words() {
        let p = Path::new("/p/.pi/sandbox.json");
        let g = Path::new("/h/.pi/agent/extensions/sandbox.json");
        let w = for_decision(&decision(Op::Write, "/srv/data/x.txt"), p, g);
        assert_eq!(w.choices[0].id, "abort", "the default keeps it blocked");
        let ids: Vec<&str> = w.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "session", "project", "global"]);
        assert!(w.title.contains("/srv/data/x.txt") && w.title.contains("/srv/data"));
        assert!(w.title.contains("outside allowWrite"), "names the rule");
        assert!(w.choices[2].label.contains("/p/.pi/sandbox.json"));
        assert!(w.declined.contains("declined") && !w.declined.contains("no UI"));
        assert_eq!(w.no_ui, "no UI text");
        assert!(!w.title.contains("no UI"), "asking is not refusing");

        let r = for_decision(&decision(Op::Read, "/p/.env"), p, g);
        let ids: Vec<&str> = r.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "once", "session", "always"]);
        assert!(r.declined.contains("declined"));

        let c = unsandboxed_command("rm -rf x\nid", "bwrap is missing.");
        assert!(
            c.title.contains("rm -rf x\\nid"),
            "a newline cannot hide a second line"
        );
        assert!(c.no_ui.contains("PI_SANDBOX_APPROVAL_MODE=always"));
        assert_ne!(c.no_ui, c.declined);
    }

    #[test]
    fn key_choices_list_each_prefix_once() {
        let prefixes = crate::approvals::prefix_choices("git log --oneline");
        let k = command_key("git log --oneline", &prefixes);
        let ids: Vec<&str> = k.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "exact", "prefix:3", "prefix:2", "prefix:1"]);
        let k = command_key("a; b", &crate::approvals::prefix_choices("a; b"));
        let ids: Vec<&str> = k.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "exact"], "no prefix for a compound command");
    }
}
