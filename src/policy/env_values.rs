//! Values that look like credentials, whatever their variable is called: a variable the
//! allow-list or `env.allow` lets through is still dropped when its value has one of these
//! shapes. The token shapes are anchored to a whole word of the value (words split at
//! whitespace, `,` and `;`), so a `PATH` through a folder named `sk-tools` is not one.

/// What `value` looks like, when it looks like a credential.
pub(crate) fn credential_shape(value: &str) -> Option<&'static str> {
    if value.contains("-----BEGIN") && value.contains("PRIVATE KEY-----") {
        return Some("a private key (PEM)");
    }
    if connection_string_with_key(value) {
        return Some("a connection string with a key or password");
    }
    // The whole value first: a password may hold the characters words are split at.
    if let Some(what) = url_userinfo(value).and_then(userinfo_shape) {
        return Some(what);
    }
    value
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .find_map(|word| {
            url_userinfo(word)
                .and_then(userinfo_shape)
                .or_else(|| token_shape(word))
        })
}

/// The userinfo of a URL (`scheme://userinfo@host...`), when `word` is one that has it.
fn url_userinfo(word: &str) -> Option<&str> {
    let (scheme, rest) = word.split_once("://")?;
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').map(|(userinfo, _)| userinfo)
}

/// A userinfo with a password (`user:pass`, `:pass`), or whose user is itself a token
/// (`https://ghp_...@github.com`). A user name alone is no credential.
fn userinfo_shape(userinfo: &str) -> Option<&'static str> {
    match userinfo.split_once(':') {
        Some((_, password)) if !password.is_empty() => Some("a URL with a password"),
        _ => token_shape(userinfo).map(|_| "a URL with a token"),
    }
}

/// `Key=Value;...` strings (Azure's, ADO.NET's) that carry a key or a password.
fn connection_string_with_key(value: &str) -> bool {
    const KEYS: &[&str] = &[
        "accountkey",
        "sharedaccesskey",
        "sharedaccesssignature",
        "password",
        "pwd",
    ];
    value.contains(';')
        && value.split(';').any(|part| {
            part.split_once('=').is_some_and(|(k, v)| {
                !v.trim().is_empty() && KEYS.contains(&k.trim().to_ascii_lowercase().as_str())
            })
        })
}

fn all_of(s: &str, ok: impl Fn(char) -> bool) -> bool {
    s.chars().all(ok)
}

