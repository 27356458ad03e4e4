//! Project trust: what a project's `.pi/sandbox.json` may change before the user trusts it.
//!
//! A repository can ship its own `.pi/sandbox.json`; cloning a hostile one and starting pi in
//! it must not disarm the sandbox. So the project layer is split in two: the parts that only
//! tighten (more denyRead, more denyWrite, fewer writable directories, a stricter mode) apply
//! at once; the parts that widen apply only once the user has trusted the file's exact content
//! (`approvals::Grant::ProjectTrust`, keyed by path and hash). Pure: the caller resolves paths
//! (through `resolve`) and reads the files.

use std::path::{Path, PathBuf};

use crate::policy::config_values::{Config, Mode, Source, Sourced};
// Named here too, where the rest of the crate has always found them.
pub(crate) use crate::policy::project_layer::{ProjectLayer, Trust, Weight, Widening, LISTED};

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

/// What `restrict` finds to widen, noted with both its texts.
#[derive(Default)]
struct Notes(Vec<Widening>);

impl Notes {
    /// A widening without names from the file: one text for both.
    fn fixed(&mut self, key: &'static str, weight: Weight, what: String) {
        self.0.push(Widening {
            key,
            what: what.clone(),
            weight,
            meaning: what,
        });
    }

    /// A widening `{head} "{entry}"`: shown escaped and shortened, meant exactly.
    fn entry(&mut self, key: &'static str, weight: Weight, head: &str, entry: &str) {
        self.0.push(Widening {
            key,
            what: format!("{head} {}", crate::shown::quoted(entry)),
            weight,
            meaning: format!("{head} {entry:?}"),
        });
    }
}

