//! What git runs or reads on the host beyond the table's fixed names. `.git/hooks` and
//! `.git/config` are on the control surface (`protected`); but a repository can point
//! `core.hooksPath` elsewhere, into the worktree (husky's `.husky/_`), at any config level
//! git reads, and a config file can include others (`include.path`, `includeIf.*.path`;
//! a project sharing its config as `.gitconfig` in the worktree does this). Those hooks
//! directories and included files are protected the same way: the user's next git command
//! on the host runs what is there, or reads keys (`core.fsmonitor`, aliases, filters) that
//! run commands.
//!
//! The effective values come from git itself (system, global, repository and worktree
//! config, includes and conditional includes), run on the host as `git config`, which runs
//! nothing a repository names: a system git, a minimal environment, `core.fsmonitor` off,
//! and a time limit. A conditional include is protected whether or not its condition holds
//! now (checking out another branch can make it hold).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::content;
use crate::policy::protected::{GitPath, GitPathKind};
use crate::process;

/// How deep includes are followed; git itself stops at 10.
const MAX_INCLUDE_DEPTH: usize = 10;

const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// The repository around `dir`: its git dir and worktree (`.git` directory or gitfile in
/// `dir` or an ancestor). None outside any repository.
pub(crate) fn enclosing_repo(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    repo_within(dir, Path::new("/"))
}

/// The repository whose worktree holds `dir`, looking no higher than `top`: the nearest
/// `.git` directory or gitfile (followed to its git dir) in `dir` or an ancestor below `top`.
/// (git dir, worktree).
pub(crate) fn repo_within(dir: &Path, top: &Path) -> Option<(PathBuf, PathBuf)> {
    for d in dir.ancestors().take_while(|a| a.starts_with(top)) {
        let dot_git = d.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => return Some((dot_git, d.to_path_buf())),
            Ok(m) if m.is_file() => {
                if let Some(git_dir) = crate::policy::protected::gitfile_target(&dot_git) {
                    return Some((git_dir, d.to_path_buf()));
                }
            }
            _ => {}
        }
    }
    None
}

/// The effective `core.hooksPath` of the repository (`git_dir`, `worktree`), resolved as git
/// resolves it (relative to the worktree), plus the hook scripts' directory when it is a
/// husky layout (`<dir>/_` wrappers that run `<dir>/<hook>`), and every config file the
/// repository's config includes. Empty when there are none, or when no system git is there
/// to ask (the table's `.git/hooks` and `.git/config` still apply).
pub(crate) fn git_paths(git_dir: &Path, worktree: &Path, home: &Path) -> Vec<GitPath> {
    git_paths_in(git_dir, worktree, home).unwrap_or_default()
}

/// `git_paths`, or None when git could not say (no system git, a failure, the time limit).
pub(crate) fn git_paths_in(git_dir: &Path, worktree: &Path, home: &Path) -> Option<Vec<GitPath>> {
    let config = core_config(git_dir, Some(worktree), home)?;
    let mut out = config.included_paths(git_dir, home);
    if let Some(value) = &config.hooks_path {
        out.extend(dirs_for(value, git_dir, worktree, home));
    }
    Some(out)
}

/// `git_paths` for a git dir found in the writable trees, whose worktree is not known:
/// `core.worktree` when set (a submodule's git dir), else the parent of a `.git` directory,
/// the worktree a linked worktree's admin dir links back to (its `gitdir` file), or the git
/// dir itself for a bare repository. None when git could not say, or where a relative
/// `core.hooksPath` would be relative to is not known: what is known is kept.
pub(crate) fn git_paths_of(git_dir: &Path, home: &Path) -> Option<Vec<GitPath>> {
    let named_dot_git = git_dir.file_name().is_some_and(|n| n == ".git");
    let linked = || {
        let gitfile = crate::policy::protected::worktree_back_link(git_dir)?;
        gitfile.parent().map(Path::to_path_buf)
    };
    let default_worktree = if named_dot_git {
        git_dir.parent().map(Path::to_path_buf)
    } else {
        linked()
    };
    let config = core_config(git_dir, None, home)?;
    let mut out = config.included_paths(git_dir, home);
    let Some(value) = &config.hooks_path else {
        return Some(out);
    };
    let worktree = match (&config.worktree, default_worktree) {
        (Some(w), _) => git_dir.join(w),
        (None, Some(w)) => w,
        (None, None) if config.bare => git_dir.to_path_buf(),
        (None, None) => return None,
    };
    out.extend(dirs_for(value, git_dir, &worktree, home));
    Some(out)
}

