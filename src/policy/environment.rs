//! The environment a sandboxed command gets: pi's, without its secrets. A variable is dropped
//! when its name matches one of `SECRET_PATTERNS`, when pi reads an API key from it (its
//! `models.json` names the variable), or when `env.deny` lists it; `env.allow` keeps a
//! variable whatever else says (the user's explicit choice). Pure but for `models_json_vars`,
//! which reads the file at the edge.

use std::collections::BTreeSet;
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Name patterns of variables that usually hold secrets (case-insensitive), with why.
pub(crate) const SECRET_PATTERNS: &[(&str, &str)] = &[
    ("*_TOKEN", "a token"),
    ("*_TOKEN_*", "a token"),
    ("*SECRET*", "a secret"),
    ("*_KEY", "a key"),
    ("*_KEY_*", "a key"),
    ("*API_KEY*", "an API key"),
    ("*APIKEY*", "an API key"),
    ("*PRIVATE_KEY*", "a private key"),
    ("*PASSWORD*", "a password"),
    ("*PASSWD*", "a password"),
    ("*_PAT", "a personal access token"),
    ("*CREDENTIAL*", "credentials"),
    ("*_AUTH", "credentials"),
    ("*_AUTH_*", "credentials (or an agent socket)"),
    ("*_COOKIE*", "a session cookie"),
    ("*_DSN", "a connection string with credentials"),
    ("*DATABASE_URL*", "a connection string with credentials"),
    ("AWS_*", "AWS credentials and settings"),
    ("DBUS_SESSION_BUS_ADDRESS", "the host's D-Bus session bus"),
];

/// Why a variable is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) name: String,
    pub(crate) why: String,
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub(crate) struct EnvPolicy {
    patterns: GlobSet,
    allow: GlobSet,
    deny: GlobSet,
    /// Variables pi reads an API key from, named by its `models.json`.
    read_by_pi: BTreeSet<String>,
}

/// A bad `env.allow` / `env.deny` entry: which list, which entry, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvRuleError {
    pub(crate) key: &'static str,
    pub(crate) entry: String,
    pub(crate) message: String,
}

fn glob_set(key: &'static str, entries: &[String]) -> Result<GlobSet, EnvRuleError> {
    let mut b = GlobSetBuilder::new();
    for entry in entries {
        if !entry
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?'))
        {
            return Err(EnvRuleError {
                key,
                entry: entry.clone(),
                message: "a variable name or a pattern of letters, digits, '_', '*' and '?'".into(),
            });
        }
        let glob = GlobBuilder::new(entry)
            .case_insensitive(true)
            .build()
            .map_err(|e| EnvRuleError {
                key,
                entry: entry.clone(),
                message: e.kind().to_string(),
            })?;
        b.add(glob);
    }
    b.build().map_err(|e| EnvRuleError {
        key,
        entry: entries.join(", "),
        message: e.to_string(),
    })
}

impl EnvPolicy {
    pub(crate) fn new(
        allow: &[String],
        deny: &[String],
        read_by_pi: BTreeSet<String>,
    ) -> Result<EnvPolicy, EnvRuleError> {
        let builtin: Vec<String> = SECRET_PATTERNS.iter().map(|(p, _)| p.to_string()).collect();
        Ok(EnvPolicy {
            patterns: glob_set("(built-in)", &builtin).expect("built-in patterns compile"),
            allow: glob_set("env.allow", allow)?,
            deny: glob_set("env.deny", deny)?,
            read_by_pi,
        })
    }

    /// Why `name` is dropped, or None when it is kept.
    pub(crate) fn judge(&self, name: &str) -> Option<String> {
        if self.allow.is_match(name) {
            return None;
        }
        if self.read_by_pi.contains(name) {
            return Some("pi reads an API key from it (models.json)".into());
        }
        if self.deny.is_match(name) {
            return Some("listed in env.deny".into());
        }
        self.patterns.matches(name).first().map(|&i| {
            format!(
                "its name looks like {} ({})",
                SECRET_PATTERNS[i].1, SECRET_PATTERNS[i].0
            )
        })
    }

