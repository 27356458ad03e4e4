//! The one table of pi's control surface: every file or directory that pi or git later reads,
//! loads or runs on the host, outside the sandbox. The path guard, the bash mount plan, the
//! macOS profile and the audit all read this table, so adding an entry protects it everywhere.
//!
//! Git's entries come from gitrepository-layout(5): the files git reads configuration or
//! programs from. Git's data (objects, refs, logs, index, HEAD, packed-refs, lock files,
//! rebase and merge state) is not listed, so commit, rebase, merge, stash, fetch and
//! `worktree add` keep working inside the sandbox.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::content;

/// A path git runs or reads on the host for a repository, besides the table's names
/// (`surface::hooks` finds them; the guard keeps them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitPath {
    /// Canonical.
    pub(crate) path: PathBuf,
    /// The repository's git dir, for messages.
    pub(crate) git_dir: PathBuf,
    /// Why: `core.hooksPath = <value>`, husky's scripts behind its wrappers, or the include
    /// that names a config file.
    pub(crate) why: String,
    pub(crate) kind: GitPathKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GitPathKind {
    /// A directory git runs hooks from (`filesystem.allowHooksPath` opens these).
    Hooks,
    /// A config file git includes.
    Config,
}

/// Where an entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// pi's agent dir and everything in it.
    AgentDir,
    /// pi's session folders and what leads to them (`pi_session::protected_places`).
    SessionDir,
    /// The extensions pi's settings make it load, their folders and what leads to them
    /// (`pi_loads::protected_places`).
    PiLoads,
    /// A file or directory with this name, anywhere.
    Name(&'static str),
    /// A path below the home directory.
    Home(&'static str),
    /// A path inside a git directory (a `.git` directory, a bare repository, a submodule's
    /// git dir under `modules/`); `*` stands for exactly one component.
    Git(&'static str),
    /// A `.git` that is not a directory: a gitfile (`gitdir: <path>`) makes git use another
    /// directory as the repository, with its config and hooks.
    GitFile,
}

/// How bash keeps an entry from being changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Bound read-only when it exists; what a command creates is audited afterwards.
    Mount,
    /// Checked after every command instead of mounted: git must be able to remove the
    /// directory holding it (`git worktree remove`), which a mount point would prevent.
    Audit,
}

/// What the audit does with an entry a command created or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnChange {
    /// Moved aside: pi or git would load it.
    MoveAside,
    /// Moved aside unless it is an empty directory (nothing to load).
    MoveUnlessEmpty,
    /// Moved aside if it holds a hook git would run (anything but `*.sample`).
    MoveIfLiveHooks,
    /// Moved aside if it sets a git config key outside the safe list.
    MoveIfUnsafeGitConfig,
    /// Moved aside unless it holds exactly this line (git's own value).
    MoveUnlessContent(&'static str),
    /// Moved aside unless it points at a git dir git itself linked to it: a worktree's admin
    /// dir whose `gitdir` back-link names it, or a submodule's git dir whose `core.worktree`
    /// names its directory.
    MoveUnlessGitLinked,
    /// Git rewrites it itself and nothing runs from it: accepted.
    Accept,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) place: Place,
    pub(crate) keep: Keep,
    pub(crate) on_change: OnChange,
    /// When missing, created empty as a read-only mount point so a command cannot create it
    /// (the project's `.pi`, the hooks directory of each existing git dir).
    pub(crate) placeholder: bool,
    /// Short name for rule labels.
    pub(crate) what: &'static str,
    /// Why the agent may never change it.
    pub(crate) why: &'static str,
}

const fn entry(
    place: Place,
    keep: Keep,
    on_change: OnChange,
    placeholder: bool,
    what: &'static str,
    why: &'static str,
) -> Entry {
    Entry {
        place,
        keep,
        on_change,
        placeholder,
        what,
        why,
    }
}

use Keep::{Audit, Mount};
use OnChange::*;
use Place::{AgentDir, Git, GitFile, Home, Name, PiLoads, SessionDir};

const RC: &str = "a shell start-up file: your shell runs it on the host";
const GIT_CONFIG: &str = "git config: keys like core.hooksPath, core.fsmonitor, aliases and filters run commands on the host the next time you use git";

