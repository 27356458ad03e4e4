use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;
use crate::policy::config::{merge, Config, Env, Mode};

/// A real directory tree: home (with .ssh), agent dir, project; all canonical. Shared with
/// `session::tools`'s tests, which judge tool inputs with the guards built here.
pub(crate) struct World {
    _t: tempfile::TempDir,
    root: PathBuf,
    pub(crate) env: Env,
}

impl World {
    pub(crate) fn new() -> World {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = Env::under(&root);
        for d in [
            env.home.join(".ssh"),
            env.agent_dir.join("sessions"),
            env.cwd.join("src"),
            env.cwd.join(".git/hooks"),
            root.join("outside"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(env.home.join(".ssh/id_rsa"), b"SECRET").unwrap();
        World { _t: t, root, env }
    }

    /// The tempdir lives under /tmp, which the defaults make writable; the global layer
    /// narrows allowWrite to the project so that "outside" really is outside.
    pub(crate) fn config(&self, project_json: &str) -> Config {
        merge(
            crate::policy::config::Config::defaults_for(&self.env),
            &[
                (
                    self.env.global_config(),
                    Some(r#"{"filesystem":{"allowWrite":["."]}}"#.into()),
                ),
                (self.env.project_config(), Some(project_json.to_string())),
            ],
        )
        .unwrap()
    }

    pub(crate) fn guard(&self, project_json: &str) -> Guard {
        self.guard_with(project_json, ApprovalMode::Ask)
    }

    pub(crate) fn guard_with(&self, project_json: &str, approval: ApprovalMode) -> Guard {
        Guard::new(&self.config(project_json), &self.env, approval).unwrap()
    }

    pub(crate) fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn verdict(g: &Guard, op: Op, path: &Path) -> Verdict {
    g.check(op, path).verdict
}

#[test]
fn reads_under_deny_read_entries_are_blocked_and_named() {
    let w = World::new();
    let g = w.guard("{}");
    let d = g.check(Op::Read, &w.p("home/.ssh/id_rsa"));
    assert_eq!(d.verdict, Verdict::Deny);
    // a default entry says why it is there
    assert_eq!(d.rule, "denyRead entry '~/.ssh' (SSH private keys)");
    assert_eq!(d.source, "built-in defaults");
    // a built-in default is in no file: the advice is to set the list without it
    let global = w.p("home/.pi/agent/extensions/sandbox.json");
    assert!(
        d.reason.contains(&format!(
            "To allow it, set filesystem.denyRead in {} to the list without it (it is a built-in default",
            global.display()
        )),
        "{}",
        d.reason
    );
    assert!(!d.reason.contains(".pi/sandbox.json"), "{}", d.reason);
    // an entry from a file: remove it there
    let g2 = w.guard(r#"{"filesystem":{"denyRead":["secrets"]}}"#);
    let d2 = g2.check(Op::Read, &w.p("proj/secrets/k"));
    assert!(
        d2.reason
            .contains("remove that entry from filesystem.denyRead in")
            && d2.reason.contains(".pi/sandbox.json"),
        "{}",
        d2.reason
    );
    // the directory itself, and a file that does not exist yet
    assert_eq!(verdict(&g, Op::Read, &w.p("home/.ssh")), Verdict::Deny);
    assert_eq!(verdict(&g, Op::Read, &w.p("home/.ssh/new")), Verdict::Deny);
    // a sibling with a common prefix is not inside
    assert_eq!(verdict(&g, Op::Read, &w.p("home/.sshx")), Verdict::Allow);
    // pi's API keys are unreadable by default
    assert_eq!(
        verdict(&g, Op::Read, &w.p("home/.pi/agent/auth.json")),
        Verdict::Deny
    );
}

#[test]
fn symlinks_into_a_denied_directory_are_followed() {
    let w = World::new();
    symlink(w.p("home/.ssh"), w.p("proj/keys")).unwrap();
    symlink(w.p("home/.ssh/id_rsa"), w.p("proj/src/innocent.txt")).unwrap();
    let g = w.guard("{}");
    assert_eq!(
        verdict(&g, Op::Read, &w.p("proj/keys/id_rsa")),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&g, Op::Read, &w.p("proj/src/innocent.txt")),
        Verdict::Deny
    );
    // writes through a link out of the workspace land outside allowWrite
    symlink(w.p("outside"), w.p("proj/out")).unwrap();
    let d = g.check(Op::Write, &w.p("proj/out/x"));
    assert_eq!(d.verdict, Verdict::Prompt);
    assert_eq!(d.rule, "outside allowWrite");
    assert_eq!(d.path, w.p("outside/x"));
}

#[test]
fn paths_leading_through_a_denied_directory_are_refused_like_it() {
    let w = World::new();
    std::fs::write(w.p("proj/src/public.txt"), b"ok").unwrap();
    symlink(w.p("proj/src/public.txt"), w.p("home/.ssh/pointer")).unwrap();
    symlink(w.p("proj/src"), w.p("home/.ssh/dir")).unwrap();
    let g = w.guard("{}");
    // Inside bash ~/.ssh is an empty mask: these paths do not exist there. The guard agrees,
    // though the file the kernel would open on the host is not secret.
    for via in ["home/.ssh/pointer", "home/.ssh/dir/public.txt"] {
        let d = g.check(Op::Read, &w.p(via));
        assert_eq!(d.verdict, Verdict::Deny, "{via}");
        assert!(d.reason.contains("leads through"), "{}", d.reason);
        assert_eq!(d.path, w.p("proj/src/public.txt"));
    }
    assert_eq!(
        verdict(&g, Op::Write, &w.p("home/.ssh/dir/new.txt")),
        Verdict::Deny
    );
    // the target by its own name is fine
    assert_eq!(
        verdict(&g, Op::Read, &w.p("proj/src/public.txt")),
        Verdict::Allow
    );
}

#[test]
fn dotdot_traversal_cannot_escape() {
    let w = World::new();
    let g = w.guard("{}");
    let sneaky = w.p("proj/src/../../home/.ssh/id_rsa");
    assert_eq!(verdict(&g, Op::Read, &sneaky), Verdict::Deny);
    let up = w.p("proj/../outside/x");
    assert_eq!(verdict(&g, Op::Write, &up), Verdict::Prompt);
    // `..` after a symlink applies to the target's parent, as in the kernel
    std::fs::create_dir_all(w.p("home/.ssh/sub")).unwrap();
    symlink(w.p("home/.ssh/sub"), w.p("proj/l")).unwrap();
    assert_eq!(
        verdict(&g, Op::Read, &w.p("proj/l/../id_rsa")),
        Verdict::Deny
    );
}

#[test]
fn dangling_symlinks_are_judged_by_the_file_they_would_create() {
    let w = World::new();
    symlink(w.p("outside/created.txt"), w.p("proj/src/dangling")).unwrap();
    symlink(w.p("home/.ssh/authorized_keys"), w.p("proj/src/ak")).unwrap();
    let g = w.guard("{}");
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/src/dangling")),
        Verdict::Prompt
    );
    assert_eq!(verdict(&g, Op::Read, &w.p("proj/src/ak")), Verdict::Deny);
}

#[test]
fn deny_read_entries_that_are_symlinks_protect_their_target() {
    let w = World::new();
    std::fs::create_dir_all(w.p("vault")).unwrap();
    symlink(w.p("vault"), w.p("home/.aws")).unwrap();
    let g = w.guard("{}");
    assert_eq!(
        verdict(&g, Op::Read, &w.p("vault/credentials")),
        Verdict::Deny
    );
}

#[test]
fn deny_write_basename_patterns_match_in_any_directory() {
    let w = World::new();
    let g = w.guard("{}");
    for rel in [
        "proj/.env",
        "proj/src/deep/.env",
        "proj/.env.local",
        "proj/a/b/server.pem",
        "proj/id.key",
        "tmp-like/x.pem",
    ] {
        assert_eq!(verdict(&g, Op::Write, &w.p(rel)), Verdict::Deny, "{rel}");
    }
    for rel in [
        "proj/env",
        "proj/.envrc",
        "proj/src/pem",
        "proj/key.txt",
        "proj/a.pem.bak",
    ] {
        assert_eq!(verdict(&g, Op::Write, &w.p(rel)), Verdict::Allow, "{rel}");
    }
    let d = g.check(Op::Write, &w.p("proj/cert.pem"));
    assert_eq!(d.rule, "denyWrite pattern '*.pem'");
}

#[test]
fn deny_write_path_globs_are_anchored_at_the_project_or_anywhere() {
    let w = World::new();
    let g = w.guard(
        r#"{"filesystem":{"allowWrite":[".","../outside"],"denyWrite":["**/secrets/**","config/*.json","~/notes/*.md","./build/"]}}"#,
    );
    let deny = [
        "proj/secrets/a",
        "proj/x/secrets/y/z",
        "outside/secrets/k",
        "proj/config/app.json",
        "proj/build/out.o",
    ];
    for rel in deny {
        assert_eq!(verdict(&g, Op::Write, &w.p(rel)), Verdict::Deny, "{rel}");
    }
    let allow = [
        "proj/config/sub/app.json",
        "proj/src/config/app.json",
        "proj/config/app.yaml",
        "proj/secretsx/a",
        "outside/ok",
    ];
    for rel in allow {
        assert_eq!(verdict(&g, Op::Write, &w.p(rel)), Verdict::Allow, "{rel}");
    }
    // '*' does not cross '/'
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/config/a/b.json")),
        Verdict::Allow
    );
}

#[test]
fn a_pattern_naming_a_directory_covers_what_is_inside() {
    let w = World::new();
    let g = w.guard(r#"{"filesystem":{"denyWrite":["generated"]}}"#);
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/src/generated/x.ts")),
        Verdict::Deny
    );
}

#[test]
fn glob_metacharacters_in_the_project_path_are_escaped() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path())
        .unwrap()
        .join("we[ir]d {proj}");
    std::fs::create_dir_all(root.join("config")).unwrap();
    let env = Env {
        home: root.join("h"),
        cwd: root.clone(),
        agent_dir: root.join("h/agent"),
        session_dirs: vec![],
        session_file: None,
        pi_loads: vec![],
        tmp: None,
    };
    let cfg = merge(
        crate::policy::config::Config::defaults_for(&env),
        &[(
            env.project_config(),
            Some(r#"{"filesystem":{"denyWrite":["config/*.json"]}}"#.into()),
        )],
    )
    .unwrap();
    let g = Guard::new(&cfg, &env, ApprovalMode::Ask).unwrap();
    assert_eq!(
        verdict(&g, Op::Write, &root.join("config/a.json")),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&g, Op::Write, &root.join("config/a.txt")),
        Verdict::Allow
    );
}

