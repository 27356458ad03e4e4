//! The code pi loads at its next start, on the host: the extensions its settings list (the
//! agent dir's and the project's `settings.json`, top level or through a package). pi's own
//! package manager names them (the extension asks it: `piLoadsOf` in extensions/index.ts),
//! so no differential with pi's resolution is possible; here each becomes the places the
//! table keeps (`Place::PiLoads`). The folders pi finds extensions in by itself (`.pi/` and
//! the agent dir's) are in the table already.
//!
//! An extension imports what sits beside it, so its folder is kept whole: a package's root
//! (its dependencies too), the folder a listed file is in, a listed folder. A folder that
//! holds a tree commands may write (the project, an allowWrite root) cannot be kept whole
//! without taking that tree: then only the listed file is kept, and the session says so.

use std::path::{Path, PathBuf};

use crate::paths::lexical_normalize;
use crate::policy::protected::is_under;

/// One extension pi loads, as pi named it (absolute): the file or folder, and the root of
/// the package it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiLoad {
    pub path: PathBuf,
    pub package_root: Option<PathBuf>,
}

/// What the table keeps for the session's pi loads, and what could only be kept in part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Canonical places, the links on the way to them, and for a place not made yet, the
    /// first missing directory on the way (made as a link, it would send pi elsewhere).
    pub places: Vec<PathBuf>,
    /// Folders that hold a writable tree: only the extension in them is kept.
    pub narrowed: Vec<Narrowed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Narrowed {
    pub extension: PathBuf,
    pub folder: PathBuf,
}

/// The folder pi loads `load` with (see the module comment).
fn folder_of(load: &PiLoad) -> PathBuf {
    if let Some(root) = &load.package_root {
        return root.clone();
    }
    match std::fs::metadata(&load.path) {
        Ok(m) if m.is_file() => load
            .path
            .parent()
            .map_or_else(|| load.path.clone(), Path::to_path_buf),
        _ => load.path.clone(),
    }
}

/// `path` followed through its links (as far as it exists), and the links followed.
fn followed(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    crate::paths::symlinks_followed(path).unwrap_or_else(|_| (lexical_normalize(path), vec![]))
}

/// Whether keeping `real` whole would take a writable tree, the home or everything.
fn holds_writable(real: &Path, writable: &[PathBuf], home: &Path) -> bool {
    real == home
        || real.parent().is_none()
        || writable.iter().any(|w| w != real && is_under(w, real))
}

/// `path` kept: itself (followed), the links on the way, the first missing folder on the
/// way unless that one would hold a writable tree.
fn keep(path: &Path, writable: &[PathBuf], out: &mut Vec<PathBuf>) {
    let (real, links) = followed(path);
    let missing = crate::surface::hooks::first_missing_ancestor(&real)
        .filter(|m| !writable.iter().any(|w| is_under(w, m)));
    out.extend(missing);
    out.push(real);
    out.extend(links);
}

/// The places kept for `loads`; `writable` (canonical) are the project and allowWrite roots.
pub(crate) fn protected_places(loads: &[PiLoad], writable: &[PathBuf], home: &Path) -> Kept {
    let mut kept = Kept::default();
    for load in loads {
        let folder = folder_of(load);
        if !holds_writable(&followed(&folder).0, writable, home) {
            keep(&folder, writable, &mut kept.places);
            continue;
        }
        // A listed folder that holds the project (`~/dev` for `~/dev/proj`) is skipped: pi
        // named what it loads from there one by one (each is a load of its own).
        if folder != load.path && !holds_writable(&followed(&load.path).0, writable, home) {
            keep(&load.path, writable, &mut kept.places);
        }
        kept.narrowed.push(Narrowed {
            extension: load.path.clone(),
            folder,
        });
    }
    kept.places.sort();
    kept.places.dedup();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for d in ["home/proj/tools", "home/pkg/node_modules", "home/dev"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        (t, root)
    }

    fn load(path: PathBuf) -> PiLoad {
        PiLoad {
            path,
            package_root: None,
        }
    }

    #[test]
    fn a_listed_file_keeps_its_folder_and_a_package_its_root() {
        let (_t, r) = world();
        std::fs::write(r.join("home/proj/tools/ext.ts"), "").unwrap();
        let loads = [
            load(r.join("home/proj/tools/ext.ts")),
            PiLoad {
                path: r.join("home/pkg/index.ts"),
                package_root: Some(r.join("home/pkg")),
            },
        ];
        let kept = protected_places(&loads, &[r.join("home/proj")], &r.join("home"));
        assert_eq!(
            kept.places,
            vec![r.join("home/pkg"), r.join("home/proj/tools")]
        );
        assert!(kept.narrowed.is_empty());
    }

    #[test]
    fn a_folder_holding_the_project_keeps_only_the_extension_and_says_so() {
        let (_t, r) = world();
        std::fs::write(r.join("home/dev/ext.ts"), "").unwrap();
        std::fs::create_dir_all(r.join("home/dev/proj")).unwrap();
        let writable = [r.join("home/dev/proj")];
        let kept = protected_places(
            &[load(r.join("home/dev/ext.ts"))],
            &writable,
            &r.join("home"),
        );
        assert_eq!(kept.places, vec![r.join("home/dev/ext.ts")]);
        assert_eq!(kept.narrowed[0].folder, r.join("home/dev"));
        // The home itself is never kept whole; a listed folder holding the project, not at all.
        let kept = protected_places(&[load(r.join("home/dev"))], &writable, &r.join("home"));
        assert!(kept.places.is_empty());
        assert_eq!(kept.narrowed.len(), 1);
    }

    #[test]
    fn the_project_as_the_extension_folder_is_kept_whole() {
        let (_t, r) = world();
        std::fs::write(r.join("home/proj/index.ts"), "").unwrap();
        let writable = [r.join("home/proj")];
        let kept = protected_places(
            &[load(r.join("home/proj/index.ts"))],
            &writable,
            &r.join("home"),
        );
        assert_eq!(kept.places, vec![r.join("home/proj")]);
    }

    #[test]
    fn a_missing_extension_keeps_the_first_missing_folder_and_links_on_the_way() {
        let (_t, r) = world();
        let writable = [r.join("home/proj")];
        let kept = protected_places(
            &[load(r.join("home/proj/later/ext.ts"))],
            &writable,
            &r.join("home"),
        );
        assert_eq!(
            kept.places,
            vec![r.join("home/proj/later"), r.join("home/proj/later/ext.ts")]
        );
        std::os::unix::fs::symlink(r.join("home/pkg"), r.join("home/proj/tools/pkg")).unwrap();
        let kept = protected_places(
            &[load(r.join("home/proj/tools/pkg"))],
            &writable,
            &r.join("home"),
        );
        assert_eq!(
            kept.places,
            vec![r.join("home/pkg"), r.join("home/proj/tools/pkg")]
        );
    }
}