pub(crate) static TABLE: &[Entry] = &[
    entry(AgentDir, Mount, MoveAside, false, "pi agent dir",
        "pi's agent dir: settings, models, credentials, extensions, session transcripts, the sandbox config and approvals; pi reads, appends to and runs them on the host"),
    entry(SessionDir, Mount, MoveAside, false, "pi session dir",
        "pi's session transcripts: pi appends to them on the host (following a planted link) and reloads them"),
    entry(PiLoads, Mount, MoveAside, false, "pi extension",
        "code pi loads on the host, unsandboxed, at its next start: an extension its settings list or it finds, what that extension imports, or pi's loader cache"),
    entry(Name(".pi"), Mount, MoveUnlessEmpty, true, ".pi directory",
        "a .pi directory: pi loads settings and extensions from it, unsandboxed, when started there"),
    entry(Home(".bashrc"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".bash_profile"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".bash_login"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".bash_logout"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".profile"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".zshrc"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".zshenv"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".zprofile"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".zlogin"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".config/fish"), Mount, MoveAside, false, "shell rc file", RC),
    entry(Home(".gitconfig"), Mount, MoveIfUnsafeGitConfig, false, "global git config", GIT_CONFIG),
    entry(Home(".config/git"), Mount, MoveAside, false, "global git config", GIT_CONFIG),
    entry(Home(".ssh"), Mount, MoveAside, false, "ssh config",
        "ssh's config and authorized keys: ProxyCommand runs commands, authorized_keys grants logins"),
    entry(Home(".local/bin"), Mount, MoveAside, false, "user bin directory",
        "programs here come first on PATH and run on the host in place of the real ones"),
    entry(Home(".config/systemd"), Mount, MoveAside, false, "systemd user units",
        "user services start on the host"),
    entry(Home(".config/autostart"), Mount, MoveAside, false, "autostart entries",
        "programs here start on the host at login"),
    // A submodule's config is git's to rewrite (`submodule update` sets core.worktree), so it
    // is compared after each command instead: added command-running keys are moved aside and
    // the previous content put back. Listed before `config`, which would match it too.
    entry(Git("modules/*/config"), Audit, MoveIfUnsafeGitConfig, false, "git submodule config", GIT_CONFIG),
    entry(Git("config"), Mount, MoveIfUnsafeGitConfig, false, "git config", GIT_CONFIG),
    entry(Git("config.worktree"), Mount, MoveIfUnsafeGitConfig, false, "git config", GIT_CONFIG),
    entry(Git("hooks"), Mount, MoveIfLiveHooks, true, "git hooks",
        "git runs these hooks on the host at commit, merge, checkout and push"),
    entry(Git("commondir"), Mount, MoveAside, false, "git commondir",
        "it tells git to read its config and hooks from another directory"),
    entry(Git("objects/info/alternates"), Mount, MoveAside, false, "git alternates",
        "it makes git read objects from another repository"),
    entry(Git("worktrees/*/config.worktree"), Audit, MoveIfUnsafeGitConfig, false, "git config", GIT_CONFIG),
    entry(Git("worktrees/*/commondir"), Audit, MoveUnlessContent("../.."), false, "git commondir",
        "it tells git to read a worktree's config and hooks from another directory"),
    entry(Git("worktrees/*/gitdir"), Audit, Accept, false, "git worktree back-link",
        "git's record of where a worktree lives; the sandbox trusts worktrees through it"),
    // Compared rather than mounted: `git worktree remove` deletes the worktree, gitfile and all.
    entry(GitFile, Audit, MoveUnlessGitLinked, false, "gitfile",
        "a .git file makes git, run there on the host, use the directory it names as the repository, with that directory's config and hooks"),
];

/// The entries that take part in the name walk (everything but the fixed locations).
pub(crate) fn git_entries() -> impl Iterator<Item = &'static Entry> {
    TABLE.iter().filter(|e| matches!(e.place, Git(_)))
}

/// The table anchored for one session: its fixed places resolved against the (canonical)
/// home, agent dir and session dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Anchors {
    fixed: Vec<(PathBuf, &'static Entry)>,
}

/// Whether canonical `path` is `base` or below it: a byte comparison, as both are canonical
/// (`Path::starts_with` compares component by component, and the scan asks for every file).
pub(crate) fn is_under(path: &Path, base: &Path) -> bool {
    let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    p.starts_with(b) && (p.len() == b.len() || p[b.len()] == b'/' || b.ends_with(b"/"))
}

