use std::path::PathBuf;

use super::*;
use crate::session::session_in;

#[test]
fn error_lines_name_their_paths() {
    assert_eq!(
        paths_in_error_line(
            "error: could not write config file .git/config: Device or resource busy"
        ),
        [".git/config"]
    );
    assert_eq!(
        paths_in_error_line(
            "/tmp/pi-bash-1.sh: line 1: githooks/pre-commit: Read-only file system"
        ),
        ["githooks/pre-commit"]
    );
    assert!(
        paths_in_error_line("touch: cannot touch 'a b': Read-only file system")
            .contains(&"a b".to_string())
    );
    assert!(
        paths_in_error_line("OSError: [Errno 30] Read-only file system: '/w/x'")
            .contains(&"/w/x".to_string())
    );
}

/// A temp dir by its real path (the guard compares resolved paths).
fn temp() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(t.path()).unwrap();
    (t, dir)
}

fn no_sandbox() -> Capability {
    Capability::Unavailable {
        reason: "bwrap is missing.".into(),
    }
}

fn prepared(s: &Session, command: &str, capability: &Capability) -> Prepared {
    s.prepare_with(Command::Shell(command), None, capability)
}

#[test]
fn without_an_os_sandbox_a_command_asks_and_an_argv_is_refused() {
    let (_t, dir) = temp();
    let s = session_in(&dir, None, None);
    match prepared(&s, "make test", &no_sandbox()) {
        Prepared::NeedsApproval(p) => {
            assert_eq!(p.kind, "command");
            assert!(p.title.contains("make test"), "{}", p.title);
        }
        other => panic!("{other:?}"),
    }
    // `pi-sandbox run` has no one to ask.
    let argv = ["make".into()];
    match s.prepare_with(Command::Argv(&argv), None, &no_sandbox()) {
        Prepared::Denied(reason) => assert!(reason.contains("bwrap is missing."), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_approval_mode_decides_without_an_os_sandbox() {
    let (_t, dir) = temp();
    let denying = session_in(&dir, Some("deny"), None);
    match prepared(&denying, "make", &no_sandbox()) {
        Prepared::Denied(reason) => {
            assert!(reason.contains("PI_SANDBOX_APPROVAL_MODE=deny"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let always = session_in(&dir, Some("always"), None);
    match prepared(&always, "make", &no_sandbox()) {
        Prepared::Unsandboxed(reason) => {
            assert!(reason.contains("APPROVAL_MODE=always"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_command_allowed_for_the_session_runs_unsandboxed_without_asking() {
    let (_t, dir) = temp();
    let mut s = session_in(&dir, None, Some("pi-1"));
    s.grant_command("make test", "session", "exact").unwrap();
    match prepared(&s, "make test", &no_sandbox()) {
        Prepared::Unsandboxed(reason) => {
            assert!(
                reason.contains("allowed by the user for this session"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Only that command, and only in that session.
    assert!(matches!(
        prepared(&s, "make install", &no_sandbox()),
        Prepared::NeedsApproval(_)
    ));
    let other = session_in(&dir, None, Some("pi-2"));
    assert!(matches!(
        prepared(&other, "make test", &no_sandbox()),
        Prepared::NeedsApproval(_)
    ));
}

#[test]
fn yolo_and_a_disabled_sandbox_run_unsandboxed_whatever_the_os_has() {
    let (_t, dir) = temp();
    let bwrap = Capability::Bwrap {
        program: "/usr/bin/bwrap".into(),
        features: launch::NO_BWRAP_FEATURES,
    };
    let mut s = session_in(&dir, None, None);
    s.set_mode("yolo", "test").unwrap();
    match prepared(&s, "make", &bwrap) {
        Prepared::Unsandboxed(reason) => assert!(reason.contains("yolo"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // The user's own file: a project's would need trust to turn the sandbox off.
    std::fs::create_dir_all(s.env().global_config().parent().unwrap()).unwrap();
    std::fs::write(s.env().global_config(), r#"{"enabled": false}"#).unwrap();
    let s = session_in(&dir, None, None);
    match prepared(&s, "make", &bwrap) {
        Prepared::Unsandboxed(reason) => assert!(reason.contains("enabled: false"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_broken_config_or_a_sandbox_program_the_agent_may_write_refuses_the_command() {
    let (_t, dir) = temp();
    // bwrap in the project: the agent could have replaced it, and it runs on the host.
    let planted = Capability::Bwrap {
        program: dir.join("proj/bin/bwrap"),
        features: launch::NO_BWRAP_FEATURES,
    };
    let s = session_in(&dir, None, None);
    match prepared(&s, "make", &planted) {
        Prepared::Denied(reason) => {
            assert!(reason.contains("which the agent may write"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    std::fs::create_dir_all(dir.join("proj/.pi")).unwrap();
    std::fs::write(s.env().project_config(), "{ broken").unwrap();
    let s = session_in(&dir, Some("always"), None);
    match prepared(&s, "make", &no_sandbox()) {
        Prepared::Denied(reason) => assert!(reason.contains("cannot load its policy"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn with_bwrap_a_command_is_sandboxed() {
    let capability = detect::detect();
    if !matches!(capability, Capability::Bwrap { .. }) {
        eprintln!("skipped: no working bwrap here ({capability:?})");
        return;
    }
    let (_t, dir) = temp();
    let s = session_in(&dir, None, None);
    let Capability::Bwrap { program, .. } = &capability else {
        unreachable!()
    };
    match prepared(&s, "true", &capability) {
        // In the session's pod: pi-sandbox-init --join USERNS NETNS PIDNS -- bwrap ...
        Prepared::Sandboxed(launch) => {
            assert!(launch.in_pod, "no pod: {:?}", s.background_failure_note());
            assert_eq!(launch.args[0], "--join");
            let bwrap = launch.args.iter().position(|a| a == "--").unwrap() + 1;
            assert_eq!(launch.args[bwrap], program.as_os_str());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn error_words_name_hidden_env_files_of_the_session_tree_only() {
    let cwd = std::path::Path::new("/w/proj");
    let hidden = vec![
        PathBuf::from("/home/u/other/.env"),
        PathBuf::from("/w/proj/api/.env.local"),
        PathBuf::from("/w/proj/.env"),
    ];
    let named = |w: &str| hidden_env_file_named(&hidden, cwd, w).cloned();
    assert_eq!(named(".env"), Some(PathBuf::from("/w/proj/.env")));
    assert_eq!(named("../.env"), Some(PathBuf::from("/w/proj/.env")));
    assert_eq!(
        named(".env.local"),
        Some(PathBuf::from("/w/proj/api/.env.local"))
    );
    assert_eq!(
        named("/home/u/other/.env"),
        Some(PathBuf::from("/home/u/other/.env"))
    );
    // Another project's file is not named for a bare word, nor is what is no env file.
    assert_eq!(named("other/.env"), None);
    assert_eq!(named("a.txt"), None);
    assert_eq!(named(""), None);
}

#[test]
fn a_note_judges_a_path_in_tmp_as_the_command_named_it_in_the_sessions_tmp() {
    let (_t, dir) = temp();
    let s = session_in(&dir, None, None);
    let own = s.env().tmp.clone().expect("a session folder");
    let key = dir.join("home/.ssh/id_rsa");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    std::fs::write(&key, "K").unwrap();
    // A link the command left in its /tmp: inside, /tmp/k is the session folder's k.
    std::os::unix::fs::symlink(&key, own.join("k")).unwrap();
    let notes = s.explain_write_failures("cat: /tmp/k: Permission denied");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(".ssh/id_rsa is hidden in the sandbox"),
        "{notes:?}"
    );
}