#[test]
fn deny_wins_over_allow_and_allow_write_is_default_deny() {
    let w = World::new();
    let g = w.guard(r#"{"filesystem":{"allowWrite":["."],"denyWrite":["src/**"]}}"#);
    assert_eq!(verdict(&g, Op::Write, &w.p("proj/src/a.ts")), Verdict::Deny);
    assert_eq!(verdict(&g, Op::Write, &w.p("proj/README")), Verdict::Allow);
    // /tmp is no longer listed: the project layer replaced the default list
    let d = g.check(Op::Write, Path::new("/tmp/x"));
    assert_eq!(d.verdict, Verdict::Prompt);
    assert_eq!(d.source, w.env.project_config().display().to_string());
}

#[test]
fn invalid_rules_are_errors_naming_the_key_and_entry() {
    let w = World::new();
    let cfg = w.config(r#"{"filesystem":{"denyWrite":["a/[b"]}}"#);
    let e = Guard::new(&cfg, &w.env, ApprovalMode::Ask).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("filesystem.denyWrite") && text.contains("a/[b"),
        "{text}"
    );
    let cfg = w.config(r#"{"filesystem":{"denyRead":["~/*.txt"]}}"#);
    let e = Guard::new(&cfg, &w.env, ApprovalMode::Ask).unwrap_err();
    assert!(e.to_string().contains("not patterns"), "{e}");
    let cfg = w.config(r#"{"filesystem":{"allowWrite":["src/*"]}}"#);
    assert!(Guard::new(&cfg, &w.env, ApprovalMode::Ask).is_err());
}

#[test]
fn pi_control_surface_is_never_writable_whatever_the_config_says() {
    let w = World::new();
    // a bare repository: known as a git dir by its layout, whatever its name
    for d in ["proj/bare.git/objects", "proj/bare.git/refs/heads"] {
        std::fs::create_dir_all(w.p(d)).unwrap();
    }
    std::fs::write(w.p("proj/bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    // A config that tries to allow everything and deny nothing.
    let g = w.guard(r#"{"filesystem":{"allowWrite":["/"],"denyWrite":[]}}"#);
    for rel in [
        "proj/.pi/sandbox.json",
        "proj/.pi/extensions/evil.ts",
        "proj/.pi/settings.json",
        "proj/sub/.pi/extensions/planted.ts",
        "home/.pi/agent/extensions/sandbox.json",
        "home/.pi/agent/sandbox-approvals.json",
        "home/.pi/agent/settings.json",
        "home/.pi/agent/models.json",
        "home/.pi/agent/auth.json",
        "home/.pi/agent/sessions/s1.jsonl",
        "home/.bashrc",
        "home/.config/git/config",
        "home/.local/bin/git",
        "proj/.git/hooks/pre-commit",
        "proj/.git/config",
        "proj/.git/config.worktree",
        "proj/.git/commondir",
        "proj/.git/objects/info/alternates",
        "proj/.git/worktrees/wt/config.worktree",
        "proj/.git/worktrees/wt/commondir",
        "proj/.git/worktrees/wt/gitdir",
        "proj/.git/modules/sub/config",
        "proj/.git/modules/sub/hooks/post-checkout",
        "proj/vendor/lib/.git/hooks/post-checkout",
        "proj/bare.git/hooks/pre-receive",
        "proj/bare.git/config",
    ] {
        let d = g.check(Op::Write, &w.p(rel));
        assert_eq!(d.verdict, Verdict::Deny, "{rel}");
        assert_eq!(d.source, Source::Mandatory.to_string(), "{rel}");
    }
    // git's data stays writable
    for rel in [
        "proj/.git/objects/ab/cd",
        "proj/.git/refs/heads/config",
        "proj/.git/worktrees/wt/HEAD",
        "proj/.git/modules/sub/index",
        "proj/bare.git/refs/heads/main",
        "proj/src/config",
    ] {
        assert_eq!(verdict(&g, Op::Write, &w.p(rel)), Verdict::Allow, "{rel}");
    }
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/.git/objects/ab/cd")),
        Verdict::Allow
    );
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/.git/index")),
        Verdict::Allow
    );
}

#[test]
fn control_surface_cannot_be_reached_through_a_symlink() {
    let w = World::new();
    std::fs::create_dir_all(w.p("proj/.pi")).unwrap();
    symlink(w.p("proj/.pi"), w.p("proj/src/conf")).unwrap();
    symlink(w.p("proj/.git/hooks"), w.p("proj/hooks")).unwrap();
    let g = w.guard("{}");
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/src/conf/sandbox.json")),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/hooks/pre-push")),
        Verdict::Deny
    );
}

#[test]
fn nothing_is_written_into_a_denied_directory() {
    let w = World::new();
    std::fs::create_dir_all(w.p("home/.aws")).unwrap();
    let g = w.guard(r#"{"filesystem":{"allowWrite":[".","~"]}}"#);
    // ~ is writable, ~/.aws is hidden: bash sees an empty read-only mask there
    let d = g.check(Op::Write, &w.p("home/.aws/credentials"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains("hidden"), "{}", d.reason);
}

#[test]
fn session_dir_from_the_environment_is_never_writable() {
    let mut w = World::new();
    w.env.session_dirs = vec![w.p("proj/sessions")];
    // pi appends to its transcripts on the host: even inside allowWrite they are pi's
    let g = w.guard("{}");
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/sessions/a.jsonl")),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&g, Op::Write, &w.p("outside/other")),
        Verdict::Prompt
    );
}

/// A transcript as pi writes it: its header names the project it belongs to.
fn transcript(path: &Path, cwd: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let header = json!({"type": "session", "id": "x", "cwd": cwd});
    std::fs::write(path, format!("{header}\n")).unwrap();
}

#[test]
fn a_session_folder_pi_shares_between_projects_is_hidden_and_kept_whole() {
    let mut w = World::new();
    let shared = w.p("outside/sessions");
    transcript(&shared.join("theirs.jsonl"), &w.p("other"));
    let live = shared.join("mine.jsonl");
    transcript(&live, &w.env.cwd);
    w.env.session_dirs = vec![shared.clone()];
    w.env.session_file = Some(live.clone());
    let g = w.guard("{}");
    for f in [&shared.join("theirs.jsonl"), &live, &shared] {
        let d = g.check(Op::Read, f);
        assert_eq!(d.verdict, Verdict::Deny, "{}", f.display());
        assert!(d.rule.contains("every project's transcripts"), "{}", d.rule);
    }
    assert_eq!(verdict(&g, Op::Write, &live), Verdict::Deny);
    assert_eq!(
        verdict(&g, Op::Write, &shared.join("new.jsonl")),
        Verdict::Deny
    );
    // a search from above it would look inside
    assert_eq!(
        g.check_search(&w.p("outside"), "grep").verdict,
        Verdict::Deny
    );
}

#[test]
fn a_session_folder_inside_the_project_hides_other_projects_transcripts_and_is_never_writable() {
    let mut w = World::new();
    let dir = w.p("proj/.sessions");
    let live = dir.join("mine.jsonl");
    transcript(&live, &w.env.cwd);
    transcript(&dir.join("theirs.jsonl"), &w.p("other"));
    w.env.session_dirs = vec![dir.clone()];
    w.env.session_file = Some(live.clone());
    let g = w.guard("{}");
    // this project's transcripts read as in pi's own folder for it; another's not
    assert_eq!(verdict(&g, Op::Read, &live), Verdict::Allow);
    let d = g.check(Op::Read, &dir.join("theirs.jsonl"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.rule.contains("another project"), "{}", d.rule);
    // inside allowWrite, yet pi's: no write, no new file, no link in its place
    for f in [&live, &dir.join("new.jsonl"), &dir] {
        let d = g.check(Op::Write, f);
        assert_eq!(d.verdict, Verdict::Deny, "{}", f.display());
        assert!(d.rule.contains("pi session dir"), "{}", d.rule);
    }
    // the rest of the project stays writable
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/src/a.rs")),
        Verdict::Allow
    );
}

#[test]
fn the_project_as_session_folder_keeps_the_live_transcript_only() {
    let mut w = World::new();
    let live = w.p("proj/2026_x.jsonl");
    w.env.session_dirs = vec![w.env.cwd.clone()];
    w.env.session_file = Some(live.clone());
    transcript(&w.p("proj/old.jsonl"), &w.p("other"));
    let g = w.guard("{}");
    assert_eq!(verdict(&g, Op::Write, &live), Verdict::Deny);
    assert_eq!(verdict(&g, Op::Read, &w.p("proj/old.jsonl")), Verdict::Deny);
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/src/a.rs")),
        Verdict::Allow
    );
}

#[test]
fn modes_apply_before_rules() {
    let w = World::new();
    let mut g = w.guard(r#"{"mode":"read-only"}"#);
    let d = g.check(Op::Write, &w.p("proj/src/a.ts"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(d.rule, "mode read-only");
    assert!(d.reason.contains("read-only"));
    assert_eq!(verdict(&g, Op::Read, &w.p("proj/src/a.ts")), Verdict::Allow);
    assert_eq!(
        verdict(&g, Op::Read, &w.p("home/.ssh/id_rsa")),
        Verdict::Deny
    );
    g.set_mode(Mode::Yolo, "test");
    assert_eq!(
        verdict(&g, Op::Read, &w.p("home/.ssh/id_rsa")),
        Verdict::Allow
    );
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/.pi/sandbox.json")),
        Verdict::Allow
    );
    let g = w.guard(r#"{"enabled":false}"#);
    assert_eq!(
        verdict(&g, Op::Write, Path::new("/etc/passwd")),
        Verdict::Allow
    );
}

#[test]
fn env_files_follow_the_approval_mode() {
    let w = World::new();
    let p = w.p("proj/.env.production");
    assert_eq!(
        verdict(&w.guard_with("{}", ApprovalMode::Ask), Op::Read, &p),
        Verdict::Prompt
    );
    assert_eq!(
        verdict(&w.guard_with("{}", ApprovalMode::Deny), Op::Read, &p),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&w.guard_with("{}", ApprovalMode::Always), Op::Read, &p),
        Verdict::Allow
    );
    assert!(is_env_file(Path::new("/a/.env")));
    assert!(!is_env_file(Path::new("/a/.envrc")));
    assert!(!is_env_file(Path::new("/a/x.env")));
}

#[test]
fn env_templates_are_not_secret_unless_the_config_says_so() {
    let w = World::new();
    let plain = r#"{"filesystem":{"denyWrite":["*.pem"]}}"#;
    let secret = r#"{"filesystem":{"denyWrite":["*.pem"],"envTemplatesSecret":true}}"#;
    let (g, s) = (
        w.guard_with(plain, ApprovalMode::Ask),
        w.guard_with(secret, ApprovalMode::Ask),
    );
    for name in [
        ".env.example",
        ".env.sample",
        ".env.template",
        ".env.dist",
        ".env.local.example",
    ] {
        let p = w.p(&format!("proj/{name}"));
        std::fs::write(&p, "K=").unwrap();
        assert!(!g.masks_env_file(&p), "{name}");
        assert_eq!(verdict(&g, Op::Read, &p), Verdict::Allow, "{name}");
        assert!(s.masks_env_file(&p), "{name}");
        assert_eq!(verdict(&s, Op::Read, &p), Verdict::Prompt, "{name}");
    }
    // The last word decides, exactly: anything else is secret.
    for name in [
        ".env",
        ".env.example.local",
        ".env.EXAMPLE",
        ".env.examples",
        ".env.example ",
    ] {
        let p = w.p(&format!("proj/{name}"));
        std::fs::write(&p, "K=").unwrap();
        assert!(g.masks_env_file(&p), "{name:?}");
        assert_eq!(verdict(&g, Op::Read, &p), Verdict::Prompt, "{name:?}");
    }
    // A link named like a template to a secret env file is that file.
    symlink(w.p("proj/.env"), w.p("proj/src/.env.example")).unwrap();
    assert_eq!(
        verdict(&g, Op::Read, &w.p("proj/src/.env.example")),
        Verdict::Prompt
    );
}

#[test]
fn explain_lists_each_rule_consulted() {
    let w = World::new();
    let g = w.guard("{}");
    let (d, steps) = g.explain(Op::Write, &w.p("proj/cert.pem"));
    assert_eq!(d.verdict, Verdict::Deny);
    let names: Vec<&str> = steps.iter().map(|s| s.rule.as_str()).collect();
    assert_eq!(
        names,
        [
            "enabled = true",
            "mode read-write",
            "pi control surface",
            "git hooks directory (core.hooksPath) or included git config",
            "denyRead (writes into hidden paths)",
            "denyWrite"
        ]
    );
    assert!(steps.last().unwrap().matched);
    let (_, steps) = g.explain(Op::Write, &w.p("proj/src/a.ts"));
    let names: Vec<&str> = steps.iter().map(|s| s.rule.as_str()).collect();
    assert_eq!(
        names[names.len() - 2..],
        ["allowWrite", "sensitive env file (.env, .env.*), existing"]
    );
}

#[test]
fn env_files_are_hidden_in_bash_until_the_user_allows_reading_them() {
    let w = World::new();
    std::fs::write(w.p("proj/.env.local"), "K=V").unwrap();
    // Not in denyWrite here, so only the env rule speaks.
    let cfg = r#"{"filesystem":{"denyWrite":["*.pem"]}}"#;
    let env = w.p("proj/.env.local");
    let ask = w.guard_with(cfg, ApprovalMode::Ask);
    assert!(ask.masks_env_file(&env));
    assert!(!ask.masks_env_file(&w.p("proj/env.txt")));
    // Overwriting it blind asks the same question as reading it; a new one may be written.
    let d = ask.check(Op::Write, &env);
    assert_eq!(
        (d.verdict, d.rule.as_str()),
        (Verdict::Prompt, ENV_FILE_RULE)
    );
    assert_eq!(
        verdict(&ask, Op::Write, &w.p("proj/.env.new")),
        Verdict::Allow
    );
    // A grant opens it to both layers.
    let mut granted = w.guard_with(cfg, ApprovalMode::Ask);
    granted.set_env_read_grants(vec![(env.clone(), "allowed by the user".into())]);
    assert!(!granted.masks_env_file(&env));
    assert_eq!(verdict(&granted, Op::Read, &env), Verdict::Allow);
    assert_eq!(verdict(&granted, Op::Write, &env), Verdict::Allow);
    // deny: hidden whatever was granted before; always: never hidden.
    let mut deny = w.guard_with(cfg, ApprovalMode::Deny);
    deny.set_env_read_grants(vec![(env.clone(), "allowed by the user".into())]);
    assert!(deny.masks_env_file(&env));
    assert_eq!(verdict(&deny, Op::Read, &env), Verdict::Deny);
    assert_eq!(verdict(&deny, Op::Write, &env), Verdict::Deny);
    let always = w.guard_with(cfg, ApprovalMode::Always);
    assert!(!always.masks_env_file(&env));
    assert_eq!(verdict(&always, Op::Write, &env), Verdict::Allow);
}

#[test]
fn unresolvable_paths_fail_closed() {
    let w = World::new();
    symlink(w.p("proj/b"), w.p("proj/a")).unwrap();
    symlink(w.p("proj/a"), w.p("proj/b")).unwrap();
    let g = w.guard("{}");
    let d = g.check(Op::Read, &w.p("proj/a/x"));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains("symbolic links"), "{}", d.reason);
}

#[test]
fn search_tools_may_not_walk_into_denied_directories() {
    let w = World::new();
    let g = w.guard("{}");
    let d = g.check_search(&w.p("home"), "grep");
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains(".ssh"), "{}", d.reason);
    assert_eq!(g.check_search(&w.p("proj"), "grep").verdict, Verdict::Allow);
    // a denied entry that does not exist cannot be walked into
    assert_eq!(
        g.check_search(&w.p("home/.pi"), "find").verdict,
        Verdict::Allow
    );
}

#[test]
fn dependency_trees_and_git_data_are_exempt_from_deny_write_in_the_guard_too() {
    let w = World::new();
    let g = w.guard("{}");
    for rel in [
        "proj/node_modules/pkg/.env",
        "proj/.venv/lib/site-packages/certifi/cacert.pem",
        "proj/target/debug/x.key",
        "proj/.git/refs/heads/x.pem",
    ] {
        let (d, steps) = g.explain(Op::Write, &w.p(rel));
        assert_eq!(d.verdict, Verdict::Allow, "{rel}: {d:?}");
        assert!(
            steps
                .iter()
                .any(|s| s.rule.starts_with("denyWrite not applied")),
            "{rel}: {steps:?}"
        );
    }
    // the control surface still applies inside them, and a .env elsewhere is still denied
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/node_modules/pkg/.pi/x")),
        Verdict::Deny
    );
    assert_eq!(verdict(&g, Op::Write, &w.p("proj/a/.env")), Verdict::Deny);
    // only a directory exempts: a file named `.env` directly in the project is denied
    assert_eq!(verdict(&g, Op::Write, &w.p("proj/.env")), Verdict::Deny);
    // the exemption covers what is below the tree, not a match above it (bash binds a
    // denied directory whole, dependency trees inside it included)
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/.env.d/node_modules/x.ts")),
        Verdict::Deny
    );
    assert_eq!(
        verdict(&g, Op::Write, &w.p("proj/x.pem/target/y")),
        Verdict::Deny
    );
}

