//! Path expansion and symlink-safe canonicalisation.
//!
//! The guard compares canonical paths only, so a path the guard approves is the file the
//! kernel will open: symlinks are followed the way the kernel follows them, `..` applies to
//! the real parent of a resolved symlink, and a dangling symlink resolves to the file a
//! write through it would create.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// Linux gives up after 40 links in one lookup (ELOOP); so do we.
const MAX_SYMLINK_HOPS: usize = 40;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathError {
    NulByte { path: String },
    Empty,
    SymlinkLoop { path: PathBuf },
    Io { path: PathBuf, message: String },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::NulByte { path } => write!(
                f,
                "path {:?} contains a NUL byte; no file can have that name",
                path
            ),
            PathError::Empty => write!(f, "empty path"),
            // Paths from a config entry or the model: shown escaped.
            PathError::SymlinkLoop { path } => write!(
                f,
                "too many levels of symbolic links while resolving {}",
                crate::shown::path(path)
            ),
            PathError::Io { path, message } => {
                write!(
                    f,
                    "cannot resolve {}: {}",
                    crate::shown::path(path),
                    message
                )
            }
        }
    }
}

impl std::error::Error for PathError {}

/// Expands `~`, `~/x`, `.` and `./x` (and any relative path) against `home` and `cwd`.
/// Config entries and tool inputs go through this before canonicalisation.
pub(crate) fn expand(raw: &str, home: &Path, cwd: &Path) -> Result<PathBuf, PathError> {
    if raw.contains('\0') {
        return Err(PathError::NulByte {
            path: raw.to_string(),
        });
    }
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    let path = if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else {
        let p = Path::new(raw);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    Ok(path)
}

/// Canonicalises `path` (absolute) without requiring it to exist.
///
/// Walks component by component: every existing symlink is replaced by its target (resolved
/// against the directory holding it), `..` pops the *resolved* parent as the kernel does, and
/// once a component does not exist the rest is applied lexically (nothing below a missing
/// directory can be a symlink).
pub(crate) fn canonicalize(path: &Path) -> Result<PathBuf, PathError> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(PathError::NulByte {
            path: path.display().to_string(),
        });
    }
    // Fast paths. Most paths hold no symlink at all: one open of the parent that refuses
    // links proves the lexical form is the canonical one. Otherwise let the kernel resolve
    // an existing path, or the existing parent of a new file, in one open(O_PATH). Anything
    // else takes the component walk below.
    if let Some(p) = link_free(path) {
        return Ok(p);
    }
    if let Some(p) = kernel_resolve(path) {
        return Ok(p);
    }
    if let (Some(parent), Some(Component::Normal(name))) =
        (path.parent(), path.components().next_back())
    {
        if let Some(p) = kernel_resolve(parent) {
            if matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == io::ErrorKind::NotFound)
            {
                return Ok(p.join(name));
            }
        }
    }
    canonicalize_by_walk(path)
}

/// `path` itself when no component of it is a symlink (the last one may be missing), shown
/// by opening its parent with every link refused and looking at the last name without
/// following it. None when a link is there, or for `.`/`..` forms: the callers resolve those.
fn link_free(path: &Path) -> Option<PathBuf> {
    let mut components = path.components();
    let Some(Component::Normal(name)) = components.next_back() else {
        return None;
    };
    let parent = components.as_path();
    if !path.is_absolute()
        || !parent
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    {
        return None;
    }
    let dir = crate::open::open_no_symlinks(parent, libc::O_PATH | libc::O_DIRECTORY, 0).ok()?;
    if !name_is_not_a_link(&dir, name) {
        return None;
    }
    // Components drop repeated and trailing separators: this is the lexical form.
    let bytes = path.as_os_str().as_encoded_bytes();
    let clean = bytes[1..]
        .split(|&b| b == b'/')
        .all(|name| !name.is_empty() && name != b".");
    Some(if clean {
        path.to_path_buf()
    } else {
        path.components().collect()
    })
}

/// The path the kernel opens for `path`, read back from /proc/self/fd. None when it does not
/// exist, or when /proc cannot tell (not mounted, not Linux).
#[cfg(target_os = "linux")]
fn kernel_resolve(path: &Path) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    if !path.is_absolute() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    let bytes = real.as_os_str().as_encoded_bytes();
    // Unlinked meanwhile, or outside our mount namespace's root: not a usable answer.
    if !real.is_absolute() || bytes.ends_with(b" (deleted)") {
        return None;
    }
    Some(real)
}

#[cfg(not(target_os = "linux"))]
fn kernel_resolve(_path: &Path) -> Option<PathBuf> {
    None
}

