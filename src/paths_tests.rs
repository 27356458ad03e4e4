use super::*;
use std::os::unix::fs::symlink;

fn real(dir: &tempfile::TempDir) -> PathBuf {
    std::fs::canonicalize(dir.path()).unwrap()
}

#[test]
fn expands_home_and_cwd_forms() {
    let home = Path::new("/home/u");
    let cwd = Path::new("/work/p");
    assert_eq!(expand("~", home, cwd).unwrap(), PathBuf::from("/home/u"));
    assert_eq!(
        expand("~/.ssh", home, cwd).unwrap(),
        PathBuf::from("/home/u/.ssh")
    );
    assert_eq!(expand(".", home, cwd).unwrap(), PathBuf::from("/work/p/."));
    assert_eq!(
        expand("./sub", home, cwd).unwrap(),
        PathBuf::from("/work/p/./sub")
    );
    assert_eq!(expand("/tmp", home, cwd).unwrap(), PathBuf::from("/tmp"));
    // `~user` is not expanded: it is a relative name like any other.
    assert_eq!(
        expand("~bob", home, cwd).unwrap(),
        PathBuf::from("/work/p/~bob")
    );
    assert_eq!(expand("", home, cwd), Err(PathError::Empty));
    assert!(matches!(
        expand("a\0b", home, cwd),
        Err(PathError::NulByte { .. })
    ));
}

#[test]
fn canonical_form_of_missing_paths_is_lexical_below_the_last_existing_dir() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    let p = canonicalize(&root.join("a/b/../c/./d")).unwrap();
    assert_eq!(p, root.join("a/c/d"));
}

#[test]
fn symlink_into_a_directory_is_followed() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    symlink(root.join("secret"), root.join("ws/link")).unwrap();
    assert_eq!(
        canonicalize(&root.join("ws/link/key")).unwrap(),
        root.join("secret/key")
    );
}

#[test]
fn dotdot_after_symlink_uses_the_real_parent_like_the_kernel() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("deep/inner")).unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    // ws/l -> deep/inner ; ws/l/.. is deep, not ws
    symlink(root.join("deep/inner"), root.join("ws/l")).unwrap();
    std::fs::write(root.join("deep/x"), b"").unwrap();
    let ours = canonicalize(&root.join("ws/l/../x")).unwrap();
    assert_eq!(ours, root.join("deep/x"));
    assert_eq!(ours, std::fs::canonicalize(root.join("ws/l/../x")).unwrap());
}

#[test]
fn relative_symlink_targets_resolve_against_the_link_directory() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    symlink("../../c", root.join("a/b/l")).unwrap();
    assert_eq!(
        canonicalize(&root.join("a/b/l/f")).unwrap(),
        root.join("c/f")
    );
}

#[test]
fn dangling_symlink_resolves_to_the_file_a_write_would_create() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("ws")).unwrap();
    symlink(root.join("outside/new.txt"), root.join("ws/dangling")).unwrap();
    assert_eq!(
        canonicalize(&root.join("ws/dangling")).unwrap(),
        root.join("outside/new.txt")
    );
}

#[test]
fn symlink_loops_are_an_error_not_a_hang() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    symlink(root.join("b"), root.join("a")).unwrap();
    symlink(root.join("a"), root.join("b")).unwrap();
    assert!(matches!(
        canonicalize(&root.join("a/x")),
        Err(PathError::SymlinkLoop { .. })
    ));
}

#[test]
fn a_file_used_as_a_directory_is_treated_as_missing_below() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::write(root.join("f"), b"").unwrap();
    assert_eq!(canonicalize(&root.join("f/x")).unwrap(), root.join("f/x"));
}

