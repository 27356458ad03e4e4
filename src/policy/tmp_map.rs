//! One /tmp per session. Bash sees the session's own folder at `/tmp` (bound there for every
//! command, so what one command leaves is there for the next); the file tools must mean the
//! same folder when the model names `/tmp/...`, or `write /tmp/x.py` then `python3 /tmp/x.py`
//! reads two different files. Host folders below /tmp that bash gets bound in at their own
//! path (the project, allowWrite entries below /tmp) keep their host meaning in both layers.
//! The host's own /tmp (other users' and programs' sockets and files, pi's loader caches) is
//! reached by neither under the name `/tmp`.

use std::path::{Path, PathBuf};

/// The name both layers give the session's temporary folder.
pub(crate) const TMP: &str = "/tmp";

/// `path` (absolute) as the session's commands name it: below /tmp and not inside a folder
/// bash gets at its host path (`host_bound`, the session's folder included), it is in
/// `session_tmp`. None when the name means the host's path. Taken lexically, as pi resolves a
/// tool's path (node's `path.resolve`) before the tool opens it.
pub(crate) fn in_session_tmp(
    path: &Path,
    session_tmp: &Path,
    host_bound: &[PathBuf],
) -> Option<PathBuf> {
    let normal = crate::paths::lexical_normalize(path);
    let rest = normal.strip_prefix(TMP).ok()?;
    if normal.starts_with(session_tmp) || host_bound.iter().any(|b| normal.starts_with(b)) {
        return None;
    }
    Some(session_tmp.join(rest))
}

/// The inverse, for the user's eyes: a path in the session's folder as the session names it
/// (`/tmp/...`); the folder's host name is an ephemeral one nobody typed. None for any other.
pub(crate) fn shown_in_session(path: &Path, session_tmp: &Path) -> Option<PathBuf> {
    Some(Path::new(TMP).join(path.strip_prefix(session_tmp).ok()?))
}

/// Of `roots` (the project and allowWrite, canonical), those below /tmp that bash gets bound
/// in at their host path: /tmp itself is the session's folder.
pub(crate) fn host_bound_below_tmp<'a>(roots: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    roots
        .filter(|r| r.starts_with(TMP) && *r != Path::new(TMP))
        .map(Path::to_path_buf)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmp_names_the_session_folder_unless_bash_binds_the_host_path_there() {
        let s = Path::new("/var/t/pi-sandbox-0/session-1");
        let bound = vec![PathBuf::from("/tmp/proj")];
        let map = |p: &str| in_session_tmp(Path::new(p), s, &bound);
        assert_eq!(map("/tmp"), Some(s.to_path_buf()));
        assert_eq!(map("/tmp/x.py"), Some(s.join("x.py")));
        assert_eq!(map("/tmp/jiti/a.cjs"), Some(s.join("jiti/a.cjs")));
        // the project below /tmp is bound in at its own path
        assert_eq!(map("/tmp/proj/src/a.ts"), None);
        assert_eq!(map("/tmp/projx"), Some(s.join("projx")));
        // outside /tmp, and /tmpfoo, mean themselves
        assert_eq!(map("/home/u/x"), None);
        assert_eq!(map("/tmpfoo/x"), None);
        assert_eq!(map("/tmp/../etc/passwd"), None);
        assert_eq!(map("/tmp/proj/../x"), Some(s.join("x")));
        assert_eq!(map("/tmp/../tmp/x"), Some(s.join("x")));
        assert_eq!(map("/tmp/a/../proj/f"), None, "lands in the bound project");
        // the session folder's own host name below /tmp is not mapped twice
        let below = Path::new("/tmp/pi-sandbox-0/session-1");
        assert_eq!(
            in_session_tmp(&below.join("a"), below, &[]),
            None,
            "a path already in the session folder"
        );
    }

    #[test]
    fn the_session_folder_is_shown_as_tmp() {
        let s = Path::new("/var/t/pi-sandbox-0/session-1");
        let shown = |p: &str| shown_in_session(Path::new(p), s);
        assert_eq!(
            shown("/var/t/pi-sandbox-0/session-1/x.py"),
            Some("/tmp/x.py".into())
        );
        assert_eq!(shown("/var/t/pi-sandbox-0/session-1"), Some("/tmp".into()));
        assert_eq!(shown("/var/t/pi-sandbox-0/session-10/x"), None);
        assert_eq!(shown("/home/u/x"), None);
    }

    #[test]
    fn only_roots_strictly_below_tmp_are_bound_at_their_host_path() {
        let roots = [
            Path::new("/tmp"),
            Path::new("/tmp/a"),
            Path::new("/home/u/p"),
            Path::new("/tmpx"),
        ];
        assert_eq!(
            host_bound_below_tmp(roots.into_iter()),
            vec![PathBuf::from("/tmp/a")]
        );
    }
}
