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
    /// `write`, `envRead`, `envWrite`, `command`, `commandKey`, `trust`, `network`.
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

/// The four answers a blocked write and an unknown host share: keep it blocked (the first,
/// selected by default), allow `what` for this session (in memory), for this project (in its
/// config file), for all projects (in the global file).
fn scope_choices(what: &str, project_file: &Path, global_file: &Path) -> Vec<Choice> {
    vec![
        choice("abort", "Abort (keep it blocked)"),
        choice("session", format!("Allow {what} for this session")),
        choice(
            "project",
            format!(
                "Allow {what} for this project (saved in {})",
                shown_path(project_file)
            ),
        ),
        choice(
            "global",
            format!(
                "Allow {what} for all projects (saved in {})",
                shown_path(global_file)
            ),
        ),
    ]
}

/// The directory a write grant adds to allowWrite: the one the file is written in.
pub fn write_grant_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(path)
}

/// A write or edit outside allowWrite (the guard's `prompt` for a write). `broad`: the
/// directory a grant would open holds the home directory or the session's (`/`, `~`, an
/// ancestor): only Abort is offered, a grant that wide is for the config file.
pub fn write_outside(
    decision: &Decision,
    project_file: &Path,
    global_file: &Path,
    broad: bool,
) -> Prompt {
    let path = shown_path(&decision.path);
    let dir = shown_path(write_grant_dir(&decision.path));
    let declined = format!(
        "Blocked write to {path}: the user was asked and declined to allow writes in {dir}. Do not try to write there another way; continue within the writable directories or ask the user."
    );
    if broad {
        return Prompt {
            kind: "write",
            title: format!(
                "Sandbox: the agent wants to write {path}, outside every writable directory ({} from {}).\n\nAllowing it would make {dir} writable, which holds your home or this project's parents: too wide to grant from here. If it is really wanted, add a narrower directory to filesystem.allowWrite yourself.",
                decision.rule, decision.source
            ),
            choices: vec![choice("abort", "Abort (keep it blocked)")],
            declined,
            no_ui: decision.reason.clone(),
        };
    }
    Prompt {
        kind: "write",
        title: format!(
            "Sandbox: allow writing {path}?\n\nIt is outside every directory the sandbox lets the agent write ({} from {}). Allowing adds {dir} to filesystem.allowWrite; denyWrite, denyRead and pi's own files stay blocked inside it.",
            decision.rule, decision.source
        ),
        choices: scope_choices(&format!("writes in {dir}"), project_file, global_file),
        declined,
        no_ui: decision.reason.clone(),
    }
}

