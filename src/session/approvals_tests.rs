use super::*;
use crate::policy::project_layer::content_hash;
use std::sync::atomic::{AtomicU64, Ordering};

const T0: u64 = 1_790_000_000_000;

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    now: Arc<AtomicU64>,
    store: Store,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent").join(FILE_NAME);
    let now = Arc::new(AtomicU64::new(T0));
    let clock = now.clone();
    let store = Store::with_clock(
        path.clone(),
        Duration::from_millis(1000),
        Arc::new(move || clock.load(Ordering::SeqCst)),
    );
    Fixture {
        _dir: dir,
        path,
        now,
        store,
    }
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn cmd(s: &str) -> Grant {
    Grant::Command { command: s.into() }
}

fn prefix(words: &[&str]) -> Grant {
    Grant::CommandPrefix {
        argv: words.iter().map(|w| w.to_string()).collect(),
    }
}

#[test]
fn missing_file_is_empty() {
    let f = fixture();
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap, Snapshot::empty());
    assert!(!f.path.exists());
}

#[test]
fn grant_writes_version_2_array_with_mode_0600() {
    let f = fixture();
    let e = f
        .store
        .grant(
            Scope::Always,
            cmd("make deploy"),
            "s1",
            "user: unsandboxed bash prompt",
        )
        .unwrap();
    assert_eq!(e.session, None);
    assert_eq!(e.expires_at, None);
    assert_eq!(e.granted_at, "2026-09-21T14:13:20.000Z");
    let text = std::fs::read_to_string(&f.path).unwrap();
    assert!(text.ends_with("}\n"));
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 2);
    assert_eq!(
        json["approvals"][0],
        serde_json::json!({
            "scope": "always",
            "grant": {"kind": "command", "command": "make deploy"},
            "grantedBy": "user: unsandboxed bash prompt",
            "grantedAt": "2026-09-21T14:13:20.000Z",
            "expiresAt": null
        })
    );
    let mode = std::fs::metadata(&f.path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let lock_mode = std::fs::metadata(f.store.sibling(".lock"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(lock_mode, 0o600);
    let snap = f.store.load("other").unwrap();
    assert_eq!(snap.entries, vec![e.clone()]);
    assert_eq!(snap.command_grant("make deploy"), Some(&e));
    assert_eq!(snap.command_grant("make deploy "), None);
    assert_eq!(snap.command_grant("make  deploy"), None);
    assert_eq!(snap.notice, None);
}

#[test]
fn session_entries_expire_and_are_pruned() {
    let f = fixture();
    let e = f
        .store
        .grant(Scope::Session, prefix(&["git", "status"]), "s1", "user")
        .unwrap();
    assert_eq!(e.session.as_deref(), Some("s1"));
    assert_eq!(e.expires_at, Some(T0 + 1000));

    f.now.store(T0 + 999, Ordering::SeqCst);
    let snap = f.store.load("s1").unwrap();
    assert!(snap.command_grant("git status -s").is_some());

    f.now.store(T0 + 1000, Ordering::SeqCst);
    let snap = f.store.load("s1").unwrap();
    assert!(snap.entries.is_empty());
    assert!(snap.command_grant("git status").is_none());
    // Still in the file until the next write...
    assert_eq!(read_json(&f.path)["approvals"].as_array().unwrap().len(), 1);
    // ...which prunes it.
    f.store
        .grant(Scope::Always, cmd("ls"), "s1", "user")
        .unwrap();
    let json = read_json(&f.path);
    let approvals = json["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["grant"]["command"], "ls");
}

#[test]
fn other_sessions_do_not_see_session_entries() {
    let f = fixture();
    f.store
        .grant(Scope::Session, cmd("make deploy"), "s1", "user")
        .unwrap();
    f.store
        .grant(
            Scope::Session,
            Grant::EnvRead {
                path: "/p/.env".into(),
            },
            "s1",
            "user",
        )
        .unwrap();
    f.store
        .grant(Scope::Always, cmd("make test"), "s2", "user")
        .unwrap();
    let s1 = f.store.load("s1").unwrap();
    assert_eq!(s1.entries.len(), 3);
    assert!(s1.command_grant("make deploy").is_some());
    assert!(s1.env_read_granted(Path::new("/p/.env")));
    let s2 = f.store.load("s2").unwrap();
    assert_eq!(s2.entries.len(), 1);
    assert!(s2.command_grant("make deploy").is_none());
    assert!(!s2.env_read_granted(Path::new("/p/.env")));
    assert!(s2.command_grant("make test").is_some());
    assert!(f
        .store
        .load("")
        .unwrap()
        .command_grant("make deploy")
        .is_none());
}

#[test]
fn ttl_from_env_cases() {
    assert_eq!(ttl_from_env(None), Ok(DEFAULT_SESSION_TTL));
    assert_eq!(DEFAULT_SESSION_TTL.as_millis(), 21_600_000);
    assert_eq!(ttl_from_env(Some("")), Ok(DEFAULT_SESSION_TTL));
    assert_eq!(ttl_from_env(Some("60000")), Ok(Duration::from_secs(60)));
    assert_eq!(ttl_from_env(Some(" 5 ")), Ok(Duration::from_millis(5)));
    for bad in [
        "0",
        "-5",
        "+5",
        "1.5",
        "1e3",
        "6h",
        "abc",
        " ",
        "99999999999999999999999",
    ] {
        let err = ttl_from_env(Some(bad)).unwrap_err();
        assert!(err.contains(TTL_VAR), "{err}");
        assert!(err.contains(&format!("{bad:?}")), "{err}");
        assert!(err.contains("3600000"), "{err}");
    }
}

#[test]
fn in_agent_dir_uses_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    // Only meaningful when the variable is not set in the test environment.
    if std::env::var_os(TTL_VAR).is_none() {
        let store = Store::in_agent_dir(dir.path()).unwrap();
        assert_eq!(store.path(), dir.path().join(FILE_NAME));
        assert_eq!(store.ttl(), DEFAULT_SESSION_TTL);
    }
}

#[test]
fn invalid_grants_are_refused() {
    let f = fixture();
    let invalid = |scope, grant, session: &str| {
        let err = f.store.grant(scope, grant, session, "user").unwrap_err();
        assert_eq!(err.code(), "E_APPROVALS_INVALID", "{err}");
    };
    invalid(Scope::Session, cmd("ls"), "");
    invalid(Scope::Always, prefix(&[]), "s");
    invalid(Scope::Always, cmd(""), "s");
    invalid(
        Scope::Always,
        Grant::EnvRead {
            path: "rel/.env".into(),
        },
        "s",
    );
    invalid(
        Scope::Always,
        Grant::ProjectTrust {
            file: "/p/.pi/sandbox.json".into(),
            sha256: "ABC".into(),
            trusted: true,
        },
        "s",
    );
    assert!(!f.path.exists());
    // An always grant ignores the session argument.
    let e = f.store.grant(Scope::Always, cmd("ls"), "", "user").unwrap();
    assert_eq!(e.session, None);
}

#[test]
fn upgrade_from_version_1() {
    for text in [
        r#"{"approvals": {"make deploy": true, "npm publish": true, "old": false}}"#,
        r#"{"version": 1, "approvals": {"make deploy": true, "npm publish": true, "old": false}}"#,
    ] {
        let f = fixture();
        write_file(&f.path, text);
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.entries.len(), 2);
        assert!(snap.entries.iter().all(|e| e.scope == Scope::Always));
        assert!(snap.command_grant("make deploy").is_some());
        assert!(snap.command_grant("npm publish").is_some());
        assert!(snap.command_grant("old").is_none());
        assert!(snap.notice.unwrap().contains("version-1"));
        // Reading does not rewrite.
        assert_eq!(std::fs::read_to_string(&f.path).unwrap(), text);

        f.store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap();
        let json = read_json(&f.path);
        assert_eq!(json["version"], 2);
        let approvals = json["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 3);
        assert_eq!(approvals[0]["grant"]["command"], "make deploy");
        assert_eq!(approvals[0]["scope"], "always");
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.notice, None);
        assert_eq!(snap.entries.len(), 3);
    }
}

#[test]
fn upgrade_from_the_old_version_2_map() {
    let f = fixture();
    write_file(
        &f.path,
        r#"{"version": 2, "approvals": {
            "make deploy": {"scope": "always"},
            "npm test": {"scope": "session", "expiresAt": 9999999999999},
            "cargo run": {"scope": "session"}
        }}"#,
    );
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap.entries.len(), 1);
    assert!(snap.command_grant("make deploy").is_some());
    assert!(snap.command_grant("npm test").is_none());
    let notice = snap.notice.unwrap();
    assert!(
        notice.contains("2 session approval(s) were dropped"),
        "{notice}"
    );

    f.store
        .grant(Scope::Session, cmd("ls"), "s1", "user")
        .unwrap();
    let json = read_json(&f.path);
    let approvals = json["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 2);
    assert_eq!(approvals[0]["grant"]["command"], "make deploy");
    assert_eq!(approvals[1]["session"], "s1");
    assert_eq!(f.store.load("s1").unwrap().notice, None);
}

