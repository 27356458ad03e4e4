use std::path::PathBuf;

use super::*;
use crate::session::files::FileOpError;
use crate::session::session_in;

/// A temp dir by its real path (the guard compares resolved paths), outside the system's
/// temp dir, which the default allowWrite lists.
fn temp() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
    let dir = std::fs::canonicalize(t.path()).unwrap();
    (t, dir)
}

/// A file outside the project and the home: writing it asks.
fn outside(dir: &Path) -> PathBuf {
    let out = dir.join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    out.join("notes.txt")
}

fn asks(s: &Session, op: Op, path: &Path) -> bool {
    s.check(op, path).verdict == Verdict::Prompt
}

#[test]
fn a_write_allowed_for_this_session_holds_until_the_session_ends() {
    let (_t, dir) = temp();
    let file = outside(&dir);
    let mut s = session_in(&dir, None, Some("pi-1"));
    assert!(asks(&s, Op::Write, &file));
    let said = s.grant_write(&file, WriteScope::Session).unwrap();
    assert!(said.contains("for this session"), "{said}");
    assert!(s.check(Op::Write, &file).allowed());
    s.reload();
    assert!(s.check(Op::Write, &file).allowed());
    // Memory only: neither config file got it.
    assert!(!s.env().project_config().exists());
    assert!(!s.env().global_config().exists());
    assert!(asks(
        &session_in(&dir, None, Some("pi-2")),
        Op::Write,
        &file
    ));
}

#[test]
fn a_write_allowed_for_this_project_is_written_into_its_file_and_trusted() {
    let (_t, dir) = temp();
    let file = outside(&dir);
    let mut s = session_in(&dir, None, Some("pi-1"));
    let said = s.grant_write(&file, WriteScope::Project).unwrap();
    let project = s.env().project_config();
    assert!(said.contains("sandbox.json"), "{said}");
    let text = std::fs::read_to_string(&project).unwrap();
    assert!(
        text.contains(&dir.join("elsewhere").display().to_string()),
        "{text}"
    );
    assert!(s.check(Op::Write, &file).allowed());
    // The file widens the rules, and it is the user's own change: trusted in the next
    // session too, with nothing to ask.
    let next = session_in(&dir, None, Some("pi-2"));
    assert!(next.check(Op::Write, &file).allowed());
    assert!(next.trust_prompt(false).is_none());
}

#[test]
fn a_write_allowed_for_all_projects_is_written_into_the_global_file() {
    let (_t, dir) = temp();
    let file = outside(&dir);
    let mut s = session_in(&dir, None, Some("pi-1"));
    s.grant_write(&file, WriteScope::Global).unwrap();
    let global = std::fs::read_to_string(s.env().global_config()).unwrap();
    assert!(
        global.contains(&dir.join("elsewhere").display().to_string()),
        "{global}"
    );
    assert!(!s.env().project_config().exists());
    assert!(session_in(&dir, None, Some("pi-2"))
        .check(Op::Write, &file)
        .allowed());
}

#[test]
fn a_write_the_guard_does_not_ask_about_or_too_wide_is_not_granted() {
    let (_t, dir) = temp();
    let mut s = session_in(&dir, None, None);
    let inside = s.env().cwd.join("src.rs");
    let err = s.grant_write(&inside, WriteScope::Session).unwrap_err();
    assert!(matches!(err, GrantError::NotAskable { .. }), "{err}");
    let err = s
        .grant_write(Path::new("/x"), WriteScope::Session)
        .unwrap_err();
    assert!(matches!(err, GrantError::TooBroad(_)), "{err}");
    assert!(err.to_string().contains("too wide"), "{err}");
}

#[test]
fn an_env_file_read_allowed_once_lasts_one_tool_call_and_for_the_session_lasts() {
    let (_t, dir) = temp();
    let mut s = session_in(&dir, None, Some("pi-1"));
    let env = s.env().cwd.join(".env");
    std::fs::write(&env, "TOKEN=1\n").unwrap();
    assert!(asks(&s, Op::Read, &env));
    assert!(matches!(s.read_file(&env), Err(FileOpError::Blocked(_))));
    let err = s.grant_env_file(&env, "forever", false).unwrap_err();
    assert!(matches!(err, GrantError::UnknownScope { .. }), "{err}");

    s.grant_env_file(&env, "once", false).unwrap();
    assert_eq!(s.read_file(&env).unwrap(), b"TOKEN=1\n");
    // The next tool call: the answer was for the one before.
    s.check_tool("ls", &serde_json::json!({}));
    assert!(matches!(s.read_file(&env), Err(FileOpError::Blocked(_))));

    s.grant_env_file(&env, "session", false).unwrap();
    assert!(s.check(Op::Read, &env).allowed());
    s.reload();
    assert!(s.check(Op::Read, &env).allowed());
    assert!(asks(&session_in(&dir, None, Some("pi-2")), Op::Read, &env));
}