/// `canonicalize`, plus every directory the resolution passed through that is not an
/// ancestor of the result (a symlink inside a masked directory leads out of it, but the
/// kernel still has to look inside). Empty when no symlink was involved: the cheap check is
/// whether the result is just the lexical form of the input.
pub(crate) fn canonicalize_traced(path: &Path) -> Result<(PathBuf, Vec<PathBuf>), PathError> {
    if !path.as_os_str().as_encoded_bytes().contains(&0) {
        if let Some(p) = link_free(path) {
            return Ok((p, Vec::new()));
        }
    }
    let canonical = canonicalize(path)?;
    if canonical == lexical_normalize(path) {
        return Ok((canonical, Vec::new()));
    }
    let mut visited = Vec::new();
    walk(path, Some(&mut visited), None)?;
    visited.retain(|d| !canonical.starts_with(d));
    visited.sort();
    visited.dedup();
    Ok((canonical, visited))
}

/// Component-by-component resolution, for paths the kernel cannot open.
fn canonicalize_by_walk(path: &Path) -> Result<PathBuf, PathError> {
    walk(path, None, None)
}

/// `canonicalize`, plus the name of every symlink the kernel follows on the way (each under
/// its resolved directory), in the order it meets them: replacing one of them sends the
/// path elsewhere.
pub(crate) fn symlinks_followed(path: &Path) -> Result<(PathBuf, Vec<PathBuf>), PathError> {
    let mut links = Vec::new();
    let resolved = walk(path, None, Some(&mut links))?;
    Ok((resolved, links))
}

/// The topmost missing directory on the way to `path`, when more than `path` itself is
/// missing.
pub(crate) fn first_missing_ancestor(path: &Path) -> Option<PathBuf> {
    if std::fs::symlink_metadata(path).is_ok() {
        return None;
    }
    let mut missing = path;
    for a in path.ancestors().skip(1) {
        if std::fs::symlink_metadata(a).is_ok() {
            break;
        }
        missing = a;
    }
    (missing != path).then(|| missing.to_path_buf())
}

/// The walk behind `canonicalize_by_walk`; records each directory it looks inside
/// (`visited`) and each symlink it follows (`links`).
fn walk(
    path: &Path,
    mut visited: Option<&mut Vec<PathBuf>>,
    mut links: Option<&mut Vec<PathBuf>>,
) -> Result<PathBuf, PathError> {
    let mut pending: Vec<OsString> = Vec::new();
    push_components(path, &mut pending);
    let mut resolved = PathBuf::from("/");
    let mut hops = 0usize;
    let mut missing = false;
    // `pending` is a stack: the next component to apply is last.
    while let Some(name) = pending.pop() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&name);
        if missing {
            resolved = candidate;
            continue;
        }
        if let Some(v) = visited.as_deref_mut() {
            v.push(resolved.clone());
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(PathError::SymlinkLoop {
                        path: path.to_path_buf(),
                    });
                }
                let target = std::fs::read_link(&candidate).map_err(|e| io_error(&candidate, e))?;
                if let Some(l) = links.as_deref_mut() {
                    l.push(candidate.clone());
                }
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_components(&target, &mut pending);
            }
            Ok(_) => resolved = candidate,
            Err(e) if is_missing(&e) => {
                missing = true;
                resolved = candidate;
            }
            Err(e) => return Err(io_error(&candidate, e)),
        }
    }
    Ok(resolved)
}

/// Pushes the components of `path` onto the stack so that the first component is on top.
fn push_components(path: &Path, stack: &mut Vec<OsString>) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

