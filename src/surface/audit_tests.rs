use super::*;

use crate::policy::config::{merge, Env};
use crate::policy::guard::{ApprovalMode, Guard};
use crate::surface::scan::scan_protected;

fn setup() -> (tempfile::TempDir, PathBuf, Guard) {
    let t = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(t.path()).unwrap();
    let env = Env::under(&root);
    std::fs::create_dir_all(&env.cwd).unwrap();
    let cfg = merge(crate::policy::config::Config::defaults_for(&env), &[]).unwrap();
    let g = Guard::new(&cfg, &env, ApprovalMode::Ask).unwrap();
    (t, root.join("proj"), g)
}

fn auditor(g: &Guard) -> Auditor {
    Auditor::new(
        Quarantine::for_project(&g.env().agent_dir, &g.env().cwd),
        baseline_time(),
    )
}

fn scan(g: &Guard, root: &Path) -> Scan {
    scan_protected(g, &[root.to_path_buf()])
}

#[test]
fn only_new_control_surface_paths_are_moved_and_baseline_ones_are_left() {
    let (_t, root, g) = setup();
    let old_pi = root.join("old/.pi");
    std::fs::create_dir_all(old_pi.join("extensions")).unwrap();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // what the command does
    let new_pi = root.join("new/.pi");
    let new_env = root.join(".env");
    let repo = root.join("repo/.git");
    for d in [&new_pi, &repo.join("hooks"), &root.join("empty/.pi")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(&new_env, "X=1").unwrap();
    std::fs::write(new_pi.join("settings.json"), "{}").unwrap();
    std::fs::write(repo.join("hooks/pre-commit.sample"), "").unwrap();
    std::fs::write(repo.join("config"), "[core]\n\tbare = false\n").unwrap();
    let found = a.after(&scan(&g, &root));
    let mut paths: Vec<&Path> = found.iter().map(|f| f.path.as_path()).collect();
    paths.sort();
    assert_eq!(paths, [new_env.as_path(), new_pi.as_path()], "{found:?}");
    let moved = found.iter().find(|f| f.path == new_pi).unwrap();
    let to = moved.moved_to.as_ref().unwrap();
    assert!(!new_pi.exists() && to.join("settings.json").exists());
    // the quarantine is pi's agent dir, outside every tree the command could write or
    // git shows
    assert!(
        to.starts_with(g.env().agent_dir.join("sandbox-quarantine")),
        "{to:?}"
    );
    assert!(!to.starts_with(&root));
    assert_eq!(to.file_name().unwrap(), ".pi.quarantined");
    assert!(!moved.blocking);
    assert!(old_pi.exists() && root.join("empty/.pi").exists());
    // a new denyWrite match is moved aside too: the agent may not create it
    let env_finding = found.iter().find(|f| f.path == new_env).unwrap();
    assert!(env_finding.moved_to.is_some() && !new_env.exists());
    assert!(
        env_finding.why.contains("denyWrite pattern '.env'"),
        "{}",
        env_finding.why
    );
    // the sample-only hooks dir and the plain config stay
    assert!(repo.join("hooks").exists() && repo.join("config").exists());
    // reported once: a rescan finds nothing new, the quarantine included
    assert!(a.after(&scan(&g, &root)).is_empty());
    // re-created after being moved aside: caught again
    std::fs::create_dir_all(new_pi.join("extensions")).unwrap();
    std::fs::write(new_pi.join("extensions/x.ts"), "").unwrap();
    let again = a.after(&scan(&g, &root));
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].path, new_pi);
}

#[test]
fn a_live_hook_or_a_dangerous_config_is_moved_aside() {
    let (_t, root, g) = setup();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    let git = root.join("r/.git");
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\ncurl evil").unwrap();
    std::fs::write(git.join("config"), "[core]\n\thooksPath = /tmp/h\n").unwrap();
    // a bare repository made by the command: its hooks run when the user pushes to it
    let bare = root.join("bare.git");
    for d in ["objects", "refs", "hooks"] {
        std::fs::create_dir_all(bare.join(d)).unwrap();
    }
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(bare.join("hooks/pre-receive"), "#!/bin/sh\nevil").unwrap();
    let found = a.after(&scan(&g, &root));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(!git.join("hooks").exists() && !git.join("config").exists());
    assert!(!bare.join("hooks").exists());
    assert!(
        found.iter().any(|f| f.why.contains("core.hookspath")),
        "{found:?}"
    );
}

