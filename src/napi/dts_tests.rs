//! The string-literal types of index.d.ts, written by hand in `dts-header.d.ts`, against the
//! Rust code whose strings they list: a value added or renamed on one side fails here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::policy::bash::Network;
use crate::policy::config::{Mode, MODE_HELP};
use crate::policy::guard::{ApprovalMode, Decision, Op, Verdict, ENV_FILE_RULE};
use crate::policy::trust::{ProjectLayer, Trust, Weight, Widening};
use crate::session::grants::WriteScope;
use crate::session::prompts::{self, Prompt};

const HEADER: &str = include_str!("dts-header.d.ts");

type Set = BTreeSet<String>;

fn set<'a>(items: impl IntoIterator<Item = &'a str>) -> Set {
    items.into_iter().map(str::to_string).collect()
}

/// Every variant of an enum; the match makes a new variant a compile error here.
macro_rules! variants {
    ($ty:ident: $($v:ident),+) => {{
        let _every = |x: $ty| match x { $($ty::$v)|+ => () };
        [$($ty::$v),+]
    }};
}

/// The members of the header's `export type {name} = ...` (up to the next blank line), the
/// type names among them expanded.
fn union(name: &str) -> Set {
    let start = format!("export type {name} =");
    let at = HEADER
        .find(&start)
        .unwrap_or_else(|| panic!("no `{start}` in dts-header.d.ts"));
    let body = HEADER[at + start.len()..].split("\n\n").next().unwrap();
    members(body)
}

/// `'a' | B | \`prefix:${number}\``: the literals and templates as written, `B` expanded.
fn members(body: &str) -> Set {
    body.split('|')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .flat_map(|m| {
            let quoted = m
                .strip_prefix('\'')
                .and_then(|m| m.strip_suffix('\''))
                .or_else(|| m.strip_prefix('`').and_then(|m| m.strip_suffix('`')));
            match quoted {
                Some(literal) => set([literal]),
                None => union(m),
            }
        })
        .collect()
}

/// Each `PromptOf<Kinds, Ids>` the header declares a prompt type with: (kinds, choice ids).
fn prompt_types() -> Vec<(Set, Set)> {
    HEADER
        .match_indices("PromptOf<")
        .map(|(at, open)| {
            let args = &HEADER[at + open.len()..];
            let args = &args[..args.find('>').unwrap()];
            let (kinds, ids) = args.split_once(',').unwrap();
            (kinds.to_string(), ids.to_string())
        })
        .filter(|(kinds, _)| !kinds.contains("extends"))
        .map(|(kinds, ids)| (members(&kinds), members(&ids)))
        .collect()
}

/// A choice id as the header spells it: `prefix:3` is a `prefix:${number}`.
fn id_type(id: &str) -> String {
    match id.strip_prefix("prefix:") {
        Some(n) if n.parse::<usize>().is_ok() => "prefix:${number}".into(),
        _ => id.into(),
    }
}

