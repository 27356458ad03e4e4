use super::*;

fn paths(dirs: Vec<GitPath>) -> Vec<PathBuf> {
    dirs.into_iter().map(|d| d.path).collect()
}

use super::test_git as git;

#[test]
fn hooks_path_from_the_repository_config_and_husky_scripts() {
    let t = tempfile::tempdir().unwrap();
    let repo = std::fs::canonicalize(t.path()).unwrap();
    git(&repo, &["init", "-q"]);
    assert!(git_paths(&repo.join(".git"), &repo, &repo).is_empty());
    git(&repo, &["config", "core.hooksPath", ".husky/_"]);
    let (git_dir, worktree) = enclosing_repo(&repo.join("src/deep")).unwrap();
    assert_eq!(
        (git_dir.clone(), worktree.clone()),
        (repo.join(".git"), repo.clone())
    );
    let dirs = paths(git_paths(&git_dir, &worktree, &repo));
    assert_eq!(dirs, [repo.join(".husky/_"), repo.join(".husky")]);
}

#[test]
fn hooks_of_a_git_dir_found_in_the_trees_resolve_against_its_worktree() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    // a nested repository: relative to the directory holding `.git`
    let nested = root.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    assert!(git_paths_of(&nested.join(".git"), &root)
        .unwrap()
        .is_empty());
    git(&nested, &["config", "core.hooksPath", "githooks"]);
    let dirs = git_paths_of(&nested.join(".git"), &root).unwrap();
    assert_eq!(dirs.len(), 1);
    assert_eq!(dirs[0].path, nested.join("githooks"));
    assert_eq!(dirs[0].git_dir, nested.join(".git"));
    // a bare repository: its hooks run from the git dir
    let bare = root.join("bare.git");
    std::fs::create_dir(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    git(&bare, &["config", "core.hooksPath", "myhooks"]);
    assert_eq!(
        git_paths_of(&bare, &root).unwrap()[0].path,
        bare.join("myhooks")
    );
    // a git dir elsewhere with core.worktree (a submodule's): relative to that worktree
    let module = root.join("modules/sub");
    let work = root.join("sub");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(root.join("modules")).unwrap();
    let module_arg = module.to_str().unwrap();
    git(&work, &["init", "-q", "--separate-git-dir", module_arg]);
    for (key, value) in [
        ("core.worktree", "../../sub"),
        ("core.hooksPath", ".husky/_"),
    ] {
        git(&root, &["--git-dir", module_arg, "config", key, value]);
    }
    let dirs = paths(git_paths_of(&module, &root).unwrap());
    assert_eq!(dirs, [work.join(".husky/_"), work.join(".husky")]);
}

#[test]
fn a_linked_worktrees_admin_dir_resolves_against_that_worktree_and_unknowns_stay_unknown() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let main = root.join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(
        &main,
        &[
            "-c",
            "user.email=a@b",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
    );
    git(&main, &["worktree", "add", "-q", "../wt"]);
    git(&main, &["config", "core.hooksPath", ".husky/_"]);
    let admin = main.join(".git/worktrees/wt");
    let dirs = paths(git_paths_of(&admin, &root).unwrap());
    assert_eq!(dirs, [root.join("wt/.husky/_"), root.join("wt/.husky")]);
    // the repository around a path, through the linked worktree's gitfile
    let (git_dir, worktree) = repo_within(&root.join("wt/src"), &root).unwrap();
    assert_eq!((git_dir, worktree), (admin.clone(), root.join("wt")));
    // no worktree to resolve against (not bare, no core.worktree, no back-link): unknown
    let orphan = root.join("orphan.git");
    std::fs::create_dir(&orphan).unwrap();
    git(&orphan, &["init", "-q", "--bare"]);
    git(&orphan, &["config", "core.bare", "false"]);
    git(&orphan, &["config", "core.hooksPath", "h"]);
    assert!(git_paths_of(&orphan, &root).is_none());
    // no repository below the top looked from
    assert!(repo_within(&root.join("wt/src"), &root.join("wt/src")).is_none());
}

#[test]
fn a_hooks_path_missing_two_levels_down_protects_the_first_missing_directory() {
    let t = tempfile::tempdir().unwrap();
    let repo = std::fs::canonicalize(t.path()).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "core.hooksPath", "tools/hooks"]);
    let dirs = paths(git_paths(&repo.join(".git"), &repo, &repo));
    assert_eq!(dirs, [repo.join("tools/hooks"), repo.join("tools")]);
    // one level missing: the hooks directory itself covers it
    std::fs::create_dir(repo.join("tools")).unwrap();
    let dirs = paths(git_paths(&repo.join(".git"), &repo, &repo));
    assert_eq!(dirs, [repo.join("tools/hooks")]);
}

#[test]
fn hooks_path_from_the_global_config_expands_home() {
    let t = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(t.path()).unwrap();
    let repo = home.join("r");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(
        home.join(".gitconfig"),
        "[core]\n\thooksPath = ~/my-hooks\n",
    )
    .unwrap();
    let dirs = git_paths(&repo.join(".git"), &repo, &home);
    assert_eq!(dirs[0].path, home.join("my-hooks"));
    assert!(dirs[0].why.contains("core.hooksPath"));
}

