//! What a repository's object store held before a given time: whether a blob was there, in a
//! loose object or a pack index whose inode predates it. Read by us (no git run): a blob's id
//! is computed here (SHA-1, git's default object format, by the `sha1` crate), the store is looked up by name.
//!
//! Why a name and a change time prove enough: an object's file name is its id (the directory
//! two hex digits, the file 38), and a pack index lists ids. A command can write the store,
//! but every file it creates, renames or links gets a change time of now, which cannot be set
//! back; renaming a directory of old objects changes two hex digits of their names only, so
//! it cannot forge the other 38. What was there before the time was put there by whoever
//! wrote the store then, never by a command after it.

use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A blob's id in a SHA-1 repository.
pub(crate) type BlobId = [u8; 20];

/// git's id of a blob holding `content`: SHA-1 of `blob <size>\0<content>`.
pub(crate) fn blob_id(content: &[u8]) -> BlobId {
    use sha1::{Digest, Sha1};
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", content.len()));
    hasher.update(content);
    hasher.finalize().into()
}

/// Whether the object store `objects` held `id` before `before`: a loose object or a pack
/// index (format 2) listing it, each a regular file whose inode changed last before then.
/// `readable`: whether a command may read a file of the store (one it may not read proves
/// nothing to it).
pub(crate) fn held_before(
    objects: &Path,
    id: &BlobId,
    before: SystemTime,
    readable: &dyn Fn(&Path) -> bool,
) -> bool {
    let hex = to_hex(id);
    let loose = objects.join(&hex[..2]).join(&hex[2..]);
    if old_regular_file(&loose, before) && readable(&loose) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(objects.join("pack")) else {
        return false;
    };
    entries.flatten().map(|e| e.path()).any(|idx| {
        idx.extension().is_some_and(|e| e == "idx")
            && old_regular_file(&idx, before)
            && readable(&idx)
            && index_lists(&idx, id, before)
    })
}

/// The object store of the repository whose git dir is `git_dir` (a linked worktree's is
/// its common dir's).
pub(crate) fn objects_dir(git_dir: &Path) -> PathBuf {
    crate::policy::protected::commondir_target(git_dir)
        .unwrap_or_else(|| git_dir.to_path_buf())
        .join("objects")
}

fn changed_at(m: &std::fs::Metadata) -> SystemTime {
    UNIX_EPOCH + Duration::new(m.ctime().max(0) as u64, m.ctime_nsec() as u32)
}

/// A regular file (not a link to one) whose inode last changed before `before`.
fn old_regular_file(path: &Path, before: SystemTime) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && changed_at(&m) < before)
}

/// Whether the pack index `idx` (format 2: magic, version, 256 fan-out counts, sorted ids)
/// lists `id`. Opened without following links, and checked again once open: the file read
/// is the one whose age was checked.
fn index_lists(idx: &Path, id: &BlobId, before: SystemTime) -> bool {
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(idx)
    else {
        return false;
    };
    if !file
        .metadata()
        .is_ok_and(|m| m.is_file() && changed_at(&m) < before)
    {
        return false;
    }
    let mut header = [0u8; 8];
    if file.read_exact_at(&mut header, 0).is_err() || header != *b"\xfftOc\0\0\0\x02" {
        return false;
    }
    let count_at = |i: usize| -> Option<u64> {
        let mut b = [0u8; 4];
        file.read_exact_at(&mut b, 8 + 4 * i as u64).ok()?;
        Some(u64::from(u32::from_be_bytes(b)))
    };
    let first = usize::from(id[0]);
    let (Some(mut lo), Some(mut hi)) = (
        if first == 0 {
            Some(0)
        } else {
            count_at(first - 1)
        },
        count_at(first),
    ) else {
        return false;
    };
    const IDS_AT: u64 = 8 + 256 * 4;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mut name = [0u8; 20];
        if file.read_exact_at(&mut name, IDS_AT + 20 * mid).is_err() {
            return false;
        }
        match name.cmp(id) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
        }
    }
    false
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::hooks::test_git as git;

    fn git_out(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn blob_ids_are_gits() {
        let t = tempfile::tempdir().unwrap();
        for content in [
            &b""[..],
            b"A=1\n",
            &[7u8; 1000][..],
            &[b'x'; 55][..],
            &[b'y'; 64][..],
        ] {
            std::fs::write(t.path().join("f"), content).unwrap();
            let want = git_out(t.path(), &["hash-object", "--no-filters", "f"]);
            assert_eq!(to_hex(&blob_id(content)), want);
        }
    }

    #[test]
    fn loose_and_packed_objects_count_only_when_older_than_the_time() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("loose"), "L=1\n").unwrap();
        std::fs::write(repo.join("packed"), "P=1\n").unwrap();
        git(&repo, &["add", "packed"]);
        git(&repo, &["commit", "-qm", "p"]);
        git(&repo, &["repack", "-adq"]);
        git(&repo, &["add", "loose"]);
        let objects = objects_dir(&repo.join(".git"));
        let all = |_: &Path| true;
        let later = SystemTime::now() + Duration::from_secs(5);
        let (l, p) = (blob_id(b"L=1\n"), blob_id(b"P=1\n"));
        assert!(held_before(&objects, &l, later, &all));
        assert!(held_before(&objects, &p, later, &all));
        assert!(!held_before(&objects, &blob_id(b"guess\n"), later, &all));
        // Written after the time: not proof.
        let earlier = SystemTime::now() - Duration::from_secs(3600);
        assert!(!held_before(&objects, &l, earlier, &all));
        assert!(!held_before(&objects, &p, earlier, &all));
        // A store a command may not read proves nothing.
        assert!(!held_before(&objects, &p, later, &|_| false));
    }

    #[test]
    fn a_renamed_or_linked_old_object_is_new() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("a"), "OLD\n").unwrap();
        git(&repo, &["add", "a"]);
        let objects = objects_dir(&repo.join(".git"));
        let old = to_hex(&blob_id(b"OLD\n"));
        let at = SystemTime::now() + Duration::from_millis(20);
        std::thread::sleep(Duration::from_millis(50));
        // A guessed blob's name given to the old object: renamed, its change time is now.
        let guess = to_hex(&blob_id(b"GUESS\n"));
        std::fs::create_dir_all(objects.join(&guess[..2])).unwrap();
        std::fs::rename(
            objects.join(&old[..2]).join(&old[2..]),
            objects.join(&guess[..2]).join(&guess[2..]),
        )
        .unwrap();
        assert!(!held_before(&objects, &blob_id(b"GUESS\n"), at, &|_| true));
        // A link to a pack index elsewhere is no index of the store.
        let other = t.path().join("other");
        std::fs::create_dir_all(objects.join("pack")).unwrap();
        std::fs::write(&other, b"\xfftOc").unwrap();
        std::os::unix::fs::symlink(&other, objects.join("pack/x.idx")).unwrap();
        assert!(!held_before(&objects, &blob_id(b"GUESS\n"), at, &|_| true));
    }
}