#[test]
fn future_version_is_refused_and_left_alone() {
    let f = fixture();
    let text = r#"{"version": 3, "approvals": [{"whatever": 1}]}"#;
    write_file(&f.path, text);
    let err = f.store.load("s1").unwrap_err();
    assert_eq!(err.code(), "E_APPROVALS_VERSION");
    let msg = err.to_string();
    assert!(msg.contains(&f.path.display().to_string()), "{msg}");
    assert!(msg.contains("version 3"), "{msg}");
    let err = f
        .store
        .grant(Scope::Always, cmd("ls"), "s1", "user")
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::FutureVersion {
            path: f.path.clone(),
            version: 3
        }
    );
    assert_eq!(std::fs::read_to_string(&f.path).unwrap(), text);
}

#[test]
fn corrupt_files_are_moved_aside_and_read_as_nothing() {
    for text in [
        "{\"version\": 2, \"approvals\": [",
        "[1, 2]",
        r#"{"version": "2", "approvals": []}"#,
        r#"{"version": 2, "approvals": "everything"}"#,
        r#"{"version": 2, "approvals": [{"scope": "always"}]}"#,
        r#"{"version": 2, "approvals": [{"scope": "session", "grant": {"kind": "command", "command": "x"}, "grantedBy": "u", "grantedAt": "t", "expiresAt": 5}]}"#,
        r#"{"version": 2, "approvals": [{"scope": "always", "grant": {"kind": "commandPrefix", "argv": []}, "grantedBy": "u", "grantedAt": "t"}]}"#,
        r#"{"approvals": {"rm -rf /": "yes"}}"#,
    ] {
        let f = fixture();
        write_file(&f.path, text);
        let snap = f.store.load("s1").unwrap();
        assert!(snap.entries.is_empty(), "{text}");
        let aside = f.store.sibling(&format!(".corrupt-{T0}"));
        let notice = snap.notice.clone().unwrap();
        assert!(notice.contains(&aside.display().to_string()), "{notice}");
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), text);
        assert!(!f.path.exists());
        // Nothing is approved: not the empty command, not anything.
        assert!(snap.command_grant("rm -rf /").is_none());

        f.store
            .grant(Scope::Always, cmd("ls"), "s1", "user")
            .unwrap();
        let json = read_json(&f.path);
        assert_eq!(json["approvals"].as_array().unwrap().len(), 1);
        let snap = f.store.load("s1").unwrap();
        assert_eq!(snap.notice, None);
        assert_eq!(snap.entries.len(), 1);
    }
}

