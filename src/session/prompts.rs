//! The words of every permission prompt: the question (what, why, which rule), what the model
//! is told after the user declines, and what it is told when there is no UI to ask in. Pure;
//! the extension shows them and sends back the chosen option's id.

use std::path::{Path, PathBuf};

use crate::policy::guard::{Decision, Op, ENV_FILE_RULE};
use crate::policy::trust::{ProjectLayer, LISTED};
use crate::shown;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// What the extension sends back: `abort`, `once`, `session`, `project`, `global`,
    /// `always`, `trust`, `exact`, `prefix:N`.
    pub(crate) id: String,
    pub(crate) label: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// `write`, `envRead`, `envWrite`, `command`, `commandKey`, `trust`, `network`.
    pub(crate) kind: &'static str,
    /// The question, with what and why (shown as the dialog's title).
    pub(crate) title: String,
    /// The first choice is the default and always the one that keeps things blocked.
    pub(crate) choices: Vec<Choice>,
    /// Told to the model after the user chose the first choice (or dismissed the dialog).
    pub(crate) declined: String,
    /// Told to the model when there is no UI to ask in.
    pub(crate) no_ui: String,
}

fn choice(id: &str, label: impl Into<String>) -> Choice {
    Choice {
        id: id.to_string(),
        label: label.into(),
    }
}

/// Where the answers "for this project" and "for all projects" write a grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GrantFiles {
    pub(crate) project: PathBuf,
    pub(crate) global: PathBuf,
    /// The project's file applies as written (absent, only tightening, or trusted). If not,
    /// an entry added to it waits for the user's trust, and the grant holds for this
    /// session only: its option must not promise more.
    pub(crate) project_applies: bool,
    /// Where an entry added to network.allowedDomains takes effect here, worded for a note:
    /// the key in the file that holds the list in force (`Session`'s `allowed_domains_in`).
    pub(crate) allowed_in: String,
}

impl GrantFiles {
    fn allowed_in(&self) -> &str {
        if self.allowed_in.is_empty() {
            "network.allowedDomains"
        } else {
            &self.allowed_in
        }
    }
}

/// The four answers a blocked write and an unknown host share: keep it blocked (the first,
/// selected by default), allow it for this session (in memory), for this project (in its
/// config file), for all projects (in the global file). Short: the title names what is
/// allowed, once.
fn scope_choices(files: &GrantFiles) -> Vec<Choice> {
    let project = shown::path(&files.project);
    let this_project = if files.project_applies {
        format!("Allow for this project (saved in {project})")
    } else {
        format!("Allow for this session only: this project's {project} is not trusted (the entry is added to it and holds once you trust the file: /sandbox trust)")
    };
    vec![
        choice("abort", "Abort (keep it blocked)"),
        choice("session", "Allow for this session"),
        choice("project", this_project),
        choice(
            "global",
            format!(
                "Allow for all projects (saved in {})",
                shown::path(&files.global)
            ),
        ),
    ]
}

/// The directory a write grant adds to allowWrite: the one the file is written in.
pub(crate) fn write_grant_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(path)
}