#[test]
fn a_changed_worktree_commondir_is_moved_aside_and_restored() {
    let (_t, root, g) = setup();
    let admin = root.join(".git/worktrees/wt");
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(root.join(".git").join(d)).unwrap();
    }
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(admin.join("commondir"), "../..\n").unwrap();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    std::fs::write(admin.join("commondir"), "/home/evil/repo\n").unwrap();
    let found = a.after(&scan(&g, &root));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        std::fs::read_to_string(admin.join("commondir")).unwrap(),
        "../..\n"
    );
    assert!(
        found[0].why.contains("previous content was put back"),
        "{}",
        found[0].why
    );
    // git's own `worktree add` writes ../..: accepted
    let admin2 = root.join(".git/worktrees/wt2");
    std::fs::create_dir_all(&admin2).unwrap();
    std::fs::write(admin2.join("commondir"), "../..\n").unwrap();
    std::fs::write(admin2.join("gitdir"), "/x/.git\n").unwrap();
    assert!(a.after(&scan(&g, &root)).is_empty());
}

#[test]
fn the_users_files_are_left_when_a_command_turns_their_directory_into_a_git_dir() {
    let (_t, root, g) = setup();
    let sub = root.join("sub");
    std::fs::create_dir_all(sub.join("hooks")).unwrap();
    std::fs::write(sub.join("config"), "[core]\n\thooksPath = mine\n").unwrap();
    std::fs::write(sub.join("hooks/build.sh"), "#!/bin/sh\n").unwrap();
    // older than the baseline by more than a clock tick, as a user's files are
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // the command makes sub a git dir: the user's config and hooks are covered now
    std::fs::create_dir_all(sub.join("objects")).unwrap();
    std::fs::create_dir_all(sub.join("refs")).unwrap();
    std::fs::write(sub.join("commondir"), "../elsewhere\n").unwrap();
    let found = a.after(&scan(&g, &root));
    let mut paths: Vec<&Path> = found.iter().map(|f| f.path.as_path()).collect();
    paths.sort();
    // its config sets core.hooksPath: what made the folder a git dir goes, their files
    // stay where they are
    assert_eq!(
        paths,
        [sub.join("commondir"), sub.join("objects"), sub.join("refs")],
        "{found:?}"
    );
    assert!(found.iter().all(|f| !f.blocking && f.moved_to.is_some()));
    assert!(sub.join("config").exists() && sub.join("hooks/build.sh").exists());
    // in another directory, a hook planted into the user's `hooks` by the same command
    // that makes it a git dir changes that directory: it is judged, and moved
    let other = root.join("other");
    std::fs::create_dir_all(other.join("hooks")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    std::fs::write(other.join("hooks/pre-commit"), "#!/bin/sh\nevil\n").unwrap();
    std::fs::create_dir_all(other.join("objects")).unwrap();
    std::fs::create_dir_all(other.join("refs")).unwrap();
    let found = a.after(&scan(&g, &root));
    assert!(
        found.iter().any(|f| f.path == other.join("hooks")),
        "{found:?}"
    );
    assert!(!other.join("hooks").exists());
}

/// The audit as `Session::audit_after_command` runs it: the structural passes until they
/// move nothing, then everything else.
fn audit(a: &mut Auditor, g: &Guard, root: &Path) -> Vec<Finding> {
    let mut found = Vec::new();
    for pass in 0.. {
        assert!(pass < 8, "the structural passes do not end: {found:?}");
        let structural = a.after_structural(&scan(g, root));
        let moved = structural.iter().any(|f| f.moved_to.is_some());
        found.extend(structural);
        if !moved {
            break;
        }
    }
    found.extend(a.after(&scan(g, root)));
    found
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "{path:?}");
}

fn git_dir(path: &Path) {
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(path.join(d)).unwrap();
    }
    std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

