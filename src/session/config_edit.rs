//! Writing a user's grant into a config file: one entry added to a list
//! (`filesystem.allowWrite`, `network.allowedDomains`), every other key and its order kept,
//! the file replaced atomically. A file that cannot be parsed is never overwritten.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EditError {
    pub(crate) file: PathBuf,
    pub(crate) message: String,
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot write the grant into {}: {}",
            self.file.display(),
            self.message
        )
    }
}

impl std::error::Error for EditError {}

/// Where a grant goes in a config file: `section.key`, a list of strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListKey {
    pub(crate) section: &'static str,
    pub(crate) key: &'static str,
}

pub(crate) const ALLOW_WRITE: ListKey = ListKey {
    section: "filesystem",
    key: "allowWrite",
};

pub(crate) const ALLOWED_DOMAINS: ListKey = ListKey {
    section: "network",
    key: "allowedDomains",
};

/// `text` (the file's content, None when it does not exist) with `dir` added to
/// `filesystem.allowWrite` (see `with_entry`). Pure.
#[cfg(test)]
pub(crate) fn with_allow_write(
    file: &Path,
    text: Option<&str>,
    inherited: &[String],
    dir: &str,
) -> Result<String, EditError> {
    with_entry(file, text, ALLOW_WRITE, inherited, dir)
}

/// `text` (the file's content, None when it does not exist) with `entry` added to the list
/// at `at`. A layer replaces a list it sets, so a file that does not have the list yet starts
/// from `inherited` (what the layers below it hold), not from nothing. Pure.
pub(crate) fn with_entry(
    file: &Path,
    text: Option<&str>,
    at: ListKey,
    inherited: &[String],
    entry: &str,
) -> Result<String, EditError> {
    let err = |message: String| EditError {
        file: file.to_path_buf(),
        message,
    };
    let mut root: Value = match text {
        None => Value::Object(Map::new()),
        Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| {
            err(format!(
                "it is not valid JSON ({e}); fix it first, the file was left as it is"
            ))
        })?,
    };
    let Value::Object(top) = &mut root else {
        return Err(err(
            "it does not hold one JSON object; fix it first, the file was left as it is".into(),
        ));
    };
    let section = top
        .entry(at.section)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(section) = section else {
        return Err(err(format!(
            "its `{}` is not an object; fix it first, the file was left as it is",
            at.section
        )));
    };
    let list = section
        .entry(at.key)
        .or_insert_with(|| Value::Array(inherited.iter().cloned().map(Value::String).collect()));
    let Value::Array(list) = list else {
        return Err(err(format!(
            "its `{}.{}` is not a list; fix it first, the file was left as it is",
            at.section, at.key
        )));
    };
    if !list.iter().any(|v| v.as_str() == Some(entry)) {
        list.push(Value::String(entry.to_string()));
    }
    let mut out = serde_json::to_string_pretty(&root).map_err(|e| err(e.to_string()))?;
    out.push('\n');
    Ok(out)
}