#[test]
fn corrupt_file_found_by_a_grant_is_moved_aside_too() {
    let f = fixture();
    write_file(&f.path, "not json");
    write_file(&f.store.sibling(&format!(".corrupt-{T0}")), "earlier");
    f.store
        .grant(Scope::Always, cmd("ls"), "s1", "user")
        .unwrap();
    let aside = f.store.sibling(&format!(".corrupt-{T0}-1"));
    assert_eq!(std::fs::read_to_string(aside).unwrap(), "not json");
    assert_eq!(f.store.load("s1").unwrap().entries.len(), 1);
}

#[test]
fn network_grants_hold_one_canonical_host() {
    let f = fixture();
    for bad in [
        "Example.com",
        "example.com.",
        "example.com:443",
        "*.example.com",
        "::1",
        "",
    ] {
        let e = f
            .store
            .grant(
                Scope::Always,
                Grant::NetworkHost { host: bad.into() },
                "s1",
                "user",
            )
            .unwrap_err();
        assert!(e.to_string().contains("canonical form"), "{bad}: {e}");
    }
    for good in ["example.com", "xn--bcher-kva.de", "[::1]", "10.0.0.1"] {
        f.store
            .grant(
                Scope::Session,
                Grant::NetworkHost { host: good.into() },
                "s1",
                "user",
            )
            .unwrap();
    }
    let snap = f.store.load("s1").unwrap();
    let hosts: Vec<&str> = snap.network_grants().map(|(h, _)| h).collect();
    assert_eq!(
        hosts,
        ["example.com", "xn--bcher-kva.de", "[::1]", "10.0.0.1"]
    );
    // Another session does not see them.
    assert_eq!(f.store.load("s2").unwrap().network_grants().count(), 0);
}

