//! The variables a sandboxed command gets from pi's environment: what builds and the usual
//! tools read, each with why. Everything else stays out unless `env.allow` names it (see
//! `environment`). Names are matched exactly, case and all (the environment is
//! case-sensitive); an entry ending in `*` takes every name that starts with the rest.
//!
//! Left out on purpose, so that `env.allow` is the user's explicit choice for each:
//! `GIT_ASKPASS`, `SSH_ASKPASS` and `GIT_SSH_COMMAND` (they hand out credentials, or reach the
//! user's keys), `GIT_CONFIG_*` and `GIT_CONFIG_PARAMETERS` (config by environment: a
//! credential helper or an `http.extraHeader` with a token), `SSH_AUTH_SOCK`, `GPG_AGENT_INFO`
//! and `DBUS_SESSION_BUS_ADDRESS` (agents that act with the user's keys), `DISPLAY`,
//! `WAYLAND_DISPLAY` and `XAUTHORITY` (a display lets a program read the screen and the
//! keyboard; no build needs one), `*_OPTS` such as `MAVEN_OPTS`, `GRADLE_OPTS`,
//! `JAVA_TOOL_OPTIONS` (they carry `-D...password=` often enough), `BUNDLE_*` (Bundler keeps
//! registry credentials there), `PI_CODING_AGENT_DIR` and pi's other settings (the agent dir
//! is pi's, nothing a command needs).

