//! pi's built-in file tools: which file each one opens for a given input, and which check
//! applies. Mirrors pi 0.73's own path handling (`paths::pi_tool_path`, `pi_read_path`) so
//! that the path the guard approves is the path the tool opens.

use std::path::Path;

use globset::GlobBuilder;
use serde_json::Value;

use crate::paths;
use crate::policy::guard::{
    ApprovalMode, Decision, Guard, KnownGitDirs, Op, Verdict, ENV_TEMPLATE_WORDS,
};

/// rg glob that keeps env files out of grep results (rg's globs without `/` match names),
/// templates included (`filesystem.envTemplatesSecret`).
pub(crate) const ENV_FILE_EXCLUDE_GLOB: &str = "!{.env,.env.*}";

/// rg glob that keeps the secret env files out of grep results and lets the templates in:
/// `.env` and `.env.*` unless the name's last word is a template word (`is_env_template`).
/// pi's grep passes one glob, and globs have no look-ahead, so it is built from the template
/// endings read backwards: for each ending's proper suffix `s`, a name ending in `c` + `s`
/// whose `c` leads to no ending is excluded (and `.env.` + `s` itself, when `.` does not).
pub(crate) fn env_secret_exclude_glob() -> String {
    let endings: Vec<String> = ENV_TEMPLATE_WORDS.iter().map(|w| format!(".{w}")).collect();
    let mut suffixes: Vec<&str> = endings
        .iter()
        .flat_map(|e| (1..=e.len()).map(move |i| &e[i..]))
        .collect();
    suffixes.sort();
    suffixes.dedup();
    let mut parts = vec![".env".to_string()];
    for s in suffixes {
        // The characters that extend `s` towards an ending.
        let mut leads: Vec<char> = endings
            .iter()
            .filter_map(|e| e.strip_suffix(s)?.chars().last())
            .collect();
        leads.sort();
        leads.dedup();
        let class: String = leads.iter().collect();
        parts.push(format!(".env.*[!{class}]{s}"));
        if !leads.contains(&'.') {
            parts.push(format!(".env.{s}"));
        }
    }
    format!("!{{{}}}", parts.join(","))
}

/// The guard's answer for one tool call, plus an input change the extension must apply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCheck {
    pub(crate) decision: Decision,
    /// `(input key, new value)` pairs applied before pi runs the tool (grep's `glob`; the
    /// session's own /tmp for the searches, which pi runs on the host).
    pub(crate) patch: Vec<(String, String)>,
}

pub(crate) const GUARDED_TOOLS: &[&str] = &["read", "write", "edit", "grep", "find", "ls"];

/// Checks one call of a built-in file tool. `None` for tools the path guard does not cover.
#[cfg(test)]
pub(crate) fn check_tool(
    guard: &Guard,
    tool: &str,
    input: &Value,
    home: &Path,
) -> Option<ToolCheck> {
    check_tool_with(guard, tool, input, home, &|_| None)
}

