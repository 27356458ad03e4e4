//! Which OS sandbox works here: `which` finds the program, one functional probe proves it can
//! build a sandbox (bwrap can be installed and still fail, e.g. when AppArmor blocks user
//! namespaces on Ubuntu 24.04). Cached for the life of the process.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use once_cell::sync::OnceCell;

use super::linux::seccomp;
use crate::policy::bash::{Capability, Features};
use crate::process::{system_dirs, system_program, wait_or_kill};

static DETECTED: OnceCell<Capability> = OnceCell::new();

/// The platform's sandbox, probed once per process.
pub(crate) fn detect() -> Capability {
    DETECTED.get_or_init(detect_uncached).clone()
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

fn detect_uncached() -> Capability {
    if cfg!(target_os = "linux") {
        match system_program("bwrap").ok_or(()) {
            Ok(program) => match probe_bwrap(&program) {
                Ok(()) => Capability::Bwrap {
                    features: Features {
                        disable_userns: probe_disable_userns(&program),
                    },
                    program,
                },
                Err(detail) => Capability::Unavailable {
                    reason: format!(
                        "bubblewrap is installed ({}) but cannot create a sandbox here: {detail}. If unprivileged user namespaces are disabled (Ubuntu 24.04+ restricts them through AppArmor), allow them for bwrap (an AppArmor profile for /usr/bin/bwrap, or `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`) or run where they are allowed.",
                        program.display()
                    ),
                },
            },
            Err(_) => Capability::Unavailable {
                reason: format!("bubblewrap (bwrap) is not installed in a system directory ({}; PATH is not searched, so that a planted program cannot stand in for it). Install it: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora), `sudo pacman -S bubblewrap` (Arch).", system_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")),
            },
        }
    } else if cfg!(target_os = "macos") {
        match system_program("sandbox-exec").ok_or(()) {
            Ok(program) => match probe_sandbox_exec(&program) {
                Ok(()) => Capability::SandboxExec { program },
                Err(detail) => Capability::Unavailable {
                    reason: format!(
                        "sandbox-exec ({}) failed its self-test: {detail}",
                        program.display()
                    ),
                },
            },
            Err(_) => Capability::Unavailable {
                reason: "sandbox-exec was not found on this Mac (it ships with macOS in /usr/bin)."
                    .into(),
            },
        }
    } else {
        Capability::Unavailable {
            reason: format!(
                "no OS sandbox is supported on {}: only Linux (bubblewrap) and macOS (sandbox-exec)",
                std::env::consts::OS
            ),
        }
    }
}

/// The same namespaces and seccomp filters a real run uses, around `true`.
fn probe_bwrap(program: &Path) -> Result<(), String> {
    let filters = seccomp::kernel_filters().map_err(|e| e.to_string())?;
    let mut files = Vec::new();
    let mut args: Vec<String> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--cap-drop",
        "ALL",
    ]
    .map(String::from)
    .to_vec();
    for (i, f) in filters.iter().enumerate() {
        files.push(data_file(&f.bytes).map_err(|e| format!("writing the seccomp filter: {e}"))?);
        args.extend([
            "--add-seccomp-fd".into(),
            (FIRST_PROBE_FD + i as i32).to_string(),
        ]);
    }
    args.extend(
        [
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--",
            "true",
        ]
        .map(String::from),
    );
    let mut cmd = Command::new(program);
    cmd.args(&args);
    pass_fds(&mut cmd, &files);
    let result = run_probe(&mut cmd);
    drop(files);
    result.map_err(|e| {
        format!("{e} (with its seccomp filters: bubblewrap 0.5 or newer is needed for --add-seccomp-fd)")
    })
}

/// Whether this bwrap has `--disable-userns` (0.8+) and it works here.
fn probe_disable_userns(program: &Path) -> bool {
    run_probe(Command::new(program).args([
        "--unshare-user",
        "--disable-userns",
        "--assert-userns-disabled",
        "--ro-bind",
        "/",
        "/",
        "--",
        "true",
    ]))
    .is_ok()
}

const FIRST_PROBE_FD: i32 = 3;

fn data_file(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    let mut f = tempfile::tempfile()?;
    f.write_all(bytes)?;
    f.rewind()?;
    Ok(f)
}

/// `files` become the child's fds 3, 4, ... (the caller keeps them open until it spawned).
fn pass_fds(cmd: &mut Command, files: &[std::fs::File]) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let raw: Vec<i32> = files.iter().map(|f| f.as_raw_fd()).collect();
    // SAFETY: between fork and exec only fcntl and dup2 run, both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // All moved out of the way first, so that no source is a later target.
            let mut moved = Vec::with_capacity(raw.len());
            for &fd in &raw {
                let m = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                if m < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                moved.push(m);
            }
            for (i, &m) in moved.iter().enumerate() {
                if libc::dup2(m, FIRST_PROBE_FD + i as i32) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

fn probe_sandbox_exec(program: &Path) -> Result<(), String> {
    run_probe(Command::new(program).args(["-p", "(version 1)(allow default)", "/usr/bin/true"]))
}

fn run_probe(cmd: &mut Command) -> Result<(), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start it: {e}"))?;
    match wait_or_kill(&mut child, PROBE_TIMEOUT) {
        Ok(Some(status)) if status.success() => Ok(()),
        Ok(Some(status)) => {
            let mut err = String::new();
            if let Some(mut s) = child.stderr.take() {
                let _ = s.read_to_string(&mut err);
            }
            let err = err.trim();
            Err(if err.is_empty() {
                format!("it exited with {status}")
            } else {
                err.to_string()
            })
        }
        Ok(None) => Err(format!("it did not finish within {PROBE_TIMEOUT:?}")),
        Err(e) => Err(e.to_string()),
    }
}
