//! The default denyRead list: where credentials usually live, each entry with the reason it
//! is there (`explain` and `/sandbox` show it). A layer that sets `filesystem.denyRead`
//! replaces the whole list; `pi-sandbox config` prints it, to copy from.

use std::path::{Path, PathBuf};

use crate::policy::session_env::Env;

/// A default entry: the path as written in a config (`~` for home), and why it is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) path: &'static str,
    pub(crate) why: &'static str,
}

const fn e(path: &'static str, why: &'static str) -> Entry {
    Entry { path, why }
}

/// Credentials in the home directory, by tool.
pub(crate) const HOME: &[Entry] = &[
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

pub(crate) const AUTH_JSON_WHY: &str = "pi's API keys";
pub(crate) const MODELS_JSON_WHY: &str = "pi's custom providers, with their API keys";
pub(crate) const OTHER_SESSIONS_WHY: &str = "pi's transcripts of other projects";
pub(crate) const SHARED_SESSIONS_WHY: &str =
    "pi's session folder, where pi keeps every project's transcripts";
pub(crate) const FOREIGN_TRANSCRIPT_WHY: &str = "pi's transcript of another project";

/// The directory pi keeps this project's transcripts in: `sessions/--<cwd with / as ->--`
/// under the agent dir (pi's `getDefaultSessionDir`).
pub(crate) fn current_sessions_dir(env: &Env) -> PathBuf {
    let cwd = env.cwd.to_string_lossy();
    let safe = cwd
        .strip_prefix('/')
        .unwrap_or(&cwd)
        .replace(['/', '\\', ':'], "-");
    env.agent_dir.join("sessions").join(format!("--{safe}--"))
}

/// The transcripts the agent may not read, each with why: every other project's folder in
/// the agent dir that exists now (this project's too when pi keeps this session elsewhere),
/// and what `pi_session::hidden_transcripts` hides of pi's other session folders. The agent
/// reads this project's transcripts where only they are kept, as pi's default layout has it.
pub(crate) fn other_sessions(env: &Env) -> Vec<(PathBuf, &'static str)> {
    let canonical = |p: &Path| crate::paths::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let current = canonical(&current_sessions_dir(env));
    let elsewhere: Vec<PathBuf> = env
        .session_dirs
        .iter()
        .map(|d| canonical(d))
        .filter(|d| *d != current)
        .collect();
    let live_here = env
        .session_dirs
        .first()
        .is_none_or(|d| canonical(d) == current);
    let mut out: Vec<(PathBuf, &'static str)> = std::fs::read_dir(env.agent_dir.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| !live_here || canonical(p) != current)
        .map(|p| (p, OTHER_SESSIONS_WHY))
        .collect();
    let (cwd, home) = (canonical(&env.cwd), canonical(&env.home));
    for p in crate::policy::pi_session::hidden_transcripts(&elsewhere, &cwd, &home) {
        let why = match p.extension().is_some_and(|x| x == "jsonl") {
            true => FOREIGN_TRANSCRIPT_WHY,
            false => SHARED_SESSIONS_WHY,
        };
        out.push((p, why));
    }
    out.sort();
    out
}

/// The default denyRead entries for `env`, each with why: the home list, pi's key files, and
/// `other_sessions` (listed by the caller, at the edge).
pub(crate) fn defaults(
    agent_dir: &Path,
    other_sessions: &[(PathBuf, &'static str)],
) -> Vec<(String, &'static str)> {
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
    for (s, why) in other_sessions {
        out.push((s.display().to_string(), why));
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
        assert_eq!(
            other_sessions(&env),
            vec![(other.clone(), OTHER_SESSIONS_WHY)]
        );
        // pi names this project's folder: the same.
        let mut named = env.clone();
        named.session_dirs = vec![here.clone()];
        assert_eq!(
            other_sessions(&named),
            vec![(other.clone(), OTHER_SESSIONS_WHY)]
        );
        // Sessions kept elsewhere: every directory here is another project's, and the
        // folder pi shares between projects is hidden whole (made later, it is hidden then).
        let mut elsewhere = env.clone();
        let mine = t.path().join("mine");
        elsewhere.session_dirs = vec![mine.clone(), here.clone()];
        let mut all = vec![
            (here, OTHER_SESSIONS_WHY),
            (other, OTHER_SESSIONS_WHY),
            (mine, SHARED_SESSIONS_WHY),
        ];
        all.sort();
        assert_eq!(other_sessions(&elsewhere), all);
    }

    #[test]
    fn in_a_session_folder_inside_the_project_only_other_projects_transcripts_are_hidden() {
        let t = tempfile::tempdir().unwrap();
        let mut env = Env::under(&std::fs::canonicalize(t.path()).unwrap());
        let dir = env.cwd.join(".sessions");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&env.home).unwrap();
        let header =
            |cwd: &Path| format!("{{\"type\":\"session\",\"id\":\"x\",\"cwd\":{cwd:?}}}\n{{}}\n");
        std::fs::write(dir.join("mine.jsonl"), header(&env.cwd)).unwrap();
        std::fs::write(dir.join("theirs.jsonl"), header(Path::new("/elsewhere"))).unwrap();
        std::fs::write(dir.join("broken.jsonl"), "not json\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        std::os::unix::fs::symlink(dir.join("mine.jsonl"), dir.join("link.jsonl")).unwrap();
        env.session_dirs = vec![dir.clone()];
        let hidden: Vec<_> = other_sessions(&env).into_iter().map(|(p, _)| p).collect();
        let names: Vec<_> = ["broken.jsonl", "link.jsonl", "theirs.jsonl"]
            .iter()
            .map(|n| dir.join(n))
            .collect();
        assert_eq!(hidden, names);
        // The project as pi's session folder (`sessionDir: "."`): the same, listed there.
        std::fs::write(env.cwd.join("theirs.jsonl"), header(Path::new("/x"))).unwrap();
        std::fs::write(env.cwd.join("mine.jsonl"), header(&env.cwd)).unwrap();
        env.session_dirs = vec![env.cwd.clone()];
        let hidden: Vec<_> = other_sessions(&env).into_iter().map(|(p, _)| p).collect();
        assert_eq!(hidden, vec![env.cwd.join("theirs.jsonl")]);
    }

    #[test]
    fn every_default_names_why() {
        let d = defaults(
            Path::new("/a"),
            &[(PathBuf::from("/a/sessions/--x--"), OTHER_SESSIONS_WHY)],
        );
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
