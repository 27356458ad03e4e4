//! The repositories the session meets: the hooks directories and included config files git
//! reads for each, learnt when a write or a command first reaches it, kept current when their
//! config changes.

use std::path::{Path, PathBuf};

use super::{stamp_of, Session};
use crate::policy::config::Config;
use crate::policy::guard::{Decision, Guard, Op, Verdict};
use crate::policy::protected::{GitPath, GitPathKind};
use crate::surface::scan::Scan;

/// What of a repository's hooks directories and included config files the guard protects:
/// all, but the hooks directories when `filesystem.allowHooksPath` opens them.
pub(crate) fn protected_git_paths(config: &Config, paths: Vec<GitPath>) -> Vec<GitPath> {
    let open_hooks = config.allow_hooks_path.value;
    paths
        .into_iter()
        .filter(|p| !(open_hooks && p.kind == GitPathKind::Hooks))
        .collect()
}

/// The config files among a repository's git paths.
fn included_files(paths: &[GitPath]) -> impl Iterator<Item = PathBuf> + '_ {
    paths
        .iter()
        .filter(|p| p.kind == GitPathKind::Config)
        .map(|p| p.path.clone())
}

/// The repositories the session works in, as (git dir, worktree): the one around its
/// directory and around each allowWrite root.
pub(crate) fn repos_around(guard: &Guard) -> Vec<(PathBuf, PathBuf)> {
    let env = guard.env();
    let mut repos = Vec::new();
    for dir in std::iter::once(env.cwd.as_path()).chain(guard.allow_write_paths()) {
        if let Some(repo) = crate::surface::hooks::enclosing_repo(dir) {
            if !repos.contains(&repo) {
                repos.push(repo);
            }
        }
    }
    repos
}

impl Session {
    /// Brings the guard's hooks directories up to date for `repos` (git dir, and worktree when
    /// known): each one not met yet, or whose config files changed, is asked of git. The
    /// repositories looked up at load keep what they got then; an answer git could not give
    /// leaves what is known and is asked again next time. True when the guard's set changed
    /// (the index then rebuilds before it answers again).
    fn update_git_paths(
        &self,
        guard: &Guard,
        repos: impl Iterator<Item = (PathBuf, Option<PathBuf>)>,
    ) -> bool {
        let Ok(loaded) = &self.state else {
            return false;
        };
        let home = &self.options.env.home;
        // What git reads for `git_dir`: the user's and system's config (stamped once for
        // all), its own config files and the ones they include.
        let users = stamp_of(&crate::surface::hooks::user_config_files(home));
        let stamp_for = |git_dir: &Path, paths: &[GitPath]| {
            let mut files = crate::surface::hooks::repo_config_files(git_dir).to_vec();
            files.extend(included_files(paths));
            let mut stamp = users.clone();
            stamp.extend(stamp_of(&files));
            stamp
        };
        let mut known = self.repo_git_paths.borrow_mut();
        let mut changed = false;
        for (git_dir, worktree) in repos {
            if loaded.load_time_repos.contains(&git_dir) {
                continue;
            }
            let before = known.get(&git_dir);
            let stamp = stamp_for(&git_dir, before.map_or(&[], |(_, p)| p));
            if before.is_some_and(|(s, _)| *s == stamp) {
                continue;
            }
            let paths = match &worktree {
                Some(w) => crate::surface::hooks::git_paths_in(&git_dir, w, home),
                None => crate::surface::hooks::git_paths_of(&git_dir, home),
            };
            let Some(paths) = paths else {
                continue;
            };
            // Taken before git was asked, so that a change meanwhile is seen next time; a
            // newly included file is stamped now.
            let same_includes =
                before.is_some_and(|(_, p)| included_files(p).eq(included_files(&paths)));
            let stamp = if same_includes {
                stamp
            } else {
                stamp_for(&git_dir, &paths)
            };
            let protected = protected_git_paths(&loaded.config, paths.clone());
            changed |= guard.replace_git_paths_of(&git_dir, protected);
            known.insert(git_dir, (stamp, paths));
        }
        if changed {
            if let Some(index) = &self.index {
                index.invalidate();
            }
        }
        changed
    }

    /// `scan`, or a new one when its git dirs taught the guard a hooks directory (the index
    /// rebuilds under the new judgement).
    pub(crate) fn with_hooks_of(&self, guard: &Guard, scan: Scan) -> Scan {
        let repos = scan.git_dirs.iter().map(|g| (g.clone(), None));
        if self.update_git_paths(guard, repos) {
            self.scan(guard)
        } else {
            scan
        }
    }

    /// `judge()`, and again when the write it decided (`decision`) taught the guard the
    /// hooks directory of the repository it lies in.
    pub(crate) fn judged_with_hooks<T>(
        &self,
        guard: &Guard,
        judge: impl Fn() -> T,
        decision: impl Fn(&T) -> Option<&Decision>,
    ) -> T {
        let first = judge();
        if decision(&first).is_some_and(|d| self.learn_hooks_around(guard, d)) {
            judge()
        } else {
            first
        }
    }

    /// For a write the guard would allow: the hooks directory of the repository the path
    /// lies in (a `.git` directory or gitfile between it and its writable tree's root), if
    /// git was not asked yet. True when that changed the guard, so the write must be judged
    /// again.
    fn learn_hooks_around(&self, guard: &Guard, d: &Decision) -> bool {
        if d.op != Op::Write || d.verdict == Verdict::Deny {
            return false;
        }
        let (Some(root), Some(dir)) = (guard.writable_root(&d.path), d.path.parent()) else {
            return false;
        };
        // The index knows where the `.git`s are; the disk answers where it cannot say.
        let found = self
            .index
            .as_ref()
            .and_then(|i| i.repo_within(dir, root))
            .unwrap_or_else(|| crate::surface::hooks::repo_within(dir, root));
        match found {
            Some((git_dir, worktree)) => {
                self.update_git_paths(guard, std::iter::once((git_dir, Some(worktree))))
            }
            None => false,
        }
    }
}
