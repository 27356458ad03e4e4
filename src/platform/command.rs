//! A sandboxed launch as both OS launches build it (`linux::launch`, `macos::launch`): the
//! launch and its errors, what it is built from, the script and temp files, the mount plan.
//! `launch` picks between the OS launches.
//!
//! Nothing runs through a shell on the host: the caller spawns `program` directly. The user's
//! command is never quoted or parsed: it is written byte for byte into an unnamed file that
//! bwrap copies into the sandbox's private /tmp, so heredocs, quotes, `$`, backslashes and
//! unicode arrive intact and nothing is left on the host. bwrap's options travel the same way
//! (`--args`), NUL-separated, so paths of any encoding reach it byte for byte.

use std::ffi::OsString;
use std::fmt;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use crate::net::gate::CommandNet;
use crate::open::OpenError;
use crate::platform::linux::bwrap::BwrapError;
#[cfg(target_os = "linux")]
pub(crate) use crate::platform::linux::pod::Pod;
#[cfg(target_os = "linux")]
pub(crate) use crate::platform::linux::supervisor::{AllowedSocket, Refusal, Supervisor};
use crate::platform::mounts::{self, Facts, MountPlan};
use crate::policy::bash::{Features, Network};
use crate::policy::guard::Guard;
use crate::surface::scan::{scan_protected, scanned_roots, Scan};

#[derive(Debug)]
pub(crate) enum LaunchError {
    Script {
        dir: PathBuf,
        message: String,
    },
    Bwrap(BwrapError),
    Placeholder {
        path: PathBuf,
        message: String,
    },
    /// A mount source could not be opened as it was planned (a link appeared on its path, it
    /// vanished, or the open-file limit was hit).
    MountSource(OpenError),
    /// No seccomp filter for this machine: bash stays blocked.
    Seccomp(crate::platform::linux::seccomp::SeccompError),
    /// The socket supervisor could not be set up: bash stays blocked.
    Supervisor(String),
    /// Filtered network without its proxy: the command does not run.
    Proxy(String),
    /// The session's pod could not be entered.
    Pod(String),
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Script { dir, message } => write!(
                f,
                "cannot write the command's script in {}: {message}. Free space or fix TMPDIR.",
                dir.display()
            ),
            LaunchError::Bwrap(e) => write!(f, "{e}"),
            LaunchError::Placeholder { path, message } => write!(
                f,
                "cannot create {} as a read-only mount point for a protected name ({message}); create it yourself or fix the directory's permissions",
                path.display()
            ),
            LaunchError::MountSource(OpenError::Io { path, source })
                if source.raw_os_error() == Some(libc::EMFILE) =>
            {
                write!(
                    f,
                    "too many mounts for the open-file limit (at {}): raise `ulimit -n`, or list fewer, broader denyWrite/allowWrite entries",
                    path.display()
                )
            }
            LaunchError::MountSource(e) => write!(
                f,
                "a mount source changed while the sandbox was being set up: {e}. Run the command again."
            ),
            LaunchError::Seccomp(e) => write!(f, "{e}"),
            LaunchError::Supervisor(e) => write!(f, "the socket supervisor: {e}"),
            LaunchError::Pod(e) => write!(f, "the session's namespaces: {e}"),
            LaunchError::Proxy(e) => write!(
                f,
                "the network proxy could not be started ({e}); with --sandbox-network off the command runs without network"
            ),
        }
    }
}

impl std::error::Error for LaunchError {}

impl From<BwrapError> for LaunchError {
    fn from(e: BwrapError) -> Self {
        LaunchError::Bwrap(e)
    }
}

/// A ready-to-run sandboxed command.
#[derive(Debug)]
pub struct Launch {
    pub(crate) program: PathBuf,
    /// What to spawn `program` with.
    pub(crate) args: Vec<OsString>,
    /// All of bwrap's arguments, options included, for display.
    pub(crate) shown: Vec<OsString>,
    /// The files the child must get as fds 3, 4, ... in this order.
    pub(crate) fds: Vec<OwnedFd>,
    /// Temp files of this run (the macOS profile and script), removed after it.
    pub(crate) temp_files: Vec<PathBuf>,
    /// Protected directories that did not exist, created empty as mount points and kept:
    /// removing one while another sandbox has it mounted would lift that sandbox's protection
    /// (the kernel detaches mounts in other namespaces on rmdir). An empty directory is
    /// invisible to git and builds.
    pub(crate) placeholders: Vec<PathBuf>,
    /// Variables of pi's environment the spawner must not pass (bwrap unsets them as well).
    pub(crate) unset_env: Vec<String>,
    /// The thread judging the command's `connect` and `bind` calls (bwrap on Linux).
    pub(crate) supervisor: Option<Supervisor>,
    /// Environment variables the spawner must set (sandbox-exec; bwrap sets its own).
    pub(crate) set_env: Vec<(String, String)>,
    /// The command's proxy (filtered network): stopped when the command is over.
    pub(crate) net: Option<Arc<CommandNet>>,
    /// It runs in the session's pod: what it leaves running lives on.
    pub(crate) in_pod: bool,
}