/// The string literals of `source` that are exactly an error code (`"E_BAD_OP"`, `"ENOENT"`).
fn code_literals(source: &str) -> Set {
    source
        .split('"')
        .filter(|s| {
            s.len() > 2
                && s.starts_with('E')
                && s.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn enum_unions_are_the_rust_names() {
    let modes = variants!(Mode: ReadOnly, ReadWrite, Yolo);
    assert_eq!(union("Mode"), set(modes.map(Mode::as_str)));
    // Every other name `Mode::parse` takes is in ModeAlias (the error message lists them).
    let names = MODE_HELP
        .split(|c: char| !(c.is_ascii_lowercase() || c == '-'))
        .filter(|w| !w.is_empty() && !["aliases", "or"].contains(w));
    let aliases = &set(names) - &union("Mode");
    assert_eq!(union("ModeAlias"), aliases);
    for name in union("Mode").iter().chain(&aliases) {
        assert!(Mode::parse(name).is_some(), "{name}");
    }

    let ops = variants!(Op: Read, Write);
    assert_eq!(union("Op"), set(ops.map(Op::as_str)));
    assert!(ops.iter().all(|op| Op::parse(op.as_str()) == Some(*op)));
    let verdicts = variants!(Verdict: Allow, Prompt, Deny);
    assert_eq!(union("Verdict"), set(verdicts.map(Verdict::as_str)));
    let networks = variants!(Network: On, Off, Filtered);
    assert_eq!(union("NetworkMode"), set(networks.map(Network::name)));
    assert!(networks
        .iter()
        .all(|n| Network::parse(n.name()) == Some(*n)));
    let approval = variants!(ApprovalMode: Ask, Always, Deny);
    assert_eq!(
        union("ApprovalMode"),
        set(approval.map(ApprovalMode::as_str))
    );
    let trust = variants!(Trust: Trusted, Declined, Pending);
    assert_eq!(union("TrustState"), set(trust.map(Trust::as_str)));

    let scopes = variants!(WriteScope: Session, Project, Global);
    let parsed: Vec<WriteScope> = union("WriteScope")
        .iter()
        .map(|s| WriteScope::parse(s).unwrap_or_else(|| panic!("{s}")))
        .collect();
    assert_eq!(parsed.len(), scopes.len());
    assert!(scopes.iter().all(|s| parsed.contains(s)));
}

/// One decision of the guard that asks.
fn asking(op: Op, path: &str, rule: &str) -> Decision {
    Decision {
        verdict: Verdict::Prompt,
        op,
        path: PathBuf::from(path),
        rule: rule.into(),
        source: "built-in defaults".into(),
        reason: "no UI".into(),
    }
}

#[test]
fn prompt_types_offer_the_choices_the_prompts_do() {
    let files = prompts::GrantFiles {
        project: "/p/.pi/sandbox.json".into(),
        global: "/g.json".into(),
        project_applies: true,
        allowed_in: String::new(),
    };
    let f = &files;
    let layer = ProjectLayer {
        file: files.project.clone(),
        sha256: "0".repeat(64),
        widenings: vec![Widening {
            key: "filesystem.allowWrite",
            what: "write /srv".into(),
            weight: Weight::Outside,
            meaning: "write /srv".into(),
        }],
        trust: Trust::Pending,
    };
    let words = crate::session::command_keys::prefix_choices("git log --oneline");
    let all: Vec<Prompt> = vec![
        prompts::for_decision(&asking(Op::Write, "/srv/x", "outside allowWrite"), f, false),
        prompts::for_decision(&asking(Op::Write, "/x", "outside allowWrite"), f, true),
        prompts::for_decision(&asking(Op::Read, "/p/.env", ENV_FILE_RULE), f, false),
        prompts::for_decision(&asking(Op::Write, "/p/.env", ENV_FILE_RULE), f, false),
        prompts::unsandboxed_command("make", "bwrap is missing."),
        prompts::command_key("git log --oneline", &words),
        prompts::network_host("example.com", 443, false, f),
        prompts::project_trust(&layer),
    ];

    let types = prompt_types();
    let mut offered: Vec<Set> = vec![Set::new(); types.len()];
    for prompt in &all {
        let (at, (_, ids)) = types
            .iter()
            .enumerate()
            .find(|(_, (kinds, _))| kinds.contains(prompt.kind))
            .unwrap_or_else(|| panic!("no prompt type for kind {}", prompt.kind));
        for c in &prompt.choices {
            let id = id_type(&c.id);
            assert!(ids.contains(&id), "{} offers {id}", prompt.kind);
            offered[at].insert(id);
        }
    }
    for ((kinds, ids), offered) in types.iter().zip(&offered) {
        assert_eq!(ids, offered, "the choices of {kinds:?}");
    }
    let kinds: Set = all.iter().map(|p| p.kind.to_string()).collect();
    assert_eq!(union("PromptKind"), kinds);
    assert_eq!(
        union("ChoiceId"),
        offered.iter().flatten().cloned().collect()
    );

    // What each grant call takes: its prompt's choices but the one that keeps it blocked.
    let choices = |kind: &str| {
        let (_, ids) = types.iter().find(|(k, _)| k.contains(kind)).unwrap();
        ids - &set(["abort"])
    };
    assert_eq!(
        &union("WriteScope") | &union("FileOnlyScope"),
        choices("write")
    );
    assert_eq!(union("EnvFileScope"), choices("envRead"));
    assert_eq!(union("CommandScope"), &choices("command") - &set(["once"]));
    assert_eq!(union("CommandKey"), choices("commandKey"));
    let network = &types.iter().find(|(k, _)| k.contains("network")).unwrap().1;
    assert_eq!(union("NetworkAnswer"), network | &set(["noUi"]));
}

#[test]
fn error_codes_are_the_ones_thrown() {
    // The N-API layer's codes, all chosen in errors.rs; a panic is napi's GenericFailure.
    let errors = include_str!("errors.rs");
    let mut thrown = code_literals(errors);
    assert!(errors.contains("napi::Status::GenericFailure"));
    thrown.insert("GenericFailure".into());
    // A code chosen anywhere else in the layer would escape the check: there are none.
    for (file, source) in [
        ("mod.rs", include_str!("mod.rs")),
        ("functions.rs", include_str!("functions.rs")),
        ("network.rs", include_str!("network.rs")),
        ("objects.rs", include_str!("objects.rs")),
        ("prepared.rs", include_str!("prepared.rs")),
        ("sandbox.rs", include_str!("sandbox.rs")),
        ("tasks.rs", include_str!("tasks.rs")),
    ] {
        assert_eq!(code_literals(source), Set::new(), "codes in napi/{file}");
    }
    assert_eq!(union("SandboxErrorCode"), thrown);

    // A load error's codes; E_NOT_LOADED only stands before the first load, which `Session::load` does.
    let mut load = &code_literals(include_str!("../session/load_error.rs"))
        | &code_literals(include_str!("../policy/config.rs"));
    // Every load error of the session is made in load_error.rs (its tests may name codes).
    let session = include_str!("../session/mod.rs");
    let session = &session[..session.find("\nmod tests {").unwrap_or(session.len())];
    assert_eq!(code_literals(session), Set::new());
    assert!(load.remove("E_NOT_LOADED"));
    assert_eq!(union("LoadErrorCode"), load);

    // PreparedCommand.verdict: the strings `prepared` maps each outcome to.
    let prepared = include_str!("prepared.rs");
    let body = &prepared[prepared.find("\npub(crate) fn prepared(").unwrap()..];
    let body = &body[..body.find("\n}\n").unwrap()];
    let verdicts: Set = body
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    assert_eq!(union("CommandVerdict"), verdicts);
}