/// The built-in allow-list: (name or `PREFIX*`, why a command needs it).
pub(crate) const ALLOWED: &[(&str, &str)] = &[
    // The shell and the user.
    ("PATH", "where commands are found"),
    ("HOME", "where tools find their configs and caches"),
    (
        "USER",
        "who runs the command (git, ssh-less tools, whoami fallbacks)",
    ),
    ("LOGNAME", "who runs the command"),
    (
        "SHELL",
        "the user's shell (make, editors and tools that start one)",
    ),
    ("PWD", "the working directory (bash sets it anyway)"),
    ("OLDPWD", "the previous working directory (bash keeps it)"),
    ("SHLVL", "how deep shells are nested (bash keeps it)"),
    ("_", "the last command run (bash sets it anyway)"),
    ("HOSTNAME", "the machine's name"),
    (
        "TMPDIR",
        "where temp files go (bwrap points it at the private /tmp)",
    ),
    ("TMP", "where temp files go"),
    ("TEMP", "where temp files go"),
    ("TZ", "the time zone"),
    ("SOURCE_DATE_EPOCH", "reproducible builds' timestamp"),
    // Language and terminal.
    ("LANG", "the locale: text encoding and messages"),
    ("LANGUAGE", "the languages of messages"),
    ("LC_*", "the locale's parts"),
    ("LOCALE_ARCHIVE", "where the locales are (Nix)"),
    ("TERM", "what the terminal can show"),
    (
        "TERM_PROGRAM",
        "which terminal (colour and width detection)",
    ),
    ("TERM_PROGRAM_VERSION", "which terminal"),
    ("COLORTERM", "whether the terminal shows true colour"),
    ("COLUMNS", "the terminal's width"),
    ("LINES", "the terminal's height"),
    ("NO_COLOR", "the user's choice of no colour"),
    ("FORCE_COLOR", "the user's choice of colour"),
    ("CLICOLOR", "the user's choice of colour"),
    ("CLICOLOR_FORCE", "the user's choice of colour"),
    ("LS_COLORS", "ls's colours"),
    ("EDITOR", "the editor git and others open"),
    ("VISUAL", "the editor git and others open"),
    ("PAGER", "the pager git and others use"),
    ("MANPATH", "where man pages are"),
    // Where things live.
    (
        "XDG_*",
        "the XDG base directories tools keep configs, caches and data in",
    ),
    ("SSL_CERT_FILE", "the CA certificates (a corporate CA)"),
    ("SSL_CERT_DIR", "the CA certificates"),
    ("NIX_SSL_CERT_FILE", "the CA certificates (Nix)"),
    ("CURL_CA_BUNDLE", "curl's CA certificates"),
    ("REQUESTS_CA_BUNDLE", "Python requests' CA certificates"),
    ("NODE_EXTRA_CA_CERTS", "Node's extra CA certificates"),
    ("GIT_SSL_CAINFO", "git's CA certificates"),
    // The network: with network on, the user's proxy is the way out; a filtered command
    // gets the session's own instead (set after this list).
    (
        "HTTP_PROXY",
        "the proxy (the session's own when the network is filtered)",
    ),
    ("HTTPS_PROXY", "the proxy"),
    ("ALL_PROXY", "the proxy"),
    ("NO_PROXY", "the hosts reached without the proxy"),
    ("http_proxy", "the proxy"),
    ("https_proxy", "the proxy"),
    ("all_proxy", "the proxy"),
    ("no_proxy", "the hosts reached without the proxy"),
    // Builds in general.
    ("CI", "tools behave non-interactively in CI"),
    ("DEBIAN_FRONTEND", "apt and dpkg do not prompt"),
    ("MAKEFLAGS", "make's flags (jobs) passed down"),
    ("MAKELEVEL", "make's nesting"),
    ("MFLAGS", "make's flags"),
    ("CC", "the C compiler"),
    ("CXX", "the C++ compiler"),
    ("AR", "the archiver"),
    ("LD", "the linker"),
    ("CFLAGS", "C compiler flags"),
    ("CXXFLAGS", "C++ compiler flags"),
    ("CPPFLAGS", "preprocessor flags"),
    ("LDFLAGS", "linker flags"),
    ("CPATH", "C include directories"),
    ("C_INCLUDE_PATH", "C include directories"),
    ("CPLUS_INCLUDE_PATH", "C++ include directories"),
    ("LIBRARY_PATH", "library directories at link time"),
    (
        "LD_LIBRARY_PATH",
        "library directories at run time (conda, Nix, local installs)",
    ),
    ("PKG_CONFIG_PATH", "where pkg-config finds .pc files"),
    ("CMAKE_PREFIX_PATH", "where CMake finds packages"),
    ("CMAKE_GENERATOR", "CMake's build tool"),
    // git: the author and the tools it opens; not what runs or stores credentials.
    ("GIT_AUTHOR_NAME", "commits' author"),
    ("GIT_AUTHOR_EMAIL", "commits' author"),
    ("GIT_COMMITTER_NAME", "commits' committer"),
    ("GIT_COMMITTER_EMAIL", "commits' committer"),
    ("GIT_EDITOR", "the editor git opens"),
    ("GIT_PAGER", "the pager git uses"),
    (
        "GIT_TERMINAL_PROMPT",
        "whether git may prompt (0 keeps it from hanging)",
    ),
    // Rust.
    (
        "CARGO_HOME",
        "cargo's home (registry, git checkouts, installed tools)",
    ),
    ("CARGO_TARGET_DIR", "where cargo builds"),
    ("CARGO_BUILD_*", "cargo's build settings"),
    ("CARGO_TERM_*", "cargo's output settings"),
    ("CARGO_INCREMENTAL", "cargo's incremental builds"),
    ("CARGO_NET_OFFLINE", "cargo offline"),
    (
        "RUSTUP_*",
        "rustup's settings (RUSTUP_HOME, RUSTUP_TOOLCHAIN, its mirror)",
    ),
    ("RUSTFLAGS", "rustc's flags"),
    ("RUSTDOCFLAGS", "rustdoc's flags"),
    ("RUSTC_WRAPPER", "a compiler cache (sccache)"),
    ("RUST_BACKTRACE", "backtraces on panic"),
    ("RUST_LOG", "log levels"),
    // Go.
    ("GOPATH", "Go's workspace"),
    ("GOROOT", "Go's installation"),
    ("GOBIN", "where go install puts programs"),
    ("GOMODCACHE", "Go's module cache"),
    ("GOCACHE", "Go's build cache"),
    ("GOFLAGS", "go's default flags"),
    ("GOPROXY", "Go's module proxy"),
    ("GOPRIVATE", "Go's private modules"),
    ("GONOPROXY", "Go's modules fetched directly"),
    (
        "GONOSUMDB",
        "Go's modules not checked against the sum database",
    ),
    ("GOSUMDB", "Go's sum database"),
    ("GOTOOLCHAIN", "the Go toolchain picked"),
    ("GO111MODULE", "Go's module mode"),
    ("GOOS", "Go's target OS"),
    ("GOARCH", "Go's target architecture"),
    ("CGO_ENABLED", "whether Go builds with cgo"),
    // JVM and others.
    ("JAVA_HOME", "the JDK"),
    ("GRADLE_USER_HOME", "Gradle's home and caches"),
    ("MAVEN_HOME", "Maven's installation"),
    ("M2_HOME", "Maven's installation"),
    ("ANDROID_HOME", "the Android SDK"),
    ("ANDROID_SDK_ROOT", "the Android SDK"),
    ("SDKMAN_DIR", "SDKMAN's installs"),
    ("DOTNET_ROOT", "the .NET installation"),
    ("GEM_HOME", "Ruby's gems"),
    ("GEM_PATH", "Ruby's gems"),
    ("RBENV_ROOT", "rbenv's rubies"),
    ("RBENV_VERSION", "the ruby rbenv picks"),
    ("ASDF_DIR", "asdf's installation"),
    ("ASDF_DATA_DIR", "asdf's tools"),
    ("HOMEBREW_PREFIX", "Homebrew's installation"),
    ("HOMEBREW_CELLAR", "Homebrew's installation"),
    ("HOMEBREW_REPOSITORY", "Homebrew's installation"),
    ("NIX_PATH", "Nix's search path"),
    ("NIX_PROFILES", "Nix's profiles"),
    ("IN_NIX_SHELL", "inside a nix shell"),
    // JavaScript.
    ("NVM_DIR", "nvm's node versions"),
    ("NVM_BIN", "the node nvm picked"),
    ("NVM_INC", "the node headers nvm picked"),
    ("NODE_PATH", "where node finds modules"),
    ("NODE_OPTIONS", "node's flags (memory limits)"),
    ("NODE_ENV", "development or production builds"),
    (
        "npm_config_*",
        "npm's settings (registry, cache; the sandbox sets some itself)",
    ),
    ("NPM_CONFIG_*", "npm's settings"),
    (
        "npm_package_*",
        "what npm tells the scripts it runs (package name, version)",
    ),
    (
        "npm_lifecycle_*",
        "what npm tells the scripts it runs (which script)",
    ),
    ("npm_command", "what npm tells the scripts it runs"),
    ("npm_execpath", "the npm that runs the script"),
    ("npm_node_execpath", "the node that runs npm's script"),
    ("NODE", "the node that runs npm's script"),
    ("INIT_CWD", "where npm was started"),
    ("PNPM_HOME", "pnpm's installation"),
    ("VOLTA_HOME", "Volta's tools"),
    ("BUN_INSTALL", "bun's installation"),
    ("DENO_DIR", "deno's cache"),
    ("DENO_INSTALL", "deno's installation"),
    ("COREPACK_HOME", "corepack's package managers"),
    // Python.
    ("VIRTUAL_ENV", "the active virtualenv"),
    ("VIRTUAL_ENV_PROMPT", "the active virtualenv's name"),
    ("CONDA_*", "the active conda environment"),
    ("PYENV_ROOT", "pyenv's pythons"),
    ("PYENV_VERSION", "the python pyenv picks"),
    (
        "PYTHON*",
        "Python's own settings (PYTHONPATH, PYTHONUNBUFFERED, ...)",
    ),
    ("PIP_*", "pip's settings (index, cache)"),
    ("UV_*", "uv's settings (index, cache, python)"),
    // pi's own, given to its bash (0.87: the model is told they exist).
    ("PI_SESSION_ID", "pi's session, for the command"),
    (
        "PI_SESSION_FILE",
        "pi's session file's name, for the command",
    ),
    ("PI_PROVIDER", "pi's model provider, for the command"),
    ("PI_MODEL", "pi's model, for the command"),
    ("PI_REASONING_LEVEL", "pi's thinking level, for the command"),
];