/// An exclusive `flock` on `path` (created, mode 0600), released when the file is dropped:
/// read-modify-write edits by several pi processes at once take turns, and none is lost.
pub(crate) fn exclusive_lock(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    loop {
        // SAFETY: flock on a descriptor we own for the duration of the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Whether a config file's `text` sets the list at `at` (then it replaces the lists of the
/// layers below it). Text that does not parse sets nothing that could apply.
pub(crate) fn sets_list(text: Option<&str>, at: ListKey) -> bool {
    text.and_then(|t| serde_json::from_str::<Value>(t).ok())
        .is_some_and(|root| root.get(at.section).and_then(|s| s.get(at.key)).is_some())
}

/// Replaces `file` with `content`: a temporary file in the same directory, synced, renamed
/// over it. The directory is created if missing; an existing file's permissions are kept.
pub(crate) fn replace_file(file: &Path, content: &str) -> Result<(), EditError> {
    let err = |message: String| EditError {
        file: file.to_path_buf(),
        message,
    };
    let dir = file
        .parent()
        .ok_or_else(|| err("it has no parent directory".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    // A repository can ship `.pi` as a link to elsewhere: the grant goes where the user saw
    // it named, or nowhere.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(err(format!(
            "{} is a symbolic link; replace it with a directory first",
            dir.display()
        )));
    }
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| err(e.to_string()))?;
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = tmp.as_file().set_permissions(meta.permissions());
    }
    tmp.write_all(content.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| err(e.to_string()))?;
    tmp.persist(file).map_err(|e| err(e.error.to_string()))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: &str = "/p/.pi/sandbox.json";

    #[test]
    fn keeps_other_keys_and_their_order() {
        let text = r#"{"zeta": 1, "filesystem": {"denyRead": ["~/.ssh"], "allowWrite": ["."]}, "alpha": {"b": 2, "a": 1}}"#;
        let out = with_allow_write(Path::new(F), Some(text), &[], "/srv/data").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["zeta", "filesystem", "alpha"]);
        let inner: Vec<&String> = v["alpha"].as_object().unwrap().keys().collect();
        assert_eq!(inner, ["b", "a"]);
        assert_eq!(
            v["filesystem"]["allowWrite"],
            serde_json::json!([".", "/srv/data"])
        );
        assert_eq!(v["filesystem"]["denyRead"], serde_json::json!(["~/.ssh"]));
        // Granting the same directory twice lists it once.
        let again = with_allow_write(Path::new(F), Some(&out), &[], "/srv/data").unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn a_new_list_starts_from_what_the_lower_layers_grant() {
        let inherited = vec![".".to_string(), "/tmp".to_string()];
        let out = with_allow_write(Path::new(F), None, &inherited, "/srv").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["filesystem"]["allowWrite"],
            serde_json::json!([".", "/tmp", "/srv"])
        );
        let out =
            with_allow_write(Path::new(F), Some(r#"{"mode":"rw"}"#), &inherited, "/srv").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mode"], "rw");
        assert_eq!(
            v["filesystem"]["allowWrite"],
            serde_json::json!([".", "/tmp", "/srv"])
        );
    }

    #[test]
    fn a_file_it_cannot_read_is_refused_not_replaced() {
        for bad in [
            r#"{"filesystem": "#,
            "[1, 2]",
            r#"{"filesystem": []}"#,
            r#"{"filesystem": {"allowWrite": "."}}"#,
        ] {
            let e = with_allow_write(Path::new(F), Some(bad), &[], "/x").unwrap_err();
            assert!(e.to_string().contains(F), "{e}");
            assert!(e.to_string().contains("left as it is"), "{e}");
        }
    }

    #[test]
    fn a_domain_goes_into_network_allowed_domains_next_to_the_rest() {
        let text = r#"{"network": {"deniedDomains": ["evil.com"]}, "mode": "rw"}"#;
        let inherited = vec!["github.com".to_string()];
        let out = with_entry(
            Path::new(F),
            Some(text),
            ALLOWED_DOMAINS,
            &inherited,
            "pypi.org",
        )
        .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["network"]["allowedDomains"],
            serde_json::json!(["github.com", "pypi.org"])
        );
        assert_eq!(
            v["network"]["deniedDomains"],
            serde_json::json!(["evil.com"])
        );
        assert_eq!(v["mode"], "rw");
        let e = with_entry(
            Path::new(F),
            Some(r#"{"network": []}"#),
            ALLOWED_DOMAINS,
            &[],
            "a.b",
        )
        .unwrap_err();
        assert!(e.to_string().contains("`network` is not an object"), "{e}");
    }

    #[test]
    fn replace_file_is_atomic_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("sub/sandbox.json");
        replace_file(&f, "{}\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace_file(&f, "{\"a\":1}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "{\"a\":1}\n");
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let names: Vec<_> = std::fs::read_dir(f.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
    }
}