/// A write or edit outside allowWrite (the guard's `prompt` for a write). `broad`: the
/// directory a grant would open holds the home directory or the session's (`/`, `~`, an
/// ancestor): only Abort is offered, a grant that wide is for the config file.
pub(crate) fn write_outside(decision: &Decision, files: &GrantFiles, broad: bool) -> Prompt {
    let path = shown::path(&decision.path);
    let dir = shown::path(write_grant_dir(&decision.path));
    let (rule, source) = (shown::text(&decision.rule), shown::text(&decision.source));
    let declined = format!(
        "Blocked write to {path}: the user was asked and declined to allow writes in {dir}. Do not try to write there another way; continue within the writable directories or ask the user."
    );
    if broad {
        // A folder grant would open the home or the project's parents: the file alone.
        return Prompt {
            kind: "write",
            title: format!(
                "Sandbox: allow writing {path}?\n\nIt is outside every writable directory ({rule} from {source}), and its folder holds your home or this project's parents, too wide to open: only this file can be allowed.",
            ),
            choices: vec![
                choice("abort", "Abort (keep it blocked)"),
                choice("once", "Allow this write only"),
                choice("file-session", "Allow writing this file for this session"),
            ],
            declined,
            no_ui: decision.reason.clone(),
        };
    }
    Prompt {
        kind: "write",
        title: format!(
            "Sandbox: allow writes in {dir}?\n\nThe agent wants to write {name} there, outside every directory it may write ({rule} from {source}). Allowing adds the directory to filesystem.allowWrite; denyWrite, denyRead and pi's own files stay blocked inside it.",
            name = shown::name(&decision.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
        ),
        choices: scope_choices(files),
        declined,
        no_ui: decision.reason.clone(),
    }
}

/// A read of a sensitive env file in approval mode `ask`, or (`decision.op` write) an
/// overwrite of one the agent may not read yet.
pub(crate) fn env_file(decision: &Decision) -> Prompt {
    let path = shown::path(&decision.path);
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
pub(crate) fn unsandboxed_command(command: &str, why_no_sandbox: &str) -> Prompt {
    Prompt {
        kind: "command",
        title: format!(
            "Sandbox: no OS sandbox works here, so this command would run with all your rights:\n\n  {}\n\n{why_no_sandbox}",
            shown::text(command)
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

/// After "allow for this session / always": what exactly the grant covers. The command and
/// its words are shown whole (the user grants exactly them), escaped; a word holding a
/// space is quoted, so that the words are told apart.
pub(crate) fn command_key(command: &str, prefixes: &[Vec<String>]) -> Prompt {
    let word = |w: &String| {
        if w.is_empty() || w.chars().any(|c| c.is_whitespace() || c == '\'') {
            format!("'{}'", shown::text(w))
        } else {
            shown::text(w)
        }
    };
    let mut choices = vec![
        choice("abort", "Cancel (do not run it)"),
        choice(
            "exact",
            format!("Exactly this command: {}", shown::text(command)),
        ),
    ];
    for p in prefixes {
        let words: Vec<String> = p.iter().map(word).collect();
        choices.push(choice(
            &format!("prefix:{}", p.len()),
            format!("Any command starting with: {} …", words.join(" ")),
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
pub(crate) fn network_host(host: &str, port: u16, local: bool, files: &GrantFiles) -> Prompt {
    let host = shown::name(host);
    let what = if local {
        "It is THIS machine or its local network, not the internet: whatever listens there (a database, a dev server, an admin interface, a cloud metadata service) would take the command's requests, on any port.".to_string()
    } else {
        "It is in neither network.allowedDomains nor network.deniedDomains. Allowing lets sandboxed commands reach it on any port; what they send there leaves this machine.".to_string()
    };
    Prompt {
        kind: "network",
        title: format!(
            "Sandbox: allow the running command to connect to {host} (port {port})?\n\n{what}"
        ),
        choices: scope_choices(files),
        declined: format!(
            "Blocked: a connection to {host}:{port}; the user was asked and declined. Do not try to reach it another way; continue without it or ask the user."
        ),
        no_ui: format!(
            "Blocked: a connection to {host}:{port}: {host} is not in network.allowedDomains, and there is no UI to ask the user. To allow it, add \"{host}\" to {}.",
            files.allowed_in()
        ),
    }
}

/// A project config file that would widen the rules, first seen or changed. The heaviest
/// widenings first (the sandbox off, writes reaching the home or above the project, then
/// other writes outside it, hosts and sockets), at most `LISTED`, the rest counted: a long
/// list cannot push the line that matters off the screen.
pub(crate) fn project_trust(layer: &ProjectLayer) -> Prompt {
    let all = layer.by_weight();
    let mut list: Vec<String> = all
        .iter()
        .take(LISTED)
        .map(|w| format!("  • {} ({})", w.what, w.key))
        .collect();
    if all.len() > LISTED {
        list.push(format!(
            "  … and {} more (/sandbox lists them all)",
            all.len() - LISTED
        ));
    }
    Prompt {
        kind: "trust",
        title: format!(
            "Sandbox: this project's {} would loosen the sandbox:\n\n{}\n\nA repository can ship this file; trust it only if you wrote it or checked it. Until then only its tightening rules apply.",
            shown::path(&layer.file),
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

/// The prompt for a guard decision that asks (`Verdict::Prompt`): a write outside allowWrite
/// (`broad` as in `write_outside`), or an env file's read or overwrite.
pub(crate) fn for_decision(decision: &Decision, files: &GrantFiles, broad: bool) -> Prompt {
    if decision.op == Op::Write && decision.rule != ENV_FILE_RULE {
        write_outside(decision, files, broad)
    } else {
        env_file(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::guard::Verdict;
    use crate::policy::trust::{Trust, Weight, Widening};

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

    fn files(project: &str, global: &str) -> GrantFiles {
        GrantFiles {
            project: project.into(),
            global: global.into(),
            project_applies: true,
            // As the session words it (`allowed_domains_in`), the project's file holding the
            // list in force.
            allowed_in: format!(
                "network.allowedDomains in {}",
                shown::path(std::path::Path::new(project))
            ),
        }
    }

    #[test]
    fn each_situation_has_its_own_words() {
        let f = files(
            "/p/.pi/sandbox.json",
            "/h/.pi/agent/extensions/sandbox.json",
        );
        let w = for_decision(&decision(Op::Write, "/srv/data/x.txt"), &f, false);
        assert_eq!(w.choices[0].id, "abort", "the default keeps it blocked");
        let ids: Vec<&str> = w.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "session", "project", "global"]);
        // The directory once, the file by its name; the options do not repeat them.
        assert!(
            w.title.contains("allow writes in /srv/data?") && w.title.contains("write x.txt there")
        );
        assert_eq!(w.title.matches("/srv/data").count(), 1, "{}", w.title);
        assert!(w.choices.iter().all(|c| !c.label.contains("/srv")));
        assert!(w.title.contains("outside allowWrite"), "names the rule");
        assert!(w.choices[2].label.contains("/p/.pi/sandbox.json"));
        assert!(w.declined.contains("declined") && !w.declined.contains("no UI"));
        assert_eq!(w.no_ui, "no UI text");
        assert!(!w.title.contains("no UI"), "asking is not refusing");

        let r = for_decision(&decision(Op::Read, "/p/.env"), &f, false);
        let ids: Vec<&str> = r.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "once", "session", "always"]);
        assert!(r.declined.contains("declined"));

        let c = unsandboxed_command("rm -rf x\nid", "bwrap is missing.");
        assert!(
            c.title.contains("rm -rf x\\x0aid"),
            "a newline cannot hide a second line"
        );
        assert!(c.no_ui.contains("PI_SANDBOX_APPROVAL_MODE=always"));
        assert_ne!(c.no_ui, c.declined);
    }

    /// Every text of `p` the user sees.
    fn seen(p: &Prompt) -> Vec<&String> {
        std::iter::once(&p.title)
            .chain(p.choices.iter().map(|c| &c.label))
            .collect()
    }

    fn no_hidden_characters(p: &Prompt) {
        for text in seen(p) {
            let bad = text.chars().find(|&c| c != '\n' && shown::is_hidden(c));
            assert_eq!(bad, None, "{text}");
        }
    }

    #[test]
    fn names_the_agent_chose_cannot_draw_or_reorder_the_dialog() {
        let f = files("/p/.pi/sandbox.json", "/g.json");
        let sneaky = "/srv/a\nAllowing adds /p/dist\u{1b}[2K\u{202e}txt.exe/x";
        let w = for_decision(&decision(Op::Write, sneaky), &f, false);
        no_hidden_characters(&w);
        for text in seen(&w) {
            assert!(!text.contains("\nAllowing adds /p/dist"), "{text}");
        }
        assert!(w.title.contains("\\x0aAllowing adds"), "{}", w.title);
        // The rule and its source come from config files: escaped too.
        let mut d = decision(Op::Write, "/srv/x");
        d.rule = "denyWrite \u{2028}*.pem\r".into();
        d.source = "/p/.pi/\u{e0041}sandbox.json".into();
        let w = for_decision(&d, &f, false);
        no_hidden_characters(&w);
        assert!(w
            .title
            .contains("\\u{2028}*.pem\\x0d from /p/.pi/\\u{e0041}sandbox.json"));
        // A folder grant as wide as the home or the root is not offered: the file alone is.
        let b = for_decision(&decision(Op::Write, "/x.txt"), &f, true);
        let ids: Vec<&str> = b.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "once", "file-session"]);
        assert!(b.title.contains("too wide"));
        // Overwriting an env file is asked as such, not as a read.
        let mut d = decision(Op::Write, "/p/.env");
        d.rule = ENV_FILE_RULE.into();
        let e = for_decision(&d, &f, false);
        assert_eq!(e.kind, "envWrite");
        assert!(e.title.contains("change /p/.env"));
    }

    #[test]
    fn config_paths_in_options_are_escaped() {
        // A project directory's name is the repository's to choose.
        let f = files(
            "/w/repo\u{1b}[2K\u{202e}/.pi/sandbox.json",
            "/h/.pi/agent/\u{2029}extensions/sandbox.json",
        );
        let w = for_decision(&decision(Op::Write, "/srv/x"), &f, false);
        let n = network_host("example.com", 443, false, &f);
        for p in [&w, &n] {
            no_hidden_characters(p);
            assert!(p.choices[2]
                .label
                .contains("/w/repo\\x1b[2K\\u{202e}/.pi/sandbox.json"));
            assert!(p.choices[3].label.contains("agent/\\u{2029}extensions"));
        }
        assert!(n.no_ui.contains("\\x1b[2K") && !n.no_ui.contains('\u{1b}'));
    }

    #[test]
    fn this_project_says_session_only_when_the_project_file_is_not_trusted() {
        let mut f = files("/p/.pi/sandbox.json", "/g.json");
        let trusted = for_decision(&decision(Op::Write, "/srv/x"), &f, false);
        assert!(trusted.choices[2]
            .label
            .contains("saved in /p/.pi/sandbox.json"));
        f.project_applies = false;
        for p in [
            for_decision(&decision(Op::Write, "/srv/x"), &f, false),
            network_host("example.com", 443, false, &f),
        ] {
            let label = &p.choices[2].label;
            assert_eq!(p.choices[2].id, "project");
            assert!(!label.contains("saved"), "{label}");
            assert!(label.contains("for this session only"), "{label}");
            assert!(label.contains("not trusted"), "{label}");
            // All projects: the global file applies here whatever the project's says.
            assert!(p.choices[3].label.contains("saved in /g.json"));
        }
    }

    #[test]
    fn key_choices_list_each_prefix_once() {
        let prefixes = crate::session::command_keys::prefix_choices("git log --oneline");
        let k = command_key("git log --oneline", &prefixes);
        let ids: Vec<&str> = k.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "exact", "prefix:3", "prefix:2", "prefix:1"]);
        let k = command_key(
            "a; b",
            &crate::session::command_keys::prefix_choices("a; b"),
        );
        let ids: Vec<&str> = k.choices.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["abort", "exact"], "no prefix for a compound command");
    }

    #[test]
    fn prefix_labels_show_the_words_escaped_and_apart() {
        // Controls make a command not simple; bidi and separators do not.
        let command = "touch 'a b\u{2028}rm' \u{202e}x\u{e0041}";
        let prefixes = crate::session::command_keys::prefix_choices(command);
        assert!(!prefixes.is_empty(), "a simple command");
        let k = command_key(command, &prefixes);
        no_hidden_characters(&k);
        let labels: Vec<&str> = k.choices.iter().map(|c| c.label.as_str()).collect();
        assert!(
            labels.contains(&"Any command starting with: touch 'a b\\u{2028}rm' …"),
            "{labels:?}"
        );
        assert!(
            labels.iter().any(|l| l.contains("\\u{202e}x\\u{e0041} …")),
            "{labels:?}"
        );
    }

    fn widening(key: &'static str, weight: Weight, what: &str) -> Widening {
        Widening {
            key,
            what: what.into(),
            weight,
            meaning: what.into(),
        }
    }

    #[test]
    fn the_trust_prompt_lists_the_heaviest_first_and_counts_the_rest() {
        let mut widenings: Vec<Widening> = (0..20)
            .map(|i| widening("env.allow", Weight::Other, &format!("pass V{i}")))
            .collect();
        widenings.push(widening(
            "network.allowedDomains",
            Weight::Reach,
            "allow the domain \"x.io\"",
        ));
        widenings.push(widening(
            "filesystem.allowWrite",
            Weight::Sweeping,
            "make \"~\" writable",
        ));
        let layer = ProjectLayer {
            file: "/w/\u{202e}repo/.pi/sandbox.json".into(),
            sha256: "0".repeat(64),
            widenings,
            trust: Trust::Pending,
        };
        let p = project_trust(&layer);
        no_hidden_characters(&p);
        let lines: Vec<&str> = p.title.lines().collect();
        assert!(
            lines[0].contains("/w/\\u{202e}repo/.pi/sandbox.json"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[2], "  • make \"~\" writable (filesystem.allowWrite)");
        assert_eq!(
            lines[3],
            "  • allow the domain \"x.io\" (network.allowedDomains)"
        );
        let bullets = lines.iter().filter(|l| l.starts_with("  • ")).count();
        assert_eq!(bullets, LISTED);
        assert!(p.title.contains("… and 14 more"), "{}", p.title);
    }
}