/// The built-in entry that lets `name` through, if any: (entry, why).
pub(crate) fn allowed(name: &str) -> Option<(&'static str, &'static str)> {
    ALLOWED
        .iter()
        .copied()
        .find(|(entry, _)| match entry.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *entry,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_builds_need_is_listed_and_nothing_else() {
        for name in [
            "PATH",
            "HOME",
            "USER",
            "LANG",
            "LC_ALL",
            "LC_CTYPE",
            "TERM",
            "SHELL",
            "EDITOR",
            "TZ",
            "CARGO_HOME",
            "RUSTUP_HOME",
            "RUSTUP_TOOLCHAIN",
            "GOPATH",
            "GOMODCACHE",
            "JAVA_HOME",
            "NVM_DIR",
            "VIRTUAL_ENV",
            "CONDA_PREFIX",
            "PYTHONPATH",
            "XDG_CONFIG_HOME",
            "npm_config_registry",
            "HTTPS_PROXY",
            "GIT_AUTHOR_NAME",
            "PI_SESSION_ID",
        ] {
            assert!(allowed(name).is_some(), "{name}");
        }
        for name in [
            "GITHUB_TOKEN",
            "MONGODB_URI",
            "REDIS_URL",
            "MYSQL_PWD",
            "AZURE_STORAGE_CONNECTION_STRING",
            "FOO_CONFIG",
            "GIT_ASKPASS",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_PARAMETERS",
            "GIT_SSH_COMMAND",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "DISPLAY",
            "MAVEN_OPTS",
            "BUNDLE_GITHUB__COM",
            "PI_CODING_AGENT_DIR",
            // Case counts: the environment is case-sensitive.
            "path",
            "Home",
            "lc_all",
            // A prefix entry is a prefix, not a substring.
            "MY_LC_THING",
            "XPYTHON",
        ] {
            assert_eq!(allowed(name), None, "{name}");
        }
    }

    #[test]
    fn the_documented_table_lists_every_entry() {
        let doc = include_str!("../../docs/protection.md");
        for (entry, why) in ALLOWED {
            assert!(
                doc.contains(&format!("`{entry}`")),
                "{entry} is not in docs/protection.md"
            );
            assert!(
                doc.contains(why),
                "{entry}'s reason is not in docs/protection.md"
            );
        }
    }

    #[test]
    fn every_entry_says_why_and_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for (entry, why) in ALLOWED {
            assert!(!why.is_empty(), "{entry}");
            assert!(seen.insert(*entry), "{entry} twice");
            let stem = entry.strip_suffix('*').unwrap_or(entry);
            assert!(
                !stem.is_empty() && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{entry}"
            );
        }
    }
}
