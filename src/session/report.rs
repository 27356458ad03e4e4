//! `/sandbox` and `pi-sandbox config`: the effective configuration as text, each value with
//! the file it came from, and the table of what is always protected.

use std::fmt::Write as _;
use std::path::Path;

use crate::policy::config::{Config, Source};
use crate::policy::guard::Guard;
use crate::policy::protected::Place;
use crate::session::load_error::LoadError;
use crate::shown;

/// The effective configuration of the session in `cwd`, each value with the file it came
/// from; or why it could not be loaded. Every path and entry is shown through `shown`: a
/// config file and the disk choose them.
pub(crate) fn describe(cwd: &Path, state: Result<(&Config, &Guard), &LoadError>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pi-sandbox — effective configuration for {}",
        shown::path(cwd)
    );
    let (c, g) = match state {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(out, "BROKEN ({}): {}", e.code, shown::lines(&e.message));
            let _ = writeln!(out, "Every guarded tool is blocked until this is fixed.");
            return out;
        }
    };
    let _ = writeln!(
        out,
        "\nLayers (later wins, a key's array replaces the earlier one):"
    );
    let _ = writeln!(out, "  built-in defaults");
    for (file, present) in &c.layers {
        let _ = writeln!(
            out,
            "  {} ({})",
            shown::path(file),
            if *present { "loaded" } else { "absent" }
        );
    }
    settings(&mut out, c, g);
    protected_places(&mut out, g);
    out
}

/// The paths as one line, each shown.
fn paths(it: &mut dyn Iterator<Item = &Path>) -> String {
    it.map(shown::path).collect::<Vec<_>>().join(", ")
}

/// One setting's line, and the file it came from below it.
fn line(out: &mut String, key: &str, value: String, source: &Source) {
    let _ = writeln!(out, "  {key:<34} {value}\n  {:<34} ↳ from {source}", "");
}

/// Each setting with the file it came from, and the paths the rules resolve to.
fn settings(out: &mut String, c: &Config, g: &Guard) {
    let _ = writeln!(out, "\nSettings:");
    line(
        out,
        "enabled",
        c.enabled.value.to_string(),
        &c.enabled.source,
    );
    line(
        out,
        "mode",
        g.mode().value.as_str().to_string(),
        &g.mode().source,
    );
    let _ = writeln!(
        out,
        "  {:<34} {}",
        "approval mode",
        g.approval_mode().as_str()
    );
    let list = |v: &[String]| {
        if v.is_empty() {
            "[]".to_string()
        } else {
            v.iter()
                .map(|e| shown::name(e))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    for (key, s) in [
        ("filesystem.denyRead", &c.deny_read),
        ("filesystem.allowWrite", &c.allow_write),
        ("filesystem.denyWrite", &c.deny_write),
        ("network.allowedDomains", &c.allowed_domains),
        ("network.deniedDomains", &c.denied_domains),
        ("network.allowUnixSockets", &c.allow_unix_sockets),
        ("env.allow", &c.env_allow),
        ("env.deny", &c.env_deny),
    ] {
        line(out, key, list(&s.value), &s.source);
    }
    switches(out, c);
    let _ = writeln!(out, "\nResolved:");
    let _ = writeln!(out, "  unreadable: {}", paths(&mut g.deny_read_paths()));
    let _ = writeln!(out, "  writable:   {}", paths(&mut g.allow_write_paths()));
}

/// The settings that are no list (switches, ignoreViolations), and the keys only passed
/// through: after the lists, as `/sandbox` has always shown them.
fn switches(out: &mut String, c: &Config) {
    line(
        out,
        "filesystem.envTemplatesSecret",
        c.env_templates_secret.value.to_string(),
        &c.env_templates_secret.source,
    );
    line(
        out,
        "network.allowAllUnixSockets",
        c.allow_all_unix_sockets.value.to_string(),
        &c.allow_all_unix_sockets.source,
    );
    line(
        out,
        "ignoreViolations",
        shown::text(&serde_json::to_string(&c.ignore_violations.value).unwrap_or_default()),
        &c.ignore_violations.source,
    );
    line(
        out,
        "enableWeakerNestedSandbox",
        c.enable_weaker_nested_sandbox.value.to_string(),
        &c.enable_weaker_nested_sandbox.source,
    );
    line(
        out,
        "enableWeakerNetworkIsolation",
        c.enable_weaker_network_isolation.value.to_string(),
        &c.enable_weaker_network_isolation.source,
    );
    for (key, v) in &c.passthrough {
        line(
            out,
            &shown::name(key),
            format!(
                "{} (accepted, not enforced)",
                shown::name(&v.value.to_string())
            ),
            &v.source,
        );
    }
}

/// The table of what is always protected from writes, each place as it is here.
fn protected_places(out: &mut String, g: &Guard) {
    let _ = writeln!(
        out,
        "\nAlways protected from writes ({}), in both layers:",
        Source::Mandatory
    );
    for entry in crate::policy::protected::TABLE {
        let place = match entry.place {
            Place::AgentDir => shown::path(&g.env().agent_dir),
            Place::SessionDir | Place::PiLoads => {
                let places: Vec<&Path> = (g.anchors().fixed_paths().iter())
                    .filter(|(_, e)| e.place == entry.place)
                    .map(|(p, _)| p.as_path())
                    .collect();
                if places.is_empty() {
                    continue;
                }
                paths(&mut places.into_iter())
            }
            Place::Home(rel) => shown::path(&g.env().home.join(rel)),
            Place::Name(n) => format!("any {n}"),
            Place::Git(rel) => format!("<git dir>/{rel}"),
            Place::GitFile => "a .git file".into(),
        };
        let _ = writeln!(out, "  {place} ({}): {}", entry.what, entry.why);
    }
}