/// The config files of `git_dir` whose change can change what `git_paths` says of it,
/// besides those of every repository (`user_config_files`) and the files it includes
/// (`GitPathKind::Config` entries).
pub(crate) fn repo_config_files(git_dir: &Path) -> [PathBuf; 2] {
    [git_dir.join("config"), git_dir.join("config.worktree")]
}

/// The user's and the system's config files, which git reads for every repository.
pub(crate) fn user_config_files(home: &Path) -> [PathBuf; 3] {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".config"));
    [
        home.join(".gitconfig"),
        xdg.join("git/config"),
        PathBuf::from("/etc/gitconfig"),
    ]
}

/// A path value as git expands it (`git config --path`): `~/` is the user's home, `~name/`
/// that user's (from the user database; left as written when there is no such user, where
/// git itself refuses the value).
fn expand_home(value: &str, home: &Path) -> PathBuf {
    let Some(after) = value.strip_prefix('~') else {
        return PathBuf::from(value);
    };
    let (user, rest) = after.split_once('/').unwrap_or((after, ""));
    let dir = if user.is_empty() {
        Some(home.to_path_buf())
    } else {
        home_of(user)
    };
    match dir {
        Some(d) if rest.is_empty() => d,
        Some(d) => d.join(rest),
        None => PathBuf::from(value),
    }
}

/// The home directory of the user `name`, from the user database.
fn home_of(name: &str) -> Option<PathBuf> {
    let name = std::ffi::CString::new(name).ok()?;
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live buffer of the size given; on success `found`
    // points at `pwd`, whose strings live in `buf`.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpwnam_r succeeded: pw_dir is a NUL-terminated string in `buf`.
    let dir = unsafe { std::ffi::CStr::from_ptr(pwd.pw_dir) };
    Some(PathBuf::from(OsStr::from_bytes(dir.to_bytes())))
}

fn dirs_for(value: &str, git_dir: &Path, worktree: &Path, home: &Path) -> Vec<GitPath> {
    let why = format!("core.hooksPath = {value}");
    let named = worktree.join(expand_home(value, home));
    let (path, way) = way_to(&named, git_dir, GitPathKind::Hooks, &why);
    let mut out = vec![GitPath {
        path: path.clone(),
        git_dir: git_dir.to_path_buf(),
        why,
        kind: GitPathKind::Hooks,
    }];
    // husky 9: `.husky/_/<hook>` are generated wrappers that run `.husky/<hook>`.
    if path.file_name().is_some_and(|n| n == "_") {
        if let Some(scripts) = path.parent() {
            out.push(GitPath {
                path: scripts.to_path_buf(),
                git_dir: git_dir.to_path_buf(),
                why: format!(
                    "the hook scripts husky's wrappers in {} run (core.hooksPath = {value})",
                    path.display()
                ),
                kind: GitPathKind::Hooks,
            });
        }
    }
    let way: Vec<GitPath> = way
        .into_iter()
        .filter(|w| out.iter().all(|h| h.path != w.path))
        .collect();
    out.extend(way);
    out
}

/// Where git's name `named` for a path leads, and what keeps that way from changing: each
/// symlink on it (replacing one would send git elsewhere; the audit moves aside what takes
/// its place) and, when more than the path itself is missing, the first missing directory
/// (`tools` for `tools/hooks`: made as a link it would take git elsewhere, so it is
/// protected whole until it exists). `what` names the path in their reasons.
fn way_to(named: &Path, git_dir: &Path, kind: GitPathKind, what: &str) -> (PathBuf, Vec<GitPath>) {
    let (target, links) = crate::paths::symlinks_followed(named)
        .unwrap_or_else(|_| (named.to_path_buf(), Vec::new()));
    let entry = |path: PathBuf, why: String| GitPath {
        path,
        git_dir: git_dir.to_path_buf(),
        why,
        kind,
    };
    let mut way: Vec<GitPath> = links
        .into_iter()
        .map(|link| entry(link, format!("a symlink on the way to {what}")))
        .collect();
    way.extend(
        crate::paths::first_missing_ancestor(&target)
            .map(|m| entry(m, format!("the missing directory on the way to {what}"))),
    );
    (target, way)
}

