//! Which OS sandbox works here: `which` finds the program, one functional probe proves it can
//! build a sandbox (bwrap can be installed and still fail, e.g. when AppArmor blocks user
//! namespaces on Ubuntu 24.04). Cached for the life of the process.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use once_cell::sync::OnceCell;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    Bwrap {
        program: PathBuf,
    },
    SandboxExec {
        program: PathBuf,
    },
    /// No working sandbox; `reason` says why and how to fix it.
    Unavailable {
        reason: String,
    },
}

static DETECTED: OnceCell<Capability> = OnceCell::new();

/// The platform's sandbox, probed once per process.
pub fn detect() -> Capability {
    DETECTED.get_or_init(detect_uncached).clone()
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

fn detect_uncached() -> Capability {
    if cfg!(target_os = "linux") {
        match which::which("bwrap") {
            Ok(program) => match probe_bwrap(&program) {
                Ok(()) => Capability::Bwrap { program },
                Err(detail) => Capability::Unavailable {
                    reason: format!(
                        "bubblewrap is installed ({}) but cannot create a sandbox here: {detail}. If unprivileged user namespaces are disabled (Ubuntu 24.04+ restricts them through AppArmor), allow them for bwrap (an AppArmor profile for /usr/bin/bwrap, or `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`) or run where they are allowed.",
                        program.display()
                    ),
                },
            },
            Err(_) => Capability::Unavailable {
                reason: "bubblewrap (bwrap) is not installed. Install it: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora), `sudo pacman -S bubblewrap` (Arch).".into(),
            },
        }
    } else if cfg!(target_os = "macos") {
        match which::which("sandbox-exec") {
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

/// The same namespaces a real run uses, around `true`.
fn probe_bwrap(program: &Path) -> Result<(), String> {
    run_probe(Command::new(program).args([
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--cap-drop",
        "ALL",
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
    ]))
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
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if status.success() {
                    return Ok(());
                }
                let mut err = String::new();
                if let Some(mut s) = child.stderr.take() {
                    let _ = s.read_to_string(&mut err);
                }
                let err = err.trim();
                return Err(if err.is_empty() {
                    format!("it exited with {status}")
                } else {
                    err.to_string()
                });
            }
            Ok(None) if started.elapsed() > PROBE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not finish within {PROBE_TIMEOUT:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(e.to_string()),
        }
    }
}
