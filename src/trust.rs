//! Project trust: what a project's `.pi/sandbox.json` may change before the user trusts it.
//!
//! A repository can ship its own `.pi/sandbox.json`; cloning a hostile one and starting pi in
//! it must not disarm the sandbox. So the project layer is split in two: the parts that only
//! tighten (more denyRead, more denyWrite, fewer writable directories, a stricter mode) apply
//! at once; the parts that widen apply only once the user has trusted the file's exact content
//! (`approvals::Grant::ProjectTrust`, keyed by path and hash). Pure: the caller resolves paths
//! (through `resolve`) and reads the files.

use std::path::{Path, PathBuf};

use crate::config::{Config, Mode, Source, Sourced};

/// One thing the project file would widen, for the trust prompt and `/sandbox`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widening {
    /// The key, as written in the file (`filesystem.allowWrite`).
    pub key: &'static str,
    /// What it would do, in the user's words.
    pub what: String,
}

/// The project layer as loaded: which file, its content hash, what it would widen, and
/// whether those widening parts apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectLayer {
    pub file: PathBuf,
    pub sha256: String,
    pub widenings: Vec<Widening>,
    pub trust: Trust,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The user trusted this exact content: everything in it applies.
    Trusted,
    /// The user declined this content: only its tightening parts apply, and pi does not ask
    /// again until the file changes.
    Declined,
    /// Not answered yet (new or changed file): only its tightening parts apply.
    Pending,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Declined => "declined",
            Trust::Pending => "not yet trusted",
        }
    }
}

impl ProjectLayer {
    /// Whether the user should be asked about this file now.
    pub fn needs_answer(&self) -> bool {
        self.trust == Trust::Pending && !self.widenings.is_empty()
    }
}

fn mode_rank(m: Mode) -> u8 {
    match m {
        Mode::ReadOnly => 0,
        Mode::ReadWrite => 1,
        Mode::Yolo => 2,
    }
}

/// `domain` is reachable under `list` already: listed itself, or below a `*.` entry.
fn domain_covered(domain: &str, list: &[String]) -> bool {
    let d = domain.trim_end_matches('.').to_ascii_lowercase();
    list.iter().any(|entry| {
        let e = entry.trim_end_matches('.').to_ascii_lowercase();
        if e == d {
            return true;
        }
        match e.strip_prefix("*.") {
            // `*.x` covers `a.x` and `*.a.x`, never `x` itself.
            Some(parent) => d
                .strip_suffix(parent)
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            None => false,
        }
    })
}