/// What git's config says of a repository's hooks, worktree and includes.
#[derive(Default)]
struct CoreConfig {
    hooks_path: Option<String>,
    worktree: Option<String>,
    bare: bool,
    /// Each include: the file that names it, its key (`include.path` or
    /// `includeif.<condition>.path`) and value.
    includes: Vec<Include>,
}

#[derive(Clone)]
struct Include {
    from: PathBuf,
    key: String,
    value: String,
}

impl Include {
    /// The file it names: relative to the directory of the file naming it, as git has it.
    /// Our own reading of git's path interpolation (`interpolate_path`): `~/` and `~user/`
    /// as git expands them; git's other form, `%(prefix)/...`, names a file under git's
    /// install prefix, which no command can write, so reading it as a relative path only
    /// protects one path more.
    fn target(&self, home: &Path) -> PathBuf {
        let value = expand_home(&self.value, home);
        match self.from.parent() {
            Some(dir) => dir.join(value),
            None => value,
        }
    }
}

impl CoreConfig {
    /// Every file the includes name, followed into conditional includes git did not take
    /// now (their condition may hold later), each with the first missing directory on the
    /// way when more than the file is missing.
    fn included_paths(&self, git_dir: &Path, home: &Path) -> Vec<GitPath> {
        let mut out: Vec<GitPath> = Vec::new();
        // (depth, include, whether git read the file naming it)
        let mut todo: Vec<(usize, Include, bool)> =
            self.includes.iter().map(|i| (0, i.clone(), true)).collect();
        while let Some((depth, include, named_in_read_file)) = todo.pop() {
            let named = include.target(home);
            let why = format!(
                "included by {} ({} = {})",
                include.from.display(),
                include.key,
                include.value
            );
            let what = format!("a config file {why}");
            let (target, way) = way_to(&named, git_dir, GitPathKind::Config, &what);
            if out.iter().any(|p| p.path == target) {
                continue;
            }
            out.extend(way);
            out.push(GitPath {
                path: target.clone(),
                git_dir: git_dir.to_path_buf(),
                why,
                kind: GitPathKind::Config,
            });
            // git listed what the includes it took hold; one whose condition does not hold
            // now (and everything it includes in turn) is read here for its own includes,
            // by the name git would open.
            let unread = !named_in_read_file || include.key.starts_with("includeif.");
            if unread && depth + 1 < MAX_INCLUDE_DEPTH {
                let nested = includes_in_file(&named).unwrap_or_default();
                todo.extend(nested.into_iter().map(|i| (depth + 1, i, false)));
            }
        }
        out
    }
}

/// `core.hooksPath`, `core.worktree`, `core.bare` and the includes as git reads them for
/// the repository (every config level, includes). None when no system git is there to ask,
/// or it fails or hangs, or a file it would read is no regular file (`configs_are_files`).
fn core_config(git_dir: &Path, worktree: Option<&Path>, home: &Path) -> Option<CoreConfig> {
    if !configs_are_files(git_dir, home) {
        return None;
    }
    let mut repo: Vec<&OsStr> = vec!["--git-dir".as_ref(), git_dir.as_os_str()];
    if let Some(w) = worktree {
        repo.extend(["--work-tree".as_ref(), w.as_os_str()]);
    }
    let entries = ask_git_config(
        &repo,
        &[
            "--get-regexp".as_ref(),
            r"^(core\.(hookspath|worktree|bare)|include\.path|includeif\..+\.path)$".as_ref(),
        ],
        worktree.unwrap_or(git_dir),
        home,
    )?;
    // The last value of each key wins, as git's own `--get` has it.
    let mut config = CoreConfig::default();
    for entry in entries {
        let value = (!entry.value.is_empty()).then(|| entry.value.clone());
        match entry.key.as_str() {
            "core.hookspath" => config.hooks_path = value,
            "core.worktree" => config.worktree = value,
            "core.bare" => config.bare = value.as_deref() == Some("true"),
            _ => config.includes.extend(entry.include()),
        }
    }
    Some(config)
}

