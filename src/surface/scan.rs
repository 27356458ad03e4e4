//! What bash's writable trees hold that the guard keeps read-only: the scan (`scan_protected`),
//! its findings (`Scan`, `Found`) and the steps the index repeats per change (`judge`,
//! `record`, `hard_link`), and the env files around the indexed trees bash hides. The mount
//! plan binds what it finds; the audit compares against it after each command.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::policy::guard::{Guard, Protection};
use crate::policy::protected::{is_under, GitDirCache, Keep};
use crate::surface::protected_links;

/// One protected path found in the writable trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) why: Protection,
    /// For entries the audit compares by content (symlinks, `Keep::Audit` files): what the
    /// path held (a link's target, a file's bytes). Empty for the rest.
    pub(crate) fingerprint: Vec<u8>,
}

/// What `scan_protected` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Paths bash binds read-only.
    pub(crate) protected: Vec<Found>,
    /// `Keep::Audit` entries: not mounted, compared after each command.
    pub(crate) audited: Vec<Found>,
    /// Every git dir found (each gets its hooks placeholder).
    pub(crate) git_dirs: Vec<PathBuf>,
    /// Other names of protected files, also in `protected`: the targets of protected names
    /// that are symlinks, and hard links to protected files. The path guard needs them: its
    /// rules name the protected paths, not these.
    pub(crate) second_names: Vec<Found>,
    /// Env files bash hides outside the indexed trees: in the session directory's ancestors
    /// (a monorepo's root `.env`) and the home directory. Listed at each command
    /// (`env_files_around`), not by the index or the full scan.
    pub(crate) hidden_env_files: Vec<PathBuf>,
}

impl Scan {
    pub(crate) fn all(&self) -> impl Iterator<Item = &Found> {
        self.protected.iter().chain(&self.audited)
    }
}

/// The fingerprint of a protected link's target that does not exist.
pub(crate) const LINK_TARGET_MISSING: &[u8] = b"missing-link-target";
/// How a fingerprint records a symlink: this, then its target.
pub(crate) const FP_LINK: &[u8] = b"link:";
/// How a fingerprint records a regular file: this, then its content.
const FP_FILE: &[u8] = b"file:";

/// The content a fingerprint records, when it records a regular file's.
pub(crate) fn fingerprinted_content(fingerprint: &[u8]) -> Option<&[u8]> {
    fingerprint.strip_prefix(FP_FILE)
}

/// What a path holds, for the audit to compare before and after a command and to put back.
/// Each kind has its own prefix, so no content can pass for a link or for another kind (a
/// FIFO replacing an empty file changes the fingerprint). The content is read by
/// `content::read`: never blocking, bounded; a file over the bound is recorded by inode and
/// change time, which any write changes.
fn fingerprint(path: &Path, meta: &std::fs::Metadata) -> Vec<u8> {
    use crate::content::{self, NotContent};
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return [FP_LINK, target.as_os_str().as_encoded_bytes()].concat();
    }
    match content::read(path, content::GIT_FILE_LIMIT) {
        Ok(bytes) => [FP_FILE, &bytes].concat(),
        Err(NotContent::TooLarge { size, stamp, .. }) => {
            format!("large:{size}:{stamp:?}").into_bytes()
        }
        Err(not) => format!("kind:{not}").into_bytes(),
    }
}

/// Every existing path inside `roots` that the guard keeps read-only, found the way the
/// guard decides it (same table, same git-dir test), with no depth limit, no budget and no
/// skipped directories; names are OS strings, whatever their encoding. Symlinks are not
/// followed, but a protected name that is a symlink protects its target too. A file with
/// several hard links to a protected file is protected under every name.
pub(crate) fn scan_protected(guard: &Guard, roots: &[PathBuf]) -> Scan {
    let mut scan = Scan::default();
    let mut git = GitDirCache::default();
    let roots = scan_roots(roots);
    for r in &roots {
        if git.is_git_dir(r) {
            scan.git_dirs.push(r.clone());
        }
    }
    let mut protected = Vec::new();
    let mut bound_whole = HashSet::new();
    walk(&roots, |path, file_type| {
        let judged = judge(guard, &mut git, path, file_type);
        if judged.git_dir {
            scan.git_dirs.push(path.to_path_buf());
        }
        if let Some(why) = judged.protection {
            protected.push((path.to_path_buf(), why));
        }
        if judged.walk == Walk::Skip {
            bound_whole.insert(path.to_path_buf());
        }
        judged.walk
    });
    let linked_inodes = record(&mut scan, &roots, guard, protected, Links::Collect);
    if linked_inodes.is_empty() {
        return scan;
    }
    // Rare: a protected file has other names. Find those inside the writable trees (a name
    // inside a directory bound read-only whole is read-only already).
    walk(&roots, |path, file_type| {
        if bound_whole.contains(path) {
            return Walk::Skip;
        }
        if file_type.is_file() {
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                if let Some(of) = linked_inodes.get(&(meta.dev(), meta.ino())) {
                    hard_link(&mut scan, guard, path, of);
                }
            }
        }
        Walk::Descend
    });
    scan
}

