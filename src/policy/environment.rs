//! The environment a sandboxed command gets: the variables a build needs (the allow-list,
//! `env_allow`) and those `env.allow` names; nothing else. Even an allowed variable is
//! dropped when `env.deny` names it, when pi reads an API key from it (its `models.json`
//! names the variable), or when its value looks like a credential (`env_values`). Pure but
//! for `models_json_vars`, which reads the file at the edge.

use std::collections::BTreeSet;
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::policy::{env_allow, env_values};

/// Name patterns of variables that usually hold secrets (case-insensitive), with why: a
/// name the built-in allow-list lets through by a prefix (`npm_config_*`, `PIP_*`) is still
/// dropped when it matches one. (`env.allow` wins over them: the user's explicit choice.)
pub(crate) const SECRET_PATTERNS: &[(&str, &str)] = &[
    ("*_TOKEN", "a token"),
    ("*_TOKEN_*", "a token"),
    ("*AUTHTOKEN*", "a token"),
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
];

/// Why a variable is dropped, by kind: `/sandbox`'s summary names the telling ones first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum DropKind {
    /// Its value looks like a credential.
    Value,
    /// pi reads an API key from it.
    ReadByPi,
    /// `env.deny` names it.
    Denied,
    /// Its name looks like a secret's.
    Name,
    /// Neither the allow-list nor `env.allow` names it.
    NotListed,
}

