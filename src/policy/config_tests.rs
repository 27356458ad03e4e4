use super::*;

fn auth() -> Config {
    Config::defaults(crate::policy::credentials::defaults(Path::new("/a"), &[]))
}

fn one(text: &str) -> Result<Config, ConfigError> {
    merge(
        auth(),
        &[(PathBuf::from("/p/.pi/sandbox.json"), Some(text.to_string()))],
    )
}

#[test]
fn defaults_match_the_design_card() {
    let c = merge(auth(), &[]).unwrap();
    assert!(c.enabled.value);
    assert_eq!(c.mode.value, Mode::ReadWrite);
    assert_eq!(c.deny_read.value[..3], ["~/.ssh", "~/.aws", "~/.gnupg"]);
    assert!(c.deny_read.value.contains(&"/a/auth.json".to_string()));
    assert!(c.deny_read.value.contains(&"/a/models.json".to_string()));
    assert_eq!(
        c.deny_read_reasons["/a/models.json"],
        crate::policy::credentials::MODELS_JSON_WHY
    );
    assert_eq!(c.allow_write.value, vec![".", "/tmp"]);
    assert_eq!(c.deny_write.value, vec![".env", ".env.*", "*.pem", "*.key"]);
    assert!(c
        .allowed_domains
        .value
        .contains(&"*.github.com".to_string()));
    assert_eq!(c.deny_read.source, Source::Defaults);
}