fn is_missing(e: &io::Error) -> bool {
    // ENOTDIR: a regular file used as a directory; nothing below it can exist either.
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

fn io_error(path: &Path, e: io::Error) -> PathError {
    PathError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Expand then canonicalise: the form every rule and every query is compared in.
pub(crate) fn resolve(raw: &str, home: &Path, cwd: &Path) -> Result<PathBuf, PathError> {
    canonicalize(&expand(raw, home, cwd)?)
}

/// `canonicalize` for many paths at once (a config's rules), remembering the directories it
/// resolved: most rules share a parent (`~/...`, the project), and an entry that is not a
/// symlink, in a directory already canonical, is canonical as it is. One `lstat` per path
/// then, instead of a resolution each. Only for a moment when the disk does not change.
#[derive(Default)]
pub(crate) struct Canonicalizer {
    /// Each parent's canonical form, and for the first few the directory held open, to look
    /// names up in it without walking the whole path again.
    parents: std::collections::HashMap<PathBuf, Option<(PathBuf, Option<std::fs::File>)>>,
    open_dirs: usize,
    /// For a parent many rules name (`~/...` in a long denyRead list): its listing, name →
    /// whether it is a symlink, read once instead of a lookup per rule.
    listings: std::collections::HashMap<PathBuf, Listing>,
}

/// A parent's names looked up so far, or its whole listing once they were many.
enum Listing {
    Counting(usize),
    Listed(std::collections::HashMap<std::ffi::OsString, bool>),
}

/// After this many names looked up in one directory, it is listed instead.
const LIST_AFTER: usize = 32;

/// Directories a `Canonicalizer` keeps open at most: a config with rules in thousands of
/// directories must not eat the process's file descriptors.
const OPEN_PARENTS: usize = 32;

impl Canonicalizer {
    pub(crate) fn canonicalize(&mut self, path: &Path) -> Result<PathBuf, PathError> {
        if let (Some(parent), Some(Component::Normal(name))) =
            (path.parent(), path.components().next_back())
        {
            if path.is_absolute() && !path.as_os_str().as_encoded_bytes().contains(&0) {
                let keep_open = self.open_dirs < OPEN_PARENTS;
                let mut opened = false;
                let known = self.parents.entry(parent.to_path_buf()).or_insert_with(|| {
                    let real = kernel_resolve(parent)?;
                    let dir = keep_open.then(|| open_dir(&real)).flatten();
                    opened = dir.is_some();
                    Some((real, dir))
                });
                if let Some((real, dir)) = known {
                    let listing = self
                        .listings
                        .entry(parent.to_path_buf())
                        .or_insert(Listing::Counting(0));
                    if let Listing::Counting(n) = listing {
                        *n += 1;
                        if *n > LIST_AFTER {
                            if let Some(names) = list_links(real) {
                                *listing = Listing::Listed(names);
                            }
                        }
                    }
                    let listed = match listing {
                        Listing::Listed(names) => Some(names.get(name).is_none_or(|link| !link)),
                        Listing::Counting(_) => None,
                    };
                    let usable = match (listed, dir) {
                        (Some(not_a_link), _) => not_a_link,
                        (None, Some(dir)) => name_is_not_a_link(dir, name),
                        (None, None) => match std::fs::symlink_metadata(path) {
                            Ok(m) => !m.file_type().is_symlink(),
                            Err(e) => e.kind() == io::ErrorKind::NotFound,
                        },
                    };
                    if usable {
                        let canonical = real.join(name);
                        self.open_dirs += usize::from(opened);
                        return Ok(canonical);
                    }
                }
                self.open_dirs += usize::from(opened);
            }
        }
        canonicalize(path)
    }

    /// `resolve`, remembering directories as `canonicalize` does.
    pub(crate) fn resolve(
        &mut self,
        raw: &str,
        home: &Path,
        cwd: &Path,
    ) -> Result<PathBuf, PathError> {
        self.canonicalize(&expand(raw, home, cwd)?)
    }
}

/// The names in `dir`, each with whether it is a symlink (from the listing's file types; a
/// name whose type the file system does not say is asked about). None when it cannot be
/// listed.
fn list_links(dir: &Path) -> Option<std::collections::HashMap<std::ffi::OsString, bool>> {
    let mut names = std::collections::HashMap::new();
    for e in std::fs::read_dir(dir).ok()? {
        let e = e.ok()?;
        let link = e.file_type().ok()?.is_symlink();
        names.insert(e.file_name(), link);
    }
    Some(names)
}

fn open_dir(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .ok()
}

/// Whether `name` in `dir` is missing or something other than a symlink.
fn name_is_not_a_link(dir: &impl std::os::fd::AsRawFd, name: &std::ffi::OsStr) -> bool {
    let Ok(name) = std::ffi::CString::new(name.as_encoded_bytes()) else {
        return false;
    };
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a valid directory fd, a NUL-terminated name and a stat buffer of the right size.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        // SAFETY: fstatat succeeded, so it filled the buffer.
        unsafe { st.assume_init() }.st_mode & libc::S_IFMT != libc::S_IFLNK
    } else {
        io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
    }
}

/// The unicode spaces pi's tools turn into plain spaces before opening a path.
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// The path pi's file tools open for `raw` (`resolveToCwd` in pi's `path-utils`): strip
/// one leading `@`, turn unicode spaces into spaces, expand `~` and `~/`; a relative path is
/// resolved lexically against `cwd`, an absolute one is left alone. Not canonicalised: the
/// kernel follows links when pi opens it, and so do we after.
pub(crate) fn pi_tool_path(raw: &str, home: &Path, cwd: &Path) -> Result<PathBuf, PathError> {
    let stripped = raw.strip_prefix('@').unwrap_or(raw);
    let normalized: String = stripped
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if normalized.contains('\0') {
        return Err(PathError::NulByte { path: normalized });
    }
    let expanded = if normalized == "~" {
        home.to_path_buf()
    } else if let Some(rest) = normalized.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(&normalized)
    };
    // pi hands an absolute path to the kernel as it is (`..` then applies after symlinks, as
    // `canonicalize` does); only a relative one goes through Node's lexical `path.resolve`.
    if expanded.is_absolute() {
        return Ok(expanded);
    }
    Ok(lexical_normalize(&cwd.join(expanded)))
}

