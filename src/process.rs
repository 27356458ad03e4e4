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