#[test]
fn a_project_file_that_widens_applies_once_trusted_as_shown() {
    let (_t, dir) = temp();
    let file = outside(&dir);
    let project = dir.join("proj/.pi/sandbox.json");
    std::fs::create_dir_all(project.parent().unwrap()).unwrap();
    let widening = format!(
        r#"{{"filesystem":{{"allowWrite":[".","{}"]}}}}"#,
        dir.join("elsewhere").display()
    );
    std::fs::write(&project, widening).unwrap();
    let mut s = session_in(&dir, None, Some("pi-1"));
    assert!(s.trust_prompt(false).is_some());
    assert!(!s.check(Op::Write, &file).allowed());
    let sha = s.project_layer().unwrap().sha256.clone();

    let err = s.answer_trust(&"0".repeat(64), true).unwrap_err();
    assert!(matches!(err, GrantError::TrustChanged(_)), "{err}");
    assert!(!s.check(Op::Write, &file).allowed());

    s.answer_trust(&sha, true).unwrap();
    assert_eq!(s.project_layer().unwrap().trust, Trust::Trusted);
    assert!(s.check(Op::Write, &file).allowed());
    assert!(session_in(&dir, None, Some("pi-2"))
        .check(Op::Write, &file)
        .allowed());

    s.answer_trust(&sha, false).unwrap();
    assert_eq!(s.project_layer().unwrap().trust, Trust::Declined);
    assert!(!s.check(Op::Write, &file).allowed());
}

#[test]
fn a_file_allowed_alone_is_writable_and_its_siblings_still_ask() {
    let (_t, dir) = temp();
    let file = outside(&dir);
    let sibling = file.with_file_name("other.txt");
    let mut s = session_in(&dir, None, Some("pi-1"));
    // Once: for the tool call being run only.
    s.grant_file_write(&file, true).unwrap();
    assert!(s.write_file(&file, b"once").is_ok());
    s.check_tool("write", &serde_json::json!({"path": file, "content": ""}));
    assert!(matches!(
        s.write_file(&file, b"again"),
        Err(FileOpError::Blocked(_))
    ));
    // For the session: this file, not its folder.
    let said = s.grant_file_write(&file, false).unwrap();
    assert!(said.contains("this file only"), "{said}");
    assert!(s.check(Op::Write, &file).allowed());
    assert!(asks(&s, Op::Write, &sibling));
    assert!(s.write_file(&file, b"session").is_ok());
}

#[test]
fn a_folder_cannot_be_allowed_as_a_file() {
    let (_t, dir) = temp();
    let mut s = session_in(&dir, None, Some("pi-1"));
    let home = dir.join("home");
    for p in [home.as_path(), Path::new("/")] {
        let e = s.grant_file_write(p, false).unwrap_err();
        assert!(
            matches!(e, GrantError::NotAFile(_) | GrantError::NotAskable { .. }),
            "{p:?}: {e}"
        );
        assert!(s.grant_file_write(p, true).is_err(), "{p:?} once");
    }
    assert!(asks(&s, Op::Write, &home.join("x")));
    // A file allowed alone does not open a folder of the same name later.
    let name = home.join("bin");
    s.grant_file_write(&name, false).unwrap();
    assert!(s.check(Op::Write, &name).allowed());
    assert!(asks(&s, Op::Write, &name.join("rg")));
}

#[test]
fn the_hosts_tmp_and_other_sessions_folders_stay_out_of_reach() {
    let (_t, dir) = temp();
    let mut s = session_in(&dir, None, Some("pi-1"));
    let own = s.env().tmp.clone().expect("a session folder");
    // The host's /tmp by a second name: asked, and no folder grant opens it.
    let host = Path::new("/proc/self/root/tmp/pi-sandbox-review-x");
    assert!(asks(&s, Op::Write, host));
    assert!(matches!(
        s.grant_write(host, WriteScope::Session),
        Err(GrantError::TooBroad(_))
    ));
    // Another session's folder beside this one: refused to both reads and writes.
    let other = own.parent().unwrap().join("1-other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("creds"), "B").unwrap();
    // by a name that reaches the host's path (below /tmp, `/tmp/...` means this session's)
    let by_host_name = Path::new("/proc/self/root").join(other.strip_prefix("/").unwrap());
    for op in [Op::Read, Op::Write] {
        let d = s.check(op, &by_host_name.join("creds"));
        assert_eq!(d.verdict, Verdict::Deny, "{op:?}: {}", d.reason);
        assert!(d.reason.contains("another pi session"), "{}", d.reason);
    }
    assert!(s.check(Op::Write, &own.join("mine")).allowed());
    std::fs::remove_dir_all(&other).unwrap();
    // pi's mkdir of a hidden folder that exists is refused like one that does not.
    std::fs::create_dir_all(dir.join("home/.ssh")).unwrap();
    assert!(matches!(
        s.mkdir(&dir.join("home/.ssh")),
        Err(FileOpError::Blocked(_))
    ));
}
