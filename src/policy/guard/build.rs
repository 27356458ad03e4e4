//! Compiling a config into a `Guard`: every entry expanded against the session, canonicalised
//! and checked once, so that later checks compare canonical paths only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobBuilder};

use super::{ApprovalMode, DirRule, Guard, GuardError};
use crate::paths::{self, PathError};
use crate::policy::config::{Config, Env, Source};
use crate::policy::protected::{self, Anchors};
use crate::policy::rules::{Rule, RuleSetBuilder};

fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// denyRead and allowWrite take literal paths. `*` and `?` almost never occur in real paths,
/// so an entry holding one was meant as a pattern: refuse it rather than match nothing.
/// (`[` and `{` do occur in directory names, so they are taken literally.)
fn looks_like_pattern(entry: &str) -> bool {
    entry.contains(['*', '?'])
}

fn compile_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

impl Guard {
    /// Compiles `config` for the session described by `env`. Every `~`, `.` and relative
    /// entry is expanded against `env` now, and canonicalised, so later checks compare
    /// canonical paths only.
    pub(crate) fn new(
        config: &Config,
        env: &Env,
        approval: ApprovalMode,
    ) -> Result<Guard, GuardError> {
        let env = canonical_env(env)?;
        // Rules share directories: resolve each once.
        let mut canon = paths::Canonicalizer::default();
        let (deny_read, deny_read_paths) = deny_read_rules(config, &env, &mut canon)?;
        let (deny_write, deny_write_globs) = deny_write_rules(config, &env, &mut canon)?;
        let mut allow_write = allow_write_rules(config, &env, &mut canon)?;
        // Single files the user allowed writing: each matched by its exact name.
        let write_files = session_rules(&config.session_write_files, &env, &mut canon)?;

        // A linked worktree's git dirs (outside the workspace) hold git's data for it: writable
        // like the workspace, in both layers. Decided once, at session start, and only through
        // git's own back-link (`protected::worktree_git_dirs`).
        for dir in protected::worktree_git_dirs(&env.cwd) {
            allow_write.push(DirRule {
                path: dir,
                raw: "<linked worktree's git dir>".into(),
                source: "the session's git worktree (git's own back-link)".into(),
            });
        }
        let git_dirs_around_allow_write = allow_write
            .iter()
            .flat_map(|r| r.path.ancestors().skip(1))
            .filter(|a| protected::is_git_dir_on_disk(a))
            .map(Path::to_path_buf)
            .collect();
        let tmp_host_bound = tmp_host_bound(&env, &allow_write);
        let writable: Vec<PathBuf> = std::iter::once(env.cwd.clone())
            .chain(allow_write.iter().map(|r| r.path.clone()))
            .collect();
        let session_places = crate::policy::pi_session::protected_places(
            &env.session_dirs,
            env.session_file.as_deref(),
            &writable,
        );
        let pi_loads =
            crate::policy::pi_loads::protected_places(&env.pi_loads, &writable, &env.home);
        let anchors = Anchors::new(&env.home, &env.agent_dir, &session_places, &pi_loads.places);

        Ok(Guard {
            deny_read: Arc::new(deny_read.build()),
            deny_write: Arc::new(deny_write.build()),
            anchors,
            pi_loads_narrowed: pi_loads.narrowed.into(),
            allow_write,
            git_dirs_around_allow_write,
            deny_read_paths: deny_read_paths.into(),
            deny_write_globs: deny_write_globs.into(),
            git_paths: Default::default(),
            env_read_grants: Arc::from(Vec::new()),
            tmp_host_bound: tmp_host_bound.into(),
            write_files: write_files.into(),
            env_templates_secret: config.env_templates_secret.value,
            enabled: config.enabled.clone(),
            mode: config.mode.clone(),
            approval,
            env,
        })
    }
}

/// `env` with its folders canonical (what pi names its transcripts by stays as pi names it:
/// what keeps them, `pi_session::protected_places`, follows their links itself).
fn canonical_env(env: &Env) -> Result<Env, GuardError> {
    Ok(Env {
        cwd: paths::canonicalize(&env.cwd)?,
        home: paths::canonicalize(&env.home)?,
        agent_dir: paths::canonicalize(&env.agent_dir)?,
        session_dirs: env.session_dirs.clone(),
        session_file: env.session_file.clone(),
        pi_loads: env.pi_loads.clone(),
        tmp: match &env.tmp {
            Some(t) => Some(paths::canonicalize(t)?),
            None => None,
        },
    })
}

/// The folders below /tmp that keep their host meaning there: the project, allowWrite, and
/// the home and agent dir (a CI image's `HOME=/tmp/...`).
fn tmp_host_bound(env: &Env, allow_write: &[DirRule]) -> Vec<PathBuf> {
    crate::policy::tmp_map::host_bound_below_tmp(
        [
            env.cwd.as_path(),
            env.home.as_path(),
            env.agent_dir.as_path(),
        ]
        .into_iter()
        .chain(allow_write.iter().map(|r| r.path.as_path())),
    )
}

/// An allowWrite entry of `/tmp` itself means the session's own /tmp (`tmp_map`); entries below
/// it are host folders bash gets bound in at their own path.
fn in_session_tmp(path: PathBuf, env: &Env) -> PathBuf {
    match &env.tmp {
        Some(tmp) if path == Path::new(crate::policy::tmp_map::TMP) => tmp.clone(),
        _ => path,
    }
}

fn rule_err(key: &str, entry: &str, source: &Source, message: String) -> GuardError {
    GuardError::Rule {
        key: key.to_string(),
        entry: entry.to_string(),
        source: source.to_string(),
        message,
    }
}