/// A table entry that covers a path, and the protected path itself (the path or an
/// ancestor of it: `.../.git/hooks` for `.../.git/hooks/pre-commit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub(crate) entry: &'static Entry,
    pub(crate) root: PathBuf,
}

/// Whether a file name is a `Name` entry's name.
fn name_matches(entry: &str, name: &OsStr) -> bool {
    OsStr::new(entry) == name
}

/// Splits a table pattern into its components.
fn pattern_parts(pattern: &str) -> impl Iterator<Item = &str> {
    pattern.split('/').filter(|p| !p.is_empty())
}

/// Whether `rel` (relative to a git dir) is `pattern` or lies below it; returns how many
/// components of `rel` the pattern took.
fn git_match(pattern: &str, rel: &[&OsStr]) -> Option<usize> {
    let mut n = 0;
    for part in pattern_parts(pattern) {
        let c = rel.get(n)?;
        if part != "*" && OsStr::new(part) != *c {
            return None;
        }
        n += 1;
    }
    Some(n)
}

impl Anchors {
    pub(crate) fn new(
        home: &Path,
        agent_dir: &Path,
        session_places: &[PathBuf],
        pi_loads: &[PathBuf],
    ) -> Anchors {
        let mut fixed = Vec::new();
        for e in TABLE {
            match e.place {
                AgentDir => fixed.push((agent_dir.to_path_buf(), e)),
                SessionDir => fixed.extend(session_places.iter().map(|d| (d.clone(), e))),
                PiLoads => fixed.extend(pi_loads.iter().map(|d| (d.clone(), e))),
                Home(rel) => fixed.push((home.join(rel), e)),
                Name(_) | Git(_) | GitFile => {}
            }
        }
        Anchors { fixed }
    }

    /// The first table entry covering `path` (canonical), deciding git dirs with
    /// `is_git_dir`. Pure: the caller says what is on disk.
    pub(crate) fn classify(
        &self,
        path: &Path,
        is_git_dir: &mut dyn FnMut(&Path) -> bool,
    ) -> Option<Hit> {
        let hit = |entry: &'static Entry, root: &Path| {
            Some(Hit {
                entry,
                root: root.to_path_buf(),
            })
        };
        for (base, entry) in &self.fixed {
            if is_under(path, base) {
                return hit(entry, base);
            }
        }
        // Name entries: the outermost matching ancestor is the protected path.
        let mut by_name = None;
        for a in path.ancestors() {
            if let Some(name) = a.file_name() {
                if let Some(e) = TABLE
                    .iter()
                    .find(|e| matches!(e.place, Name(n) if name_matches(n, name)))
                {
                    by_name = Some((e, a));
                }
            }
        }
        if let Some((e, a)) = by_name {
            return hit(e, a);
        }
        // Git entries, relative to each git dir among the ancestors, outermost first: a
        // submodule's git dir sits inside its parent's, and the parent's `modules/*/...`
        // entries say how its files are kept.
        let comps: Vec<&OsStr> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let mut dir = PathBuf::from("/");
        let mut git_dirs = Vec::new();
        for (i, c) in comps.iter().enumerate() {
            if is_git_dir(&dir) {
                git_dirs.push((i, dir.clone()));
            }
            dir.push(c);
        }
        for (i, g) in &git_dirs {
            let rel = &comps[*i..];
            for e in git_entries() {
                if let Git(pattern) = e.place {
                    if let Some(n) = git_match(pattern, rel) {
                        let mut root = g.clone();
                        root.extend(&rel[..n]);
                        return hit(e, &root);
                    }
                }
            }
        }
        // A `commondir` file makes the directory holding it a git dir (see `is_git_dir_on_disk`)
        // and is then covered by `Git("commondir")` there; one being created is covered too,
        // so that both layers judge it the same before and after it exists.
        if path.file_name() == Some(OsStr::new("commondir")) {
            if let Some(e) = TABLE.iter().find(|e| e.place == Git("commondir")) {
                return hit(e, path);
            }
        }
        // A `.git` that is not a directory (or not there yet: what a write would make is a
        // file). The only fact asked of the disk beyond `is_git_dir`.
        if path.file_name() == Some(OsStr::new(".git"))
            && !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        {
            if let Some(e) = TABLE.iter().find(|e| e.place == GitFile) {
                return hit(e, path);
            }
        }
        None
    }

    /// Fixed locations of the table (not name or git entries), for layers that mount or
    /// list paths.
    pub(crate) fn fixed_paths(&self) -> &[(PathBuf, &'static Entry)] {
        &self.fixed
    }
}