#[test]
fn a_process_own_files_are_never_read_whichever_spelling() {
    let w = World::new();
    let g = w.guard("{}");
    let pid = std::process::id();
    for p in [
        "/proc/self/environ".to_string(),
        "/proc/thread-self/environ".to_string(),
        format!("/proc/{pid}/environ"),
        format!("/proc/{pid}/mem"),
        format!("/proc/{pid}/maps"),
        format!("/proc/{pid}/cmdline"),
        format!("/proc/{pid}/task/{pid}/environ"),
        "/proc/1/environ".to_string(),
    ] {
        let d = g.check(Op::Read, Path::new(&p));
        assert_eq!(d.verdict, Verdict::Deny, "{p}");
        assert_eq!(d.rule, "a process's files (/proc/<pid>)", "{p}");
    }
    // the kernel's own files stay readable
    assert_eq!(
        verdict(&g, Op::Read, Path::new("/proc/cpuinfo")),
        Verdict::Allow
    );
    // and a search from / or /proc would walk into them
    for root in ["/", "/proc"] {
        let d = g.check_search(Path::new(root), "grep");
        assert_eq!(d.verdict, Verdict::Deny, "{root}");
        assert_eq!(d.rule, "a process's files (/proc/<pid>)");
    }
}

#[test]
fn an_env_file_is_one_by_every_name_it_is_reached_by() {
    let w = World::new();
    std::fs::create_dir_all(w.p("home/secrets")).unwrap();
    std::fs::write(w.p("home/secrets/api.env"), "K=V").unwrap();
    std::fs::write(w.p("proj/notes.txt"), "hi").unwrap();
    // `.env` in the project is a link to a file whose own name says nothing
    symlink(w.p("home/secrets/api.env"), w.p("proj/.env")).unwrap();
    // and a link chain whose first name is the env file's
    symlink("notes-link", w.p("proj/.env.local")).unwrap();
    symlink("notes.txt", w.p("proj/notes-link")).unwrap();
    let cfg = r#"{"filesystem":{"denyWrite":["*.pem"]}}"#;
    let ask = w.guard_with(cfg, ApprovalMode::Ask);
    for (via, file) in [
        (".env", "home/secrets/api.env"),
        (".env.local", "proj/notes.txt"),
    ] {
        let d = ask.check(Op::Read, &w.p("proj").join(via));
        assert_eq!(
            (d.verdict, d.rule.as_str()),
            (Verdict::Prompt, ENV_FILE_RULE),
            "{via}"
        );
        // overwriting it through the link asks too
        assert_eq!(
            verdict(&ask, Op::Write, &w.p("proj").join(via)),
            Verdict::Prompt
        );
        // under its own name it is an ordinary file
        assert_eq!(
            verdict(&ask, Op::Read, &w.p(file)),
            Verdict::Allow,
            "{file}"
        );
        assert!(ask.masks_env_file_named(&w.p(file), true));
    }
    // a directory link named like an env file on the way is no env file
    std::fs::create_dir_all(w.p("proj/conf")).unwrap();
    std::fs::write(w.p("proj/conf/x.txt"), "x").unwrap();
    symlink(w.p("proj/conf"), w.p("proj/.env.d")).unwrap();
    assert_eq!(
        verdict(&ask, Op::Read, &w.p("proj/.env.d/x.txt")),
        Verdict::Allow
    );
    let deny = w.guard_with(cfg, ApprovalMode::Deny);
    assert_eq!(verdict(&deny, Op::Read, &w.p("proj/.env")), Verdict::Deny);
}

#[test]
fn reasons_and_rules_show_the_paths_and_entries_escaped() {
    let w = World::new();
    let g = w.guard(r#"{"filesystem":{"denyRead":["~/.ssh","~/.aws","~/.gnupg","~/se\ncret\u001b[2K"],"denyWrite":["*.pem","x\u202e\n*"]}}"#);
    let hidden = |text: &str| text.chars().any(crate::shown::is_hidden);
    // A path the model chose: a newline or an erase in it cannot fake a line of the reason.
    for (op, rel) in [
        (Op::Write, "project/.pi/a\n[pi-sandbox] allowed\u{1b}[2K"),
        (Op::Write, "outside/b\u{2028}c"),
        (Op::Read, "proc-less/.env\u{202e}"),
        (Op::Read, "home/se\ncret\u{1b}[2K/key"),
        (Op::Write, "project/x\u{202e}\nq"),
    ] {
        let d = g.check(op, &w.p(rel));
        assert!(!hidden(&d.reason), "{:?}", d.reason);
        assert!(!hidden(&d.rule), "{:?}", d.rule);
    }
    let d = g.check(Op::Write, &w.p("project/.pi/a\nb"));
    assert!(d.reason.contains(".pi/a\\x0ab"), "{}", d.reason);
}