#[test]
fn a_config_is_judged_as_git_reads_it() {
    let (_t, root, g) = setup();
    let sub = root.join(".git/modules/s");
    git_dir(&root.join(".git"));
    git_dir(&sub);
    std::fs::write(sub.join("config"), "[core]\n\thooksPath = mine\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // a new repository's config: read to the first `]`, the old parser saw remote.*.url
    let r1 = root.join("r1/.git");
    git_dir(&r1);
    let escape = "[remote \"a]url=x\"] [core] fsmonitor = touch /tmp/pwned\n";
    std::fs::write(r1.join("config"), escape).unwrap();
    // a config git cannot read
    let r2 = root.join("r2/.git");
    git_dir(&r2);
    std::fs::write(r2.join("config"), "[core]\n\tbare = \"open\n").unwrap();
    // the submodule's config rewritten as git would (the user's key, reformatted, and
    // core.worktree), then with the escape appended
    let sub_config = "[core]\n  hookspath=mine\n  worktree = ../../../s\n";
    std::fs::write(sub.join("config"), sub_config).unwrap();
    let first = audit(&mut a, &g, &root);
    assert!(
        first.iter().all(|f| f.path != sub.join("config")),
        "{first:?}"
    );
    std::fs::write(sub.join("config"), format!("{sub_config}{escape}")).unwrap();
    let found = [first, audit(&mut a, &g, &root)].concat();
    let why = |p: &Path| {
        let f = found.iter().find(|f| f.path == p).expect("judged");
        assert!(f.moved_to.is_some(), "{f:?}");
        f.why.clone()
    };
    assert!(why(&r1.join("config")).contains("core.fsmonitor"));
    let e = why(&r2.join("config"));
    assert!(
        e.contains("git cannot read it") && e.contains(&*r2.to_string_lossy()),
        "{e}"
    );
    assert!(why(&sub.join("config")).contains("core.fsmonitor"));
    // the user's content put back
    assert_eq!(
        std::fs::read_to_string(sub.join("config")).unwrap(),
        sub_config
    );
}

#[test]
fn a_fifo_where_git_expects_a_file_is_moved_aside_without_blocking() {
    let (_t, root, g) = setup();
    let admin = root.join(".git/worktrees/wt");
    git_dir(&root.join(".git"));
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(admin.join("config.worktree"), "").unwrap();
    std::fs::write(admin.join("commondir"), "../..\n").unwrap();
    std::fs::write(admin.join("gitdir"), "/x/.git\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    let r = root.join("r/.git");
    git_dir(&r);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let fifos = [
        r.join("config"),
        root.join("sub/.git"),
        // replacing a file that was empty: its fingerprint says what it is now
        admin.join("config.worktree"),
        admin.join("commondir"),
    ];
    for f in &fifos {
        let _ = std::fs::remove_file(f);
        mkfifo(f);
    }
    let started = std::time::Instant::now();
    let found = audit(&mut a, &g, &root);
    assert!(started.elapsed() < Duration::from_secs(20));
    for f in &fifos {
        let finding = found
            .iter()
            .find(|x| x.path == *f)
            .unwrap_or_else(|| panic!("{f:?}: {found:?}"));
        assert!(
            finding.moved_to.is_some() && !finding.blocking,
            "{finding:?}"
        );
        assert!(finding.why.contains("it is a FIFO"), "{}", finding.why);
        assert!(std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file()) || !f.exists());
    }
    // the file that was there is put back
    assert_eq!(
        std::fs::read_to_string(admin.join("commondir")).unwrap(),
        "../..\n"
    );
}

#[test]
fn a_worktree_commondir_is_compared_as_git_reads_it() {
    let (_t, root, g) = setup();
    git_dir(&root.join(".git"));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // git reads `../.. ` as a directory named `.. ` beside the admin dirs; CR/LF and
    // what follows a NUL it does not read
    for (name, text, kept) in [
        ("a", "../.. \n", false),
        ("b", " ../..", false),
        ("c", "../..\r\n", true),
        ("d", "../..\0/elsewhere\n", true),
    ] {
        let admin = root.join(".git/worktrees").join(name);
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("commondir"), text).unwrap();
        let found = audit(&mut a, &g, &root);
        assert_eq!(found.is_empty(), kept, "{text:?}: {found:?}");
    }
}

