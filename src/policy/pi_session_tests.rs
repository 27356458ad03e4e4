use super::*;

fn dir(global: &str, project: &str) -> Option<Setting> {
    merged(&parse_layer(global), &parse_layer(project))
}

fn text(s: &str) -> Option<Setting> {
    Some(Setting::Text(s.into()))
}

#[test]
fn settings_are_read_as_json_parse_and_pi_s_merge_read_them() {
    // the project's key wins, a null there too; the global's when the project has none
    assert_eq!(
        dir(r#"{"sessionDir":"g"}"#, r#"{"sessionDir":"p"}"#),
        text("p")
    );
    assert_eq!(
        dir(r#"{"sessionDir":"g"}"#, r#"{"sessionDir":null}"#),
        Some(Setting::Falsy)
    );
    assert_eq!(dir(r#"{"sessionDir":"g"}"#, "{}"), text("g"));
    // duplicate keys: the last one, as JSON.parse
    assert_eq!(dir(r#"{"sessionDir":"a","sessionDir":"b"}"#, ""), text("b"));
    // escapes decoded in keys and values; a lone surrogate is U+FFFD in a path
    assert_eq!(dir(r#"{"session\u0044ir":"x\/y"}"#, ""), text("x/y"));
    assert_eq!(dir(r#"{"sessionDir":"a\ud800b"}"#, ""), text("a\u{FFFD}b"));
    assert_eq!(dir(r#"{"\udc00":1,"sessionDir":"k"}"#, ""), text("k"));
    // a BOM is dropped (pi 0.87); comments, trailing commas and other junk make the file {}
    assert_eq!(dir("\u{feff}{\"sessionDir\":\"bom\"}", ""), text("bom"));
    for broken in [
        "{\"sessionDir\":\"x\",}",
        "// c\n{\"sessionDir\":\"x\"}",
        "{\"sessionDir\":\"x\"} x",
        "{\"sessionDir\":\"a\tb\"}",
        "{'sessionDir':'x'}",
    ] {
        assert_eq!(dir(r#"{"sessionDir":"g"}"#, broken), text("g"), "{broken}");
    }
    // what is not an object counts as {}
    for other in ["[\"sessionDir\"]", "\"sessionDir\"", "1", "null", ""] {
        assert_eq!(dir(other, ""), None, "{other}");
    }
    // truth as JavaScript sees it
    for (v, s) in [
        ("\"\"", Setting::Falsy),
        ("0", Setting::Falsy),
        ("-0.0", Setting::Falsy),
        ("1e-400", Setting::Falsy),
        ("false", Setting::Falsy),
        ("1e400", Setting::Truthy),
        ("[]", Setting::Truthy),
        ("{}", Setting::Truthy),
        ("true", Setting::Truthy),
    ] {
        assert_eq!(
            dir(&format!("{{\"sessionDir\": {v} }}"), ""),
            Some(s),
            "{v}"
        );
    }
    // deep nesting and lone surrogates elsewhere do not stop the reading
    let deep = format!(
        "{{\"x\":{}0{},\"sessionDir\":\"d\"}}",
        "[".repeat(500),
        "]".repeat(500)
    );
    assert_eq!(dir(&deep, ""), text("d"));
}

#[test]
fn a_project_proto_key_is_where_pi_s_merge_looks_sessiondir_up() {
    let proto = r#"{"__proto__":{"sessionDir":"p1"}}"#;
    assert_eq!(dir("{}", proto), text("p1"));
    // own keys come first
    assert_eq!(dir(r#"{"sessionDir":"g"}"#, proto), text("g"));
    // one level more: the prototype's prototype (pi 0.87)
    assert_eq!(
        dir("", r#"{"__proto__":{"__proto__":{"sessionDir":"p2"}}}"#),
        text("p2")
    );
    assert_eq!(
        dir(
            "",
            r#"{"__proto__":{"__proto__":{"__proto__":{"sessionDir":"p3"}}}}"#
        ),
        None
    );
    // a global __proto__ is copied as a plain key, and then the project's assigns to it
    assert_eq!(dir(r#"{"__proto__":{"sessionDir":"g"}}"#, "{}"), None);
    assert_eq!(dir(r#"{"__proto__":1}"#, proto), None);
    // arrays, null and primitives make no sessionDir
    for v in ["[]", "null", "\"s\"", "3"] {
        assert_eq!(dir("", &format!("{{\"__proto__\":{v}}}")), None, "{v}");
    }
    // the last __proto__ decides
    assert_eq!(
        dir("", r#"{"__proto__":{"sessionDir":"a"},"__proto__":{}}"#),
        None
    );
}

#[test]
fn paths_are_expanded_and_resolved_as_pi_uses_them() {
    let (home, cwd) = (Path::new("/h"), Path::new("/w/p"));
    let p = |s: &str| pi_path(s, home, cwd);
    assert_eq!(p("~"), Some("/h".into()));
    assert_eq!(p("~/x/../y/"), Some("/h/y".into()));
    assert_eq!(p("~//x"), Some("/h/x".into()));
    assert_eq!(p("~x"), Some("/w/p/~x".into()));
    assert_eq!(p(".sessions"), Some("/w/p/.sessions".into()));
    assert_eq!(p("../s"), Some("/w/s".into()));
    assert_eq!(p("/abs//s/."), Some("/abs/s".into()));
    assert_eq!(p("file:///f/./g"), Some("/f/g".into()));
    assert_eq!(p("file://localhost/f"), Some("/f".into()));
    assert_eq!(p("file:/f"), Some("/w/p/file:/f".into()));
    for refused in [
        "a\0b",
        "file://host/f",
        "file:///a%20b",
        "file:///C:/x",
        "file://",
    ] {
        assert_eq!(p(refused), None, "{refused:?}");
    }
}

#[test]
fn the_environment_comes_before_the_settings_and_relative_paths_from_pi_s_cwd() {
    let t = tempfile::tempdir().unwrap();
    let (home, agent, cwd) = (t.path().join("h"), t.path().join("a"), t.path().join("p"));
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(cwd.join(".pi")).unwrap();
    let resolve = |var: Option<&str>| configured_dir(var, &home, &agent, &cwd);
    assert_eq!(resolve(None), None);
    std::fs::write(agent.join("settings.json"), r#"{"sessionDir":"~/g"}"#).unwrap();
    assert_eq!(resolve(None), Some(home.join("g")));
    std::fs::write(cwd.join(".pi/settings.json"), r#"{"sessionDir":".s"}"#).unwrap();
    assert_eq!(resolve(None), Some(cwd.join(".s")));
    assert_eq!(resolve(Some("")), Some(cwd.join(".s")));
    assert_eq!(resolve(Some("~/e")), Some(home.join("e")));
    std::fs::write(cwd.join(".pi/settings.json"), r#"{"sessionDir":""}"#).unwrap();
    assert_eq!(resolve(None), None);
    // not a regular file: read as {}, without blocking on it
    std::fs::remove_file(cwd.join(".pi/settings.json")).unwrap();
    let fifo = std::ffi::CString::new(
        cwd.join(".pi/settings.json")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert_eq!(resolve(None), Some(home.join("g")));
}

#[test]
fn a_session_folder_is_kept_whole_with_the_links_on_its_way_unless_it_holds_the_project() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join("real")).unwrap();
    std::os::unix::fs::symlink("real", proj.join("link")).unwrap();
    let writable = [proj.clone()];
    // through a link: the folder and the link
    let places = protected_places(&[proj.join("link")], None, &writable);
    assert_eq!(places, vec![proj.join("link"), proj.join("real")]);
    // not made yet: the first missing directory on the way too
    let places = protected_places(&[proj.join("a/b/s")], None, &writable);
    assert_eq!(places, vec![proj.join("a"), proj.join("a/b/s")]);
    // the project itself (`sessionDir: "."`): only the live transcript
    let file = proj.join("2026_x.jsonl");
    assert_eq!(
        protected_places(std::slice::from_ref(&proj), Some(&file), &writable),
        vec![file.clone()]
    );
    assert_eq!(
        protected_places(std::slice::from_ref(&root), None, &writable),
        Vec::<PathBuf>::new()
    );
}