/// The roots a scan walks: bash's writable trees, less the private /tmp.
pub(crate) fn scan_roots(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter(|r| r.as_path() != Path::new("/tmp"))
        .cloned()
        .collect()
}

/// How the scan treats one entry of the writable trees.
pub(crate) struct Judged {
    /// It is a directory git would use as a git dir.
    pub(crate) git_dir: bool,
    /// Why the guard keeps it read-only, if it does.
    pub(crate) protection: Option<Protection>,
    /// Whether the walk goes below it (a protected directory is bound whole).
    pub(crate) walk: Walk,
}

/// Judges `path` (of type `file_type`, from its directory listing) as the scan does.
pub(crate) fn judge(
    guard: &Guard,
    git: &mut GitDirCache,
    path: &Path,
    file_type: std::fs::FileType,
) -> Judged {
    let git_dir = file_type.is_dir() && git.is_git_dir(path);
    let mut is_git_dir = |p: &Path| guard.is_git_dir_for_writes(p, git);
    let protection = guard.write_protection(path, &mut is_git_dir);
    // A link named like an env file is one too: `record` masks what it leads to.
    let env_named_link =
        file_type.is_symlink() && guard.hides_env_files() && guard.is_secret_env_file(path);
    if (file_type.is_file() && guard.masks_env_file(path)) || env_named_link {
        return Judged {
            git_dir,
            protection: Some(Protection::EnvFile {
                also: protection.map(Box::new),
            }),
            walk: Walk::Descend,
        };
    }
    let Some(why) = protection else {
        return Judged {
            git_dir,
            protection: None,
            walk: Walk::Descend,
        };
    };
    let audit_only = matches!(&why, Protection::Surface(h) if h.entry.keep == Keep::Audit);
    let walk = if file_type.is_dir() && !audit_only {
        Walk::Skip
    } else {
        Walk::Descend
    };
    Judged {
        git_dir,
        protection: Some(why),
        walk,
    }
}

/// Adds what the protected paths `protected` (as `judge` found them) mean to `scan`: each
/// path, what the links among them and inside them lead to, the audit's fingerprints.
/// Returns the inodes of protected files with several names, each with the protected name
/// (for `hard_link`).
pub(crate) fn record(
    scan: &mut Scan,
    roots: &[PathBuf],
    guard: &Guard,
    protected: Vec<(PathBuf, Protection)>,
    links: Links,
) -> HashMap<(u64, u64), PathBuf> {
    // Protected files with more than one name: only these can have a writable second name.
    let mut linked_inodes: HashMap<(u64, u64), PathBuf> = HashMap::new();
    let mut collect = |path: &Path, meta: &std::fs::Metadata, depth: usize| {
        if links == Links::Collect {
            collect_linked_inodes(path, meta, depth, &mut linked_inodes);
        }
    };
    // Folders protected links lead to, walked for their own links (once each, in path
    // order: the index and a full scan name the same link for each).
    let mut walked = Vec::new();
    let mut protected = protected;
    protected.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, why) in protected {
        record_path(scan, roots, guard, &path, why, &mut collect, &mut walked);
    }
    record_fixed_places(scan, roots, guard, &mut collect, &mut walked);
    linked_inodes
}

