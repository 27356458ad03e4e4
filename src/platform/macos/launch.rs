//! The sandbox-exec launch: a profile from the same guard as the mount plan, the script as a
//! temp file, the proxy on the host's loopback. Nothing here needs macOS to build, so the
//! Linux tests cover the profile too.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::platform::command::{bash_argv, write_script, write_temp, Launch, LaunchError, Setup};
use crate::platform::macos::seatbelt::{self, SeatbeltPolicy};
use crate::platform::mounts::{self, FileKind};
use crate::policy::bash::Network;
use crate::policy::guard::Guard;
use crate::policy::protected::{Place, TABLE};
use crate::surface::scan::Scan;

/// pi's control surface as SBPL regexes, from `protected::TABLE`: name entries anywhere,
/// git entries below every `.git` directory and below each other git dir in `git_dirs`
/// (bare repositories, submodules' git dirs found by the scan).
pub(crate) fn surface_regexes(git_dirs: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    let regex_part = |pattern: &str| {
        pattern
            .split('/')
            .map(|c| {
                if c == "*" {
                    "[^/]+".to_string()
                } else {
                    regex_escape(c)
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    for e in TABLE {
        match e.place {
            Place::Name(n) => {
                let name = match n.strip_suffix('*') {
                    Some(prefix) => format!("{}[^/]*", regex_escape(prefix)),
                    None => regex_escape(n),
                };
                out.push(format!("(^|/){name}(/.*)?$"));
            }
            // SBPL cannot tell a new file from a new directory by name, and refusing every
            // new `.git` would stop `git init` and `git clone`: gitfiles are audited instead.
            Place::GitFile => {}
            Place::Git(rel) => {
                out.push(format!("/\\.git/{}(/.*)?$", regex_part(rel)));
                for g in git_dirs {
                    out.push(format!(
                        "^{}/{}(/.*)?$",
                        regex_escape(&g.to_string_lossy()),
                        regex_part(rel)
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The macOS profile for `guard`: the same rules as the mount plan, as SBPL. Unlike mounts,
/// SBPL matches paths that do not exist yet, so new names of the table are refused up front.
pub(crate) fn seatbelt_policy(
    guard: &Guard,
    network: Network,
    tmp_dir: &Path,
    scan: &Scan,
) -> SeatbeltPolicy {
    let env = guard.env();
    let mut protected: Vec<PathBuf> = guard
        .anchors()
        .fixed_paths()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    protected.push(env.cwd.join(".pi"));
    protected.extend(scan.all().map(|f| f.path.clone()));
    let mut policy = SeatbeltPolicy {
        deny_read_dirs: vec![],
        deny_read_files: vec![],
        writable: vec![],
        writable_exceptions: vec![],
        protected,
        protected_regexes: surface_regexes(&scan.git_dirs),
        network,
        proxy_port: None,
    };
    for p in guard.deny_read_paths() {
        match mounts::kind_on_disk(p) {
            FileKind::File => policy.deny_read_files.push(p.to_path_buf()),
            // A missing entry is protected as a directory: nothing may appear below it.
            FileKind::Dir | FileKind::Link | FileKind::Missing => {
                policy.deny_read_dirs.push(p.to_path_buf())
            }
        }
    }
    policy.writable.extend(mounts::writable_roots(guard));
    // macOS resolves /tmp to /private/tmp, and the per-user temp dir lives in /private/var.
    let tmp = crate::paths::canonicalize(tmp_dir).unwrap_or_else(|_| tmp_dir.to_path_buf());
    policy.writable.extend([PathBuf::from("/private/tmp"), tmp]);
    policy.protected_regexes.extend(
        guard
            .deny_write_globs()
            .iter()
            .map(|g| seatbelt::glob_to_regex(g)),
    );
    policy
}

#[path = "../../../crates/pi-sandbox-init/src/proxy_env.rs"]
mod proxy_env;

/// The proxy variables for a proxy on `port` of the loopback (what `pi-sandbox-init` sets
/// inside bwrap, where the port is only known inside).
pub(crate) fn proxy_env(port: u16) -> Vec<(String, String)> {
    proxy_env::PROXY_VARS
        .iter()
        .map(|(name, scheme)| (name.to_string(), format!("{scheme}://127.0.0.1:{port}")))
        .collect()
}

/// A sandbox-exec launch of the shell command `command` (`bash -c` running `<script>` under a
/// generated profile).
pub(crate) fn seatbelt(setup: &Setup, command: &str) -> Result<Launch, LaunchError> {
    let (program, tmp_dir) = (setup.program, setup.tmp_dir);
    let mut policy = seatbelt_policy(setup.guard, setup.network, tmp_dir, setup.scan);
    let mut set_env = setup.set_env.to_vec();
    // No namespaces on macOS: the proxy listens on the host's loopback, and the profile
    // lets the command connect to that one port.
    let net = match (setup.network, setup.net) {
        (Network::Filtered, Some(net)) => {
            let port = net
                .serve_loopback()
                .map_err(|e| LaunchError::Proxy(e.to_string()))?;
            policy.proxy_port = Some(port);
            set_env.extend(proxy_env(port));
            Some(net.clone())
        }
        (Network::Filtered, None) => {
            return Err(LaunchError::Proxy("no proxy for this session".into()))
        }
        _ => None,
    };
    // A launch that fails from here on stops the proxy it started.
    let failed = |e: LaunchError| {
        if let Some(net) = &net {
            net.finish();
        }
        e
    };
    let profile = seatbelt::build(&policy);
    let profile_file =
        write_temp(tmp_dir, "pi-sandbox", ".sb", profile.as_bytes()).map_err(failed)?;
    let script = match write_script(tmp_dir, command) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&profile_file);
            return Err(failed(e));
        }
    };
    let mut args: Vec<OsString> = vec!["-f".into(), profile_file.as_os_str().into()];
    args.extend(bash_argv(&script));
    Ok(Launch {
        program: program.to_path_buf(),
        shown: args.clone(),
        args,
        fds: vec![],
        temp_files: vec![profile_file, script],
        placeholders: vec![],
        unset_env: setup.unset_env.to_vec(),
        supervisor: None,
        set_env,
        net,
        in_pod: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::command::scan;
    use crate::platform::command::tests::{default_guard, setup};

    #[test]
    fn the_macos_profile_carries_the_same_rules_as_the_guard() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = crate::policy::config::Env::under(&root);
        std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&env.cwd).unwrap();
        let (guard, tmp) = default_guard(&root, &env);
        let found = scan(&guard);
        let setup = setup(&guard, "/usr/bin/sandbox-exec", &tmp, &found);
        let l = seatbelt(&setup, "echo hi").unwrap();
        let profile_file = &l.temp_files[0];
        let profile = std::fs::read_to_string(profile_file).unwrap();
        let r = |p: &str| root.join(p).display().to_string();
        assert!(
            profile.contains(&format!("(subpath \"{}\")", r("home/.ssh"))),
            "{profile}"
        );
        // auth.json does not exist yet: protected as a subpath so it cannot appear readable
        assert!(profile.contains(&format!("(subpath \"{}\")", r("home/.pi/agent/auth.json"))));
        assert!(profile.contains(&format!("(subpath \"{}\")", r("proj"))));
        assert!(
            profile.contains(r#"(regex #"(^|/)[^/]*\.pem(/.*)?$")"#),
            "{profile}"
        );
        // the agent dir, sessions included, is never writable; `.git` entries come from the table
        assert!(profile.contains(&format!("(subpath \"{}\")", r("home/.pi/agent"))));
        assert!(!profile.contains("sessions"), "{profile}");
        assert!(
            profile.contains(r#"(regex #"/\.git/worktrees/[^/]+/commondir(/.*)?$")"#),
            "{profile}"
        );
        assert!(!profile.contains("(allow network*)"));
        assert_eq!(l.args[0], "-f");
        assert_eq!(
            std::fs::read_to_string(&l.temp_files[1]).unwrap(),
            "echo hi"
        );
        // both files go when the run is over
        l.discard();
        assert!(!profile_file.exists());
        assert!(!l.temp_files[1].exists());
    }
}