impl Launch {
    /// Removes the temp files (after the run, or for a launch that will not run).
    pub(crate) fn discard(&self) {
        for f in &self.temp_files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Writes `command` to `<dir>/pi-bash-<pid>-<ms>-<rand>.sh`, mode 0700.
pub(crate) fn write_script(dir: &Path, command: &str) -> Result<PathBuf, LaunchError> {
    write_temp(dir, "pi-bash", ".sh", command.as_bytes())
}

pub(crate) fn script_error(dir: &Path) -> impl Fn(std::io::Error) -> LaunchError + '_ {
    move |e| LaunchError::Script {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    }
}

pub(crate) fn write_temp(
    dir: &Path,
    prefix: &str,
    suffix: &str,
    text: &[u8],
) -> Result<PathBuf, LaunchError> {
    let err = script_error(dir);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let mut file = tempfile::Builder::new()
        .prefix(&format!("{prefix}-{}-{ms}-", std::process::id()))
        .suffix(suffix)
        .rand_bytes(8)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempfile_in(dir)
        .map_err(&err)?;
    file.write_all(text).map_err(&err)?;
    file.flush().map_err(&err)?;
    let (_, path) = file.keep().map_err(|e| err(e.error))?;
    Ok(path)
}

/// What the guard keeps read-only in bash's writable trees, found now (the mount plan binds
/// it; the audit after a command compares against it).
pub(crate) fn scan(guard: &Guard) -> Scan {
    scan_protected(guard, &scanned_roots(guard))
}

/// The mount plan for `guard` as the disk is now; `scan` comes from `scan`.
pub(crate) fn plan_for(
    guard: &Guard,
    network: Network,
    script: Option<&Path>,
    scan: &Scan,
) -> MountPlan {
    let facts = Facts {
        kind_of: &mounts::kind_on_disk,
        scan,
        is_empty_dir: &|p: &Path| std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none()),
    };
    mounts::plan(guard, &facts, network, script)
}

/// How bash runs a command's script (its path is `$1`) the way pi's own `bash -c` runs the
/// command: bash's own errors read `bash: ...` rather than naming the script, `$0` is
/// `bash` and there are no positional parameters. The script file, unlike a `-c` argument,
/// has no size limit.
/// No login shell (`-l`), as pi's own bash: the user's profile is not run before every command
/// (its cost, its banners, the agents and environment it starts). `builtin`: an exported
/// function of the same name is not run instead.
const RUN_SCRIPT: &str = r#"__pi_sandbox_command=$(< "$1") && builtin shift && builtin eval "builtin unset __pi_sandbox_command; $__pi_sandbox_command""#;

/// bash's argv for the shell command in the script at `script`.
pub(crate) fn bash_argv(script: &Path) -> Vec<OsString> {
    vec![
        "bash".into(),
        "-c".into(),
        RUN_SCRIPT.into(),
        "bash".into(),
        script.into(),
    ]
}

/// What every launch is built from.
pub(crate) struct Setup<'a> {
    pub(crate) guard: &'a Guard,
    /// The sandbox program (bwrap or sandbox-exec).
    pub(crate) program: &'a Path,
    /// What that bwrap can do beyond its basics.
    pub(crate) features: Features,
    /// Variables of pi's environment the command does not get (see `environment`).
    pub(crate) unset_env: &'a [String],
    /// Environment variables set for the command (cache directories moved into its /tmp).
    pub(crate) set_env: &'a [(String, String)],
    /// Unix sockets outside the sandbox it may connect to.
    pub(crate) sockets: &'a Sockets,
    /// The policy's decision for this command.
    pub(crate) network: Network,
    /// The command's side of the network gate (filtered network only).
    pub(crate) net: Option<&'a Arc<CommandNet>>,
    /// Where temp files go (the host's TMPDIR).
    pub(crate) tmp_dir: &'a Path,
    /// What the guard keeps read-only in bash's writable trees, found now.
    pub(crate) scan: &'a Scan,
    /// The session's pod for this network mode: the command runs in it, and what it leaves
    /// running lives on (bwrap only).
    pub(crate) pod: Option<&'a Pod>,
}