/// A variable a sandboxed command does not get, and why (never its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) name: String,
    pub(crate) why: String,
    pub(crate) kind: DropKind,
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

    /// Why the variable `name` = `value` is dropped, or None when a command gets it.
    pub(crate) fn judge(&self, name: &str, value: &str) -> Option<(DropKind, String)> {
        if self.deny.is_match(name) {
            return Some((DropKind::Denied, "listed in env.deny".into()));
        }
        // The user's explicit choice: neither pi's key nor a name pattern outweighs it.
        if !self.allow.is_match(name) {
            if self.read_by_pi.contains(name) {
                let why = "pi reads an API key from it (models.json)";
                return Some((DropKind::ReadByPi, why.into()));
            }
            if env_allow::allowed(name).is_none() {
                let why = "not on the allow-list (env.allow brings it back)";
                return Some((DropKind::NotListed, why.into()));
            }
            if let Some(&i) = self.patterns.matches(name).first() {
                let (pattern, what) = SECRET_PATTERNS[i];
                let why = format!("its name looks like {what} ({pattern})");
                return Some((DropKind::Name, why));
            }
        }
        env_values::credential_shape(value)
            .map(|what| (DropKind::Value, format!("its value looks like {what}")))
    }

    /// The variables among `vars` (name, value) that are dropped, sorted by name.
    pub(crate) fn dropped<'a>(
        &self,
        vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<Dropped> {
        let mut out: Vec<Dropped> = vars
            .into_iter()
            .filter_map(|(name, value)| {
                self.judge(name, value).map(|(kind, why)| Dropped {
                    name: name.to_string(),
                    why,
                    kind,
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

    fn judge(p: &EnvPolicy, name: &str, value: &str) -> Option<DropKind> {
        p.judge(name, value).map(|(kind, _)| kind)
    }

    #[test]
    fn only_the_allow_list_passes_and_credentials_in_it_go() {
        let p = policy(&[], &[], &[]);
        for (name, value) in [
            ("PATH", "/home/u/sk-tools/bin:/usr/bin"),
            ("HOME", "/home/u"),
            ("LANG", "en_US.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TERM", "xterm-256color"),
            ("CARGO_HOME", "/home/u/.cargo"),
            ("RUSTUP_TOOLCHAIN", "stable"),
            ("VIRTUAL_ENV", "/work/.venv"),
            ("NODE_OPTIONS", "--max-old-space-size=4096"),
            ("GOPROXY", "https://proxy.golang.org,direct"),
            ("HTTPS_PROXY", "http://proxy.corp:3128"),
            ("npm_config_registry", "https://registry.npmjs.org/"),
        ] {
            assert_eq!(judge(&p, name, value), None, "{name}");
        }
        for (name, value, kind) in [
            ("GITHUB_TOKEN", "ghp_x", DropKind::NotListed),
            ("AWS_PROFILE", "dev", DropKind::NotListed),
            (
                "MONGODB_URI",
                "mongodb://u:hunter2@db/x",
                DropKind::NotListed,
            ),
            ("MYSQL_PWD", "hunter2hunter2", DropKind::NotListed),
            ("FOO_CONFIG", "plain", DropKind::NotListed),
            ("SSH_AUTH_SOCK", "/run/agent", DropKind::NotListed),
            (
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/run/bus",
                DropKind::NotListed,
            ),
            ("GIT_ASKPASS", "/usr/lib/askpass", DropKind::NotListed),
            ("GIT_CONFIG_COUNT", "1", DropKind::NotListed),
            // Allowed by a prefix, named like a secret.
            ("npm_config__authToken", "x", DropKind::Name),
            ("npm_config__auth", "x", DropKind::Name),
            ("UV_PUBLISH_TOKEN", "x", DropKind::Name),
            ("PIP_PASSWORD", "x", DropKind::Name),
            // Allowed by name, with a credential for a value.
            (
                "HTTPS_PROXY",
                "http://u:pw@proxy.corp:3128",
                DropKind::Value,
            ),
            (
                "GOPROXY",
                "https://u:pw@goproxy.corp,direct",
                DropKind::Value,
            ),
            (
                "PIP_INDEX_URL",
                "https://__token__:pypi-x@pypi.corp/simple",
                DropKind::Value,
            ),
            (
                "EDITOR",
                "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij",
                DropKind::Value,
            ),
        ] {
            assert_eq!(judge(&p, name, value), Some(kind), "{name}={value}");
        }
        // The reasons say what brings a variable back, and never hold the value.
        let (_, why) = p.judge("MONGODB_URI", "mongodb://u:hunter2@db/x").unwrap();
        assert!(why.contains("env.allow"), "{why}");
        let (_, why) = p.judge("HTTPS_PROXY", "http://u:pw@h").unwrap();
        assert_eq!(why, "its value looks like a URL with a password");
    }

    #[test]
    fn allow_widens_deny_narrows_and_pis_own_variables_go() {
        let p = policy(
            &["NPM_TOKEN", "MY_*", "CORP_LLM2"],
            &["MY_SECRET", "EDITOR"],
            &["CORP_LLM", "CORP_LLM2"],
        );
        assert_eq!(judge(&p, "NPM_TOKEN", "npm_KEPT0007"), None);
        assert_eq!(judge(&p, "MY_THING", "plain"), None);
        // env.deny drops a variable env.allow or the built-in list lets through.
        assert_eq!(judge(&p, "MY_SECRET", "plain"), Some(DropKind::Denied));
        assert_eq!(judge(&p, "EDITOR", "vim"), Some(DropKind::Denied));
        assert_eq!(judge(&p, "CORP_LLM", "k"), Some(DropKind::ReadByPi));
        assert_eq!(judge(&p, "CORP_LLM2", "k"), None);
        // env.allow does not let a credential-shaped value through.
        assert_eq!(
            judge(&p, "NPM_TOKEN", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
            Some(DropKind::Value)
        );
        let d = p.dropped([
            ("PATH", "/bin"),
            ("MY_SECRET", "x"),
            ("CORP_LLM", "k"),
            ("MY_SECRET", "x"),
        ]);
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["CORP_LLM", "MY_SECRET"]);
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
            /// `env.deny` drops whatever the rest says; `env.allow` brings back any name
            /// but a credential-shaped value; a name on neither list goes.
            #[test]
            fn the_lists_decide_in_their_order(n in name(), other in name(), v in "[a-z0-9 /.]{0,30}") {
                let p = |allow: &[&str], deny: &[&str], pi: &[&str]| policy(allow, deny, pi);
                prop_assert_eq!(judge(&p(&[&n], &[&n], &[&n]), &n, &v), Some(DropKind::Denied));
                prop_assert_eq!(judge(&p(&[&n], &[], &[&n]), &n, &v), None);
                prop_assert!(judge(&p(&[], &[], &[&n]), &n, &v).is_some());
                if env_allow::allowed(&n).is_none() {
                    prop_assert_eq!(judge(&p(&[], &[], &[]), &n, &v), Some(DropKind::NotListed));
                }
                let token = format!("ghp_{}", "a1B2".repeat(9));
                prop_assert_eq!(judge(&p(&[&n], &[], &[]), &n, &token), Some(DropKind::Value));
                for secret in [format!("npm_config_{n}_TOKEN"), format!("PIP_{n}_password")] {
                    prop_assert_eq!(judge(&p(&[], &[], &[]), &secret, &v), Some(DropKind::Name), "{}", secret);
                    prop_assert_eq!(judge(&p(&[&secret], &[], &[]), &secret, &v), None);
                }
                // Listing one name says nothing about another.
                if !n.eq_ignore_ascii_case(&other) {
                    prop_assert_eq!(judge(&p(&[&n], &[], &[]), &other, &v), judge(&p(&[], &[], &[]), &other, &v));
                    prop_assert_eq!(judge(&p(&[], &[&n], &[]), &other, &v), judge(&p(&[], &[], &[]), &other, &v));
                }
            }

            /// `dropped` reports each dropped name once, sorted, and only dropped names.
            #[test]
            fn dropped_lists_exactly_the_dropped(names in proptest::collection::vec(name(), 0..20)) {
                let p = policy(&[], &["X*"], &[]);
                let got = p.dropped(names.iter().map(|n| (n.as_str(), "v")));
                let got_names: Vec<&str> = got.iter().map(|d| d.name.as_str()).collect();
                let mut want: Vec<&str> = names.iter().map(String::as_str).filter(|n| p.judge(n, "v").is_some()).collect();
                want.sort();
                want.dedup();
                prop_assert_eq!(got_names, want);
            }
        }
    }
}
