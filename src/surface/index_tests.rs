// The index's tests (the index against a full scan after each change), the roots' own, and
// the world they share.

use super::*;
use crate::surface::index_verify::comparable;

use std::fs;
use std::os::unix::fs::symlink;
use tests_support::*;

#[test]
fn the_index_follows_every_change_to_the_tree() {
    let w = world();
    let p = |rel: &str| w.guard.env().cwd.join(rel);
    fs::create_dir_all(p("src/deep/er")).unwrap();
    fs::write(p("src/a.txt"), "a").unwrap();
    let index = Index::start(&w.guard);
    check(&index, &w, "build");
    assert!(
        matches!(index.status(), Status::Ready { .. }),
        "{}",
        index.status()
    );
    // it answers for what it walked (the disk is asked for the rest)
    assert_eq!(
        index.with_git_dirs(|known| known(&p("src/deep"))),
        Some(false)
    );
    type Step<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let steps: Vec<Step> = vec![
        (
            "a .pi deep down",
            Box::new(|| fs::create_dir_all(p("src/deep/er/.pi/extensions")).unwrap()),
        ),
        (
            "a repository",
            Box::new(|| {
                for d in ["repo/.git/objects", "repo/.git/refs", "repo/.git/hooks"] {
                    fs::create_dir_all(p(d)).unwrap();
                }
                fs::write(p("repo/.git/config"), "[core]\n").unwrap();
            }),
        ),
        (
            "the repository renamed",
            Box::new(|| fs::rename(p("repo"), p("repo2")).unwrap()),
        ),
        (
            "a directory moved across",
            Box::new(|| fs::rename(p("src/deep"), p("repo2/deep")).unwrap()),
        ),
        (
            "a directory replaced by another of that name",
            Box::new(|| {
                fs::remove_dir_all(p("repo2/deep")).unwrap();
                fs::create_dir_all(p("repo2/deep/.pi")).unwrap();
            }),
        ),
        (
            "a plain directory made a git dir by a commondir",
            Box::new(|| {
                fs::create_dir_all(p("plain/worktrees/w1")).unwrap();
                fs::write(p("plain/worktrees/w1/config.worktree"), "x").unwrap();
                fs::write(p("plain/commondir"), "../repo2/.git\n").unwrap();
            }),
        ),
        (
            "the commondir removed again",
            Box::new(|| fs::remove_file(p("plain/commondir")).unwrap()),
        ),
        (
            "a hard link to a protected file",
            Box::new(|| fs::hard_link(p("repo2/.git/config"), p("src/innocent.txt")).unwrap()),
        ),
        (
            "the hard link removed",
            Box::new(|| fs::remove_file(p("src/innocent.txt")).unwrap()),
        ),
        (
            "a .pi that is a link, then pointed elsewhere",
            Box::new(|| {
                fs::create_dir_all(p("elsewhere")).unwrap();
                symlink(p("elsewhere"), p("src/.pi")).unwrap();
                fs::remove_file(p("src/.pi")).unwrap();
                symlink(p("repo2"), p("src/.pi")).unwrap();
            }),
        ),
        (
            "moved in from outside the writable trees",
            Box::new(|| fs::rename(w.root.join("outside/stash"), p("stash")).unwrap()),
        ),
        (
            "moved out again",
            Box::new(|| fs::rename(p("stash"), w.root.join("outside/stash")).unwrap()),
        ),
        (
            "a gitfile, and a file renamed to .pi",
            Box::new(|| {
                fs::write(p("src/.git"), "gitdir: ../repo2/.git\n").unwrap();
                fs::write(p("src/pi-notes"), "x").unwrap();
                fs::rename(p("src/pi-notes"), p("repo2/deep/er.pi")).unwrap();
                fs::create_dir_all(p("x")).unwrap();
                fs::rename(p("x"), p("src/deep-copy")).unwrap();
                fs::write(p("src/deep-copy/.env"), "K=1").unwrap();
            }),
        ),
        (
            "a protected directory emptied and removed",
            Box::new(|| fs::remove_dir_all(p("repo2/.git")).unwrap()),
        ),
    ];
    for (step, run) in steps {
        run();
        check(&index, &w, step);
    }
    // followed, never rebuilt
    assert_eq!(index.rebuilds(), 0);
    assert!(
        matches!(index.status(), Status::Ready { .. }),
        "{}",
        index.status()
    );
}