#[test]
fn every_config_file_a_repository_includes_is_found_taken_or_not() {
    let t = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(t.path()).unwrap();
    let repo = home.join("r");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    // A shared config in the worktree (relative to `.git/`), which includes another.
    std::fs::write(repo.join(".gitconfig"), "[include]\n\tpath = more.cfg\n").unwrap();
    std::fs::write(repo.join("more.cfg"), "[user]\n\tname = x\n").unwrap();
    git(&repo, &["config", "include.path", "../.gitconfig"]);
    // A conditional include that does not hold now, naming another in turn; and two
    // whose files are more than a name away from existing (the first missing directory
    // is protected too).
    std::fs::write(
        repo.join("rel.cfg"),
        "[include]\n\tpath = conf/deeper.cfg\n",
    )
    .unwrap();
    git(
        &repo,
        &["config", "includeIf.onbranch:release.path", "../rel.cfg"],
    );
    git(
        &repo,
        &["config", "--add", "include.path", "../missing/sub/x.cfg"],
    );
    // From the user's global config, with `~/`.
    std::fs::write(home.join(".gitconfig"), "[include]\n\tpath = ~/extra.cfg\n").unwrap();
    // `~name/` is that user's home, as git expands it.
    #[cfg(target_os = "linux")]
    assert_eq!(
        expand_home("~root/x.cfg", &home),
        PathBuf::from("/root/x.cfg")
    );
    assert_eq!(expand_home("~/x.cfg", &home), home.join("x.cfg"));
    assert_eq!(
        expand_home("~no-such-user-here/x", &home),
        PathBuf::from("~no-such-user-here/x")
    );
    let found = git_paths(&repo.join(".git"), &repo, &home);
    assert!(found.iter().all(|p| p.kind == GitPathKind::Config));
    let mut got = paths(found.clone());
    got.sort();
    let mut want = vec![
        repo.join(".gitconfig"),
        repo.join("more.cfg"),
        repo.join("rel.cfg"),
        repo.join("conf"),
        repo.join("conf/deeper.cfg"),
        repo.join("missing"),
        repo.join("missing/sub/x.cfg"),
        home.join("extra.cfg"),
    ];
    want.sort();
    assert_eq!(got, want);
    let shared = found.iter().find(|p| p.path == repo.join(".gitconfig"));
    assert_eq!(
        shared.unwrap().why,
        format!(
            "included by {} (include.path = ../.gitconfig)",
            repo.join(".git/config").display()
        )
    );
    // The same for a git dir whose worktree is not known.
    assert_eq!(git_paths_of(&repo.join(".git"), &home).unwrap().len(), 8);
}

#[test]
fn includes_through_symlinks_protect_each_link_and_unread_chains_are_followed_whole() {
    let t = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(t.path()).unwrap();
    let repo = home.join("r");
    std::fs::create_dir_all(repo.join("conf")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    // `.gitconfig` is a link: git opens the link's name, so replacing the link would
    // send git to another file.
    std::fs::write(repo.join("conf/shared.cfg"), "[user]\n\tname = x\n").unwrap();
    std::os::unix::fs::symlink("conf/shared.cfg", repo.join(".gitconfig")).unwrap();
    git(&repo, &["config", "include.path", "../.gitconfig"]);
    // A chain below a conditional include that does not hold now: a -> b -> c.
    std::fs::write(repo.join("a.cfg"), "[include]\n\tpath = b.cfg\n").unwrap();
    std::fs::write(repo.join("b.cfg"), "[include]\n\tpath = c.cfg\n").unwrap();
    git(
        &repo,
        &["config", "includeIf.onbranch:release.path", "../a.cfg"],
    );
    let found = git_paths(&repo.join(".git"), &repo, &home);
    let got = paths(found.clone());
    for want in [
        repo.join(".gitconfig"),
        repo.join("conf/shared.cfg"),
        repo.join("a.cfg"),
        repo.join("b.cfg"),
        repo.join("c.cfg"),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    let link = found.iter().find(|p| p.path == repo.join(".gitconfig"));
    assert!(link
        .unwrap()
        .why
        .starts_with("a symlink on the way to a config file"));
    // The same for a hooks path through a link.
    std::fs::create_dir(repo.join("real-hooks")).unwrap();
    std::os::unix::fs::symlink("real-hooks", repo.join("hooks")).unwrap();
    git(&repo, &["config", "core.hooksPath", "hooks/"]);
    let got = paths(git_paths(&repo.join(".git"), &repo, &home));
    assert!(got.contains(&repo.join("hooks")), "{got:?}");
    assert!(got.contains(&repo.join("real-hooks")), "{got:?}");
}

#[test]
fn git_is_not_asked_to_read_a_fifo_as_a_config() {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let mkfifo = |p: &Path| {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    };
    git(&root, &["init", "-q", "a"]);
    git(&root, &["init", "-q", "b"]);
    std::fs::remove_file(root.join("a/.git/config")).unwrap();
    mkfifo(&root.join("a/.git/config"));
    git(&root.join("b"), &["config", "include.path", "../../fifo"]);
    mkfifo(&root.join("fifo"));
    let started = std::time::Instant::now();
    assert_eq!(git_paths_of(&root.join("a/.git"), &root), None);
    assert_eq!(git_paths_of(&root.join("b/.git"), &root), None);
    assert!(started.elapsed() < GIT_TIMEOUT, "{:?}", started.elapsed());
}

#[test]
fn git_runs_with_input_and_a_long_answer_does_not_stall_it() {
    // a config whose listing is far larger than a pipe's buffer
    let config = format!("[{}]\n{}", "s".repeat(1000), "k\n".repeat(2000));
    let args = ["config", "--file", "-", "--list", "-z"].map(OsStr::new);
    let run = run_git(
        &args,
        Some(config.as_bytes()),
        Path::new("/"),
        Path::new("/"),
    )
    .unwrap();
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout.len(), 2000 * (1000 + 3));
}