/// `network.allowUnixSockets` resolved for one command, and `allowAllUnixSockets`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sockets {
    pub(crate) allowed: Vec<AllowedSocket>,
    pub(crate) allow_all: bool,
}

/// For launches that are not bwrap's.
pub(crate) const NO_BWRAP_FEATURES: Features = Features {
    disable_userns: false,
};

/// What runs inside the sandbox.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Command<'a> {
    /// A shell command for `bash -c`, passed as a script.
    Shell(&'a str),
    /// An argv run as given (the CLI's `run -- CMD ARGS`): no shell, no script.
    Argv(&'a [OsString]),
}

// What stands in for Linux's socket supervisor and pods elsewhere.

/// No pods outside Linux.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub(crate) struct Pod;

#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedSocket;

/// No supervisor outside Linux.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub(crate) struct Supervisor;

#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) socket: String,
    pub(crate) message: String,
}

#[cfg(not(target_os = "linux"))]
impl Supervisor {
    pub(crate) fn finish(self, _wait: std::time::Duration) -> Vec<Refusal> {
        vec![]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The default policy for `env` (laid out under `root`), and a temp dir under `root`.
    pub(crate) fn default_guard(root: &Path, env: &crate::policy::config::Env) -> (Guard, PathBuf) {
        let cfg =
            crate::policy::config::merge(crate::policy::config::Config::defaults_for(env), &[])
                .unwrap();
        let guard = Guard::new(&cfg, env, crate::policy::guard::ApprovalMode::Ask).unwrap();
        let tmp = root.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        (guard, tmp)
    }

    static NO_SOCKETS: Sockets = Sockets {
        allowed: Vec::new(),
        allow_all: false,
    };

    pub(crate) fn setup<'a>(
        guard: &'a Guard,
        program: &'a str,
        tmp: &'a Path,
        scan: &'a Scan,
    ) -> Setup<'a> {
        Setup {
            guard,
            program: Path::new(program),
            features: Features {
                disable_userns: true,
            },
            unset_env: &[],
            set_env: &[],
            sockets: &NO_SOCKETS,
            network: Network::Off,
            net: None,
            tmp_dir: tmp,
            scan,
            pod: None,
        }
    }

    #[test]
    fn the_script_runs_as_pi_runs_a_command_with_bash_dash_c_and_no_profile() {
        let t = tempfile::tempdir().unwrap();
        let cmd = "echo \"$0 $# ${__pi_sandbox_command-unset}\"\nnosuchcmd-zq\necho x > /nonexistent-dir/f\ncat <<EOF\n'$HOME' \\ \"q\"\nEOF\nexit 7";
        let script = write_script(t.path(), cmd).unwrap();
        // A home whose login and interactive profiles would print: none of them runs.
        let home = t.path().join("h");
        std::fs::create_dir(&home).unwrap();
        for rc in [".profile", ".bash_profile", ".bash_login", ".bashrc"] {
            std::fs::write(home.join(rc), format!("echo PROFILE {rc}\n")).unwrap();
        }
        let argv = bash_argv(&script);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("HOME", &home)
            .env_remove("BASH_ENV")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let home = home.display();
        assert_eq!(stdout, format!("bash 0 unset\n'{home}' \\ \"q\"\n"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let script_name = script.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!stderr.contains(&script_name), "{stderr}");
        assert!(
            stderr.contains("bash: line 2: nosuchcmd-zq: command not found"),
            "{stderr}"
        );
        assert!(
            stderr.contains("bash: line 3: /nonexistent-dir/f: No such file or directory"),
            "{stderr}"
        );
    }

    #[test]
    fn script_is_private_and_holds_the_command_verbatim() {
        let t = tempfile::tempdir().unwrap();
        let cmd = "cat <<'EOF'\n$HOME \\ \"quotes\" 'single' ünïcødé\nEOF\n";
        let p = write_script(t.path(), cmd).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("pi-bash-{}-", std::process::id())),
            "{name}"
        );
        assert!(name.ends_with(".sh"));
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), cmd);
    }
}