/// Records one protected path (see `record`): it, what a link or the links in a folder bound
/// whole lead to, its fingerprint if the audit compares it.
fn record_path(
    scan: &mut Scan,
    roots: &[PathBuf],
    guard: &Guard,
    path: &Path,
    why: Protection,
    collect: &mut impl FnMut(&Path, &std::fs::Metadata, usize),
    walked: &mut Vec<PathBuf>,
) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let why = match why {
        Protection::EnvFile { also } if meta.file_type().is_symlink() => {
            scan.protected.extend(env_file_behind(guard, path));
            match also {
                Some(also) => *also,
                None => return,
            }
        }
        why => why,
    };
    let audit_only = matches!(&why, Protection::Surface(h) if h.entry.keep == Keep::Audit);
    collect(path, &meta, usize::MAX);
    if meta.file_type().is_symlink() {
        protect_link_target(scan, roots, path, &why, collect, walked);
    } else if meta.is_dir() && !audit_only {
        // A folder bound whole: pi or git load what each link inside it leads to.
        for link in protected_links::links_below(path, &guard.env().agent_dir) {
            protect_link_target(scan, roots, &link, &why, collect, walked);
        }
    }
    let found = Found {
        fingerprint: if audit_only || meta.file_type().is_symlink() {
            fingerprint(path, &meta)
        } else {
            Vec::new()
        },
        path: path.to_path_buf(),
        why,
    };
    if audit_only {
        scan.audited.push(found);
    } else {
        scan.protected.push(found);
    }
}

/// The table's fixed places (pi's agent dir, ~/.ssh, ~/.local/bin, ...) lie outside the
/// writable trees as a rule, but a link inside one can lead into them. Hard links to them
/// too (a workspace file that is also ~/.bashrc), their top levels only: pi's session
/// transcripts are many and never linked by pi.
fn record_fixed_places(
    scan: &mut Scan,
    roots: &[PathBuf],
    guard: &Guard,
    collect: &mut impl FnMut(&Path, &std::fs::Metadata, usize),
    walked: &mut Vec<PathBuf>,
) {
    for (p, entry) in guard.anchors().fixed_paths() {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        collect(p, &meta, 2);
        if roots.iter().any(|r| is_under(p, r)) {
            continue; // walked above, if the scan found it
        }
        let why = Protection::Surface(crate::policy::protected::Hit {
            entry,
            root: p.clone(),
        });
        for link in protected_links::links_below(p, &guard.env().agent_dir) {
            protect_link_target(scan, roots, &link, &why, collect, walked);
        }
    }
}

/// What the protected link `link` (protected as `why`, or inside what is) leads to: a second
/// name for the path guard wherever it is; for bash, a read-only mount inside its writable
/// trees, or, while it does not exist, a path the audit watches (a command could create it).
/// A chain through /proc (`/proc/self/cwd/...`) leads somewhere else for every process that
/// follows it: no one target to protect (a command making such a link is moved aside by the
/// audit like any new protected link).
fn protect_link_target(
    scan: &mut Scan,
    roots: &[PathBuf],
    link: &Path,
    why: &Protection,
    collect: &mut impl FnMut(&Path, &std::fs::Metadata, usize),
    walked: &mut Vec<PathBuf>,
) {
    let Some(target) = crate::paths::canonicalize_traced(link)
        .ok()
        .filter(|(_, through)| !through.iter().any(|d| d.starts_with("/proc")))
        .map(|(t, _)| t)
    else {
        return;
    };
    protect_links_on_the_way(scan, roots, link, why);
    let found = Found {
        path: target.clone(),
        why: Protection::LinkTarget {
            link: link.to_path_buf(),
            of: Box::new(why.clone()),
        },
        fingerprint: Vec::new(),
    };
    scan.second_names.push(found.clone());
    let in_roots = roots.iter().any(|r| is_under(&target, r));
    let target_meta = std::fs::symlink_metadata(&target);
    // A folder it leads to is loaded whole (an extension's package): its links count too.
    // Each folder is walked once a scan (what is below a walked one was walked with it), so
    // links that lead back up or into each other end.
    let walk = in_roots
        && target_meta.as_ref().is_ok_and(|m| m.is_dir())
        && !walked.iter().any(|w| target.starts_with(w));
    if walk {
        walked.push(target.clone());
        let of = Protection::LinkTarget {
            link: link.to_path_buf(),
            of: Box::new(why.clone()),
        };
        for inner in protected_links::links_below(&target, Path::new("/nonexistent")) {
            protect_link_target(scan, roots, &inner, &of, collect, walked);
        }
    }
    match target_meta {
        Err(_) if in_roots || roots.iter().any(|r| is_under(link, r)) => scan.audited.push(Found {
            fingerprint: LINK_TARGET_MISSING.to_vec(),
            ..found
        }),
        Ok(tmeta) if in_roots => {
            collect(&target, &tmeta, usize::MAX);
            scan.protected.push(found);
        }
        _ => {}
    }
}