/// Whether `dir` is (or could serve git as) a git directory: a directory named `.git` (also
/// one not created yet), one holding `objects/` and `refs/` (a bare repository, a
/// submodule's git dir), one holding a `commondir` file (a linked worktree's admin dir, or a
/// directory a planted gitfile points at), or one directly inside a git dir's `modules/`.
pub(crate) fn is_git_dir_on_disk(dir: &Path) -> bool {
    let kind = |p: &Path| std::fs::symlink_metadata(p).ok().map(|m| m.file_type());
    if dir.file_name() == Some(OsStr::new(".git")) {
        return kind(dir).is_none_or(|t| t.is_dir());
    }
    let exists = |p: &Path| kind(p).is_some();
    let is_file = |p: &Path| kind(p).is_some_and(|t| t.is_file() || t.is_symlink());
    // What git accepts as a repository, HEAD aside (a gitfile can point git at a directory
    // without one, and git's common-dir lookup needs none): its own object store and refs,
    // or a `commondir` naming where they are. git asks only `access(X_OK)` of `objects` and
    // `refs` (setup.c is_git_directory): links to directories, even executable files, pass.
    // So any entry of those names counts (a dangling link too: its target may come later).
    (exists(&dir.join("objects")) && exists(&dir.join("refs")))
        || is_file(&dir.join("commondir"))
        // Not made yet, or not complete: a submodule's git dir is known by where it is.
        || in_modules_of_git_dir(dir)
}

/// `<git dir>/modules/<name>`: where git keeps a submodule's git dir.
fn in_modules_of_git_dir(dir: &Path) -> bool {
    match (dir.parent(), dir.parent().and_then(Path::parent)) {
        (Some(p), Some(gp)) if p.file_name() == Some(OsStr::new("modules")) => {
            is_git_dir_on_disk(gp)
        }
        _ => false,
    }
}