#[test]
fn a_users_commondir_is_left_when_the_command_changes_the_entry_covering_it() {
    let (_t, root, g) = setup();
    // the user's directory `x/worktrees/pkg` holds a file named commondir: pkg is a git
    // dir, its commondir kept read-only (not compared by content)
    let pkg = root.join("x/worktrees/pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("commondir"), "the user's notes\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // the command makes x a git dir (pkg/commondir is now a worktree's commondir there,
    // compared by content) and plants a config in pkg
    std::fs::write(root.join("x/commondir"), "../elsewhere\n").unwrap();
    std::fs::write(pkg.join("config"), "[core]\n\thooksPath = /x\n").unwrap();
    let found = audit(&mut a, &g, &root);
    let mut paths: Vec<&Path> = found.iter().map(|f| f.path.as_path()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [root.join("x/commondir"), pkg.join("config")],
        "{found:?}"
    );
    assert!(found.iter().all(|f| f.moved_to.is_some()), "{found:?}");
    assert_eq!(
        std::fs::read_to_string(pkg.join("commondir")).unwrap(),
        "the user's notes\n"
    );
    assert!(!pkg.join("config").exists() && !root.join("x/commondir").exists());
    // the other way round: y stops being a git dir (its refs removed), and pkg's
    // commondir, compared by content until now, is the user's file as it was
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(root.join("y").join(d)).unwrap();
    }
    std::fs::create_dir_all(root.join("y/worktrees/pkg")).unwrap();
    std::fs::write(root.join("y/worktrees/pkg/commondir"), "../..\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    std::fs::remove_dir(root.join("y/refs")).unwrap();
    assert_eq!(audit(&mut a, &g, &root), vec![]);
    assert!(root.join("y/worktrees/pkg/commondir").exists());
}

#[test]
fn a_dangling_protected_links_target_made_by_the_command_is_moved_once() {
    let (_t, root, g) = setup();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    // sub/.pi points at a file that does not exist yet (and is named like a git pointer)
    std::os::unix::fs::symlink("../b/commondir", root.join("sub/.pi")).unwrap();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    std::fs::write(root.join("b/commondir"), "../elsewhere\n").unwrap();
    let first = a.after_structural(&scan(&g, &root));
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].moved_to.is_some());
    // nothing is put back in its place (there was nothing), so nothing comes back
    assert!(!root.join("b/commondir").exists());
    assert!(a.after_structural(&scan(&g, &root)).is_empty());
    assert!(a.after(&scan(&g, &root)).is_empty());
}

#[test]
fn a_protected_links_target_made_as_an_env_file_is_moved_whichever_entry_comes_first() {
    // The new file is found twice: as the target of a protected link, and as an env file
    // (hidden as itself, in a dependency tree where denyWrite does not apply; or as what a
    // link named `.env` leads to). The target is judged, whichever the scan lists first.
    let cases: [(&str, &str, &str); 3] = [
        // a link in a folder matching denyWrite `*.pem`, listed before the env file ...
        (
            "a.pem/up",
            "../node_modules/pkg/../.env.local",
            "node_modules/.env.local",
        ),
        // ... and after it
        (
            "z.pem/up",
            "../node_modules/pkg/../.env.local",
            "node_modules/.env.local",
        ),
        // a link named like an env file (denyWrite `.env`), to a file of any name
        ("pkg/.env", "modules/.env.d/../../deep", "pkg/deep"),
    ];
    for (link, target, made) in cases {
        let (_t, root, g) = setup();
        for d in ["node_modules/pkg", "pkg/modules/.env.d"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::create_dir_all(root.join(link).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, root.join(link)).unwrap();
        let mut a = auditor(&g);
        a.baseline(&scan(&g, &root));
        // the command writes through the dangling link, and an env file of its own
        std::fs::write(root.join(link), "X=1\n").unwrap();
        std::fs::write(root.join("node_modules/pkg/.env"), "Y=1\n").unwrap();
        let found = a.after(&scan(&g, &root));
        assert_eq!(found.len(), 1, "{link}: {found:?}");
        assert_eq!(found[0].path, root.join(made), "{link}: {found:?}");
        assert!(found[0].moved_to.is_some(), "{link}: {found:?}");
        assert!(!root.join(made).exists(), "{link}");
        // the env file the command made where nothing else protects it is its own
        assert!(root.join("node_modules/pkg/.env").exists(), "{link}");
        assert_eq!(a.after(&scan(&g, &root)), vec![], "{link}");
    }
}

#[test]
fn a_file_that_is_also_a_protected_links_target_is_compared_as_itself() {
    let (_t, root, g) = setup();
    let admin = root.join(".git/worktrees/wt");
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(root.join(".git").join(d)).unwrap();
    }
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(
        admin.join("config.worktree"),
        "[core]\n\thooksPath = mine\n",
    )
    .unwrap();
    // a `.env` (denyWrite) link whose target is that file: two entries for one path
    std::os::unix::fs::symlink(admin.join("config.worktree"), root.join(".env")).unwrap();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // nothing changed: nothing to judge, the user's config stays
    assert_eq!(a.after(&scan(&g, &root)), vec![]);
    assert!(admin.join("config.worktree").exists());
}