/// The links a protected link's resolution follows after itself, inside the writable trees:
/// kept as they are by the audit (a mount cannot hold a symlink in place).
fn protect_links_on_the_way(scan: &mut Scan, roots: &[PathBuf], link: &Path, why: &Protection) {
    let Ok((_, followed)) = crate::paths::symlinks_followed(link) else {
        return;
    };
    for way in followed.iter().filter(|l| l.as_path() != link) {
        if !roots.iter().any(|r| is_under(way, r)) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(way) else {
            continue;
        };
        scan.audited.push(Found {
            fingerprint: fingerprint(way, &meta),
            path: way.clone(),
            why: Protection::WayLink {
                link: link.to_path_buf(),
                of: Box::new(why.clone()),
            },
        });
    }
}

/// The env file a link named like one leads to, to hide in bash under its real path (a
/// mount on the link would land wherever the link points when bwrap sets it up).
fn env_file_behind(guard: &Guard, link: &Path) -> Option<Found> {
    let target = crate::paths::canonicalize(link).ok()?;
    let is_file = std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file());
    (is_file && guard.masks_env_file_named(&target, true)).then(|| Found {
        path: target,
        why: Protection::EnvFile { also: None },
        fingerprint: Vec::new(),
    })
}

/// The env file to hide for `path`, a file or link one of the env-file walks found: the
/// file itself, or for a link, what it leads to (see `env_file_behind`).
pub(crate) fn env_file_to_mask(guard: &Guard, path: &Path) -> Option<PathBuf> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return env_file_behind(guard, path).map(|f| f.path);
    }
    guard.masks_env_file(path).then(|| path.to_path_buf())
}

/// Whether `record` looks for the protected files that have several names. The index skips
/// it while no file in the writable trees has several names: only such a file can be the
/// writable second name of a protected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Links {
    Collect,
    Skip,
}

/// Records `path`, another name of the protected file `of`, unless it is `of` itself. A
/// second name of an env file bash hides is hidden too (its content is the env file's).
pub(crate) fn hard_link(scan: &mut Scan, guard: &Guard, path: &Path, of: &Path) {
    if of != path {
        let link = Protection::HardLink {
            of: of.to_path_buf(),
        };
        let found = Found {
            why: link.clone(),
            path: path.to_path_buf(),
            fingerprint: Vec::new(),
        };
        scan.second_names.push(found.clone());
        scan.protected.push(if guard.masks_env_file(of) {
            Found {
                why: Protection::EnvFile {
                    also: Some(Box::new(link)),
                },
                ..found
            }
        } else {
            found
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    Descend,
    Skip,
}

/// Visits every entry below `roots` (not following symlinks), with its type from the
/// directory listing; `visit` says whether to go into a directory.
fn walk(roots: &[PathBuf], mut visit: impl FnMut(&Path, std::fs::FileType) -> Walk) {
    let mut stack: Vec<PathBuf> = roots.to_vec();
    let mut seen = HashSet::new();
    while let Some(dir) = stack.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if let Walk::Descend = visit(&path, file_type) {
                if file_type.is_dir() {
                    stack.push(path);
                }
            }
        }
    }
}

/// Records the inode of every file with several names at or below `path` (a protected
/// file or directory), `depth` levels down.
fn collect_linked_inodes(
    path: &Path,
    meta: &std::fs::Metadata,
    depth: usize,
    out: &mut HashMap<(u64, u64), PathBuf>,
) {
    if meta.is_file() && meta.nlink() > 1 {
        // The least name, whatever the order of the walk: the scan and the index agree.
        out.entry((meta.dev(), meta.ino()))
            .and_modify(|p| {
                if path < p.as_path() {
                    *p = path.to_path_buf();
                }
            })
            .or_insert_with(|| path.to_path_buf());
    } else if meta.is_dir() && depth > 0 {
        for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
            if let Ok(m) = std::fs::symlink_metadata(e.path()) {
                collect_linked_inodes(&e.path(), &m, depth - 1, out);
            }
        }
    }
}