/// `base` with the project's `wanted` values where they only tighten, and the list of what
/// `wanted` would widen (empty: the project file only tightens, nothing to trust).
/// `from_project` tells a value the project file set from one it inherited.
/// `resolve` turns a path entry into its canonical path (None: cannot be resolved, which
/// counts as not contained anywhere).
pub(crate) fn restrict(
    base: &Config,
    wanted: &Config,
    project_file: &Path,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
) -> (Config, Vec<Widening>) {
    let project = Source::File(project_file.to_path_buf());
    let set_here = |source: &Source| *source == project;
    let mut out = base.clone();
    let mut notes = Notes::default();

    // Keys with no security effect, or that only add protection, apply as written.
    out.redact_values = wanted.redact_values.clone();
    out.redact_env = wanted.redact_env.clone();
    out.ignore_violations = wanted.ignore_violations.clone();
    out.passthrough = wanted.passthrough.clone();
    out.layers = wanted.layers.clone();

    if set_here(&wanted.enabled.source) {
        if !wanted.enabled.value && base.enabled.value {
            notes.fixed(
                "enabled",
                Weight::Sweeping,
                "turn the sandbox off (enabled: false)".into(),
            );
        } else {
            out.enabled = wanted.enabled.clone();
        }
    }
    if set_here(&wanted.mode.source) {
        if mode_rank(wanted.mode.value) > mode_rank(base.mode.value) {
            let weight = match wanted.mode.value {
                Mode::Yolo => Weight::Sweeping,
                _ => Weight::Other,
            };
            notes.fixed(
                "mode",
                weight,
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
    protecting_lists(&mut out, wanted, &project, &mut notes);
    if set_here(&wanted.allow_write.source) {
        out.allow_write = allow_write(base, wanted, &project, resolve, &mut notes);
    }
    opening_lists(&mut out, wanted, &project, &mut notes);
    switches(&mut out, wanted, &project, &mut notes);
    (out, notes.0)
}

/// Lists that protect: the project may add entries, not remove them.
fn protecting_lists(out: &mut Config, wanted: &Config, project: &Source, notes: &mut Notes) {
    let mut union = |slot: &mut Sourced<Vec<String>>,
                     wanted: &Sourced<Vec<String>>,
                     key: &'static str,
                     weight: Weight,
                     what: &str| {
        if wanted.source != *project {
            return;
        }
        for removed in slot.value.iter().filter(|e| !wanted.value.contains(e)) {
            notes.entry(key, weight, what, removed);
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
    let (read, write) = ("filesystem.denyRead", "filesystem.denyWrite");
    union(
        &mut out.deny_read,
        &wanted.deny_read,
        read,
        Weight::Other,
        "stop hiding",
    );
    let protecting = "stop protecting files matching";
    union(
        &mut out.deny_write,
        &wanted.deny_write,
        write,
        Weight::Other,
        protecting,
    );
    union(
        &mut out.denied_domains,
        &wanted.denied_domains,
        "network.deniedDomains",
        Weight::Reach,
        "stop refusing the domain",
    );
    let vars = "pass on the variables";
    union(
        &mut out.env_deny,
        &wanted.env_deny,
        "env.deny",
        Weight::Other,
        vars,
    );
}

/// The project's allowWrite: only entries the inherited list grants already (and the
/// inherited directories inside what it lists); the others are noted.
fn allow_write(
    base: &Config,
    wanted: &Config,
    project: &Source,
    resolve: &dyn Fn(&str) -> Option<PathBuf>,
    notes: &mut Notes,
) -> Sourced<Vec<String>> {
    let canon = |raw: &String| resolve(raw);
    let base_paths: Vec<Option<PathBuf>> = base.allow_write.value.iter().map(canon).collect();
    let wanted_paths: Vec<Option<PathBuf>> = wanted.allow_write.value.iter().map(canon).collect();
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
    let weigh = write_weight(resolve);
    let mut kept = Vec::new();
    for (raw, path) in wanted.allow_write.value.iter().zip(&wanted_paths) {
        if within(path, &base_paths) {
            kept.push(raw.clone());
            continue;
        }
        // Where it leads now: the trust is keyed by it (a link swapped in later is a new
        // question, see `config::load`).
        let (shown, exact) = match path {
            Some(p) if p.as_os_str() != raw.as_str() => (
                format!(" ({})", crate::shown::path(p)),
                format!(" ({})", p.display()),
            ),
            Some(_) => (String::new(), String::new()),
            None => (
                " (cannot be resolved)".into(),
                " (cannot be resolved)".into(),
            ),
        };
        notes.0.push(Widening {
            key: "filesystem.allowWrite",
            what: format!("make {}{shown} writable", crate::shown::quoted(raw)),
            weight: weigh(path.as_deref()),
            meaning: format!("make {raw:?}{exact} writable"),
        });
    }
    // The intersection: inherited directories inside what the project lists stay too.
    for (raw, path) in base.allow_write.value.iter().zip(&base_paths) {
        if within(path, &wanted_paths) && !kept.contains(raw) {
            kept.push(raw.clone());
        }
    }
    Sourced {
        value: kept,
        source: project.clone(),
    }
}

/// How much making a directory writable opens: the home, `/` or a parent of the project
/// (anything holding them) sweeps; inside the project it is minor; elsewhere, or where it
/// cannot be resolved, it is outside.
fn write_weight(resolve: &dyn Fn(&str) -> Option<PathBuf>) -> impl Fn(Option<&Path>) -> Weight {
    let (home, project) = (resolve("~"), resolve("."));
    move |path| {
        let Some(p) = path else {
            return Weight::Outside;
        };
        let holds = |inner: &Option<PathBuf>| inner.as_ref().is_some_and(|i| i.starts_with(p));
        if p.parent().is_none()
            || holds(&home)
            || (holds(&project) && project.as_deref() != Some(p))
        {
            Weight::Sweeping
        } else if project.as_ref().is_some_and(|root| p.starts_with(root)) {
            Weight::Other
        } else {
            Weight::Outside
        }
    }
}

/// Lists that open (domains, sockets, variables): only entries the inherited list grants.
fn opening_lists(out: &mut Config, wanted: &Config, project: &Source, notes: &mut Notes) {
    if wanted.allowed_domains.source == *project {
        // Still the inherited list: `out` is `base` there until set below.
        let inherited = out.allowed_domains.value.clone();
        let mut kept = Vec::new();
        for d in &wanted.allowed_domains.value {
            if domain_covered(d, &inherited) {
                kept.push(d.clone());
            } else {
                let key = "network.allowedDomains";
                notes.entry(key, Weight::Reach, "allow the domain", d);
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
                      weight: Weight,
                      what: &str| {
        if wanted.source != *project {
            return;
        }
        let mut kept = Vec::new();
        for e in &wanted.value {
            if slot.value.contains(e) {
                kept.push(e.clone());
            } else {
                notes.entry(key, weight, what, e);
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
        Weight::Reach,
        "allow connecting to the socket",
    );
    subset(
        &mut out.env_allow,
        &wanted.env_allow,
        "env.allow",
        Weight::Other,
        "pass secrets on to commands: the variables",
    );
}

/// Switches that weaken.
fn switches(out: &mut Config, wanted: &Config, project: &Source, notes: &mut Notes) {
    // This switch weakens when it is turned off: a project that says templates are not
    // secret, where a lower layer said they are, shows the agent what they hold.
    if wanted.env_templates_secret.source == *project {
        if !wanted.env_templates_secret.value && out.env_templates_secret.value {
            notes.fixed(
                "filesystem.envTemplatesSecret",
                Weight::Other,
                "let the agent read env templates (.env.example, ...) without asking".into(),
            );
        } else {
            out.env_templates_secret = wanted.env_templates_secret.clone();
        }
    }
    let mut switch = |slot: &mut Sourced<bool>,
                      wanted: &Sourced<bool>,
                      key: &'static str,
                      weight: Weight,
                      what: &str| {
        if wanted.source != *project {
            return;
        }
        if wanted.value && !slot.value {
            notes.fixed(key, weight, what.to_string());
        } else {
            *slot = wanted.clone();
        }
    };
    switch(
        &mut out.allow_all_unix_sockets,
        &wanted.allow_all_unix_sockets,
        "network.allowAllUnixSockets",
        Weight::Reach,
        "allow connecting to every unix socket of the host",
    );
    switch(
        &mut out.allow_hooks_path,
        &wanted.allow_hooks_path,
        "filesystem.allowHooksPath",
        Weight::Outside,
        "let the agent edit the git hooks directories (core.hooksPath)",
    );
    switch(
        &mut out.enable_weaker_nested_sandbox,
        &wanted.enable_weaker_nested_sandbox,
        "enableWeakerNestedSandbox",
        Weight::Other,
        "weaken the sandbox for nested use",
    );
    switch(
        &mut out.enable_weaker_network_isolation,
        &wanted.enable_weaker_network_isolation,
        "enableWeakerNetworkIsolation",
        Weight::Reach,
        "weaken network isolation",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::config::merge;

    const PROJECT: &str = "/p/.pi/sandbox.json";

    fn base() -> Config {
        Config::defaults(crate::policy::credentials::defaults(Path::new("/a"), &[]))
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
    fn a_project_may_make_env_templates_secret_but_not_unsecret_them() {
        let (c, w) = run(r#"{"filesystem":{"envTemplatesSecret":true}}"#);
        assert!(c.env_templates_secret.value);
        assert_eq!(w, vec![], "narrowing applies at once");
        // Secret in the global layer: the project's false widens, and waits for trust.
        let global = PathBuf::from("/h/.pi/agent/extensions/sandbox.json");
        let below = merge(
            base(),
            &[(
                global,
                Some(r#"{"filesystem":{"envTemplatesSecret":true}}"#.into()),
            )],
        )
        .unwrap();
        let wanted = merge(
            below.clone(),
            &[(
                PathBuf::from(PROJECT),
                Some(r#"{"filesystem":{"envTemplatesSecret":false}}"#.into()),
            )],
        )
        .unwrap();
        let (c, w) = restrict(&below, &wanted, Path::new(PROJECT), &lexical);
        assert!(c.env_templates_secret.value);
        assert_eq!(keys(&w), ["filesystem.envTemplatesSecret"]);
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
    fn widenings_are_weighed_and_shown_escaped_but_meant_exactly() {
        let (_, w) = run(&serde_json::json!({
            "enabled": false,
            "filesystem": {"allowWrite": [".", "/srv/x", "~", "..", "/", "~/.config", "/srv/\u{1b}[2K\u{202e}"]},
            "network": {"allowedDomains": ["x.io"], "allowUnixSockets": ["/run/a.sock"]},
            "env": {"allow": ["V"]},
        })
        .to_string());
        let weight = |what: &str| {
            w.iter()
                .find(|x| x.what == what)
                .unwrap_or_else(|| panic!("{what} not in {w:?}"))
                .weight
        };
        assert_eq!(
            weight("turn the sandbox off (enabled: false)"),
            Weight::Sweeping
        );
        assert_eq!(weight("make \"~\" (/h) writable"), Weight::Sweeping);
        assert_eq!(weight("make \"..\" (/) writable"), Weight::Sweeping);
        assert_eq!(weight("make \"/\" writable"), Weight::Sweeping);
        assert_eq!(weight("make \"/srv/x\" writable"), Weight::Outside);
        assert_eq!(
            weight("make \"~/.config\" (/h/.config) writable"),
            Weight::Outside
        );
        assert_eq!(weight("allow the domain \"x.io\""), Weight::Reach);
        assert_eq!(
            weight("allow connecting to the socket \"/run/a.sock\""),
            Weight::Reach
        );
        assert_eq!(
            weight("pass secrets on to commands: the variables \"V\""),
            Weight::Other
        );
        // Shown escaped; the trust key hashes the entry as written.
        let hostile = w.iter().find(|x| x.what.contains("/srv/\\x1b")).unwrap();
        assert_eq!(hostile.what, "make \"/srv/\\x1b[2K\\u{202e}\" writable");
        // (As before the prompt escaped anything: the answers users gave still hold.)
        assert_eq!(
            hostile.meaning,
            format!("make {:?} writable", "/srv/\u{1b}[2K\u{202e}")
        );
        assert!(w
            .iter()
            .all(|x| !x.what.chars().any(crate::shown::is_hidden)));
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