#[test]
fn the_kernel_fast_path_and_the_walk_agree() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/f"), b"").unwrap();
    symlink(root.join("a/b"), root.join("l")).unwrap();
    symlink("b/f", root.join("a/rel")).unwrap();
    symlink(root.join("nowhere/x"), root.join("dangling")).unwrap();
    for rel in [
        "a/b/f",
        "l/f",
        "l/../b/f",
        "a/rel",
        "a/b/new",
        "l/new",
        "dangling",
        "a/missing/../b/f",
        "a/b/f/x",
        "a/./b/f",
        "a//b/./new",
        "a/b/",
        "a/b/.",
        "l/./f",
        "./a/b",
    ] {
        let p = root.join(rel);
        let walked = canonicalize_by_walk(&p).unwrap();
        assert_eq!(canonicalize(&p).unwrap(), walked, "{rel}");
        assert_eq!(canonicalize_traced(&p).unwrap().0, walked, "{rel}");
    }
    assert!(kernel_resolve(&root.join("l/f")).is_some());
    // The link-free form answers only when no link is on the way, last name included.
    assert_eq!(link_free(&root.join("a/b/f")), Some(root.join("a/b/f")));
    assert_eq!(link_free(&root.join("a//b/./f")), Some(root.join("a/b/f")));
    for linked in ["l/f", "a/rel", "dangling", "l/../b/f", "a/missing/x"] {
        assert_eq!(link_free(&root.join(linked)), None, "{linked}");
    }
}

#[test]
fn traced_resolution_names_the_directories_a_link_leads_through() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    std::fs::create_dir_all(root.join("masked/inner")).unwrap();
    std::fs::create_dir_all(root.join("proj/src")).unwrap();
    symlink(root.join("proj/src"), root.join("masked/inner/out")).unwrap();
    let (c, through) = canonicalize_traced(&root.join("masked/inner/out/lib.rs")).unwrap();
    assert_eq!(c, root.join("proj/src/lib.rs"));
    assert!(through.contains(&root.join("masked/inner")), "{through:?}");
    // no link on the way: nothing extra
    let (_, none) = canonicalize_traced(&root.join("proj/src/lib.rs")).unwrap();
    assert!(none.is_empty());
}

#[test]
fn pi_tool_path_matches_pis_resolve_to_cwd() {
    let home = Path::new("/home/u");
    let cwd = Path::new("/work/p");
    assert_eq!(
        pi_tool_path("@src/a.ts", home, cwd).unwrap(),
        PathBuf::from("/work/p/src/a.ts")
    );
    assert_eq!(
        pi_tool_path("@~/.ssh/id_rsa", home, cwd).unwrap(),
        PathBuf::from("/home/u/.ssh/id_rsa")
    );
    assert_eq!(
        pi_tool_path("a\u{00A0}b/../c", home, cwd).unwrap(),
        PathBuf::from("/work/p/c")
    );
    assert_eq!(
        pi_tool_path("../../etc/passwd", home, cwd).unwrap(),
        PathBuf::from("/etc/passwd")
    );
    assert_eq!(
        pi_tool_path("@@x", home, cwd).unwrap(),
        PathBuf::from("/work/p/@x")
    );
    // absolute: pi does not fold `..`, the kernel resolves it after links
    assert_eq!(
        pi_tool_path("/proc/self/cwd/../x", home, cwd).unwrap(),
        PathBuf::from("/proc/self/cwd/../x")
    );
    assert_eq!(
        pi_tool_path("~/l/../x", home, cwd).unwrap(),
        PathBuf::from("/home/u/l/../x")
    );
}

#[test]
fn pi_read_path_picks_the_variant_pi_would_open() {
    let t = tempfile::tempdir().unwrap();
    let root = real(&t);
    let home = Path::new("/nonexistent-home");
    let variant = root.join("Shot 1.02.03\u{202F}PM.png");
    std::fs::write(&variant, b"").unwrap();
    assert_eq!(
        pi_read_path("Shot 1.02.03 PM.png", home, &root).unwrap(),
        variant
    );
    let curly = root.join("it\u{2019}s.txt");
    std::fs::write(&curly, b"").unwrap();
    assert_eq!(pi_read_path("it's.txt", home, &root).unwrap(), curly);
    // nothing exists: the plain path
    assert_eq!(
        pi_read_path("none.txt", home, &root).unwrap(),
        root.join("none.txt")
    );
}