/// The trees the scan and the index walk: the writable ones whatever the mode, and the
/// session's directory even when a config leaves it out of allowWrite. Beyond what may be
/// written, they hold the env files bash must hide (in read-only mode, or a project that
/// narrowed allowWrite to `./src`); findings outside the writable trees mount nothing else.
/// The session's own /tmp is not walked, as the host's /tmp never was: nothing pi or the
/// user's tools load lives there, and npm's or pip's caches there would spend the inotify
/// watches (tens of thousands of folders) for nothing.
pub(crate) fn scanned_roots(guard: &Guard) -> Vec<PathBuf> {
    let mut roots = allow_write_roots(guard);
    let cwd = &guard.env().cwd;
    if !roots.iter().any(|r| cwd.starts_with(r)) {
        roots.push(cwd.clone());
    }
    roots.retain(|r| Some(r.as_path()) != guard.env().tmp.as_deref());
    scan_roots(&roots)
}

/// allowWrite less what the guard protects itself (see `mounts::writable_roots`).
pub(crate) fn allow_write_roots(guard: &Guard) -> Vec<PathBuf> {
    let mut cache = GitDirCache::default();
    let mut is_git_dir = |p: &Path| guard.is_git_dir_for_writes(p, &mut cache);
    guard
        .allow_write_paths()
        .filter(|root| guard.write_protection(root, &mut is_git_dir).is_none())
        .map(Path::to_path_buf)
        .collect()
}

/// The env files bash hides besides the indexed trees' (`Scan::hidden_env_files`): those in
/// the session directory and each of its ancestors, and in the home directory, outside the
/// trees the index covers. One directory listing each, kept in `listings` while the
/// directory's modification time says no name was added, removed or renamed there: a
/// monorepo's root `.env` or `~/.env` is where a command would look next.
pub(crate) fn env_files_around(guard: &Guard, listings: &mut EnvFileListings) -> Vec<PathBuf> {
    if !guard.hides_env_files() {
        return vec![];
    }
    let env = guard.env();
    let indexed = scanned_roots(guard);
    let mut dirs: Vec<&Path> = env.cwd.ancestors().collect();
    dirs.push(&env.home);
    dirs.dedup();
    let mut found = Vec::new();
    for dir in dirs {
        if indexed.iter().any(|r| dir.starts_with(r)) {
            continue;
        }
        for path in listings.env_files_in(dir) {
            if let Some(path) = env_file_to_mask(guard, &path) {
                if !found.contains(&path) {
                    found.push(path);
                }
            }
        }
    }
    found
}

/// The env files in directories outside the indexed trees, each directory's listing kept
/// while its identity and times say nothing changed (`env_files::relisted`).
#[derive(Default)]
pub(crate) struct EnvFileListings {
    dirs: HashMap<PathBuf, crate::surface::env_files::Listed>,
}