#[test]
fn unknown_kinds_scopes_and_keys_are_kept() {
    let f = fixture();
    let future_kind = serde_json::json!({
        "scope": "always",
        "grant": {"kind": "gpuDevice", "device": "/dev/nvidia0"},
        "grantedBy": "user", "grantedAt": "t", "expiresAt": null
    });
    let future_scope = serde_json::json!({
        "scope": "project", "project": "/p",
        "grant": {"kind": "command", "command": "rm -rf /"},
        "grantedBy": "user", "grantedAt": "t", "expiresAt": null
    });
    let with_extra_key = serde_json::json!({
        "scope": "always",
        "grant": {"kind": "command", "command": "make", "note": "n"},
        "grantedBy": "user", "grantedAt": "t", "expiresAt": null, "comment": "c"
    });
    let file = serde_json::json!({
        "version": 2,
        "approvals": [future_kind, future_scope, with_extra_key],
        "meta": {"x": 1}
    });
    write_file(&f.path, &serde_json::to_string(&file).unwrap());
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap.entries.len(), 1);
    assert!(snap.command_grant("make").is_some());
    assert!(snap.command_grant("rm -rf /").is_none());

    f.store
        .grant(Scope::Always, cmd("ls"), "s1", "user")
        .unwrap();
    let json = read_json(&f.path);
    assert_eq!(json["meta"], serde_json::json!({"x": 1}));
    let approvals = json["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 4);
    assert_eq!(approvals[0], future_kind);
    assert_eq!(approvals[1], future_scope);
    assert_eq!(approvals[2], with_extra_key);
}

#[test]
fn dedupe_refreshes_identical_grants() {
    let f = fixture();
    f.store
        .grant(Scope::Session, prefix(&["git", "status"]), "s1", "user")
        .unwrap();
    f.now.store(T0 + 500, Ordering::SeqCst);
    let e = f
        .store
        .grant(
            Scope::Session,
            prefix(&["git", "status"]),
            "s1",
            "user again",
        )
        .unwrap();
    assert_eq!(e.expires_at, Some(T0 + 1500));
    // Other sessions and scopes are separate entries.
    f.store
        .grant(Scope::Session, prefix(&["git", "status"]), "s2", "user")
        .unwrap();
    f.store
        .grant(Scope::Always, prefix(&["git", "status"]), "s1", "user")
        .unwrap();
    f.store
        .grant(Scope::Always, prefix(&["git", "status"]), "s2", "user")
        .unwrap();
    let json = read_json(&f.path);
    assert_eq!(json["approvals"].as_array().unwrap().len(), 3);
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap.entries.len(), 2);
    let session_entry = snap
        .entries
        .iter()
        .find(|e| e.scope == Scope::Session)
        .unwrap();
    assert_eq!(session_entry.granted_by, "user again");
    // The refreshed entry outlives the first one's expiry.
    f.now.store(T0 + 1200, Ordering::SeqCst);
    assert_eq!(f.store.load("s1").unwrap().entries.len(), 2);
}