/// When the session starts at the root of a linked git worktree (`.git` is a file), the
/// worktree's git dir and the common dir live outside the workspace, and git must write
/// both. Trusted only through git's own back-link: the worktree's admin dir must hold a
/// `gitdir` file naming this `.git` file, and the common dir must be the admin dir's
/// `../..` (as `git worktree add` writes it). A `.git` file the agent wrote cannot point
/// here at another repository's git dir. Nothing is asked of a `git` on PATH.
pub(crate) fn worktree_git_dirs(cwd: &Path) -> Vec<PathBuf> {
    let dot_git = cwd.join(".git");
    if !std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
        return vec![];
    }
    let Some(admin) = gitfile_target(&dot_git) else {
        return vec![];
    };
    if !worktree_links_back(&admin, &dot_git) {
        return vec![];
    }
    let Some(common) = commondir_target(&admin) else {
        return vec![];
    };
    if admin.parent().and_then(Path::parent) != Some(common.as_path())
        || admin.parent().and_then(Path::file_name) != Some(std::ffi::OsStr::new("worktrees"))
    {
        return vec![];
    }
    let mut dirs = Vec::new();
    for d in [admin, common] {
        if !d.starts_with(cwd) && !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

// What git reads from its pointer files is read here as git reads it (git 2.39-2.47,
// setup.c and worktree.c), so that the directory judged is the directory git uses:
// - a gitfile (`read_gitfile_gently`): a regular file of at most 1 MiB that starts with
//   `gitdir: ` (the space included); trailing CR/LF cut; at least one byte after the
//   prefix; the path is a C string (it ends at a NUL); relative to the gitfile's directory.
// - `commondir` (`get_common_dir_noenv`): trailing CR/LF cut, a C string, relative to the
//   git dir. Leading and other trailing blanks are part of the path: `../.. ` is another
//   directory than `../..`.
// - a worktree's `gitdir` back-link (`get_linked_worktree`): trailing blanks cut
//   (`strbuf_rtrim`), a C string, relative to the admin dir.
// `tests::pointer_files_are_read_as_git_reads_them` holds these against git.

/// The path text git takes from a pointer file's content: trailing CR and LF cut, then up
/// to the first NUL.
pub(crate) fn git_path_text(content: &[u8]) -> &[u8] {
    let end = content
        .iter()
        .rposition(|b| *b != b'\n' && *b != b'\r')
        .map_or(0, |i| i + 1);
    c_string(&content[..end])
}

fn c_string(bytes: &[u8]) -> &[u8] {
    bytes.split(|b| *b == 0).next().unwrap_or_default()
}

/// The git dir a gitfile names, canonical; None when git would not read it as a gitfile.
pub(crate) fn gitfile_target(gitfile: &Path) -> Option<PathBuf> {
    let text = content::read(gitfile, content::GIT_FILE_LIMIT).ok()?;
    gitfile_target_in(gitfile, &text)
}

/// `gitfile_target` of a gitfile read already (`text`, read within git's 1 MiB).
pub(crate) fn gitfile_target_in(gitfile: &Path, text: &[u8]) -> Option<PathBuf> {
    let rest = text.strip_prefix(b"gitdir: ")?;
    // git: "no path in gitfile" when nothing is left once CR/LF are cut (a NUL counts).
    if rest.iter().all(|b| *b == b'\n' || *b == b'\r') {
        return None;
    }
    let dir = gitfile.parent().unwrap_or(Path::new("/"));
    crate::paths::canonicalize(&dir.join(OsStr::from_bytes(git_path_text(rest)))).ok()
}

/// The common dir a git dir's `commondir` file names, canonical; None without one (or
/// one that cannot be read: git would fail there).
pub(crate) fn commondir_target(git_dir: &Path) -> Option<PathBuf> {
    let text = content::read(&git_dir.join("commondir"), content::GIT_FILE_LIMIT).ok()?;
    crate::paths::canonicalize(&git_dir.join(OsStr::from_bytes(git_path_text(&text)))).ok()
}

/// What a worktree's admin dir's `gitdir` back-link names (the worktree's `.git` file), not
/// resolved.
pub(crate) fn worktree_back_link(admin: &Path) -> Option<PathBuf> {
    let text = content::read(&admin.join("gitdir"), content::GIT_FILE_LIMIT).ok()?;
    let end = text
        .iter()
        .rposition(|b| !b" \t\n\r".contains(b))
        .map_or(0, |i| i + 1);
    Some(admin.join(OsStr::from_bytes(c_string(&text[..end]))))
}

/// Whether a worktree's admin dir has git's back-link (its `gitdir` file, written by
/// `git worktree add`) to `gitfile`.
pub(crate) fn worktree_links_back(admin: &Path, gitfile: &Path) -> bool {
    let Some(back) = worktree_back_link(admin) else {
        return false;
    };
    matches!(
        (crate::paths::canonicalize(&back), crate::paths::canonicalize(gitfile)),
        (Ok(x), Ok(y)) if x == y
    )
}

/// `is_git_dir_on_disk` with answers kept, for walks that ask about the same ancestors
/// again and again.
#[derive(Default)]
pub(crate) struct GitDirCache(rustc_hash::FxHashMap<Box<[u8]>, bool>);

impl GitDirCache {
    pub(crate) fn is_git_dir(&mut self, dir: &Path) -> bool {
        self.remembered(dir, || None)
    }

    /// The answer for `dir` asked once: from `known` where it answers, else from the disk.
    pub(crate) fn remembered(&mut self, dir: &Path, known: impl FnOnce() -> Option<bool>) -> bool {
        let key = dir.as_os_str().as_bytes();
        if let Some(&v) = self.0.get(key) {
            return v;
        }
        let v = known().unwrap_or_else(|| is_git_dir_on_disk(dir));
        self.0.insert(key.into(), v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchors() -> Anchors {
        Anchors::new(
            Path::new("/h"),
            Path::new("/h/.pi/agent"),
            &[PathBuf::from("/s")],
            &[PathBuf::from("/w/ext")],
        )
    }

    fn what(path: &str, git_dirs: &[&str]) -> Option<(&'static str, PathBuf)> {
        let mut is_git = |p: &Path| git_dirs.iter().any(|g| Path::new(g) == p);
        anchors()
            .classify(Path::new(path), &mut is_git)
            .map(|h| (h.entry.what, h.root))
    }

    #[test]
    fn every_git_entry_is_found_relative_to_any_git_dir() {
        let g = &["/w/.git", "/w/bare", "/w/.git/modules/sub"];
        assert_eq!(what("/w/.git/config", g).unwrap().0, "git config");
        assert_eq!(
            what("/w/.git/hooks/pre-commit", g).unwrap(),
            ("git hooks", PathBuf::from("/w/.git/hooks"))
        );
        assert_eq!(what("/w/bare/hooks/pre-receive", g).unwrap().0, "git hooks");
        assert_eq!(
            what("/w/.git/modules/sub/config", g).unwrap().0,
            "git submodule config"
        );
        assert_eq!(
            what("/w/.git/worktrees/x/commondir", g).unwrap().0,
            "git commondir"
        );
        assert_eq!(what("/w/.git/commondir", g).unwrap().0, "git commondir");
        assert_eq!(
            what("/w/.git/objects/info/alternates", g).unwrap().0,
            "git alternates"
        );
        // git's data stays writable
        for data in [
            "/w/.git/index",
            "/w/.git/HEAD",
            "/w/.git/refs/heads/main",
            "/w/.git/objects/ab/cdef",
            "/w/.git/worktrees/x/HEAD",
            "/w/.git/modules/sub/index",
            "/w/.git/rebase-merge/done",
            "/w/src/config",
        ] {
            assert_eq!(what(data, g), None, "{data}");
        }
        // not a git dir: an ordinary `config` file
        assert_eq!(what("/w/notgit/config", g), None);
        // a commondir anywhere: writing it would make its directory a git dir
        assert_eq!(what("/w/notgit/commondir", g).unwrap().0, "git commondir");
    }

    #[test]
    fn names_home_files_and_pi_dirs() {
        assert_eq!(
            what("/w/a/.pi/b/.pi/x", &[]).unwrap(),
            (".pi directory", PathBuf::from("/w/a/.pi"))
        );
        assert_eq!(what("/h/.bashrc", &[]).unwrap().0, "shell rc file");
        assert_eq!(
            what("/h/.pi/agent/sessions/a.jsonl", &[]).unwrap().0,
            "pi agent dir"
        );
        assert_eq!(what("/s/x.jsonl", &[]).unwrap().0, "pi session dir");
        assert_eq!(what("/h/proj/.bashrc", &[]), None);
        // a .git that is not a directory (here: not on disk, so a write would make a file)
        assert_eq!(
            what("/nonexistent-test/w/sub/.git", &[]).unwrap().0,
            "gitfile"
        );
    }

    #[test]
    fn git_dir_detection_on_disk() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("bare/objects")).unwrap();
        std::fs::create_dir_all(r.join("bare/refs")).unwrap();
        std::fs::write(r.join("bare/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(r.join("bare/modules/s")).unwrap();
        std::fs::create_dir_all(r.join("plain")).unwrap();
        // no HEAD: git still takes it as a common dir; a commondir file makes a git dir too
        std::fs::create_dir_all(r.join("headless/objects")).unwrap();
        std::fs::create_dir_all(r.join("headless/refs")).unwrap();
        std::fs::create_dir_all(r.join("linked")).unwrap();
        std::fs::write(r.join("linked/commondir"), "../headless\n").unwrap();
        std::fs::write(r.join("wt.git"), "").unwrap();
        std::fs::create_dir_all(r.join("f")).unwrap();
        std::fs::write(r.join("f/.git"), "gitdir: /x\n").unwrap();
        assert!(is_git_dir_on_disk(&r.join("bare")));
        assert!(is_git_dir_on_disk(&r.join("bare/modules/s")));
        assert!(
            is_git_dir_on_disk(&r.join("new/.git")),
            "a .git not made yet"
        );
        assert!(!is_git_dir_on_disk(&r.join("plain")));
        assert!(is_git_dir_on_disk(&r.join("headless")));
        assert!(is_git_dir_on_disk(&r.join("linked")));
        assert!(
            !is_git_dir_on_disk(&r.join("f/.git")),
            "a gitfile is not a dir"
        );
    }

    /// `git <args>` as a user runs it (PATH's git), None when it fails.
    fn git_says(args: &[&str], dir: &Path) -> Option<PathBuf> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("HOME", "/nonexistent")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
            .stderr(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        out.status
            .success()
            .then(|| crate::paths::canonicalize(Path::new(text.trim_end_matches('\n'))).unwrap())
    }

    #[test]
    fn pointer_files_are_read_as_git_reads_them() {
        let t = tempfile::tempdir().unwrap();
        let r = crate::paths::canonicalize(t.path()).unwrap();
        // git dirs whose names differ only by blanks: a reading that trims them would take
        // one for another
        for name in ["t", "t ", " t", "t\t", "c"] {
            let ok = std::process::Command::new("git")
                .args(["init", "-q", "--bare"])
                .arg(r.join(name))
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
        let wt = r.join("wt");
        std::fs::create_dir(&wt).unwrap();
        let abs = r.join("t");
        let mut agreed = 0;
        for path in [
            "../t",
            "../t ",
            "../ t",
            "../t\t",
            abs.to_str().unwrap(),
            " ../t",
            "",
        ] {
            for tail in ["", "\n", "\r\n", " \n", "\n\n\r", "\0junk\n", "\t"] {
                for prefix in ["gitdir: ", "gitdir:", "gitdir:  ", "GITDIR: "] {
                    let text = format!("{prefix}{path}{tail}");
                    std::fs::write(wt.join(".git"), &text).unwrap();
                    let git = git_says(&["rev-parse", "--absolute-git-dir"], &wt);
                    let ours = gitfile_target(&wt.join(".git"));
                    if git.is_some() {
                        agreed += 1;
                        assert_eq!(ours, git, "gitfile {text:?}");
                    } else {
                        // git takes it for no git dir: ours names none it could take
                        let made = |o: &PathBuf| {
                            ["t", "t ", " t", "t\t", "c"]
                                .iter()
                                .any(|n| *o == r.join(n))
                        };
                        assert!(
                            ours.as_ref().is_none_or(|o| !made(o)),
                            "gitfile {text:?}: {ours:?}"
                        );
                    }
                }
            }
        }
        assert!(agreed > 20, "{agreed}");
        // commondir: an admin dir of `c` whose commondir names `c` as git wrote it, or,
        // with a blank more, a directory `.. ` beside the admin dirs
        let admin = r.join("c/worktrees/a");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let spaced = r.join("c/worktrees/.. ");
        for d in ["objects", "refs"] {
            std::fs::create_dir_all(spaced.join(d)).unwrap();
        }
        let mut agreed = Vec::new();
        for text in [
            "../..",
            "../..\n",
            "../..\r\n",
            "../.. \n",
            "../.. ",
            " ../..",
            "../..\t",
            "../..\0x\n",
            "../../\n",
        ] {
            std::fs::write(admin.join("commondir"), text).unwrap();
            let args = [
                "--git-dir",
                admin.to_str().unwrap(),
                "rev-parse",
                "--path-format=absolute",
                "--git-common-dir",
            ];
            let Some(git) = git_says(&args, &r) else {
                continue;
            };
            assert_eq!(
                commondir_target(&admin),
                Some(git.clone()),
                "commondir {text:?}"
            );
            agreed.push(git);
        }
        assert!(
            agreed.contains(&spaced) && agreed.contains(&r.join("c")),
            "{agreed:?}"
        );
        // and the audit's comparison with git's own `../..` reads it the same way
        assert_eq!(git_path_text(b"../..\r\n\n"), b"../..");
        assert_eq!(git_path_text(b"../..\0x\n"), b"../..");
        assert_eq!(git_path_text(b"../.. \n"), b"../.. ");
    }

    #[test]
    fn every_directory_git_takes_for_a_git_dir_is_one() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let r = crate::paths::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(r.join("real/sub")).unwrap();
        let kinds = ["dir", "link", "exec", "file", "dangling", "none"];
        let make = |p: &Path, kind: &str| match kind {
            "dir" => std::fs::create_dir(p).unwrap(),
            "link" => std::os::unix::fs::symlink(r.join("real/sub"), p).unwrap(),
            "dangling" => std::os::unix::fs::symlink(r.join("nowhere"), p).unwrap(),
            "exec" | "file" => {
                std::fs::write(p, "").unwrap();
                let mode = if kind == "exec" { 0o755 } else { 0o644 };
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            _ => {}
        };
        let mut taken = 0;
        for objects in kinds {
            for refs in kinds {
                let d = r.join(format!("{objects}-{refs}"));
                std::fs::create_dir(&d).unwrap();
                std::fs::write(d.join("HEAD"), "ref: refs/heads/main\n").unwrap();
                make(&d.join("objects"), objects);
                make(&d.join("refs"), refs);
                let git = git_says(&["rev-parse", "--absolute-git-dir"], &d);
                if git.as_deref() == Some(d.as_path()) {
                    taken += 1;
                    assert!(
                        is_git_dir_on_disk(&d),
                        "git takes {objects}/{refs} for a git dir"
                    );
                }
            }
        }
        // directories, links to them and executable files, for both
        assert!(taken >= 9, "{taken}");
    }
}
