//! Which keys a git config file sets, as git itself reads them.
//!
//! The audit judges a git config a command wrote (a new repository's `config`, a changed
//! submodule's or worktree's, `~/.gitconfig`) by its keys: only keys on `SAFE_GIT_KEYS` may
//! be added. Reading the keys with a parser of our own was one differential away from an
//! escape: a quoted subsection holding `]` followed by a second header on the same line
//! (`[remote "a]url=x"] [core] fsmonitor = cmd`) read as the harmless `remote.*.url`, while
//! git read `core.fsmonitor` and ran the command on the host at the user's next
//! `git status`. So the keys are the ones the system git lists (`git config --list -z`),
//! run as every git lookup of the crate runs git (`hooks::run_git`); a config git cannot
//! read, or no answer from git, counts as unsafe. `git_config_tests` compares the judgement
//! with git's own view on generated configs, with every git on the machine.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::Path;

/// git config keys a fresh repository may carry (`*` stands for any subsection); any other
/// key can run commands or redirect git (core.hooksPath, core.fsmonitor, filter drivers,
/// aliases, include.path, ...).
pub(crate) const SAFE_GIT_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "extensions.objectformat",
    "remote.*.url",
    "remote.*.tagopt",
    "remote.*.prune",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "core.worktree",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "index.sparse",
    "extensions.worktreeconfig",
    "remote.*.fetch",
    "remote.*.pushurl",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
];

/// One entry as git lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    /// `section[.subsection].name`: section and name lower-cased by git, the subsection as
    /// written (it may hold dots and any byte but newline and NUL).
    pub(crate) key: Vec<u8>,
    /// None for a key written alone (git's boolean true); `Some("")` for `key =`.
    pub(crate) value: Option<Vec<u8>>,
}

/// The entries of a config file holding `content`, as the system git lists them: read from
/// stdin, so git parses exactly the bytes that were judged, with includes not followed
/// (an `include.path` is itself an entry, and unsafe). Err says why git would not list
/// them (a line it cannot parse, no git, no answer in time), naming `name`.
pub(crate) fn entries(content: &[u8], name: &Path) -> Result<Vec<Entry>, String> {
    let args = ["config", "--file", "-", "--no-includes", "--list", "-z"].map(OsStr::new);
    let run = crate::surface::hooks::run_git(
        &args,
        Some(content),
        Path::new("/"),
        Path::new("/nonexistent"),
    )
    .map_err(|e| format!("git could not read {} ({e})", name.display()))?;
    if run.code != Some(0) {
        let said = String::from_utf8_lossy(&run.stderr);
        let said = said.lines().next().unwrap_or("no message");
        let said = said.strip_prefix("fatal: ").unwrap_or(said);
        return Err(format!(
            "git cannot read it as a config ({})",
            said.replace("standard input", &name.display().to_string())
        ));
    }
    Ok(parse_list(&run.stdout))
}

/// `git config --list -z` output: records `key\nvalue\0`, or `key\0` for a key with no
/// value. A key holds no newline, so the first one ends it.
pub(crate) fn parse_list(out: &[u8]) -> Vec<Entry> {
    out.split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| match r.iter().position(|b| *b == b'\n') {
            Some(nl) => Entry {
                key: r[..nl].to_vec(),
                value: Some(r[nl + 1..].to_vec()),
            },
            None => Entry {
                key: r.to_vec(),
                value: None,
            },
        })
        .collect()
}

/// A key as `SAFE_GIT_KEYS` lists it: the subsection (between the first and the last dot)
/// as `*`. Section names hold no dot and names no dot, so those two dots bound it.
pub(crate) fn pattern(key: &[u8]) -> String {
    let key = String::from_utf8_lossy(key);
    match (key.find('.'), key.rfind('.')) {
        (Some(first), Some(last)) if first < last => {
            format!("{}.*{}", &key[..first], &key[last..])
        }
        _ => key.into_owned(),
    }
}

pub(crate) fn is_safe(pattern: &str) -> bool {
    SAFE_GIT_KEYS.contains(&pattern)
}

/// The unsafe keys (as patterns, each once) of the entries in `after` that `before` did
/// not hold, key and value alike: what a command added to a config git may legitimately
/// rewrite. `before` is read by git too; one git cannot read holds nothing. Err: `after`
/// cannot be judged (see `entries`), which counts as unsafe.
pub(crate) fn added_unsafe_keys(
    before: Option<&[u8]>,
    after: &[u8],
    name: &Path,
) -> Result<Vec<String>, String> {
    let now = entries(after, name)?;
    let old: HashSet<Entry> = match before {
        Some(b) if !b.is_empty() => entries(b, name).unwrap_or_default().into_iter().collect(),
        _ => HashSet::new(),
    };
    let mut bad: Vec<String> = Vec::new();
    for e in now.iter().filter(|e| !old.contains(e)) {
        let p = pattern(&e.key);
        if !is_safe(&p) && !bad.contains(&p) {
            bad.push(p);
        }
    }
    Ok(bad)
}

/// The keys of `text` a fresh repository should not have.
#[cfg(test)]
pub(crate) fn unsafe_keys(text: &[u8], name: &Path) -> Result<Vec<String>, String> {
    added_unsafe_keys(None, text, name)
}

#[cfg(test)]
#[path = "git_config_tests.rs"]
mod tests;
