//! Programs pi runs on the host itself (bwrap's probe, git): taken from system directories
//! only, and never waited on without end.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the sandbox programs are taken from, in this order: system directories only, never
/// `PATH`, which may lead into a directory the agent can write (an activated virtualenv's
/// `bin`), where a planted `bwrap` would run on the host at the next command. NixOS keeps
/// its system profile (and setuid wrappers) under /run.
pub(crate) const SYSTEM_DIRS: [&str; 7] = [
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/run/wrappers/bin",
    "/run/current-system/sw/bin",
];

/// Replaces `SYSTEM_DIRS` (colon-separated): for tests, and for systems that keep bwrap
/// elsewhere. Set by the user who starts pi, never by the agent (its commands cannot change
/// pi's environment); a program found in a directory the agent can write is refused at launch
/// all the same (`session`).
pub(crate) const SYSTEM_DIRS_VAR: &str = "PI_SANDBOX_SYSTEM_DIRS";

pub(crate) fn system_dirs() -> Vec<PathBuf> {
    match std::env::var_os(SYSTEM_DIRS_VAR) {
        Some(v) => std::env::split_paths(&v)
            .filter(|p| p.is_absolute())
            .collect(),
        None => SYSTEM_DIRS.iter().map(PathBuf::from).collect(),
    }
}

/// `name` in the first system directory that has it as an executable file.
pub(crate) fn system_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    system_dirs().iter().map(|d| d.join(name)).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Waits for `child` at most `limit`; past it the child is killed and reaped, and the
/// answer is None. For programs run on the host that must not hold pi up.
pub(crate) fn wait_or_kill(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// SIGKILL to `root` and every process descended from it, by their parent links in `/proc`:
/// a stopped sandboxed command takes along what it started, including what left its process
/// group (bwrap's pid 1, whose end ends the command's pid namespace). Children first found are
/// killed first; what a dying process forks meanwhile is in a namespace that dies with it.
pub(crate) fn kill_tree(root: u32) {
    let parents: Vec<(u32, u32)> = pids()
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    for pid in tree.iter().skip(1).chain(std::iter::once(&root)) {
        // SAFETY: a signal to a process id; a process gone meanwhile is ESRCH.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
}

/// The parent pid in `/proc/<pid>/stat` (after the command name, which may hold spaces).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The pids in `/proc` now (none where it cannot be read).
pub(crate) fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The inode of the pid namespace `pid` is in (`/proc/<pid>/ns/pid`).
pub(crate) fn pid_namespace(pid: u32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|m| m.ino())
}