/// Whether every config file git reads for `git_dir` (the user's and the system's, the
/// repository's and its common dir's, and what they include, followed as git follows
/// them) is a regular file or absent. git opens them blocking: a FIFO a command put in
/// place of one would hold each lookup for the whole time limit, so git is not asked then
/// (the audit moves the FIFO aside; the lookup is tried again after it).
fn configs_are_files(git_dir: &Path, home: &Path) -> bool {
    let mut todo: Vec<(usize, PathBuf)> = user_config_files(home)
        .into_iter()
        .chain(repo_config_files(git_dir))
        .chain(crate::policy::protected::commondir_target(git_dir).map(|c| c.join("config")))
        .map(|f| (0, f))
        .collect();
    let mut seen = std::collections::HashSet::new();
    while let Some((depth, file)) = todo.pop() {
        match std::fs::metadata(&file) {
            Ok(m) if !m.is_file() => return false,
            Ok(_) if seen.insert(file.clone()) && depth + 1 < MAX_INCLUDE_DEPTH => {
                if !may_include(&file) {
                    continue;
                }
                let included = includes_in_file(&file).unwrap_or_default();
                todo.extend(included.iter().map(|i| (depth + 1, i.target(home))));
            }
            // Absent (git skips it), or seen already.
            _ => {}
        }
    }
    true
}

/// Whether a config file could hold an include, without asking git: git reads a key's name
/// as written (letters, digits and `-`, no escapes), so one whose bytes nowhere spell
/// `path`, in any case, has none. Saves a git run per file for most configs.
fn may_include(file: &Path) -> bool {
    content::read(file, content::GIT_FILE_LIMIT).map_or(true, |t| {
        t.windows(4).any(|w| w.eq_ignore_ascii_case(b"path"))
    })
}

/// The includes written in one config file (not those of the files it includes). None
/// for anything but a regular file, which git would wait on or fail to read.
fn includes_in_file(file: &Path) -> Option<Vec<Include>> {
    if !file.is_absolute() || !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let entries = ask_git_config(
        &[],
        &[
            "--file".as_ref(),
            file.as_os_str(),
            "--no-includes".as_ref(),
            "--get-regexp".as_ref(),
            r"^(include\.path|includeif\..+\.path)$".as_ref(),
        ],
        // Run outside any repository: in one, git reads its config first (and would wait
        // on a FIFO that config includes).
        Path::new("/"),
        // Values are not expanded (`Include::target` resolves `~/`); one file is read.
        Path::new("/nonexistent"),
    )?;
    Some(
        entries
            .into_iter()
            .filter_map(ConfigEntry::include)
            .collect(),
    )
}

/// `core.worktree` of the git dir `git_dir`, as git reads its config file (nothing else:
/// no includes, no user or system config); None when unset or git cannot tell.
pub(crate) fn core_worktree(git_dir: &Path) -> Option<PathBuf> {
    let file = git_dir.join("config");
    let query = [
        std::ffi::OsStr::new("--no-includes"),
        std::ffi::OsStr::new("--file"),
        file.as_os_str(),
        // --get-regexp prints `key\nvalue` records, as the parser below reads them.
        std::ffi::OsStr::new("--get-regexp"),
        std::ffi::OsStr::new("^core\\.worktree$"),
    ];
    let entries = ask_git_config(&[], &query, git_dir, Path::new("/nonexistent"))?;
    let last = entries.into_iter().last()?;
    Some(PathBuf::from(last.value))
}

/// One entry `git config --show-origin` listed.
struct ConfigEntry {
    /// The file it is written in; None for one from elsewhere (the command line).
    origin: Option<PathBuf>,
    key: String,
    value: String,
}

impl ConfigEntry {
    fn include(self) -> Option<Include> {
        let is_include = self.key == "include.path"
            || (self.key.starts_with("includeif.") && self.key.ends_with(".path"));
        Some(Include {
            from: self.origin.filter(|_| is_include)?,
            key: self.key,
            value: self.value,
        })
    }
}