/// `check_tool`, with `known` answering which directories are git dirs where it can (see
/// `Guard::check_with`).
pub(crate) fn check_tool_with(
    guard: &Guard,
    tool: &str,
    input: &Value,
    home: &Path,
    known: KnownGitDirs,
) -> Option<ToolCheck> {
    if !GUARDED_TOOLS.contains(&tool) {
        return None;
    }
    let cwd = guard.env().cwd.clone();
    let raw_path = input.get("path").and_then(Value::as_str);
    let plain = |decision| ToolCheck {
        decision,
        patch: vec![],
    };
    let missing = |what: &str| {
        plain(Decision {
            verdict: Verdict::Deny,
            op: Op::Read,
            path: cwd.clone(),
            rule: "tool input".into(),
            source: "pi tool call".into(),
            reason: format!("Blocked {tool}: {what}"),
        })
    };
    let resolve = |raw: &str, read: bool| {
        if read {
            paths::pi_read_path(raw, home, &cwd)
        } else {
            paths::pi_tool_path(raw, home, &cwd)
        }
    };
    let path_or_dot = raw_path.filter(|p| !p.is_empty()).unwrap_or(".");
    let resolved = match tool {
        "read" | "write" | "edit" => match raw_path {
            Some(p) => resolve(p, tool == "read"),
            None => return Some(missing("its input has no string `path`")),
        },
        _ => resolve(path_or_dot, false),
    };
    let (moved, path) = match resolved {
        Ok(p) => {
            let mapped = guard.session_path(&p);
            (mapped != p, mapped)
        }
        Err(e) => return Some(missing(&e.to_string())),
    };
    let check = match tool {
        "read" | "ls" => plain(guard.check(Op::Read, &path)),
        "write" => plain(guard.check_with(Op::Write, &path, known)),
        // edit shows the old text back in its diff: it reads as well as writes.
        "edit" => {
            let read = guard.check(Op::Read, &path);
            let write = guard.check_with(Op::Write, &path, known);
            plain(match (read.verdict, write.verdict) {
                (Verdict::Deny, _) => read,
                (_, Verdict::Deny) => write,
                // An env file it may not read yet: asked once, as a change (which covers the
                // read the edit makes first).
                (Verdict::Prompt, Verdict::Prompt)
                    if write.rule == crate::policy::guard::ENV_FILE_RULE =>
                {
                    write
                }
                (Verdict::Prompt, _) => read,
                _ => write,
            })
        }
        "find" => plain(guard.check_search(&path, tool)),
        "grep" => check_grep(guard, &path, input),
        _ => unreachable!("tool list checked above"),
    };
    Some(searched_where_judged(check, tool, moved, &path))
}

/// rg and fd run on the host: a search the session's /tmp map moved must look where
/// it was judged. (read, write and edit come back through the session, which maps the path
/// itself, so pi's messages keep the name the model used.)
fn searched_where_judged(
    mut check: ToolCheck,
    tool: &str,
    moved: bool,
    judged: &Path,
) -> ToolCheck {
    if moved && matches!(tool, "grep" | "find" | "ls") {
        check
            .patch
            .push(("path".into(), judged.to_string_lossy().into_owned()));
    }
    check
}

/// grep reads file contents: besides the search root, env files must stay out of its results
/// unless approval mode is `always` (an explicit read of them asks instead).
fn check_grep(guard: &Guard, root: &Path, input: &Value) -> ToolCheck {
    let decision = guard.check_search(root, "grep");
    if decision.verdict != Verdict::Allow
        || !guard.active()
        || guard.approval_mode() == ApprovalMode::Always
    {
        return ToolCheck {
            decision,
            patch: vec![],
        };
    }
    // Whether templates are secret, as the guard says of one.
    let templates_secret = guard.is_secret_env_file(Path::new(".env.example"));
    match input.get("glob").and_then(Value::as_str).filter(|g| !g.is_empty()) {
        None => ToolCheck {
            decision,
            patch: vec![(
                "glob".into(),
                match templates_secret {
                    true => ENV_FILE_EXCLUDE_GLOB.into(),
                    false => env_secret_exclude_glob(),
                },
            )],
        },
        Some(glob) if glob_may_select_env_files(glob, templates_secret) => ToolCheck {
            decision: Decision {
                verdict: Verdict::Deny,
                rule: "sensitive env file (.env, .env.*)".into(),
                source: format!("PI_SANDBOX_APPROVAL_MODE={}", guard.approval_mode().as_str()),
                reason: format!(
                    "Blocked grep with glob '{glob}': it could search env files, which usually hold secrets. Use a glob that selects the files you need (e.g. '*.ts'), or read the env file with the read tool, which asks first."
                ),
                ..decision
            },
            patch: vec![],
        },
        Some(_) => ToolCheck {
            decision,
            patch: vec![],
        },
    }
}