#[test]
fn project_trust_replaces_earlier_answers_about_the_file() {
    let f = fixture();
    let file = PathBuf::from("/home/u/proj/.pi/sandbox.json");
    let other = PathBuf::from("/home/u/other/.pi/sandbox.json");
    let h1 = content_hash(b"one");
    let h2 = content_hash(b"two");
    let trust = |file: &Path, sha: &str, trusted| Grant::ProjectTrust {
        file: file.to_path_buf(),
        sha256: sha.to_string(),
        trusted,
    };
    f.store
        .grant(Scope::Always, trust(&file, &h1, true), "s1", "user")
        .unwrap();
    f.store
        .grant(Scope::Always, trust(&other, &h1, true), "s1", "user")
        .unwrap();
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap.trust(&file), Some((h1.as_str(), true)));

    f.store
        .grant(Scope::Session, trust(&file, &h2, false), "s1", "user")
        .unwrap();
    let snap = f.store.load("s1").unwrap();
    assert_eq!(snap.trust(&file), Some((h2.as_str(), false)));
    assert_eq!(snap.trust(&other), Some((h1.as_str(), true)));
    assert_eq!(snap.trust(Path::new("/nowhere")), None);
    let json = read_json(&f.path);
    assert_eq!(json["approvals"].as_array().unwrap().len(), 2);
}

#[test]
fn content_hash_is_lowercase_hex_sha256() {
    assert_eq!(
        content_hash(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(is_sha256_hex(&content_hash(b"")));
}

#[test]
fn prefix_grants_resist_stretching() {
    let g = prefix(&["git", "status"]);
    for bad in [
        "git status; rm -rf ~",
        "git status && curl x",
        "git status || x",
        "git status | sh",
        "git status $(id)",
        "git status `id`",
        "git status\nrm x",
        "FOO=1 git status",
        "git status > ~/.bashrc",
        "git status &",
        "git statusx",
        "git",
        "alias git=rm; git status",
        "git status # x",
        "{ git status; }",
        "git status\r\nid",
        "git status\\\nid",
        "git status <(id)",
        "git status 2>&1",
        "(git status)",
        "git stat*",
        "git 'status",
        "git status ~root",
    ] {
        assert!(!g.covers_command(bad), "{bad:?}");
    }
    for good in [
        "git status",
        "git status -s",
        "git  status  --short",
        "'git' \"status\"",
        "\tgit status\t",
    ] {
        assert!(g.covers_command(good), "{good:?}");
    }
    assert!(!prefix(&[]).covers_command("git status"));
}

#[test]
fn exact_grants_match_only_identical_text() {
    let g = cmd("make deploy");
    assert!(g.covers_command("make deploy"));
    for other in [
        "make deploy ",
        " make deploy",
        "make  deploy",
        "make deploy; id",
        "'make' deploy",
        "make",
        "make deploy2",
    ] {
        assert!(!g.covers_command(other), "{other:?}");
    }
    assert!(!Grant::EnvRead { path: "/x".into() }.covers_command("/x"));
}

#[test]
fn concurrent_grants_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = Store::with_clock(path, DEFAULT_SESSION_TTL, Arc::new(system_now_ms));
                for i in 0..250 {
                    store
                        .grant(Scope::Always, cmd(&format!("cmd {t} {i}")), "s", "user")
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let json = read_json(&path);
    assert_eq!(json["approvals"].as_array().unwrap().len(), 1000);
    let store = Store::with_clock(path, DEFAULT_SESSION_TTL, Arc::new(system_now_ms));
    let snap = store.load("s").unwrap();
    assert_eq!(snap.entries.len(), 1000);
    for t in 0..4 {
        for i in 0..250 {
            assert!(snap.command_grant(&format!("cmd {t} {i}")).is_some());
        }
    }
}

#[test]
fn errors_have_codes_and_name_the_file() {
    let e = StoreError::Io {
        path: "/a/sandbox-approvals.json".into(),
        message: "reading: denied".into(),
    };
    assert_eq!(e.code(), "E_APPROVALS_IO");
    assert!(e.to_string().contains("/a/sandbox-approvals.json"));
    let e = StoreError::Ttl {
        message: ttl_from_env(Some("x")).unwrap_err(),
    };
    assert_eq!(e.code(), "E_APPROVALS_TTL");
    assert!(e.to_string().contains(TTL_VAR));
}