/// The path pi's read tool opens (`resolveReadPath`): the plain path if it exists, otherwise the
/// first existing macOS spelling variant (narrow no-break space before AM/PM, NFD, curly
/// apostrophe, NFD + curly), otherwise the plain path.
pub(crate) fn pi_read_path(raw: &str, home: &Path, cwd: &Path) -> Result<PathBuf, PathError> {
    let plain = pi_tool_path(raw, home, cwd)?;
    if exists(&plain) {
        return Ok(plain);
    }
    let text = plain.to_string_lossy().into_owned();
    let nfd: String = text.nfd().collect();
    let candidates = [
        am_pm_variant(&text),
        nfd.clone(),
        text.replace('\'', "\u{2019}"),
        nfd.replace('\'', "\u{2019}"),
    ];
    for candidate in candidates {
        if candidate != text && exists(Path::new(&candidate)) {
            return Ok(PathBuf::from(candidate));
        }
    }
    Ok(plain)
}

fn exists(p: &Path) -> bool {
    // pi uses access(F_OK), which follows symlinks: a dangling link does not "exist".
    std::fs::metadata(p).is_ok()
}

/// ` AM.` / ` PM.` (any case) gets a narrow no-break space, as macOS screenshot names do.
fn am_pm_variant(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' && i + 3 < chars.len() {
            let a = chars[i + 1].to_ascii_uppercase();
            let m = chars[i + 2].to_ascii_uppercase();
            if (a == 'A' || a == 'P') && m == 'M' && chars[i + 3] == '.' {
                out.push('\u{202F}');
                i += 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Node's `path.resolve` semantics: `.` dropped and `..` popped lexically.
pub(crate) fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod canonicalizer_tests {
    use super::*;

    #[test]
    fn the_canonicalizer_agrees_with_canonicalize() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::fs::write(root.join("real/file"), "").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("real/file"), root.join("real/filelink")).unwrap();
        let mut c = Canonicalizer::default();
        for rel in [
            "real/sub",
            "real/file",
            "real/missing",
            "link/sub",
            "link/missing",
            "real/filelink",
            "link/filelink",
            "missing/deeper",
            "real/sub/..",
            "link/../real",
        ] {
            let p = root.join(rel);
            assert_eq!(c.canonicalize(&p).ok(), canonicalize(&p).ok(), "{rel}");
            // and again, from the remembered parent
            assert_eq!(
                c.canonicalize(&p).ok(),
                canonicalize(&p).ok(),
                "{rel} (again)"
            );
        }
        // Past the directories it keeps open, it answers the same by path.
        for i in 0..(OPEN_PARENTS + 8) {
            let dir = root.join(format!("d{i}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("f"), "").unwrap();
            std::os::unix::fs::symlink(dir.join("f"), dir.join("l")).unwrap();
            for name in ["f", "l", "new"] {
                let p = dir.join(name);
                assert_eq!(
                    c.canonicalize(&p).ok(),
                    canonicalize(&p).ok(),
                    "d{i}/{name}"
                );
            }
        }
        assert_eq!(c.open_dirs, OPEN_PARENTS);
        // Many names in one directory: past `LIST_AFTER` it is listed once, and answers the
        // same for files, links, links to directories and missing names.
        let many = root.join("many");
        std::fs::create_dir(&many).unwrap();
        std::os::unix::fs::symlink(root.join("real"), many.join("dirlink")).unwrap();
        std::os::unix::fs::symlink(root.join("real/file"), many.join("filelink")).unwrap();
        std::fs::write(many.join("plain"), "").unwrap();
        for i in 0..(LIST_AFTER + 8) {
            for name in [
                format!("missing-{i}"),
                "dirlink".into(),
                "filelink".into(),
                "plain".into(),
            ] {
                let p = many.join(&name);
                assert_eq!(
                    c.canonicalize(&p).ok(),
                    canonicalize(&p).ok(),
                    "many/{name}"
                );
            }
        }
        assert!(matches!(c.listings.get(&many), Some(Listing::Listed(_))));
    }
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
