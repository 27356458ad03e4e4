//! Policy → SBPL profile text for macOS `sandbox-exec`. Pure: the template is
//! `profile.sbpl`; this fills in the read, write and network sections.
//!
//! SBPL is not order-sensitive the way mounts are, so every rule is written as one
//! `allow` whose exceptions are `require-not` clauses: no reliance on rule precedence.

use std::path::{Path, PathBuf};

use crate::policy::bash::Network;

const TEMPLATE: &str = include_str!("profile.sbpl");

/// What the profile needs; the caller derives it from the same `Guard` as the path guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SeatbeltPolicy {
    /// Denied directories (`subpath`) and files (`literal`).
    pub(crate) deny_read_dirs: Vec<PathBuf>,
    pub(crate) deny_read_files: Vec<PathBuf>,
    /// Writable roots: allowWrite entries, the temp dirs, pi's session folders.
    pub(crate) writable: Vec<PathBuf>,
    /// Writable again below a protected path (pi's session folder inside the agent dir).
    pub(crate) writable_exceptions: Vec<PathBuf>,
    /// Protected paths below the writable roots (control surface, existing or not).
    pub(crate) protected: Vec<PathBuf>,
    /// Protected name patterns anywhere, as SBPL regexes (from denyWrite globs, `.pi`, git).
    pub(crate) protected_regexes: Vec<String>,
    pub(crate) network: Network,
    /// Filtered network: the loopback port of the command's proxy, its one way out.
    pub(crate) proxy_port: Option<u16>,
}

/// A string literal for SBPL.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn filters(dirs: &[PathBuf], files: &[PathBuf], regexes: &[String]) -> Vec<String> {
    let mut out: Vec<String> = dirs
        .iter()
        .map(|d| format!("(subpath {})", quote(&path_str(d))))
        .collect();
    out.extend(
        files
            .iter()
            .map(|f| format!("(literal {})", quote(&path_str(f)))),
    );
    // `#"..."` is a raw regex literal: backslashes stay as they are.
    out.extend(
        regexes
            .iter()
            .map(|r| format!("(regex #\"{}\")", r.replace('"', "\\\""))),
    );
    out
}

fn any(items: &[String], indent: &str) -> String {
    format!(
        "(require-any\n{indent}  {})",
        items.join(&format!("\n{indent}  "))
    )
}

/// The profile text.
pub(crate) fn build(policy: &SeatbeltPolicy) -> String {
    let denied = filters(&policy.deny_read_dirs, &policy.deny_read_files, &[]);
    let read = if denied.is_empty() {
        "(allow file-read*)".to_string()
    } else {
        format!(
            "(allow file-read*\n  (require-not\n    {}))",
            any(&denied, "    ")
        )
    };

    let writable = filters(&policy.writable, &[], &[]);
    let write = if writable.is_empty() {
        "; nothing is writable".to_string()
    } else {
        let protected = filters(&policy.protected, &[], &policy.protected_regexes);
        let mut clauses = vec![any(&writable, "    ")];
        if !protected.is_empty() {
            let exceptions = filters(&policy.writable_exceptions, &[], &[]);
            let guarded = if exceptions.is_empty() {
                any(&protected, "      ")
            } else {
                format!(
                    "(require-all\n      {}\n      (require-not {}))",
                    any(&protected, "      "),
                    any(&exceptions, "      ")
                )
            };
            clauses.push(format!("(require-not\n      {guarded})"));
        }
        format!(
            "(allow file-write*\n  (require-all\n    {}))",
            clauses.join("\n    ")
        )
    };

    let network = match (policy.network, policy.proxy_port) {
        (Network::On, _) => "(allow network*)\n(allow system-socket)".to_string(),
        (Network::Filtered, Some(port)) => format!(
            "; filtered: only the proxy on the loopback, which judges each host\n(allow network-outbound (remote ip \"localhost:{port}\"))"
        ),
        // Filtered without a proxy port is off: fail closed.
        _ => "; off: no network at all (deny default)".to_string(),
    };
    TEMPLATE
        .replace("@READ@", &read)
        .replace("@WRITE@", &write)
        .replace("@NETWORK@", &network)
}