/// `git <repo> config -z --show-origin <query>`, run by `run_git`, with values left
/// unexpanded (`~/` is resolved by the caller against the user's HOME). None when no system
/// git is there to ask, or it fails or hangs; no entry matching is an empty list.
fn ask_git_config(
    repo: &[&OsStr],
    query: &[&OsStr],
    dir: &Path,
    home: &Path,
) -> Option<Vec<ConfigEntry>> {
    // -z: a value holding a newline cannot pass for another key.
    let mut args: Vec<&OsStr> = repo.to_vec();
    args.extend(["config", "-z", "--show-origin"].map(OsStr::new));
    args.extend(query);
    let run = run_git(&args, None, dir, home).ok()?;
    match run.code {
        Some(0) => {}
        Some(1) if run.stdout.is_empty() => return Some(vec![]),
        _ => return None,
    }
    // Pairs of records: `<origin type>:<origin>\0` then `key\nvalue\0`.
    let mut records = run.stdout.split(|b| *b == 0);
    let mut entries = Vec::new();
    while let (Some(origin), Some(entry)) = (records.next(), records.next()) {
        let origin = origin
            .strip_prefix(b"file:")
            .map(|p| dir.join(OsStr::from_bytes(p)));
        let text = String::from_utf8_lossy(entry);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        entries.push(ConfigEntry {
            origin,
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    Some(entries)
}

/// What one run of git gave back.
#[derive(Debug)]
pub(crate) struct GitRun {
    /// The exit code; None when a signal ended it.
    pub(crate) code: Option<i32>,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

/// Why git gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GitError {
    NoGit,
    Spawn(String),
    TimedOut,
    /// It printed more than `GIT_OUTPUT_LIMIT`.
    TooMuchOutput,
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::NoGit => f.write_str("no git in the system directories to ask"),
            GitError::Spawn(e) => write!(f, "git could not be started ({e})"),
            GitError::TimedOut => write!(f, "git did not answer within {GIT_TIMEOUT:?}"),
            GitError::TooMuchOutput => write!(f, "git printed more than {GIT_OUTPUT_LIMIT} bytes"),
        }
    }
}

/// What git may print before it counts as no answer (a 1 MiB config whose every line
/// repeats a long section name lists to far more than 1 MiB).
const GIT_OUTPUT_LIMIT: usize = 64 << 20;

/// `git <args>` (with `input` on its stdin), run so that nothing a repository or the
/// agent says can run code or hang pi: git from a system directory, no inherited
/// environment, `core.fsmonitor` off, every directory safe (it is only read), a time limit.
/// Its output is read while it runs, so a long answer does not stall it on a full pipe.
pub(crate) fn run_git(
    args: &[&OsStr],
    input: Option<&[u8]>,
    dir: &Path,
    home: &Path,
) -> Result<GitRun, GitError> {
    let git = process::system_program("git").ok_or(GitError::NoGit)?;
    let mut cmd = Command::new(git);
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "core.fsmonitor=false", "-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .stdout(Stdio::piped());
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        cmd.env("XDG_CONFIG_HOME", xdg);
    }
    let mut child = cmd.spawn().map_err(|e| GitError::Spawn(e.to_string()))?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    std::thread::scope(|s| {
        // git may stop reading (a bad line) or be killed: the write then fails, and ends.
        if let (Some(mut w), Some(bytes)) = (stdin, input) {
            s.spawn(move || std::io::Write::write_all(&mut w, bytes));
        }
        let out = s.spawn(move || drain(stdout, GIT_OUTPUT_LIMIT));
        let err = s.spawn(move || drain(stderr, 64 << 10));
        // Killed at the limit, git closes its pipes and the readers end.
        let status = process::wait_or_kill(&mut child, GIT_TIMEOUT);
        let (stdout, too_much) = out.join().unwrap_or_default();
        let (stderr, _) = err.join().unwrap_or_default();
        match status {
            Err(e) => Err(GitError::Spawn(e.to_string())),
            Ok(None) => Err(GitError::TimedOut),
            Ok(Some(_)) if too_much => Err(GitError::TooMuchOutput),
            Ok(Some(status)) => Ok(GitRun {
                code: status.code(),
                stdout,
                stderr,
            }),
        }
    })
}

/// Everything `pipe` gives until it closes, keeping the first `limit` bytes; whether there
/// was more.
fn drain(pipe: Option<impl std::io::Read>, limit: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return (kept, false);
    };
    let mut buf = [0u8; 64 << 10];
    let mut more = false;
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        more |= n > room;
    }
    (kept, more)
}

/// The tests' git: run in `dir` with `dir` as HOME and a committer named, so that nothing of
/// the machine's own configuration counts.
#[cfg(test)]
pub(crate) fn test_git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