/// A read of a sensitive env file in approval mode `ask`, or (`decision.op` write) an
/// overwrite of one the agent may not read yet.
pub fn env_file(decision: &Decision) -> Prompt {
    let path = shown_path(&decision.path);
    let (kind, question, once, declined) = match decision.op {
        Op::Read => (
            "envRead",
            format!("Sandbox: allow the agent to read {path}?"),
            "Allow this read once",
            "read it",
        ),
        Op::Write => (
            "envWrite",
            format!("Sandbox: allow the agent to change {path} (and to read it)?"),
            "Allow this change once",
            "change it",
        ),
    };
    Prompt {
        kind,
        title: format!(
            "{question}\n\nEnv files usually hold secrets (API keys, passwords); the model would see the content. Until you allow it, the file is also hidden inside sandboxed bash.",
        ),
        choices: vec![
            choice("abort", "Deny"),
            choice("once", once),
            choice("session", "Allow for this session"),
            choice("always", "Always allow this file"),
        ],
        declined: format!(
            "Blocked: {path} is an env file and the user declined to let you {declined}. Do not try another way; ask the user for the values you need."
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
            shown(command)
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
        choice("exact", format!("Exactly this command: {}", shown(command))),
    ];
    for p in prefixes {
        choices.push(choice(
            &format!("prefix:{}", p.len()),
            format!("Any command starting with: {} …", p.join(" ")),
        ));
    }
    Prompt {
        kind: "commandKey",
        title: "Sandbox: which commands should run unsandboxed without asking? A prefix covers only simple commands: one command, no ; && | $(...) redirections, variables or newlines.\n\nA command runs what its files say: `npm test` runs package.json's script, `make` the Makefile, `./build.sh` the script, and the agent can edit those files. Grant only commands whose behaviour the agent cannot change, and the narrowest prefix that does the job.".into(),
        choices,
        declined: "Blocked: the user cancelled running this command unsandboxed.".into(),
        no_ui: String::new(),
    }
}

/// A sandboxed command wants to reach a host that neither network list names. `local`: the
/// host is this machine's loopback or a non-public address (the local network), and the
/// question says so: what listens there is not the internet.
pub fn network_host(
    host: &str,
    port: u16,
    local: bool,
    project_file: &Path,
    global_file: &Path,
) -> Prompt {
    let host = shown(host);
    let what = if local {
        format!("{host} is THIS machine or its local network, not the internet: whatever listens there (a database, a dev server, an admin interface, a cloud metadata service) would take the command's requests, on any port.")
    } else {
        format!("{host} is in neither network.allowedDomains nor network.deniedDomains. Allowing lets sandboxed commands reach it on any port; what they send there leaves this machine.")
    };
    Prompt {
        kind: "network",
        title: format!(
            "Sandbox: allow the running command to connect to {host} (port {port})?\n\n{what}"
        ),
        choices: scope_choices(&host, project_file, global_file),
        declined: format!(
            "Blocked: a connection to {host}:{port}; the user was asked and declined. Do not try to reach it another way; continue without it or ask the user."
        ),
        no_ui: format!(
            "Blocked: a connection to {host}:{port}: {host} is not in network.allowedDomains, and there is no UI to ask the user. To allow it, add \"{host}\" to network.allowedDomains in {} (all projects) or {} (this project).",
            shown_path(global_file),
            shown_path(project_file)
        ),
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

/// Text the agent chose (a command, a path) as one line for a dialog: control characters,
/// and the invisible ones that reorder or hide text (bidi overrides, zero-width), shown as
/// escapes, so that a name cannot draw fake lines or reverse what the user reads.
pub fn shown(text: &str) -> String {
    let invisible = |c: char| {
        matches!(c,
            '\u{00ad}' | '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    let mut out = String::new();
    for c in text.chars() {
        if c.is_control() || invisible(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

fn shown_path(path: &Path) -> String {
    shown(&path.to_string_lossy())
}

/// The prompt for a guard decision that asks (`Verdict::Prompt`): a write outside allowWrite
/// (`broad` as in `write_outside`), or an env file's read or overwrite.
pub fn for_decision(
    decision: &Decision,
    project_file: &Path,
    global_file: &Path,
    broad: bool,
) -> Prompt {
    if decision.op == Op::Write && decision.rule != ENV_FILE_RULE {
        write_outside(decision, project_file, global_file, broad)
    } else {
        env_file(decision)
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
        let w = for_decision(&decision(Op::Write, "/srv/data/x.txt"), p, g, false);
        assert_eq!(w.choices[0].id, "abort", "the default keeps it blocked");
        let ids: Vec<&str> = w.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "session", "project", "global"]);
        assert!(w.title.contains("/srv/data/x.txt") && w.title.contains("/srv/data"));
        assert!(w.title.contains("outside allowWrite"), "names the rule");
        assert!(w.choices[2].label.contains("/p/.pi/sandbox.json"));
        assert!(w.declined.contains("declined") && !w.declined.contains("no UI"));
        assert_eq!(w.no_ui, "no UI text");
        assert!(!w.title.contains("no UI"), "asking is not refusing");

        let r = for_decision(&decision(Op::Read, "/p/.env"), p, g, false);
        let ids: Vec<&str> = r.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "once", "session", "always"]);
        assert!(r.declined.contains("declined"));

        let c = unsandboxed_command("rm -rf x\nid", "bwrap is missing.");
        assert!(
            c.title.contains("rm -rf x\\u{a}id"),
            "a newline cannot hide a second line"
        );
        assert!(c.no_ui.contains("PI_SANDBOX_APPROVAL_MODE=always"));
        assert_ne!(c.no_ui, c.declined);
    }

    #[test]
    fn names_the_agent_chose_cannot_draw_or_reorder_the_dialog() {
        let p = Path::new("/p/.pi/sandbox.json");
        let g = Path::new("/g.json");
        let sneaky = "/srv/a\nAllowing adds /p/dist\u{1b}[2K\u{202e}txt.exe/x";
        let w = for_decision(&decision(Op::Write, sneaky), p, g, false);
        for text in std::iter::once(&w.title).chain(w.choices.iter().map(|c| &c.label)) {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{202e}'),
                "{text}"
            );
            assert!(!text.contains("\nAllowing adds /p/dist"), "{text}");
        }
        assert!(w.title.contains("\\u{a}Allowing adds"), "{}", w.title);
        // A grant as wide as the home or the root is not offered.
        let b = for_decision(&decision(Op::Write, "/x.txt"), p, g, true);
        let ids: Vec<&str> = b.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort"]);
        assert!(b.title.contains("too wide"));
        // Overwriting an env file is asked as such, not as a read.
        let mut d = decision(Op::Write, "/p/.env");
        d.rule = ENV_FILE_RULE.into();
        let e = for_decision(&d, p, g, false);
        assert_eq!(e.kind, "envWrite");
        assert!(e.title.contains("change /p/.env"));
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