#[test]
fn an_overflowing_event_queue_rebuilds_the_index() {
    let w = world();
    let cwd = w.guard.env().cwd.clone();
    fs::create_dir_all(cwd.join("many")).unwrap();
    let index = Index::start(&w.guard);
    check(&index, &w, "build");
    // More events than the kernel queues (16384 by default) between two queries.
    let limit: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .map_or(16384, |s| s.trim().parse().unwrap_or(16384));
    for i in 0..limit + 100 {
        fs::write(cwd.join(format!("many/f{i}")), "").unwrap();
    }
    fs::create_dir_all(cwd.join("many/.pi")).unwrap();
    check(&index, &w, "overflow");
    assert_eq!(index.rebuilds(), 1, "the queue did not overflow");
    // rebuilt: current again, and following changes
    assert!(
        matches!(index.status(), Status::Ready { .. }),
        "{}",
        index.status()
    );
    fs::create_dir_all(cwd.join("many/sub/.pi")).unwrap();
    check(&index, &w, "after the rebuild");
    assert_eq!(index.rebuilds(), 1);
}

#[cfg(all(test, target_os = "linux"))]
mod root_tests {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn a_root_that_changes_what_it_is_rebuilds_the_index() {
        let w = world();
        let cwd = w.guard.env().cwd.clone();
        let index = Index::start(&w.guard);
        check(&index, &w, "build");
        // the project itself becomes a git dir (objects and refs appear in it)
        std::fs::create_dir_all(cwd.join("objects")).unwrap();
        std::fs::create_dir_all(cwd.join("refs")).unwrap();
        std::fs::create_dir_all(cwd.join("hooks")).unwrap();
        check(&index, &w, "root made a git dir");
        assert_eq!(index.rebuilds(), 1);
    }

    #[test]
    fn the_repository_around_a_path_is_what_the_disk_says() {
        let w = world();
        let cwd = w.guard.env().cwd.clone();
        for d in ["a/b/c", "vendor/lib/src/deep", "sub/x", "plain/y"] {
            std::fs::create_dir_all(cwd.join(d)).unwrap();
        }
        std::fs::create_dir_all(cwd.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(cwd.join("modules/sub")).unwrap();
        std::fs::write(cwd.join("sub/.git"), "gitdir: ../modules/sub\n").unwrap();
        std::fs::write(cwd.join("plain/.git"), "not a gitfile\n").unwrap();
        let index = Index::start(&w.guard);
        index.wait_ready();
        let agree = |step: &str| {
            // As the session asks: right after a judgement brought the index up to date.
            index.with_git_dirs(|_| ());
            for d in [
                "a/b/c",
                "vendor/lib/src/deep",
                "vendor/lib",
                "sub/x",
                "plain/y",
                "new/dir",
            ] {
                let dir = cwd.join(d);
                let disk = crate::surface::hooks::repo_within(&dir, &cwd);
                match index.repo_within(&dir, &cwd) {
                    Some(known) => assert_eq!(known, disk, "{step}: {d}"),
                    // Only where a directory on the way is not indexed (not made yet).
                    None => assert!(!dir.exists(), "{step}: the index could not say for {d}"),
                }
            }
        };
        agree("built");
        // A repository appears where there was none, and one goes.
        std::fs::create_dir_all(cwd.join("a/.git")).unwrap();
        std::fs::remove_dir_all(cwd.join("vendor/lib/.git")).unwrap();
        agree("changed");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests_support {
    use super::*;
    use std::fs;

    pub(crate) struct World {
        pub(crate) _t: tempfile::TempDir,
        pub(crate) root: PathBuf,
        pub(crate) guard: Guard,
    }

    pub(crate) fn world() -> World {
        let t = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let env = crate::policy::config::Env::under(&root);
        fs::create_dir_all(&env.cwd).unwrap();
        fs::create_dir_all(root.join("outside/stash/.pi")).unwrap();
        let cfg =
            crate::policy::config::merge(crate::policy::config::Config::defaults_for(&env), &[])
                .unwrap();
        let guard = Guard::new(&cfg, &env, crate::policy::guard::ApprovalMode::Ask).unwrap();
        World { _t: t, root, guard }
    }

    /// The index's answer, which must be the full scan's; and what it says of git dirs, which
    /// must be what the disk says.
    pub(crate) fn check(index: &Index, w: &World, step: &str) {
        let mut dirs = vec![w.guard.env().cwd.clone()];
        let mut i = 0;
        while i < dirs.len() {
            for e in fs::read_dir(&dirs[i]).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                }
            }
            i += 1;
        }
        index.with_git_dirs(|known| {
            for d in &dirs {
                if let Some(k) = known(d) {
                    let disk = crate::policy::protected::is_git_dir_on_disk(d);
                    assert_eq!(k, disk, "after: {step}: git dir {}", d.display());
                }
            }
        });
        let roots = scanned_roots(&w.guard);
        let full = scan_protected(&w.guard, &roots);
        assert_eq!(
            comparable(&index.scan(&w.guard)),
            comparable(&full),
            "after: {step}"
        );
    }
}