/// `base` with the project's `wanted` values where they only tighten, and the list of what
/// `wanted` would widen (empty: the project file only tightens, nothing to trust).
/// `from_project` tells a value the project file set from one it inherited.
/// `resolve` turns a path entry into its canonical path (None: cannot be resolved, which
/// counts as not contained anywhere).
pub fn restrict(
    base: &Config,
    wanted: &Config,
    project_file: &Path,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
) -> (Config, Vec<Widening>) {
    let project = Source::File(project_file.to_path_buf());
    let set_here = |source: &Source| *source == project;
    let mut out = base.clone();
    let mut widen = Vec::new();
    let mut note = |key: &'static str, what: String| widen.push(Widening { key, what });

    // Keys with no security effect, or that only add protection, apply as written.
    out.redact_values = wanted.redact_values.clone();
    out.redact_env = wanted.redact_env.clone();
    out.ignore_violations = wanted.ignore_violations.clone();
    out.passthrough = wanted.passthrough.clone();
    out.layers = wanted.layers.clone();

    if set_here(&wanted.enabled.source) {
        if !wanted.enabled.value && base.enabled.value {
            note("enabled", "turn the sandbox off (enabled: false)".into());
        } else {
            out.enabled = wanted.enabled.clone();
        }
    }
    if set_here(&wanted.mode.source) {
        if mode_rank(wanted.mode.value) > mode_rank(base.mode.value) {
            note(
                "mode",
                format!(
                    "set the mode to {} (from {})",
                    wanted.mode.value.as_str(),
                    base.mode.value.as_str()
                ),
            );
        } else {
            out.mode = wanted.mode.clone();
        }
    }

    // Lists that protect: the project may add entries, not remove them.
    let mut union = |slot: &mut Sourced<Vec<String>>,
                     wanted: &Sourced<Vec<String>>,
                     key: &'static str,
                     what: &str| {
        if !set_here(&wanted.source) {
            return;
        }
        for removed in slot.value.iter().filter(|e| !wanted.value.contains(e)) {
            note(key, format!("{what} {removed:?}"));
        }
        let mut merged = slot.value.clone();
        merged.extend(
            wanted
                .value
                .iter()
                .filter(|e| !slot.value.contains(e))
                .cloned(),
        );
        *slot = Sourced {
            value: merged,
            source: wanted.source.clone(),
        };
    };
    union(
        &mut out.deny_read,
        &wanted.deny_read,
        "filesystem.denyRead",
        "stop hiding",
    );
    union(
        &mut out.deny_write,
        &wanted.deny_write,
        "filesystem.denyWrite",
        "stop protecting files matching",
    );
    union(
        &mut out.denied_domains,
        &wanted.denied_domains,
        "network.deniedDomains",
        "stop refusing the domain",
    );
    union(
        &mut out.env_deny,
        &wanted.env_deny,
        "env.deny",
        "pass on the variables",
    );

    // Lists that open: only entries the inherited list grants already.
    if set_here(&wanted.allow_write.source) {
        let canon = |raw: &String| resolve(raw);
        let base_paths: Vec<Option<PathBuf>> = base.allow_write.value.iter().map(canon).collect();
        let wanted_paths: Vec<Option<PathBuf>> =
            wanted.allow_write.value.iter().map(canon).collect();
        // `/tmp` is a private tmpfs in bash: listing it does not cover the host's paths below
        // it, which bash would get bound in.
        let within = |inner: &Option<PathBuf>, outers: &[Option<PathBuf>]| {
            inner.as_ref().is_some_and(|i| {
                outers
                    .iter()
                    .flatten()
                    .any(|o| i.starts_with(o) && (o.as_path() != Path::new("/tmp") || i == o))
            })
        };
        let mut kept = Vec::new();
        for (raw, path) in wanted.allow_write.value.iter().zip(&wanted_paths) {
            if within(path, &base_paths) {
                kept.push(raw.clone());
            } else {
                // Where it leads now: the trust is keyed by it (a link swapped in later is a
                // new question, see `config::load`).
                let leads = match path {
                    Some(p) if p.as_os_str() != raw.as_str() => format!(" ({})", p.display()),
                    Some(_) => String::new(),
                    None => " (cannot be resolved)".into(),
                };
                note(
                    "filesystem.allowWrite",
                    format!("make {raw:?}{leads} writable"),
                );
            }
        }
        // The intersection: inherited directories inside what the project lists stay too.
        for (raw, path) in base.allow_write.value.iter().zip(&base_paths) {
            if within(path, &wanted_paths) && !kept.contains(raw) {
                kept.push(raw.clone());
            }
        }
        out.allow_write = Sourced {
            value: kept,
            source: project.clone(),
        };
    }
    if set_here(&wanted.allowed_domains.source) {
        let mut kept = Vec::new();
        for d in &wanted.allowed_domains.value {
            if domain_covered(d, &base.allowed_domains.value) {
                kept.push(d.clone());
            } else {
                note("network.allowedDomains", format!("allow the domain {d:?}"));
            }
        }
        out.allowed_domains = Sourced {
            value: kept,
            source: project.clone(),
        };
    }
    let mut subset = |slot: &mut Sourced<Vec<String>>,
                      wanted: &Sourced<Vec<String>>,
                      key: &'static str,
                      what: &str| {
        if !set_here(&wanted.source) {
            return;
        }
        let mut kept = Vec::new();
        for e in &wanted.value {
            if slot.value.contains(e) {
                kept.push(e.clone());
            } else {
                note(key, format!("{what} {e:?}"));
            }
        }
        *slot = Sourced {
            value: kept,
            source: wanted.source.clone(),
        };
    };
    subset(
        &mut out.allow_unix_sockets,
        &wanted.allow_unix_sockets,
        "network.allowUnixSockets",
        "allow connecting to the socket",
    );
    subset(
        &mut out.env_allow,
        &wanted.env_allow,
        "env.allow",
        "pass secrets on to commands: the variables",
    );

    // Switches that weaken.
    let mut switch =
        |slot: &mut Sourced<bool>, wanted: &Sourced<bool>, key: &'static str, what: &str| {
            if !set_here(&wanted.source) {
                return;
            }
            if wanted.value && !slot.value {
                note(key, what.to_string());
            } else {
                *slot = wanted.clone();
            }
        };
    switch(
        &mut out.allow_all_unix_sockets,
        &wanted.allow_all_unix_sockets,
        "network.allowAllUnixSockets",
        "allow connecting to every unix socket of the host",
    );
    switch(
        &mut out.allow_hooks_path,
        &wanted.allow_hooks_path,
        "filesystem.allowHooksPath",
        "let the agent edit the git hooks directories (core.hooksPath)",
    );
    switch(
        &mut out.enable_weaker_nested_sandbox,
        &wanted.enable_weaker_nested_sandbox,
        "enableWeakerNestedSandbox",
        "weaken the sandbox for nested use",
    );
    switch(
        &mut out.enable_weaker_network_isolation,
        &wanted.enable_weaker_network_isolation,
        "enableWeakerNetworkIsolation",
        "weaken network isolation",
    );
    (out, widen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::merge;

    const PROJECT: &str = "/p/.pi/sandbox.json";

    fn base() -> Config {
        Config::defaults(crate::credentials::defaults(Path::new("/a"), &[]))
    }

    /// Lexical resolution against cwd /p and home /h: enough for the pure tests.
    fn lexical(raw: &str) -> Option<PathBuf> {
        crate::paths::expand(raw, Path::new("/h"), Path::new("/p"))
            .ok()
            .map(|p| crate::paths::lexical_normalize(&p))
    }

    fn run(project_json: &str) -> (Config, Vec<Widening>) {
        let wanted = merge(
            base(),
            &[(PathBuf::from(PROJECT), Some(project_json.to_string()))],
        )
        .unwrap();
        restrict(&base(), &wanted, Path::new(PROJECT), &lexical)
    }

    fn keys(w: &[Widening]) -> Vec<&str> {
        w.iter().map(|w| w.key).collect()
    }

    #[test]
    fn a_file_that_only_tightens_needs_no_trust_and_applies_whole() {
        let mut deny_read = base().deny_read.value;
        deny_read.push("~/secret".into());
        let (c, w) = run(&serde_json::json!({
            "mode": "read-only",
            "filesystem": {
                "denyRead": deny_read,
                "allowWrite": ["./src"],
                "denyWrite": [".env", ".env.*", "*.pem", "*.key", "*.lock"],
            },
            "network": {"allowedDomains": ["github.com"], "deniedDomains": ["evil.com"]},
        })
        .to_string());
        assert_eq!(w, vec![], "nothing widens");
        assert_eq!(c.mode.value, Mode::ReadOnly);
        assert!(c.deny_read.value.contains(&"~/secret".to_string()));
        assert_eq!(c.allow_write.value, vec!["./src"]);
        assert!(c.deny_write.value.contains(&"*.lock".to_string()));
        assert_eq!(c.allowed_domains.value, vec!["github.com"]);
        assert_eq!(c.denied_domains.value, vec!["evil.com"]);
    }

    #[test]
    fn every_widening_is_named_and_left_out() {
        let (c, w) = run(
            r#"{"enabled":false,"mode":"yolo","filesystem":{"denyRead":[],"allowWrite":[".","/tmp","~"],"denyWrite":[],"allowHooksPath":true},"network":{"allowedDomains":["evil.example"],"allowUnixSockets":["/run/docker.sock"],"allowAllUnixSockets":true},"env":{"allow":["GITHUB_TOKEN"]},"enableWeakerNestedSandbox":true,"enableWeakerNetworkIsolation":true}"#,
        );
        let k = keys(&w);
        for key in [
            "enabled",
            "mode",
            "filesystem.denyRead",
            "filesystem.allowWrite",
            "filesystem.denyWrite",
            "filesystem.allowHooksPath",
            "network.allowedDomains",
            "network.allowUnixSockets",
            "network.allowAllUnixSockets",
            "env.allow",
            "enableWeakerNestedSandbox",
            "enableWeakerNetworkIsolation",
        ] {
            assert!(k.contains(&key), "{key} not reported in {k:?}");
        }
        let b = base();
        assert!(c.enabled.value);
        assert_eq!(c.mode.value, b.mode.value);
        assert_eq!(c.deny_read.value, b.deny_read.value);
        assert_eq!(c.deny_write.value, b.deny_write.value);
        assert_eq!(c.allow_write.value, vec![".", "/tmp"], "~ is not granted");
        assert!(c.allowed_domains.value.is_empty());
        assert!(c.allow_unix_sockets.value.is_empty());
        assert!(!c.allow_all_unix_sockets.value);
        assert!(!c.allow_hooks_path.value);
        assert!(c.env_allow.value.is_empty());
        assert!(!c.enable_weaker_nested_sandbox.value);
        assert!(!c.enable_weaker_network_isolation.value);
    }

    #[test]
    fn allow_write_is_the_intersection_of_both_layers() {
        // `..` leaves the project; `/` holds everything: neither is granted, but the
        // inherited directories inside `/` stay writable.
        let (c, w) = run(r#"{"filesystem":{"allowWrite":["..","/"]}}"#);
        assert_eq!(w.len(), 2, "{w:?}");
        assert_eq!(c.allow_write.value, vec![".", "/tmp"]);
        let (c, w) = run(r#"{"filesystem":{"allowWrite":["./build","/tmp"]}}"#);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.allow_write.value, vec!["./build", "/tmp"]);
        // Below /tmp is the host's /tmp in bash, not the private one the default grants.
        let (c, w) = run(r#"{"filesystem":{"allowWrite":[".","/tmp/cache"]}}"#);
        assert_eq!(keys(&w), vec!["filesystem.allowWrite"]);
        assert_eq!(c.allow_write.value, vec!["."]);
    }

    #[test]
    fn an_entry_that_cannot_be_resolved_is_not_granted() {
        let wanted = merge(
            base(),
            &[(
                PathBuf::from(PROJECT),
                Some(r#"{"filesystem":{"allowWrite":["./x"]}}"#.into()),
            )],
        )
        .unwrap();
        let nothing = |_: &str| None;
        let (c, w) = restrict(&base(), &wanted, Path::new(PROJECT), &nothing);
        assert_eq!(keys(&w), vec!["filesystem.allowWrite"]);
        assert!(c.allow_write.value.is_empty());
    }

    #[test]
    fn wildcard_domains_cover_subdomains_not_the_apex() {
        let list = vec!["*.github.com".to_string(), "pypi.org".into()];
        assert!(domain_covered("api.github.com", &list));
        assert!(domain_covered("API.GitHub.com.", &list));
        assert!(domain_covered("*.api.github.com", &list));
        assert!(!domain_covered("github.com", &list));
        assert!(!domain_covered("evilgithub.com", &list));
        assert!(domain_covered("pypi.org", &list));
        assert!(!domain_covered("files.pypi.org", &list));
    }

    #[test]
    fn values_the_global_layer_set_are_not_the_projects_to_widen() {
        // The user's own global file turned the sandbox off: the project file, which does not
        // mention `enabled`, changes nothing about it and has nothing to trust.
        let global = PathBuf::from("/h/.pi/agent/extensions/sandbox.json");
        let base = merge(base(), &[(global, Some(r#"{"enabled":false}"#.into()))]).unwrap();
        let wanted = merge(
            base.clone(),
            &[(
                PathBuf::from(PROJECT),
                Some(r#"{"mode":"read-only"}"#.into()),
            )],
        )
        .unwrap();
        let (c, w) = restrict(&base, &wanted, Path::new(PROJECT), &lexical);
        assert!(w.is_empty());
        assert!(!c.enabled.value);
        assert_eq!(c.mode.value, Mode::ReadOnly);
    }
}