impl EnvFileListings {
    fn env_files_in(&mut self, dir: &Path) -> Vec<PathBuf> {
        let previous = self.dirs.remove(dir);
        let Ok(meta) = std::fs::metadata(dir) else {
            return vec![];
        };
        let listed = crate::surface::env_files::relisted(dir, &meta, previous);
        let files = listed.env_files.iter().map(|n| dir.join(n)).collect();
        self.dirs.insert(dir.to_path_buf(), listed);
        files
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::policy::config::{merge, Env};
    use crate::policy::guard::ApprovalMode;

    /// The guard for `env` with the project config `project_json`.
    pub(crate) fn guard(project_json: &str, env: &Env) -> Guard {
        let cfg = merge(
            crate::policy::config::Config::defaults_for(env),
            &[(env.project_config(), Some(project_json.to_string()))],
        )
        .unwrap();
        Guard::new(&cfg, env, ApprovalMode::Ask).unwrap()
    }

    #[test]
    fn a_listing_is_kept_only_while_its_directory_is_unchanged_and_not_just_changed() {
        let t = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(t.path()).unwrap();
        let names = |l: &mut EnvFileListings| -> Vec<String> {
            let mut n: Vec<String> = l
                .env_files_in(&dir)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        std::fs::write(dir.join(".env.a"), "").unwrap();
        std::fs::write(dir.join("notes.txt"), "").unwrap();
        let mut listings = EnvFileListings::default();
        // Listed right after a change: read again next time.
        assert_eq!(names(&mut listings), [".env.a"]);
        assert!(!listings.dirs[&dir].settled);
        std::thread::sleep(crate::surface::env_files::RACY + std::time::Duration::from_millis(100));
        assert_eq!(names(&mut listings), [".env.a"]);
        assert!(
            listings.dirs[&dir].settled,
            "an unchanged, settled directory is kept"
        );
        // A name added, with the modification time set back, is still seen: the change
        // time moved, and no one can set it back.
        let modified = std::fs::metadata(&dir).unwrap().modified().unwrap();
        std::fs::write(dir.join(".env.b"), "").unwrap();
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(names(&mut listings), [".env.a", ".env.b"]);
        assert!(!listings.dirs[&dir].settled);
    }

    #[test]
    fn scan_finds_existing_protected_files_without_following_links() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = Env::under(&root);
        for d in [
            "proj/a/b",
            "proj/node_modules/x",
            "proj/sub/.pi",
            "proj/vendor/.git/hooks",
            "outside",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "proj/a/b/key.pem",
            "proj/.env",
            "proj/node_modules/x/.env",
            "proj/a/ok.txt",
            "outside/z.pem",
        ] {
            std::fs::write(root.join(f), b"").unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside"), root.join("proj/link")).unwrap();
        let g = guard("{}", &env);
        let scan = scan_protected(&g, std::slice::from_ref(&env.cwd));
        let mut rel: Vec<String> = scan
            .all()
            .map(|f| f.path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        rel.sort();
        // no depth limit, node_modules walked (its .env is exempt from denyWrite there, as
        // in the guard, but hidden like every env file the user has not allowed reading), a
        // nested repository's hooks found through the table
        assert_eq!(
            rel,
            [
                "proj/.env",
                "proj/a/b/key.pem",
                "proj/node_modules/x/.env",
                "proj/sub/.pi",
                "proj/vendor/.git/hooks"
            ]
        );
        assert_eq!(scan.git_dirs, [root.join("proj/vendor/.git")]);
    }

    #[test]
    fn what_a_link_inside_a_protected_folder_leads_to_is_protected_too() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = Env::under(&root);
        for d in [
            "proj/.pi/extensions",
            "proj/src",
            "home/.pi/agent/extensions",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("proj/src/x.ts"), "").unwrap();
        std::fs::write(root.join("proj/src/conf.json"), "{}").unwrap();
        std::fs::write(root.join("proj/src/z.ts"), "").unwrap();
        let link = |to: &str, at: &str| std::os::unix::fs::symlink(to, root.join(at)).unwrap();
        // the project's .pi: an extension, the sandbox config, one not there yet
        link("../../src/x.ts", "proj/.pi/extensions/x.ts");
        link("../src/conf.json", "proj/.pi/sandbox.json");
        link("../../src/new.ts", "proj/.pi/extensions/new.ts");
        // pi's agent dir, outside the writable trees, leading into them
        link(
            root.join("proj/src/z.ts").to_str().unwrap(),
            "home/.pi/agent/extensions/z.ts",
        );
        let g = guard("{}", &env);
        let scan = scan_protected(&g, std::slice::from_ref(&env.cwd));
        let second: Vec<&Path> = scan.second_names.iter().map(|f| f.path.as_path()).collect();
        let protected: Vec<&Path> = scan.protected.iter().map(|f| f.path.as_path()).collect();
        for f in ["proj/src/x.ts", "proj/src/conf.json", "proj/src/z.ts"] {
            assert!(second.contains(&root.join(f).as_path()), "{f}: {second:?}");
            assert!(
                protected.contains(&root.join(f).as_path()),
                "{f}: {protected:?}"
            );
        }
        // a missing target is watched by the audit, and the guard knows it
        assert!(second.contains(&root.join("proj/src/new.ts").as_path()));
        assert!(scan.audited.iter().any(
            |f| f.path == root.join("proj/src/new.ts") && f.fingerprint == LINK_TARGET_MISSING
        ));
    }
}
