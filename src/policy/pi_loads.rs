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
use crate::policy::pi_session::{followed, keep_with_way};
use crate::policy::protected::is_under;

/// One extension pi loads, as pi named it (absolute): the file or folder, and the root of
/// the package it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PiLoad {
    pub(crate) path: PathBuf,
    pub(crate) package_root: Option<PathBuf>,
}

/// What the table keeps for the session's pi loads, and what could only be kept in part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kept {
    /// Canonical places, the links on the way to them, and for a place not made yet, the
    /// first missing directory on the way (made as a link, it would send pi elsewhere).
    pub(crate) places: Vec<PathBuf>,
    /// Folders that hold a writable tree: only the extension in them is kept.
    pub(crate) narrowed: Vec<Narrowed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Narrowed {
    pub(crate) extension: PathBuf,
    pub(crate) folder: PathBuf,
    /// What is kept instead of the folder.
    pub(crate) kept: Vec<PathBuf>,
}

/// The folder a file or folder pi loads is kept with (see the module comment).
fn folder_of(path: &Path) -> PathBuf {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => path
            .parent()
            .map_or_else(|| path.to_path_buf(), Path::to_path_buf),
        _ => path.to_path_buf(),
    }
}

/// The folders `load` is kept with: its package's root, and the folder of the file itself
/// when that lies outside the root (a manifest may name `../x/ext.ts`).
fn folders_of(load: &PiLoad) -> Vec<PathBuf> {
    let Some(root) = &load.package_root else {
        return vec![folder_of(&load.path)];
    };
    let (path, root) = (lexical_normalize(&load.path), lexical_normalize(root));
    if is_under(&path, &root) {
        vec![root]
    } else {
        vec![root, folder_of(&load.path)]
    }
}

/// Whether keeping `real` whole would take a writable tree, the home or everything.
fn holds_writable(real: &Path, writable: &[PathBuf], home: &Path) -> bool {
    real == home
        || real.parent().is_none()
        || writable.iter().any(|w| w != real && is_under(w, real))
}

/// What pi would load from the folders inside a listed folder (`real`, followed) that hold the
/// writable trees: pi looks in each folder directly inside for a package.json manifest, else
/// an index.ts or index.js. Those names, there or not yet.
fn entry_names_on_the_way(real: &Path, writable: &[PathBuf]) -> Vec<PathBuf> {
    writable
        .iter()
        .filter_map(|w| w.strip_prefix(real).ok()?.components().next())
        .flat_map(|first| {
            let child = real.join(first);
            ["package.json", "index.ts", "index.js"].map(|n| child.join(n))
        })
        .collect()
}

/// The places kept for `loads`; `writable` (canonical) are the project and allowWrite roots.
pub(crate) fn protected_places(loads: &[PiLoad], writable: &[PathBuf], home: &Path) -> Kept {
    let mut kept = Kept::default();
    for load in loads {
        for folder in folders_of(load) {
            let (real, links) = followed(&folder);
            if !holds_writable(&real, writable, home) {
                keep_with_way(real, links, writable, &mut kept.places);
                continue;
            }
            // Kept instead: the file itself, or for a listed folder holding the project, what
            // pi would look for in the folder inside it that holds the project.
            let instead = if folder != load.path {
                vec![load.path.clone()]
            } else {
                entry_names_on_the_way(&real, writable)
            };
            let mut narrowed = Vec::new();
            for p in instead {
                let (real, links) = followed(&p);
                if !holds_writable(&real, writable, home) {
                    keep_with_way(real, links, writable, &mut kept.places);
                    narrowed.push(p);
                }
            }
            kept.narrowed.push(Narrowed {
                extension: load.path.clone(),
                folder,
                kept: narrowed,
            });
        }
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
        // A listed folder holding the project: what pi looks for in the project's folder.
        let kept = protected_places(&[load(r.join("home/dev"))], &writable, &r.join("home"));
        let proj = r.join("home/dev/proj");
        let names = ["index.js", "index.ts", "package.json"].map(|n| proj.join(n));
        assert_eq!(kept.places, names.to_vec());
        assert_eq!(kept.narrowed[0].kept.len(), 3);
        // The home itself is never kept whole.
        let kept = protected_places(&[load(r.join("home/x.ts"))], &writable, &r.join("home"));
        assert_eq!(kept.places, vec![r.join("home/x.ts")]);
    }

    #[test]
    fn a_package_file_outside_its_root_keeps_its_own_folder_too() {
        let (_t, r) = world();
        std::fs::write(r.join("home/proj/tools/ext.ts"), "").unwrap();
        let loads = [PiLoad {
            path: r.join("home/pkg/../proj/tools/ext.ts"),
            package_root: Some(r.join("home/pkg")),
        }];
        let kept = protected_places(&loads, &[r.join("home/proj")], &r.join("home"));
        assert_eq!(
            kept.places,
            vec![r.join("home/pkg"), r.join("home/proj/tools")]
        );
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