fn base62(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn base64url(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The well-known token shapes, each anchored to the whole of `word`.
fn token_shape(word: &str) -> Option<&'static str> {
    // (prefix, least length of the rest, the rest's characters, what it is)
    type Shape = (&'static str, usize, fn(char) -> bool, &'static str);
    const SHAPES: &[Shape] = &[
        (
            "github_pat_",
            40,
            |c| base62(c) || c == '_',
            "a GitHub token",
        ),
        ("ghp_", 30, base62, "a GitHub token"),
        ("gho_", 30, base62, "a GitHub token"),
        ("ghu_", 30, base62, "a GitHub token"),
        ("ghs_", 30, base62, "a GitHub token"),
        ("ghr_", 30, base62, "a GitHub token"),
        ("glpat-", 20, base64url, "a GitLab token"),
        ("npm_", 36, base62, "an npm token"),
        ("sk-", 20, base64url, "an API key (OpenAI, Anthropic)"),
        ("xoxa-", 10, base64url, "a Slack token"),
        ("xoxb-", 10, base64url, "a Slack token"),
        ("xoxp-", 10, base64url, "a Slack token"),
        ("xoxr-", 10, base64url, "a Slack token"),
        ("xoxs-", 10, base64url, "a Slack token"),
    ];
    for (prefix, least, ok, what) in SHAPES {
        if let Some(rest) = word.strip_prefix(prefix) {
            if rest.len() >= *least && all_of(rest, ok) {
                return Some(what);
            }
        }
    }
    if let Some(rest) = word
        .strip_prefix("AKIA")
        .or_else(|| word.strip_prefix("ASIA"))
    {
        if rest.len() == 16 && all_of(rest, |c| c.is_ascii_uppercase() || c.is_ascii_digit()) {
            return Some("an AWS access key id");
        }
    }
    jwt(word).then_some("a JSON Web Token")
}

/// `eyJ...` `.` `eyJ...` `.` signature: a JWT's header and claims are base64url JSON objects
/// (`{"` encodes as `eyJ`); the signature may be empty (alg none).
fn jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && parts[..2]
            .iter()
            .all(|p| p.len() > 10 && p.starts_with("eyJ") && all_of(p, base64url))
        && all_of(parts[2], base64url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GHP: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij";

    #[test]
    fn each_shape_is_found() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----";
        for (value, what) in [
            (GHP, "GitHub"),
            ("gho_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", "GitHub"),
            ("ghu_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", "GitHub"),
            ("ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", "GitHub"),
            ("ghr_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij", "GitHub"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012",
                "GitHub",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "API key"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz_0123", "API key"),
            ("xoxb-1234567890-abcdefghij", "Slack"),
            ("xoxp-1234567890-abcdefghij", "Slack"),
            ("AKIAIOSFODNN7EXAMPLE", "AWS"),
            ("ASIAIOSFODNN7EXAMPLE", "AWS"),
            ("glpat-abcdefghij0123456789", "GitLab"),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm"),
            (jwt, "JSON Web Token"),
            (pem, "private key"),
            ("mongodb://u:hunter2@db/x", "password"),
            ("redis://:pw@h:6379", "password"),
            ("postgres://app:s3cret@db.internal:5432/app?sslmode=require", "password"),
            ("https://ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij@github.com/o/r", "token"),
            // One word of several.
            (&format!("Bearer {GHP}"), "GitHub"),
            ("https://u:p@proxy.corp,direct", "password"),
            (
                "DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=bWFkZXVw;EndpointSuffix=core.windows.net",
                "connection string",
            ),
            ("Server=db;Database=app;User Id=sa;Password=hunter2;", "connection string"),
        ] {
            let got = credential_shape(value);
            assert!(got.is_some_and(|g| g.contains(what)), "{value}: {got:?}");
        }
    }

    #[test]
    fn ordinary_values_are_not_credentials() {
        for value in [
            "",
            "1",
            "true",
            "/usr/local/bin:/usr/bin:/bin",
            // Anchored: a folder or file named like a token's prefix is not a token.
            "/home/u/sk-tools/bin:/home/u/ghp_stuff/bin:/usr/bin",
            "/opt/npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "x-sk-abcdefghijklmnopqrstuvwxyz",
            // Too short, or other characters, for the shape.
            "sk-short",
            "ghp_short",
            "AKIA123",
            "AKIAIOSFODNN7EXAMPLE1",
            "akiaiosfodnn7example",
            "eyJhbGciOiJIUzI1NiJ9",
            "eyJ.eyJ.x",
            // URLs without a password.
            "https://registry.npmjs.org/",
            "https://user@example.com/repo.git",
            "git@github.com:o/r.git",
            "http://127.0.0.1:3128",
            "https://proxy.golang.org,direct",
            "ssh://git@host:22/x",
            // Key=value strings without a key or password.
            "a=1;b=2",
            "Password=;x=y",
            "en_US.UTF-8",
            "xterm-256color",
            "-Xmx2g -Dfile.encoding=UTF-8",
        ] {
            assert_eq!(credential_shape(value), None, "{value}");
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// A token shape inside a path (after `/` or another character) is never one:
            /// the shapes are anchored.
            #[test]
            fn a_path_through_a_token_shaped_folder_is_kept(
                dirs in proptest::collection::vec("[a-z][a-z0-9_.-]{0,12}", 0..5),
                token in "(sk-|ghp_|glpat-|npm_)[A-Za-z0-9]{40}",
            ) {
                let mut entries: Vec<String> = dirs.iter().map(|d| format!("/home/u/{d}/bin")).collect();
                entries.push(format!("/home/u/{token}/bin"));
                prop_assert_eq!(credential_shape(&entries.join(":")), None);
            }

            /// A credential-shaped word is found wherever it stands among ordinary words.
            #[test]
            fn a_token_among_words_is_found(
                before in "[a-z ]{0,20}",
                token in "(ghp_|npm_)[A-Za-z0-9]{36}",
                after in "[a-z ]{0,20}",
            ) {
                let value = format!("{before} {token} {after}");
                prop_assert!(credential_shape(&value).is_some());
            }

            /// A URL's password is found whatever the scheme, user, password and host.
            #[test]
            fn a_url_password_is_found(
                scheme in "[a-z][a-z0-9+.-]{0,8}",
                user in "[A-Za-z0-9._%-]{0,10}",
                password in "[A-Za-z0-9._~%!$&'()*+=-]{1,20}",
                host in "[a-z0-9.-]{1,20}",
            ) {
                let url = format!("{scheme}://{user}:{password}@{host}/x");
                prop_assert!(credential_shape(&url).is_some(), "{}", url);
            }
        }
    }
}