/// Whether rg, given `--glob <glob>`, could search a file named `.env` or `.env.x`.
/// A negated glob selects everything else, env files included.
fn glob_may_select_env_files(glob: &str, templates_secret: bool) -> bool {
    if glob.starts_with('!') {
        return true;
    }
    let Ok(g) = GlobBuilder::new(glob).literal_separator(false).build() else {
        // rg would reject it too; refusing costs nothing.
        return true;
    };
    let m = g.compile_matcher();
    let templates: &[&str] = match templates_secret {
        true => &[".env.example", "sub/.env.local.sample"],
        false => &[],
    };
    [".env", ".env.local", "sub/.env", "sub/.env.production"]
        .iter()
        .chain(templates)
        .any(|name| m.is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use crate::policy::guard::tests::World;
    use crate::policy::guard::{ApprovalMode, Op, Verdict};

    #[test]
    fn tool_inputs_resolve_like_pi() {
        let w = World::new();
        let g = w.guard("{}");
        let home = &w.env.home;
        let check =
            |tool: &str, input: serde_json::Value| check_tool(&g, tool, &input, home).unwrap();
        // `@` prefix and `~` as pi expands them
        assert_eq!(
            check("read", json!({"path": "@~/.ssh/id_rsa"}))
                .decision
                .verdict,
            Verdict::Deny
        );
        assert_eq!(
            check("read", json!({"path": "../home/.ssh/id_rsa"}))
                .decision
                .verdict,
            Verdict::Deny
        );
        // a non-breaking space pi turns into a plain one
        std::fs::write(w.p("proj/a b.txt"), b"x").unwrap();
        let d = check("write", json!({"path": "a\u{00A0}b.pem", "content": ""})).decision;
        assert_eq!(d.path, w.p("proj/a b.pem"));
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(check("ls", json!({})).decision.verdict, Verdict::Allow);
        assert_eq!(
            check("ls", json!({"path": "~/.ssh"})).decision.verdict,
            Verdict::Deny
        );
        assert_eq!(
            check("find", json!({"pattern": "*", "path": "~"}))
                .decision
                .verdict,
            Verdict::Deny
        );
        assert_eq!(
            check("edit", json!({"path": "x.key", "edits": []}))
                .decision
                .verdict,
            Verdict::Deny
        );
        assert_eq!(
            check("write", json!({"content": "no path"}))
                .decision
                .verdict,
            Verdict::Deny
        );
        assert!(check_tool(&g, "bash", &json!({"command": "ls"}), home).is_none());
    }

    #[test]
    fn grep_keeps_env_files_out_unless_approval_mode_is_always() {
        let w = World::new();
        let g = w.guard("{}");
        let home = &w.env.home;
        let c = check_tool(&g, "grep", &json!({"pattern": "KEY"}), home).unwrap();
        assert_eq!(c.decision.verdict, Verdict::Allow);
        assert_eq!(c.patch, vec![("glob".into(), env_secret_exclude_glob())]);
        let c = check_tool(&g, "grep", &json!({"pattern": "KEY", "glob": "*.ts"}), home).unwrap();
        assert_eq!(c.decision.verdict, Verdict::Allow);
        assert_eq!(c.patch, vec![]);
        let c = check_tool(
            &g,
            "grep",
            &json!({"pattern": "KEY", "glob": ".env*"}),
            home,
        )
        .unwrap();
        assert_eq!(c.decision.verdict, Verdict::Deny);
        let g = w.guard_with("{}", ApprovalMode::Always);
        let c = check_tool(&g, "grep", &json!({"pattern": "KEY"}), home).unwrap();
        assert_eq!(c.patch, vec![]);
        // Templates secret: every env file is left out, by the short glob.
        let g = w.guard(r#"{"filesystem":{"envTemplatesSecret":true}}"#);
        let c = check_tool(&g, "grep", &json!({"pattern": "KEY"}), home).unwrap();
        assert_eq!(c.patch, vec![("glob".into(), ENV_FILE_EXCLUDE_GLOB.into())]);
    }

    /// What the exclusion glob excludes, as rg matches a glob without `/`: by name.
    fn excluded_by(glob: &str) -> impl Fn(&str) -> bool {
        let pattern = glob.strip_prefix('!').expect("an exclusion");
        let m = GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .unwrap()
            .compile_matcher();
        move |name| m.is_match(name)
    }

    #[test]
    fn grep_leaves_out_exactly_the_secret_env_files_when_templates_are_not_secret() {
        let excluded = excluded_by(&env_secret_exclude_glob());
        let secret = |n: &str| {
            crate::policy::guard::is_env_file(Path::new(n))
                && !crate::policy::guard::is_env_template(Path::new(n))
        };
        for n in [
            ".env",
            ".env.",
            ".env.local",
            ".env.production",
            ".env.e",
            ".env.ample",
            ".env.xsample",
            ".env.examples",
            ".env.example.bak",
            ".env.dist.local",
            ".env.st",
        ] {
            assert!(excluded(n), "{n} is secret");
        }
        for n in [
            ".env.example",
            ".env.sample",
            ".env.template",
            ".env.dist",
            ".env.local.example",
            ".env..dist",
            ".envrc",
            "a.env",
            "env.example",
        ] {
            assert!(!excluded(n), "{n} is searched");
        }
        let names = proptest::string::string_regex(
            "[a-z.]{0,3}\\.env(\\.[a-z.]{0,3})?(example|sample|template|dist|xample|ample|mple|late|ist|st|t|e)?[a-z.]{0,2}",
        )
        .unwrap();
        proptest::proptest!(|(n in names)| {
            proptest::prop_assert_eq!(excluded(&n), secret(&n), "{}", n);
        });
    }

    #[test]
    fn a_grep_glob_that_could_select_a_template_is_refused_only_when_templates_are_secret() {
        assert!(!glob_may_select_env_files(".env.example", false));
        assert!(glob_may_select_env_files(".env.example", true));
        assert!(glob_may_select_env_files(".env*", false));
        assert!(!glob_may_select_env_files("*.ts", true));
    }

    #[test]
    fn edit_needs_read_and_write() {
        let w = World::new();
        let g = w.guard_with("{}", ApprovalMode::Deny);
        let home = &w.env.home;
        // readable-denied even though writable
        let g2 = w.guard(r#"{"filesystem":{"denyRead":["./private"]}}"#);
        let c = check_tool(
            &g2,
            "edit",
            &json!({"path": "private/notes.md", "edits": []}),
            home,
        )
        .unwrap();
        assert_eq!(c.decision.verdict, Verdict::Deny);
        assert_eq!(c.decision.op, Op::Read);
        let c = check_tool(&g, "edit", &json!({"path": "src/a.ts", "edits": []}), home).unwrap();
        assert_eq!(c.decision.verdict, Verdict::Allow);
        assert_eq!(c.decision.op, Op::Write);
    }

    #[test]
    fn absolute_paths_are_judged_as_the_kernel_opens_them() {
        let w = World::new();
        let g = w.guard("{}");
        let home = &w.env.home;
        let check = |input: serde_json::Value| check_tool(&g, "read", &input, home).unwrap();
        // proj/l -> home/.ssh/sub (exists); proj/l/.. is home/.ssh, not proj
        std::fs::create_dir_all(w.p("home/.ssh/sub")).unwrap();
        symlink(w.p("home/.ssh/sub"), w.p("proj/l")).unwrap();
        let via_link = format!("{}/l/../id_rsa", w.p("proj").display());
        let d = check(json!({ "path": via_link })).decision;
        assert_eq!(d.verdict, Verdict::Deny, "{d:?}");
        assert_eq!(d.path, w.p("home/.ssh/id_rsa"));
        // /proc/self/cwd is pi's own cwd (this process here): `..` after it leaves it
        let cwd = std::env::current_dir().unwrap();
        let depth = cwd.components().count() - 1;
        let up = "../".repeat(depth);
        let raw = format!("/proc/self/cwd/{up}{}", w.p("home/.ssh/id_rsa").display());
        let d = check(json!({ "path": raw })).decision;
        assert_eq!(d.verdict, Verdict::Deny, "{d:?}");
        // a write through a link plus `..` reaches the file the kernel would write
        symlink(w.p("outside"), w.p("proj/out")).unwrap();
        std::fs::create_dir_all(w.p("outside/x")).unwrap();
        let raw = format!("{}/out/x/../evil.sh", w.p("proj").display());
        let d = check_tool(&g, "write", &json!({"path": raw, "content": ""}), home)
            .unwrap()
            .decision;
        assert_eq!(d.verdict, Verdict::Prompt, "{d:?}");
        assert_eq!(d.path, w.p("outside/evil.sh"));
    }

    #[test]
    fn env_glob_detection() {
        assert!(glob_may_select_env_files("!*.md", false));
        assert!(glob_may_select_env_files("*", false));
        assert!(glob_may_select_env_files(".env*", false));
        assert!(glob_may_select_env_files("**/.env", false));
        assert!(!glob_may_select_env_files("*.ts", false));
        assert!(!glob_may_select_env_files("src/**/*.rs", false));
        assert!(glob_may_select_env_files("[unclosed", false));
    }
}