fn deny_read_rules(
    config: &Config,
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<(RuleSetBuilder, Vec<DirRule>), GuardError> {
    // denyRead: paths (directories or files). Globs are refused: the OS layer can only
    // mask paths, and one policy must mean the same thing in both layers.
    let mut deny_read = RuleSetBuilder::default();
    let mut deny_read_paths = Vec::new();
    for raw in &config.deny_read.value {
        if looks_like_pattern(raw) {
            return Err(rule_err(
                    "filesystem.denyRead",
                    raw,
                    &config.deny_read.source,
                    "denyRead takes directories or files, not patterns; list the path itself (patterns belong in denyWrite)".into(),
                ));
        }
        let path = canon.resolve(raw, &env.home, &env.cwd)?;
        let source = config.deny_read.source.to_string();
        let label = match config.deny_read_reasons.get(raw.as_str()) {
            Some(why) if config.deny_read.source == Source::Defaults => {
                format!("denyRead entry '{}' ({why})", crate::shown::name(raw))
            }
            _ => format!("denyRead entry '{}'", crate::shown::name(raw)),
        };
        deny_read.literal(
            &path,
            Rule {
                label,
                source: source.clone(),
            },
        );
        deny_read_paths.push(DirRule {
            path,
            raw: raw.clone(),
            source,
        });
    }

    Ok((deny_read, deny_read_paths))
}

fn deny_write_rules(
    config: &Config,
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<(RuleSetBuilder, Vec<String>), GuardError> {
    // denyWrite: a pattern without '/' matches a file or directory name anywhere; one
    // with '/' matches the whole path (relative ones from the project root, `**/...`
    // anywhere).
    let mut deny_write = RuleSetBuilder::default();
    let mut deny_write_globs = Vec::new();
    for raw in &config.deny_write.value {
        let rule = Rule {
            label: format!("denyWrite pattern '{}'", crate::shown::name(raw)),
            source: config.deny_write.source.to_string(),
        };
        let bad = |e: globset::Error| {
            rule_err(
                "filesystem.denyWrite",
                raw,
                &config.deny_write.source,
                format!("not a valid glob: {}", e.kind()),
            )
        };
        let trimmed = raw.trim_end_matches('/');
        if !trimmed.contains('/') {
            deny_write.name_glob(compile_glob(trimmed).map_err(bad)?, rule);
            deny_write_globs.push(trimmed.to_string());
        } else if !has_glob_chars(trimmed) {
            let path = canon.resolve(trimmed, &env.home, &env.cwd)?;
            deny_write_globs.push(globset::escape(&path.to_string_lossy()));
            deny_write.literal(&path, rule);
        } else {
            let anchored = anchor_pattern(trimmed, env, canon)?;
            deny_write.path_glob(compile_glob(&anchored).map_err(bad)?, rule);
            deny_write_globs.push(anchored);
        }
    }

    Ok((deny_write, deny_write_globs))
}

/// allowWrite, then the user's answers to write prompts.
fn allow_write_rules(
    config: &Config,
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<Vec<DirRule>, GuardError> {
    // allowWrite: directories only.
    let mut allow_write = Vec::new();
    for raw in &config.allow_write.value {
        if looks_like_pattern(raw) {
            return Err(rule_err(
                "filesystem.allowWrite",
                raw,
                &config.allow_write.source,
                "allowWrite takes directories, not patterns; list the directory itself".into(),
            ));
        }
        allow_write.push(DirRule {
            path: in_session_tmp(canon.resolve(raw, &env.home, &env.cwd)?, env),
            raw: raw.clone(),
            source: config.allow_write.source.to_string(),
        });
    }

    // The user's answers to write prompts, for this session only.
    for mut rule in session_rules(&config.session_allow_write, env, canon)? {
        rule.path = in_session_tmp(rule.path, env);
        allow_write.push(rule);
    }

    Ok(allow_write)
}

/// The user's answers to prompts for this session (folders, or single files), resolved.
fn session_rules(
    granted: &[(String, Source)],
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<Vec<DirRule>, GuardError> {
    granted
        .iter()
        .map(|(raw, source)| {
            Ok(DirRule {
                path: canon.resolve(raw, &env.home, &env.cwd)?,
                raw: raw.clone(),
                source: source.to_string(),
            })
        })
        .collect()
}

/// Anchors a path pattern: `~/` and `/` are absolute, `**/` matches anywhere, anything else
/// is relative to the project root. Literal prefixes are canonicalised and glob-escaped.
fn anchor_pattern(
    pattern: &str,
    env: &Env,
    canon: &mut paths::Canonicalizer,
) -> Result<String, PathError> {
    if pattern.starts_with("**") {
        return Ok(pattern.to_string());
    }
    // The base is literal whatever characters it holds; only the user's part is a glob.
    let (base, user_part) = if let Some(rest) = pattern.strip_prefix("~/") {
        (env.home.clone(), rest)
    } else if let Some(rest) = pattern.strip_prefix('/') {
        (PathBuf::from("/"), rest)
    } else {
        (env.cwd.clone(), pattern)
    };
    // Literal leading components of the user's part join the base and are canonicalised.
    let mut literal = base;
    let mut rest: Vec<&str> = Vec::new();
    for part in user_part.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if rest.is_empty() && !has_glob_chars(part) {
            literal.push(part);
        } else {
            rest.push(part);
        }
    }
    let literal = canon.canonicalize(&literal)?;
    let mut out = globset::escape(&literal.to_string_lossy());
    for part in rest {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(part);
    }
    Ok(out)
}