/// A denyWrite-style glob as an SBPL regex over absolute paths. A pattern without `/`
/// matches a name in any directory (and what is below it); one with `/` is already
/// anchored by the caller (absolute, or starting with `**`).
pub(crate) fn glob_to_regex(glob: &str) -> String {
    let chars: Vec<char> = glob.chars().collect();
    let mut re = String::new();
    let mut i = 0;
    let mut in_braces = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // `**/` is any number of directories, `**` at the end anything below.
                if chars.get(i + 2) == Some(&'/') {
                    re.push_str("(.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                // Copy a character class through, `!` negation becoming `^`.
                re.push('[');
                i += 1;
                if chars.get(i) == Some(&'!') {
                    re.push('^');
                    i += 1;
                }
                while i < chars.len() && chars[i] != ']' {
                    if chars[i] == '\\' || chars[i] == '"' {
                        re.push('\\');
                    }
                    re.push(chars[i]);
                    i += 1;
                }
                re.push(']');
            }
            '{' => {
                in_braces = true;
                re.push('(');
            }
            '}' if in_braces => {
                in_braces = false;
                re.push(')');
            }
            ',' if in_braces => re.push('|'),
            '.' | '+' | '(' | ')' | '|' | '^' | '$' | '\\' => {
                re.push('\\');
                re.push(c);
            }
            _ => re.push(c),
        }
        i += 1;
    }
    if glob.contains('/') {
        format!("^{re}(/.*)?$")
    } else {
        format!("(^|/){re}(/.*)?$")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> SeatbeltPolicy {
        SeatbeltPolicy {
            deny_read_dirs: vec!["/Users/u/.ssh".into()],
            deny_read_files: vec!["/Users/u/.pi/agent/auth.json".into()],
            writable: vec![
                "/Users/u/proj".into(),
                "/private/tmp".into(),
                "/Users/u/.pi/agent".into(),
            ],
            writable_exceptions: vec!["/Users/u/.pi/agent/sessions".into()],
            protected: vec!["/Users/u/.pi/agent".into(), "/Users/u/proj/.pi".into()],
            protected_regexes: vec![glob_to_regex("*.pem")],
            network: Network::Off,
            proxy_port: None,
        }
    }

    #[test]
    fn golden_profile() {
        let text = build(&policy());
        let expected = r#"(allow file-read*
  (require-not
    (require-any
      (subpath "/Users/u/.ssh")
      (literal "/Users/u/.pi/agent/auth.json"))))"#;
        assert!(text.contains(expected), "{text}");
        let expected = r#"(allow file-write*
  (require-all
    (require-any
      (subpath "/Users/u/proj")
      (subpath "/private/tmp")
      (subpath "/Users/u/.pi/agent"))
    (require-not
      (require-all
      (require-any
        (subpath "/Users/u/.pi/agent")
        (subpath "/Users/u/proj/.pi")
        (regex #"(^|/)[^/]*\.pem(/.*)?$"))
      (require-not (require-any
        (subpath "/Users/u/.pi/agent/sessions")))))))"#;
        assert!(text.contains(expected), "{text}");
        assert!(text.starts_with("(version 1)"));
        assert!(text.contains("(deny default)"));
        assert!(text.contains("(import \"system.sb\")"));
        assert!(!text.contains("(allow network*)"));
        assert!(!text.contains('@'), "placeholder left: {text}");
    }

    #[test]
    fn network_on_allows_sockets() {
        let mut p = policy();
        p.network = Network::On;
        assert!(build(&p).contains("(allow network*)"));
    }

    #[test]
    fn filtered_network_reaches_only_the_proxy_port() {
        let mut p = policy();
        p.network = Network::Filtered;
        // No proxy: nothing.
        let text = build(&p);
        assert!(!text.contains("network-outbound") && !text.contains("(allow network*)"));
        p.proxy_port = Some(41234);
        let text = build(&p);
        assert!(
            text.contains("(allow network-outbound (remote ip \"localhost:41234\"))"),
            "{text}"
        );
        assert!(!text.contains("(allow network*)"));
        assert_eq!(text.matches("network-outbound").count(), 1);
    }

    #[test]
    fn nothing_denied_reads_everything_and_quotes_are_escaped() {
        let mut p = policy();
        p.deny_read_dirs.clear();
        p.deny_read_files.clear();
        p.writable = vec![r#"/Users/u/we"ird\dir"#.into()];
        let text = build(&p);
        assert!(text.contains("(allow file-read*)\n"));
        assert!(
            text.contains(r#"(subpath "/Users/u/we\"ird\\dir")"#),
            "{text}"
        );
    }

    #[test]
    fn globs_become_anchored_regexes() {
        assert_eq!(glob_to_regex(".env"), r"(^|/)\.env(/.*)?$");
        assert_eq!(glob_to_regex(".env.*"), r"(^|/)\.env\.[^/]*(/.*)?$");
        assert_eq!(glob_to_regex("**/secrets/**"), r"^(.*/)?secrets/.*(/.*)?$");
        assert_eq!(
            glob_to_regex("/p/config/*.json"),
            r"^/p/config/[^/]*\.json(/.*)?$"
        );
        assert_eq!(
            glob_to_regex("*.{pem,key}"),
            r"(^|/)[^/]*\.(pem|key)(/.*)?$"
        );
        assert_eq!(glob_to_regex("[!a]?.txt"), r"(^|/)[^a][^/]\.txt(/.*)?$");
    }
}
