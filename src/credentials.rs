//! The default denyRead list: where credentials usually live, each entry with the reason it
//! is there (`explain` and `/sandbox` show it). A layer that sets `filesystem.denyRead`
//! replaces the whole list; `pi-sandbox config` prints it, to copy from.

use std::path::{Path, PathBuf};

use crate::config::Env;

/// A default entry: the path as written in a config (`~` for home), and why it is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub path: &'static str,
    pub why: &'static str,
}

const fn e(path: &'static str, why: &'static str) -> Entry {
    Entry { path, why }
}

/// Credentials in the home directory, by tool.
pub const HOME: &[Entry] = &[
    e("~/.ssh", "SSH private keys"),
    e("~/.aws", "AWS credentials"),
    e("~/.gnupg", "GnuPG private keys"),
    e(
        "~/.git-credentials",
        "git's stored HTTPS passwords and tokens",
    ),
    e(
        "~/.config/git/credentials",
        "git's stored HTTPS passwords and tokens",
    ),
    e("~/.config/gh", "GitHub CLI tokens"),
    e("~/.netrc", "passwords for curl, git and ftp"),
    e("~/.docker/config.json", "Docker registry credentials"),
    e("~/.kube", "Kubernetes cluster credentials"),
    e("~/.npmrc", "npm registry tokens"),
    e("~/.yarnrc.yml", "Yarn registry tokens"),
    e("~/.pypirc", "PyPI upload tokens"),
    e("~/.cargo/credentials.toml", "crates.io token"),
    e("~/.cargo/credentials", "crates.io token"),
    e("~/.gem/credentials", "RubyGems API key"),
    e("~/.config/gcloud", "Google Cloud credentials"),
    e("~/.azure", "Azure CLI tokens"),
    e("~/.config/doctl", "DigitalOcean tokens"),
    e(
        "~/.terraform.d/credentials.tfrc.json",
        "Terraform Cloud tokens",
    ),
    e("~/.vault-token", "HashiCorp Vault token"),
    e("~/.config/op", "1Password CLI sessions"),
    e("~/.password-store", "pass password store"),
    e("~/.local/share/keyrings", "GNOME keyring"),
    e("~/.local/share/kwalletd", "KDE wallet"),
    e(
        "~/.mozilla",
        "Firefox profiles: cookies and saved passwords",
    ),
    e(
        "~/.config/google-chrome",
        "Chrome profiles: cookies and saved passwords",
    ),
    e(
        "~/.config/chromium",
        "Chromium profiles: cookies and saved passwords",
    ),
    e(
        "~/.config/BraveSoftware",
        "Brave profiles: cookies and saved passwords",
    ),
    e("~/Library/Keychains", "macOS keychains"),
    e(
        "~/Library/Application Support/Google/Chrome",
        "Chrome profiles: cookies and saved passwords",
    ),
    e(
        "~/Library/Application Support/Firefox",
        "Firefox profiles: cookies and saved passwords",
    ),
];

pub const AUTH_JSON_WHY: &str = "pi's API keys";
pub const MODELS_JSON_WHY: &str = "pi's custom providers, with their API keys";
pub const OTHER_SESSIONS_WHY: &str = "pi's transcripts of other projects";

/// The directory pi keeps this project's transcripts in: `sessions/--<cwd with / as ->--`
/// under the agent dir (pi's `getDefaultSessionDir`).
pub fn current_sessions_dir(env: &Env) -> PathBuf {
    let cwd = env.cwd.to_string_lossy();
    let safe = cwd
        .strip_prefix('/')
        .unwrap_or(&cwd)
        .replace(['/', '\\', ':'], "-");
    env.agent_dir.join("sessions").join(format!("--{safe}--"))
}

/// Every other project's transcript directory that exists now. With
/// `PI_CODING_AGENT_SESSION_DIR` pi keeps this session elsewhere; the agent dir's are all
/// other projects' then.
pub fn other_sessions(env: &Env) -> Vec<PathBuf> {
    let dir = env.agent_dir.join("sessions");
    let current = current_sessions_dir(env);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return vec![];
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| env.session_dir.is_some() || *p != current)
        .collect();
    out.sort();
    out
}

/// The default denyRead entries for `env`, each with why: the home list, pi's key files, and
/// `other_sessions` (listed by the caller, at the edge).
pub fn defaults(agent_dir: &Path, other_sessions: &[PathBuf]) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> =
        HOME.iter().map(|e| (e.path.to_string(), e.why)).collect();
    out.push((
        agent_dir.join("auth.json").display().to_string(),
        AUTH_JSON_WHY,
    ));
    out.push((
        agent_dir.join("models.json").display().to_string(),
        MODELS_JSON_WHY,
    ));
    for s in other_sessions {
        out.push((s.display().to_string(), OTHER_SESSIONS_WHY));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_sessions_dir_is_named_as_pi_names_it() {
        let mut env = Env::under(Path::new("/r"));
        env.cwd = "/work/my proj:x".into();
        assert_eq!(
            current_sessions_dir(&env),
            env.agent_dir.join("sessions/--work-my proj-x--")
        );
    }

    #[test]
    fn other_projects_transcripts_are_listed_and_this_ones_is_not() {
        let t = tempfile::tempdir().unwrap();
        let env = Env::under(t.path());
        let here = current_sessions_dir(&env);
        let other = env.agent_dir.join("sessions/--elsewhere--");
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(env.agent_dir.join("sessions/stray.jsonl"), "").unwrap();
        assert_eq!(other_sessions(&env), vec![other.clone()]);
        // Sessions kept elsewhere: every directory here is another project's.
        let mut elsewhere = env.clone();
        elsewhere.session_dir = Some(t.path().join("mine"));
        let mut both = vec![here, other];
        both.sort();
        assert_eq!(other_sessions(&elsewhere), both);
    }

    #[test]
    fn every_default_names_why() {
        let d = defaults(Path::new("/a"), &[PathBuf::from("/a/sessions/--x--")]);
        assert!(d.iter().all(|(p, why)| !p.is_empty() && !why.is_empty()));
        for needed in [
            "~/.git-credentials",
            "~/.config/gh",
            "~/.netrc",
            "~/.docker/config.json",
            "~/.kube",
            "~/.npmrc",
            "~/.pypirc",
            "/a/models.json",
            "/a/auth.json",
            "/a/sessions/--x--",
        ] {
            assert!(d.iter().any(|(p, _)| p == needed), "{needed}");
        }
    }
}