#[test]
fn later_layers_replace_keys_they_set_and_keep_the_rest() {
    let g = PathBuf::from("/a/extensions/sandbox.json");
    let p = PathBuf::from("/p/.pi/sandbox.json");
    let c = merge(
        auth(),
        &[
            (
                g.clone(),
                Some(r#"{"filesystem":{"denyRead":["~/x"],"allowWrite":["~/w"]}}"#.into()),
            ),
            (
                p.clone(),
                Some(r#"{"filesystem":{"allowWrite":["."]}}"#.into()),
            ),
        ],
    )
    .unwrap();
    assert_eq!(c.deny_read.value, vec!["~/x"]);
    assert_eq!(c.deny_read.source, Source::File(g.clone()));
    assert_eq!(c.allow_write.value, vec!["."]);
    assert_eq!(c.allow_write.source, Source::File(p.clone()));
    assert_eq!(c.deny_write.source, Source::Defaults);
    assert_eq!(c.layers, vec![(g, true), (p, true)]);
}

#[test]
fn absent_files_are_skipped_and_recorded() {
    let c = merge(auth(), &[(PathBuf::from("/nope.json"), None)]).unwrap();
    assert_eq!(c.layers, vec![(PathBuf::from("/nope.json"), false)]);
    assert_eq!(c.deny_read.source, Source::Defaults);
}

#[test]
fn a_seed_file_with_every_documented_key_loads_unchanged() {
    let c = one(r#"{
          "enabled": true,
          "network": {
            "allowedDomains": ["github.com", "*.github.com", "registry.npmjs.org"],
            "deniedDomains": ["evil.example"],
            "allowLocalBinding": false,
            "allowUnixSockets": ["/var/run/docker.sock"]
          },
          "filesystem": {
            "denyRead": ["~/.ssh", "~/.aws", "~/.gnupg"],
            "allowWrite": [".", "/tmp"],
            "denyWrite": [".env", ".env.*", "*.pem", "*.key"]
          },
          "ignoreViolations": {"*": ["/usr/bin"], "git push": ["/usr/bin/nc"]},
          "enableWeakerNestedSandbox": true,
          "enableWeakerNetworkIsolation": true
        }"#)
    .unwrap();
    assert_eq!(c.denied_domains.value, vec!["evil.example"]);
    assert!(c.enable_weaker_nested_sandbox.value);
    assert!(c.enable_weaker_network_isolation.value);
    assert_eq!(c.ignore_violations.value["git push"], vec!["/usr/bin/nc"]);
    // enforced now: a real key, not passed through
    assert!(!c.allow_unix_sockets.value.is_empty());
}

#[test]
fn invalid_json_names_file_line_and_column() {
    let e = one("{\n  \"enabled\": true,\n  \"mode\" \"ro\"\n}").unwrap_err();
    match &e {
        ConfigError::Parse {
            file, line, column, ..
        } => {
            assert_eq!(file, &PathBuf::from("/p/.pi/sandbox.json"));
            assert_eq!(*line, 3);
            assert_eq!(*column, 10);
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.starts_with("/p/.pi/sandbox.json:3:10: invalid JSON"),
        "{text}"
    );
    assert_eq!(e.code(), "E_CONFIG_PARSE");
}

#[test]
fn unknown_keys_name_the_key_path() {
    let e = one(r#"{"filesystem":{"denyReed":["~/x"]}}"#).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("filesystem.denyReed"), "{text}");
    assert!(text.contains("unknown field"), "{text}");
    assert_eq!(e.code(), "E_CONFIG_SCHEMA");
    let e = one(r#"{"enabeld":true}"#).unwrap_err();
    assert!(e.to_string().contains("`enabeld`"), "{e}");
}

#[test]
fn what_a_hostile_file_says_in_its_errors_is_escaped() {
    // An unknown key the parser quotes back: it must not start a line of its own or
    // erase one in the notice that shows the error.
    for text in [
        "{\"x\\nFAKE LINE\\u001b[2K\\u202e\": 1}",
        "{\"mode\": \"a\\u2028b\\r\"}",
    ] {
        let e = one(text).unwrap_err().to_string();
        assert!(!e.chars().any(shown::is_hidden), "{e:?}");
    }
    let e = one("{\"x\\nFAKE\": 1}").unwrap_err().to_string();
    assert!(e.contains("x\\x0aFAKE"), "{e}");
}

#[test]
fn wrong_types_name_the_key_path_and_index() {
    let e = one(r#"{"filesystem":{"denyWrite":[".env", 3]}}"#).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("filesystem.denyWrite[1]"), "{text}");
    assert!(text.contains("expected a string"), "{text}");
    let e = one(r#"{"enabled":"yes"}"#).unwrap_err();
    assert!(e.to_string().contains("`enabled`"), "{e}");
    let e = one(r#"["not", "an", "object"]"#).unwrap_err();
    assert!(e.to_string().contains("one JSON object"), "{e}");
}

#[test]
fn bad_values_are_rejected_with_the_fix() {
    let e = one(r#"{"mode":"sometimes"}"#).unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    let e = one(r#"{"network":{"allowedDomains":["https://github.com"]}}"#).unwrap_err();
    assert!(e.to_string().contains("network.allowedDomains[0]"), "{e}");
    for bad in [
        "github.com:443",
        "github.com/x",
        "*.10.0.0.1",
        "a b.com",
        "*.",
    ] {
        let text = format!(r#"{{"network":{{"deniedDomains":["ok.com",{bad:?}]}}}}"#);
        let e = one(&text).unwrap_err();
        assert!(
            e.to_string().contains("network.deniedDomains[1]"),
            "{bad}: {e}"
        );
    }
    // What the proxy matches is what the config accepts: IPv6, IDN, IP spellings.
    one(r#"{"network":{"allowedDomains":["::1","[fe80::1]","bücher.de","127.1","*.xn--mnchen-3ya.de"]}}"#)
        .unwrap();
    let e = one(r#"{"filesystem":{"allowWrite":[""]}}"#).unwrap_err();
    assert!(e.to_string().contains("filesystem.allowWrite[0]"), "{e}");
}

#[test]
fn modes_and_aliases_parse() {
    for (s, m) in [
        ("read-only", Mode::ReadOnly),
        ("readonly", Mode::ReadOnly),
        ("RO", Mode::ReadOnly),
        ("read-write", Mode::ReadWrite),
        ("readwrite", Mode::ReadWrite),
        ("rw", Mode::ReadWrite),
        ("yolo", Mode::Yolo),
    ] {
        assert_eq!(Mode::parse(s), Some(m), "{s}");
    }
    assert_eq!(Mode::parse("off"), None);
    assert_eq!(Mode::ReadOnly.next(), Mode::ReadWrite);
    assert_eq!(Mode::ReadWrite.next(), Mode::Yolo);
    assert_eq!(Mode::Yolo.next(), Mode::ReadOnly);
    let c = one(r#"{"mode":"ro"}"#).unwrap();
    assert_eq!(c.mode.value, Mode::ReadOnly);
}

/// An env under a new temporary directory, with the project's `.pi` made.
fn temp_env() -> (tempfile::TempDir, Env) {
    let t = tempfile::tempdir().unwrap();
    let env = Env {
        home: t.path().join("home"),
        cwd: t.path().join("proj"),
        agent_dir: t.path().join("agent"),
        session_dirs: vec![],
        session_file: None,
        pi_loads: vec![],
        tmp: None,
    };
    std::fs::create_dir_all(env.cwd.join(".pi")).unwrap();
    (t, env)
}

#[test]
fn load_reads_real_files_and_fails_closed_on_unreadable_ones() {
    let (_t, env) = temp_env();
    std::fs::write(env.project_config(), r#"{"mode":"ro"}"#).unwrap();
    let pending = |_: &Path, _: &str| Trust::Pending;
    let c = load(&env, &pending).unwrap();
    assert_eq!(c.mode.source, Source::File(env.project_config()));
    assert_eq!(c.project.unwrap().trust, Trust::Trusted, "it only tightens");
    // a directory where the file should be cannot be read: error, not "no rules"
    std::fs::create_dir_all(env.global_config()).unwrap();
    let e = load(&env, &pending).unwrap_err();
    assert_eq!(e.code(), "E_CONFIG_READ");
    assert_eq!(e.file(), env.global_config());
}

#[test]
fn a_widening_project_file_applies_only_once_its_exact_content_is_trusted() {
    let (_t, env) = temp_env();
    let text = r#"{"enabled":false,"mode":"read-only"}"#;
    std::fs::write(env.project_config(), text).unwrap();
    let hash = crate::policy::project_layer::content_hash(
        format!("{text}\0turn the sandbox off (enabled: false)").as_bytes(),
    );
    let seen = std::cell::RefCell::new(vec![]);
    let trusted_hash = std::cell::RefCell::new(String::from("other"));
    let trust_of = |f: &Path, sha: &str| {
        seen.borrow_mut().push((f.to_path_buf(), sha.to_string()));
        if sha == *trusted_hash.borrow() {
            Trust::Trusted
        } else {
            Trust::Pending
        }
    };
    let untrusted = load(&env, &trust_of).unwrap();
    assert!(untrusted.enabled.value, "enabled:false waits for trust");
    assert_eq!(untrusted.mode.value, Mode::ReadOnly, "tightening applies");
    let p = untrusted.project.unwrap();
    assert_eq!(
        (p.trust, p.sha256.as_str()),
        (Trust::Pending, hash.as_str())
    );
    assert_eq!(p.widenings.len(), 1);
    assert_eq!(seen.borrow()[0], (env.project_config(), hash.clone()));
    *trusted_hash.borrow_mut() = hash;
    let trusted = load(&env, &trust_of).unwrap();
    assert!(!trusted.enabled.value, "trusted: applied in full");
}

#[test]
fn a_link_swapped_in_after_trust_is_a_new_question() {
    let (t, env) = temp_env();
    let outside = t.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(env.cwd.join("build")).unwrap();
    std::fs::create_dir_all(&env.home).unwrap();
    // `./build` widens nothing while it is a directory of the project; `outside` does.
    let text = format!(
        r#"{{"filesystem":{{"allowWrite":[".","/tmp","./build","{}"]}}}}"#,
        outside.display()
    );
    std::fs::write(env.project_config(), &text).unwrap();
    let pending = |_: &Path, _: &str| Trust::Pending;
    let first = load(&env, &pending).unwrap().project.unwrap();
    assert_eq!(first.widenings.len(), 1, "{:?}", first.widenings);
    let trusted = first.sha256.clone();
    let trust_of = |_: &Path, sha: &str| {
        if sha == trusted {
            Trust::Trusted
        } else {
            Trust::Pending
        }
    };
    assert_eq!(
        load(&env, &trust_of).unwrap().project.unwrap().trust,
        Trust::Trusted
    );
    // The same bytes, but `build` now leads to the home directory.
    std::fs::remove_dir(env.cwd.join("build")).unwrap();
    std::os::unix::fs::symlink(&env.home, env.cwd.join("build")).unwrap();
    let after = load(&env, &trust_of).unwrap();
    let p = after.project.as_ref().unwrap();
    assert_eq!(p.trust, Trust::Pending, "{:?}", p.widenings);
    assert!(p
        .widenings
        .iter()
        .any(|w| w.what.contains(&*env.home.to_string_lossy())));
    assert!(!after.allow_write.value.contains(&"./build".to_string()));
}