    /// The variables among `names` that are dropped, sorted by name.
    pub(crate) fn dropped<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<Dropped> {
        let mut out: Vec<Dropped> = names
            .into_iter()
            .filter_map(|n| {
                self.judge(n).map(|why| Dropped {
                    name: n.to_string(),
                    why,
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out.dedup_by(|a, b| a.name == b.name);
        out
    }
}

/// Where a sandboxed command's tools keep their caches when the usual place is read-only in
/// the sandbox (your home is, unless allowWrite lists it): the command's private `/tmp`.
/// Without this `npm install` fails outright (it cannot create `~/.npm/_cacache`), and `go
/// build`, pip and the many tools that follow `XDG_CACHE_HOME` write nothing they could
/// reuse. A cache the agent could write that your own tools read later would let it plant
/// what they load, so the real ones stay read-only; the cost is a cold cache per command.
/// `var` reads pi's environment; `writable` says whether the policy lets bash write a path.
pub(crate) fn cache_redirects(
    var: impl Fn(&str) -> Option<String>,
    home: &Path,
    writable: impl Fn(&Path) -> bool,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let xdg = var("XDG_CACHE_HOME")
        .filter(|v| v.starts_with('/'))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| home.join(".cache"));
    if !writable(&xdg) {
        out.push(("XDG_CACHE_HOME".to_string(), "/tmp/.cache".to_string()));
    }
    let npm = var("npm_config_cache")
        .or_else(|| var("NPM_CONFIG_CACHE"))
        .filter(|v| v.starts_with('/'))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| home.join(".npm"));
    if !writable(&npm) {
        out.push(("npm_config_cache".to_string(), "/tmp/.npm".to_string()));
    }
    out
}

/// The variables pi's `models.json` takes credentials from (`redact::models_json_credentials` that
/// name a variable set in `env_names`).
pub(crate) fn models_json_vars<'a>(
    agent_dir: &Path,
    env_names: impl IntoIterator<Item = &'a str>,
) -> BTreeSet<String> {
    let set: BTreeSet<&str> = env_names.into_iter().collect();
    crate::redact::models_json_credentials(agent_dir)
        .into_iter()
        .filter(|(_, v)| set.contains(v.as_str()))
        .map(|(_, v)| v)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str], pi: &[&str]) -> EnvPolicy {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        EnvPolicy::new(
            &v(allow),
            &v(deny),
            pi.iter().map(|s| s.to_string()).collect(),
        )
        .unwrap()
    }

    #[test]
    fn secrets_go_and_ordinary_variables_stay() {
        let p = policy(&[], &[], &[]);
        for secret in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_PROFILE",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "SENTRY_DSN",
            "DATABASE_URL",
            "github_token",
            "DBUS_SESSION_BUS_ADDRESS",
        ] {
            assert!(p.judge(secret).is_some(), "{secret}");
        }
        for plain in [
            "PATH",
            "HOME",
            "LANG",
            "TERM",
            "USER",
            "SHELL",
            "PWD",
            "TMPDIR",
            "EDITOR",
            "VIRTUAL_ENV",
            "NODE_OPTIONS",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "KEYMAP",
            "GOOGLE_CLOUD_PROJECT",
            "TOKENIZERS_PARALLELISM",
        ] {
            assert_eq!(p.judge(plain), None, "{plain}");
        }
    }

    #[test]
    fn allow_wins_deny_adds_and_pis_own_variables_go() {
        let p = policy(&["NPM_TOKEN"], &["MY_*"], &["CORP_LLM"]);
        assert_eq!(p.judge("NPM_TOKEN"), None);
        assert!(p.judge("MY_THING").unwrap().contains("env.deny"));
        assert!(p.judge("CORP_LLM").unwrap().contains("models.json"));
        let d = p.dropped(["PATH", "MY_THING", "CORP_LLM", "MY_THING"]);
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["CORP_LLM", "MY_THING"]);
    }

    #[test]
    fn bad_entries_name_their_list() {
        let e = EnvPolicy::new(&["A=B".into()], &[], BTreeSet::new()).unwrap_err();
        assert_eq!(e.key, "env.allow");
        assert_eq!(e.entry, "A=B");
    }

    #[test]
    fn models_json_names_the_variables_pi_reads() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join("models.json"),
            r#"{"providers":{"corp":{"apiKey":"CORP_LLM","baseUrl":"x","headers":{"X-Key":"CORP_HEADER"}},"lit":{"apiKey":"sk-literal","models":[{"id":"m","headers":{"Authorization":"MODEL_HEADER"}}]},"unset":{"apiKey":"NOT_SET"}}}"#,
        )
        .unwrap();
        let got = models_json_vars(
            t.path(),
            ["CORP_LLM", "CORP_HEADER", "MODEL_HEADER", "PATH"],
        );
        assert_eq!(
            got,
            BTreeSet::from(["CORP_HEADER", "CORP_LLM", "MODEL_HEADER"].map(String::from))
        );
        assert!(models_json_vars(&t.path().join("none"), ["X"]).is_empty());
    }

    #[test]
    fn caches_move_into_the_private_tmp_only_when_bash_cannot_write_them() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        let got = cache_redirects(none, home, |_| false);
        assert_eq!(
            got,
            [
                ("XDG_CACHE_HOME".to_string(), "/tmp/.cache".to_string()),
                ("npm_config_cache".to_string(), "/tmp/.npm".to_string())
            ]
        );
        assert!(cache_redirects(none, home, |_| true).is_empty());
        // The user's own locations are what is judged.
        let set = |n: &str| match n {
            "XDG_CACHE_HOME" => Some("/work/cache".to_string()),
            "npm_config_cache" => Some("/work/npm".to_string()),
            _ => None,
        };
        let got = cache_redirects(set, home, |p| p.starts_with("/work"));
        assert!(got.is_empty(), "{got:?}");
        let got = cache_redirects(none, home, |p| p == home.join(".npm"));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "XDG_CACHE_HOME");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn name() -> impl Strategy<Value = String> {
            "[A-Za-z_][A-Za-z0-9_]{0,24}"
        }

        proptest! {
            /// `env.allow` keeps a variable whatever else drops it; `env.deny` and pi's own
            /// key variables drop it otherwise; the built-in patterns ignore case.
            #[test]
            fn the_lists_decide_in_their_order(n in name(), other in name()) {
                let p = |allow: &[&str], deny: &[&str], pi: &[&str]| policy(allow, deny, pi);
                prop_assert_eq!(p(&[&n], &[&n], &[&n]).judge(&n), None);
                prop_assert!(p(&[], &[&n], &[]).judge(&n).is_some());
                prop_assert!(p(&[], &[], &[&n]).judge(&n).is_some());
                for secret in [format!("{n}_TOKEN"), format!("{n}_api_key"), format!("AWS_{n}")] {
                    prop_assert!(p(&[], &[], &[]).judge(&secret).is_some(), "{}", secret);
                    prop_assert_eq!(p(&[&secret], &[], &[]).judge(&secret), None);
                }
                // Listing one name says nothing about another.
                if !n.eq_ignore_ascii_case(&other) {
                    prop_assert_eq!(p(&[], &[&n], &[]).judge(&other), p(&[], &[], &[]).judge(&other));
                }
            }

            /// `dropped` reports each dropped name once, sorted, and only dropped names.
            #[test]
            fn dropped_lists_exactly_the_dropped(names in proptest::collection::vec(name(), 0..20)) {
                let p = policy(&[], &["X*"], &[]);
                let got = p.dropped(names.iter().map(String::as_str));
                let got_names: Vec<&str> = got.iter().map(|d| d.name.as_str()).collect();
                let mut want: Vec<&str> = names.iter().map(String::as_str).filter(|n| p.judge(n).is_some()).collect();
                want.sort();
                want.dedup();
                prop_assert_eq!(got_names, want);
            }
        }
    }
}