#[test]
fn what_cannot_be_moved_blocks_until_it_is_gone() {
    let (_t, root, g) = setup();
    // /proc allows no new directory: the quarantine cannot be made. Its inode times say
    // when the kernel first looked the file up in this process, which another test may
    // have done before this one started: nothing counts as the user's here, or the file
    // could pass for older than the session.
    let stuck = PathBuf::from("/proc/self/status");
    let pi_entry = crate::policy::protected::TABLE
        .iter()
        .find(|e| e.what == ".pi directory")
        .unwrap();
    let found = Found {
        path: stuck.clone(),
        why: Protection::Surface(crate::policy::protected::Hit {
            entry: pi_entry,
            root: stuck.clone(),
        }),
        fingerprint: vec![],
    };
    let mut a = Auditor {
        since: None,
        ..auditor(&g)
    };
    a.baseline(&scan(&g, &root));
    let now = Scan {
        protected: vec![found],
        ..Default::default()
    };
    let f = a.after(&now);
    assert!(f[0].blocking && f[0].moved_to.is_none(), "{f:?}");
    assert!(f[0].why.contains("bash stays blocked"));
    assert_eq!(a.retry_blocked().len(), 1);
    assert_eq!(a.retry_blocked().len(), 1, "still there, still blocking");
}

#[test]
fn what_an_earlier_command_of_the_session_wrote_is_not_the_users() {
    let (_t, root, g) = setup();
    let mut a = auditor(&g);
    // a hook written by the write tool before the session's first command
    let r = root.join("r");
    std::fs::create_dir_all(r.join("hooks")).unwrap();
    std::fs::write(r.join("hooks/pre-commit"), "#!/bin/sh\nevil\n").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    // first command: a config in that plain directory (nothing to judge yet)
    a.baseline(&scan(&g, &root));
    std::fs::write(r.join("config"), "[core]\n\tfsmonitor = evil\n").unwrap();
    assert_eq!(a.after(&scan(&g, &root)), vec![]);
    // long after, the next command makes r a git dir: both are judged as the command's
    std::thread::sleep(Duration::from_millis(20));
    a.baseline(&scan(&g, &root));
    std::fs::create_dir_all(r.join("objects")).unwrap();
    std::fs::create_dir_all(r.join("refs")).unwrap();
    let found = audit(&mut a, &g, &root);
    let mut paths: Vec<&Path> = found.iter().map(|f| f.path.as_path()).collect();
    paths.sort();
    assert_eq!(paths, [r.join("config"), r.join("hooks")], "{found:?}");
    assert!(!r.join("config").exists() && !r.join("hooks").exists());
}

#[test]
fn a_folder_named_like_an_old_quarantine_is_judged_like_any_other() {
    let (_t, root, g) = setup();
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // a bare repository with a live hook, inside a folder named as quarantines once were
    let bare = root.join(".pi-sandbox-quarantine-AAAAAAAAAAAA/remote.git");
    for d in ["objects", "refs", "hooks"] {
        std::fs::create_dir_all(bare.join(d)).unwrap();
    }
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(bare.join("hooks/pre-receive"), "#!/bin/sh\nevil\n").unwrap();
    let found = audit(&mut a, &g, &root);
    assert!(
        found.iter().any(|f| f.path == bare.join("hooks")),
        "{found:?}"
    );
    assert!(!bare.join("hooks/pre-receive").exists());
}

#[test]
fn a_gitfile_into_modules_is_trusted_only_through_gits_back_link() {
    let (_t, root, g) = setup();
    for d in ["objects", "refs"] {
        std::fs::create_dir_all(root.join(".git").join(d)).unwrap();
    }
    // the user's submodule git dir: its core.worktree names ../../../lib
    let module = root.join(".git/modules/lib");
    for d in ["objects", "refs", "hooks"] {
        std::fs::create_dir_all(module.join(d)).unwrap();
    }
    std::fs::write(module.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(module.join("config"), "[core]\n\tworktree = ../../../lib\n").unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::create_dir_all(root.join("other")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let mut a = auditor(&g);
    a.baseline(&scan(&g, &root));
    // git's own gitfile in lib, and a planted one in other pointing at the same git dir
    std::fs::write(root.join("lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
    std::fs::write(root.join("other/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
    let found = audit(&mut a, &g, &root);
    let paths: Vec<&Path> = found.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(paths, [root.join("other/.git")], "{found:?}");
    assert!(root.join("lib/.git").exists());
}

#[test]
fn the_first_sessions_time_is_recorded_once_and_kept() {
    let t = tempfile::tempdir().unwrap();
    let agent = t.path().join("agent");
    let first = first_session_time(&agent).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(first_session_time(&agent), Some(first));
    // a record that cannot be read: nothing is the user's
    std::fs::write(agent.join("sandbox-first-session"), "garbage").unwrap();
    assert_eq!(first_session_time(&agent), None);
}
