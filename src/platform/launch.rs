//! Turning a command into a sandboxed launch: the program to spawn, its arguments, and the
//! files it gets as fds 3, 4, ... (bwrap's options, the mount sources, the script).
//!
//! Nothing runs through a shell on the host: the caller spawns `program` directly. The user's
//! command is never quoted or parsed: it is written byte for byte into an unnamed file that
//! bwrap copies into the sandbox's private /tmp, so heredocs, quotes, `$`, backslashes and
//! unicode arrive intact and nothing is left on the host. bwrap's options travel the same way
//! (`--args`), NUL-separated, so paths of any encoding reach it byte for byte.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use crate::net::gate::CommandNet;
use crate::open::OpenError;
use crate::platform::linux::bwrap::{self, BwrapError, FdSource, ARGS_FD};
use crate::platform::macos::seatbelt::{self, SeatbeltPolicy};
use crate::platform::mounts::{self, Facts, FileKind, MountPlan};
use crate::policy::bash::Network;
use crate::policy::guard::Guard;
use crate::policy::protected::{Place, TABLE};
use crate::surface::scan::{scan_protected, scanned_roots, Scan};

#[derive(Debug)]
pub enum LaunchError {
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
    pub program: PathBuf,
    /// What to spawn `program` with.
    pub args: Vec<OsString>,
    /// All of bwrap's arguments, options included, for display.
    pub shown: Vec<OsString>,
    /// The files the child must get as fds 3, 4, ... in this order.
    pub fds: Vec<OwnedFd>,
    /// Temp files of this run (the macOS profile and script), removed after it.
    pub temp_files: Vec<PathBuf>,
    /// Protected directories that did not exist, created empty as mount points and kept:
    /// removing one while another sandbox has it mounted would lift that sandbox's protection
    /// (the kernel detaches mounts in other namespaces on rmdir). An empty directory is
    /// invisible to git and builds.
    pub placeholders: Vec<PathBuf>,
    /// Environment variables the spawner must not pass (bwrap unsets them as well).
    pub unset_env: Vec<String>,
    /// The thread judging the command's `connect` and `bind` calls (bwrap on Linux).
    pub supervisor: Option<Supervisor>,
    /// Environment variables the spawner must set (sandbox-exec; bwrap sets its own).
    pub set_env: Vec<(String, String)>,
    /// The command's proxy (filtered network): stopped when the command is over.
    pub net: Option<Arc<CommandNet>>,
}

impl Launch {
    /// Removes the temp files (after the run, or for a launch that will not run).
    pub fn discard(&self) {
        for f in &self.temp_files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Writes `command` to `<dir>/pi-bash-<pid>-<ms>-<rand>.sh`, mode 0700.
pub fn write_script(dir: &Path, command: &str) -> Result<PathBuf, LaunchError> {
    write_temp(dir, "pi-bash", ".sh", command.as_bytes())
}

fn script_error(dir: &Path) -> impl Fn(std::io::Error) -> LaunchError + '_ {
    move |e| LaunchError::Script {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    }
}

fn write_temp(dir: &Path, prefix: &str, suffix: &str, text: &[u8]) -> Result<PathBuf, LaunchError> {
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

/// `bytes` in a file without a name (gone when the last fd on it closes), read from the start:
/// a sealed memfd on Linux (no disk write per command, and no one holding a descriptor can
/// change it), an unlinked temp file in `dir` elsewhere or without memfds.
fn unnamed_file(dir: &Path, bytes: &[u8]) -> Result<OwnedFd, LaunchError> {
    #[cfg(target_os = "linux")]
    if let Ok(fd) = sealed_memfd(bytes) {
        return Ok(fd);
    }
    // No memfd (refused by a container's own filter, say): an unlinked temp file.
    let err = script_error(dir);
    let mut file: File = tempfile::tempfile_in(dir).map_err(&err)?;
    file.write_all(bytes).map_err(&err)?;
    file.rewind().map_err(&err)?;
    Ok(file.into())
}

#[cfg(target_os = "linux")]
fn sealed_memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    sealed_memfd_with(bytes, false)
}

/// `bytes` in a sealed memfd, executable or not.
#[cfg(target_os = "linux")]
fn sealed_memfd_with(bytes: &[u8], executable: bool) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let name = c"pi-sandbox";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // MFD_NOEXEC_SEAL / MFD_EXEC (Linux 6.3) say which it is (the kernel warns about memfds
    // that say neither); older kernels refuse both flags and make every memfd executable.
    let kind = if executable {
        libc::MFD_EXEC
    } else {
        libc::MFD_NOEXEC_SEAL
    };
    // SAFETY: memfd_create with a NUL-terminated name.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | kind) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor we own.
    let mut file = unsafe { File::from_raw_fd(fd) };
    use std::os::fd::AsRawFd;
    file.write_all(bytes)?;
    file.rewind()?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on our own descriptor.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file.into())
}

/// `pi-sandbox-init` in an executable sealed memfd, made once per process: bwrap executes it
/// as `/proc/self/fd/N`, so that nothing is copied per command. None where the kernel has no
/// memfds or refuses executable ones (`vm.memfd_noexec = 2`): then bwrap copies it.
fn executable_init() -> Option<&'static OwnedFd> {
    static INIT: once_cell::sync::OnceCell<Option<OwnedFd>> = once_cell::sync::OnceCell::new();
    INIT.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            let bytes = init_program().ok()?;
            let memfd = sealed_memfd_with(bytes, true).ok()?;
            // Executed once here: a policy that refuses to run it (SELinux, fapolicyd) means
            // the copy in /tmp instead, not a bash that never starts. Run without arguments
            // it only says how to run it (status 126).
            use std::os::fd::AsRawFd;
            let probe = reopen(&memfd).ok()?;
            let ran = std::process::Command::new(format!("/proc/self/fd/{}", probe.as_raw_fd()))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .ok()?;
            (ran.code() == Some(126)).then_some(memfd)
        }
        #[cfg(not(target_os = "linux"))]
        None
    })
    .as_ref()
}

/// A new open file description of `fd`'s file (through /proc): each child gets its own.
fn reopen(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    Ok(File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))?.into())
}

/// What every launch passes unchanged (pi-sandbox-init, the seccomp programs): on Linux
/// written once per process into sealed memfds (`cell`, one per item of `items`), then item
/// `i` opened anew for each launch, so that each reader starts at its beginning and nothing
/// is copied per command.
fn shared_file(
    cell: &'static once_cell::sync::OnceCell<Vec<OwnedFd>>,
    dir: &Path,
    items: &[&[u8]],
    i: usize,
) -> Result<OwnedFd, LaunchError> {
    #[cfg(target_os = "linux")]
    {
        let sealed = cell
            .get_or_try_init(|| items.iter().map(|b| sealed_memfd(b)).collect())
            .map_err(script_error(dir))?;
        if let Ok(f) = reopen(&sealed[i]) {
            return Ok(f);
        }
        // No /proc here: a copy of its own.
    }
    let _ = cell;
    unnamed_file(dir, items[i])
}

/// bwrap's arguments as NUL-terminated strings (`bwrap --args FD`).
fn nul_separated(args: &[OsString]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for a in args {
        bytes.extend_from_slice(a.as_encoded_bytes());
        bytes.push(0);
    }
    bytes
}

/// What the guard keeps read-only in bash's writable trees, found now (the mount plan binds
/// it; the audit after a command compares against it).
pub fn scan(guard: &Guard) -> Scan {
    scan_protected(guard, &scanned_roots(guard))
}

/// The mount plan for `guard` as the disk is now; `scan` comes from `scan`.
pub fn plan_for(guard: &Guard, network: Network, script: Option<&Path>, scan: &Scan) -> MountPlan {
    let facts = Facts {
        kind_of: &mounts::kind_on_disk,
        scan,
    };
    mounts::plan(guard, &facts, network, script)
}

/// Creates the plan's placeholders: empty directories that become read-only mount points for
/// protected names that do not exist yet (kept afterwards; see `Launch::placeholders`).
fn create_placeholders(placeholders: &[PathBuf]) -> Result<(), LaunchError> {
    for p in placeholders {
        match std::fs::create_dir(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(LaunchError::Placeholder {
                    path: p.clone(),
                    message: e.to_string(),
                })
            }
        }
    }
    Ok(())
}

/// The bwrap launch of `command` under `plan`: placeholders created, then every fd bwrap's
/// options name opened (mount sources without following links, the script, the filters and
/// the options as unnamed files in `tmp_dir`), and the socket supervisor started.
fn bwrap_launch(
    setup: &Setup,
    plan: &MountPlan,
    command: &[OsString],
    script: Option<&str>,
) -> Result<Launch, LaunchError> {
    let tmp_dir = setup.tmp_dir;
    let filters =
        crate::platform::linux::seccomp::kernel_filters().map_err(LaunchError::Seccomp)?;
    let built = bwrap::build(
        plan,
        bwrap::Extras {
            features: setup.features,
            filters: filters.len(),
            unset_env: setup.unset_env,
            set_env: setup.set_env,
            supervised: cfg!(target_os = "linux"),
            init_from_fd: executable_init().is_some(),
        },
        command,
    )?;
    let mut supervisor = None;
    let mut supervisor_end = None;
    #[cfg(target_os = "linux")]
    if built.fds.contains(&FdSource::SupervisorSocket) {
        let (ours, theirs) = socket_pair().map_err(|e| LaunchError::Supervisor(e.to_string()))?;
        let door: Option<crate::platform::linux::supervisor::Door> = match (plan.network, setup.net)
        {
            (Network::Filtered, Some(net)) => {
                let net = net.clone();
                Some(Box::new(move |fd: OwnedFd| {
                    // Not served, the door stays shut: the command has no network.
                    let _ = net.serve(std::net::TcpListener::from(fd));
                }))
            }
            (Network::Filtered, None) => {
                return Err(LaunchError::Proxy("no proxy for this session".into()))
            }
            _ => None,
        };
        supervisor = Some(
            Supervisor::start(
                ours,
                crate::platform::linux::supervisor::SocketRules {
                    network: plan.network,
                    allowed: setup.sockets.allowed.clone(),
                    allow_all: setup.sockets.allow_all,
                },
                door,
            )
            .map_err(|e| LaunchError::Supervisor(e.to_string()))?,
        );
        supervisor_end = Some(theirs);
    }
    create_placeholders(&plan.placeholders)?;
    let options: Vec<OsString> = built
        .args
        .iter()
        .take_while(|a| *a != "--")
        .cloned()
        .collect();
    let mut fds = vec![unnamed_file(tmp_dir, &nul_separated(&options))?];
    for source in &built.fds {
        fds.push(match source {
            FdSource::Path(p) => open_mount_source(p)?,
            FdSource::Script => unnamed_file(tmp_dir, script.unwrap_or_default().as_bytes())?,
            FdSource::Filter(i) => {
                static FILTERS: once_cell::sync::OnceCell<Vec<OwnedFd>> =
                    once_cell::sync::OnceCell::new();
                let programs: Vec<&[u8]> = filters.iter().map(|f| f.bytes.as_slice()).collect();
                shared_file(&FILTERS, tmp_dir, &programs, *i)?
            }
            FdSource::Init => {
                static INIT: once_cell::sync::OnceCell<Vec<OwnedFd>> =
                    once_cell::sync::OnceCell::new();
                shared_file(&INIT, tmp_dir, &[init_program()?], 0)?
            }
            FdSource::InitExecutable => {
                let init = executable_init().ok_or_else(|| {
                    LaunchError::Supervisor("pi-sandbox-init's executable went away".into())
                })?;
                reopen(init).map_err(script_error(tmp_dir))?
            }
            FdSource::NotifyFilter => {
                static NOTIFY: once_cell::sync::OnceCell<Vec<OwnedFd>> =
                    once_cell::sync::OnceCell::new();
                let framed =
                    crate::platform::linux::seccomp::notify_file().map_err(LaunchError::Seccomp)?;
                shared_file(&NOTIFY, tmp_dir, &[framed], 0)?
            }
            FdSource::SupervisorSocket => supervisor_end
                .take()
                .ok_or_else(|| LaunchError::Supervisor("named twice".into()))?,
        });
    }
    let mut args: Vec<OsString> = vec!["--args".into(), ARGS_FD.to_string().into()];
    args.extend(built.args.iter().skip(options.len()).cloned());
    Ok(Launch {
        program: setup.program.to_path_buf(),
        args,
        shown: built.args,
        fds,
        temp_files: vec![],
        placeholders: plan.placeholders.clone(),
        unset_env: setup.unset_env.to_vec(),
        supervisor,
        set_env: vec![],
        net: setup
            .net
            .filter(|_| plan.network == Network::Filtered)
            .cloned(),
    })
}

#[cfg(target_os = "linux")]
fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two new descriptors on success.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `pi-sandbox-init`'s executable, read once per process from beside this library (the
/// addon, or for Rust's own tests the target directory): the copy taken when pi started
/// is what every sandbox runs, whatever happens to the file later.
fn init_program() -> Result<&'static [u8], LaunchError> {
    static INIT: once_cell::sync::OnceCell<Result<Vec<u8>, String>> =
        once_cell::sync::OnceCell::new();
    INIT.get_or_init(|| {
        let tried = init_candidates();
        for path in &tried {
            if let Ok(bytes) = std::fs::read(path) {
                if bytes.starts_with(b"\x7fELF") {
                    return Ok(bytes);
                }
            }
        }
        Err(format!(
            "pi-sandbox-init was not found (looked at {}); build it with `npm run build`",
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(|e| LaunchError::Supervisor(e.clone()))
}

/// Where `pi-sandbox-init` may be: beside the file this code was loaded from, or one
/// directory up (cargo puts test executables in `deps/`).
fn init_candidates() -> Vec<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr with the address of a function in this object.
    let found = unsafe { libc::dladdr(init_candidates as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return vec![];
    }
    // SAFETY: dladdr returned a NUL-terminated file name.
    let me = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let me = PathBuf::from(std::ffi::OsStr::from_bytes(me.to_bytes()));
    let Some(dir) = me.parent() else {
        return vec![];
    };
    let mut out = vec![dir.join("pi-sandbox-init")];
    if let Some(up) = dir.parent() {
        out.push(up.join("pi-sandbox-init"));
    }
    out
}

#[cfg(target_os = "linux")]
fn open_mount_source(path: &Path) -> Result<OwnedFd, LaunchError> {
    crate::open::mount_source(path).map_err(LaunchError::MountSource)
}

#[cfg(not(target_os = "linux"))]
fn open_mount_source(path: &Path) -> Result<OwnedFd, LaunchError> {
    Err(LaunchError::MountSource(OpenError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::from(std::io::ErrorKind::Unsupported),
    }))
}

/// How bash runs a command's script (its path is `$1`) the way pi's own `bash -c` runs the
/// command: bash's own errors read `bash: ...` rather than naming the script, `$0` is
/// `bash` and there are no positional parameters. The script file, unlike a `-c` argument,
/// has no size limit.
/// `builtin`: a function of the same name from the user's login profile is not run instead.
const RUN_SCRIPT: &str = r#"__pi_sandbox_command=$(< "$1") && builtin shift && builtin eval "builtin unset __pi_sandbox_command; $__pi_sandbox_command""#;

/// bash's argv for the shell command in the script at `script`.
fn bash_argv(script: &Path) -> Vec<OsString> {
    vec![
        "bash".into(),
        "-l".into(),
        "-c".into(),
        RUN_SCRIPT.into(),
        "bash".into(),
        script.into(),
    ]
}

/// Where the command's script appears inside the sandbox: its private /tmp, fresh for each
/// command, so a fixed name cannot collide.
const SCRIPT_INSIDE: &str = "/tmp/pi-bash-command.sh";

/// What every launch is built from.
pub struct Setup<'a> {
    pub guard: &'a Guard,
    /// The sandbox program (bwrap or sandbox-exec).
    pub program: &'a Path,
    /// What that bwrap can do beyond its basics.
    pub features: bwrap::Features,
    /// Environment variables the command does not get (secrets, see `environment`).
    pub unset_env: &'a [String],
    /// Environment variables set for the command (cache directories moved into its /tmp).
    pub set_env: &'a [(String, String)],
    /// Unix sockets outside the sandbox it may connect to.
    pub sockets: &'a Sockets,
    /// The policy's decision for this command.
    pub network: Network,
    /// The command's side of the network gate (filtered network only).
    pub net: Option<&'a Arc<CommandNet>>,
    /// Where temp files go (the host's TMPDIR).
    pub tmp_dir: &'a Path,
    /// What the guard keeps read-only in bash's writable trees, found now.
    pub scan: &'a Scan,
}

/// `network.allowUnixSockets` resolved for one command, and `allowAllUnixSockets`.
#[derive(Debug, Clone, Default)]
pub struct Sockets {
    pub allowed: Vec<AllowedSocket>,
    pub allow_all: bool,
}

#[cfg(target_os = "linux")]
pub use crate::platform::linux::supervisor::{AllowedSocket, Refusal, Supervisor};

#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSocket;

/// No supervisor outside Linux.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub struct Supervisor;

#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub socket: String,
    pub message: String,
}

#[cfg(not(target_os = "linux"))]
impl Supervisor {
    pub fn finish(self) -> Vec<Refusal> {
        vec![]
    }
}

/// For launches that are not bwrap's.
pub const NO_BWRAP_FEATURES: bwrap::Features = bwrap::Features {
    disable_userns: false,
};

/// What runs inside the sandbox.
#[derive(Debug, Clone, Copy)]
pub enum Command<'a> {
    /// A shell command for `bash -l`, passed as a script.
    Shell(&'a str),
    /// An argv run as given (the CLI's `run -- CMD ARGS`): no shell, no script.
    Argv(&'a [OsString]),
}

/// A bwrap launch of `command`.
pub fn bwrap(setup: &Setup, command: Command) -> Result<Launch, LaunchError> {
    let inside = Path::new(SCRIPT_INSIDE);
    match command {
        Command::Shell(text) => {
            let plan = plan_for(setup.guard, setup.network, Some(inside), setup.scan);
            let argv = bash_argv(inside);
            bwrap_launch(setup, &plan, &argv, Some(text))
        }
        Command::Argv(argv) => {
            let plan = plan_for(setup.guard, setup.network, None, setup.scan);
            bwrap_launch(setup, &plan, argv, None)
        }
    }
}

/// pi's control surface as SBPL regexes, from `protected::TABLE`: name entries anywhere,
/// git entries below every `.git` directory and below each other git dir in `git_dirs`
/// (bare repositories, submodules' git dirs found by the scan).
pub fn surface_regexes(git_dirs: &[PathBuf]) -> Vec<String> {
    let mut out = Vec::new();
    let regex_part = |pattern: &str| {
        pattern
            .split('/')
            .map(|c| {
                if c == "*" {
                    "[^/]+".to_string()
                } else {
                    regex_escape(c)
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    for e in TABLE {
        match e.place {
            Place::Name(n) => {
                let name = match n.strip_suffix('*') {
                    Some(prefix) => format!("{}[^/]*", regex_escape(prefix)),
                    None => regex_escape(n),
                };
                out.push(format!("(^|/){name}(/.*)?$"));
            }
            // SBPL cannot tell a new file from a new directory by name, and refusing every
            // new `.git` would stop `git init` and `git clone`: gitfiles are audited instead.
            Place::GitFile => {}
            Place::Git(rel) => {
                out.push(format!("/\\.git/{}(/.*)?$", regex_part(rel)));
                for g in git_dirs {
                    out.push(format!(
                        "^{}/{}(/.*)?$",
                        regex_escape(&g.to_string_lossy()),
                        regex_part(rel)
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The macOS profile for `guard`: the same rules as the mount plan, as SBPL. Unlike mounts,
/// SBPL matches paths that do not exist yet, so new names of the table are refused up front.
pub fn seatbelt_policy(
    guard: &Guard,
    network: Network,
    tmp_dir: &Path,
    scan: &Scan,
) -> SeatbeltPolicy {
    let env = guard.env();
    let mut protected: Vec<PathBuf> = guard
        .anchors()
        .fixed_paths()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    protected.push(env.cwd.join(".pi"));
    protected.extend(scan.all().map(|f| f.path.clone()));
    let mut policy = SeatbeltPolicy {
        deny_read_dirs: vec![],
        deny_read_files: vec![],
        writable: vec![],
        writable_exceptions: vec![],
        protected,
        protected_regexes: surface_regexes(&scan.git_dirs),
        network,
        proxy_port: None,
    };
    for p in guard.deny_read_paths() {
        match mounts::kind_on_disk(p) {
            FileKind::File => policy.deny_read_files.push(p.to_path_buf()),
            // A missing entry is protected as a directory: nothing may appear below it.
            FileKind::Dir | FileKind::Link | FileKind::Missing => {
                policy.deny_read_dirs.push(p.to_path_buf())
            }
        }
    }
    policy.writable.extend(mounts::writable_roots(guard));
    // macOS resolves /tmp to /private/tmp, and the per-user temp dir lives in /private/var.
    let tmp = crate::paths::canonicalize(tmp_dir).unwrap_or_else(|_| tmp_dir.to_path_buf());
    policy.writable.extend([PathBuf::from("/private/tmp"), tmp]);
    policy.protected_regexes.extend(
        guard
            .deny_write_globs()
            .iter()
            .map(|g| seatbelt::glob_to_regex(g)),
    );
    policy
}

#[path = "../../crates/pi-sandbox-init/src/proxy_env.rs"]
mod proxy_env;

/// The proxy variables for a proxy on `port` of the loopback (what `pi-sandbox-init` sets
/// inside bwrap, where the port is only known inside).
pub fn proxy_env(port: u16) -> Vec<(String, String)> {
    proxy_env::PROXY_VARS
        .iter()
        .map(|(name, scheme)| (name.to_string(), format!("{scheme}://127.0.0.1:{port}")))
        .collect()
}

/// A sandbox-exec launch of the shell command `command` (`bash -l <script>` under a
/// generated profile).
pub fn seatbelt(setup: &Setup, command: &str) -> Result<Launch, LaunchError> {
    let (program, tmp_dir) = (setup.program, setup.tmp_dir);
    let mut policy = seatbelt_policy(setup.guard, setup.network, tmp_dir, setup.scan);
    let mut set_env = setup.set_env.to_vec();
    // No namespaces on macOS: the proxy listens on the host's loopback, and the profile
    // lets the command connect to that one port.
    let net = match (setup.network, setup.net) {
        (Network::Filtered, Some(net)) => {
            let port = net
                .serve_loopback()
                .map_err(|e| LaunchError::Proxy(e.to_string()))?;
            policy.proxy_port = Some(port);
            set_env.extend(proxy_env(port));
            Some(net.clone())
        }
        (Network::Filtered, None) => {
            return Err(LaunchError::Proxy("no proxy for this session".into()))
        }
        _ => None,
    };
    // A launch that fails from here on stops the proxy it started.
    let failed = |e: LaunchError| {
        if let Some(net) = &net {
            net.finish();
        }
        e
    };
    let profile = seatbelt::build(&policy);
    let profile_file =
        write_temp(tmp_dir, "pi-sandbox", ".sb", profile.as_bytes()).map_err(failed)?;
    let script = match write_script(tmp_dir, command) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&profile_file);
            return Err(failed(e));
        }
    };
    let mut args: Vec<OsString> = vec!["-f".into(), profile_file.as_os_str().into()];
    args.extend(bash_argv(&script));
    Ok(Launch {
        program: program.to_path_buf(),
        shown: args.clone(),
        args,
        fds: vec![],
        temp_files: vec![profile_file, script],
        placeholders: vec![],
        unset_env: setup.unset_env.to_vec(),
        supervisor: None,
        set_env,
        net,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default policy for `env` (laid out under `root`), and a temp dir under `root`.
    fn default_guard(root: &Path, env: &crate::policy::config::Env) -> (Guard, PathBuf) {
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

    fn setup<'a>(guard: &'a Guard, program: &'a str, tmp: &'a Path, scan: &'a Scan) -> Setup<'a> {
        Setup {
            guard,
            program: Path::new(program),
            features: bwrap::Features {
                disable_userns: true,
            },
            unset_env: &[],
            set_env: &[],
            sockets: &NO_SOCKETS,
            network: Network::Off,
            net: None,
            tmp_dir: tmp,
            scan,
        }
    }

    #[test]
    fn options_are_nul_separated_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let odd = OsString::from(std::ffi::OsStr::from_bytes(b"/w/\xff\xfe name"));
        assert_eq!(
            nul_separated(&["--bind".into(), odd.clone(), odd]),
            b"--bind\0/w/\xff\xfe name\0/w/\xff\xfe name\0"
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_bwrap_launch_hands_every_named_fd_over_and_leaves_no_file() {
        use std::io::Read as _;
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = crate::policy::config::Env::under(&root);
        std::fs::create_dir_all(env.cwd.join(".git/objects")).unwrap();
        std::fs::create_dir_all(env.cwd.join(".git/refs")).unwrap();
        let (guard, tmp) = default_guard(&root, &env);
        let found = scan(&guard);
        let setup = setup(&guard, "/usr/bin/bwrap", &tmp, &found);
        let l = bwrap(&setup, Command::Shell("echo 'hi' \\ $HOME")).unwrap();
        assert_eq!(l.args[..2], ["--args", "3"]);
        // the command runs under pi-sandbox-init, its filter and socket on inherited fds
        let inherited = |i: usize| l.args[i].to_string_lossy().parse::<usize>().unwrap();
        assert_eq!(l.args[2], "--");
        // init from its executable memfd where the kernel allows one (a copy in /tmp else)
        let init = l.args[3].to_string_lossy().into_owned();
        match executable_init() {
            Some(_) => assert_eq!(init, format!("/proc/self/fd/{}", inherited(4) - 1)),
            None => assert_eq!(init, bwrap::INIT_INSIDE),
        }
        assert_eq!(l.args[6], "--");
        assert_eq!(l.args[7..], bash_argv(Path::new(SCRIPT_INSIDE)));
        assert_eq!(inherited(5), inherited(4) + 1);
        assert_eq!(l.fds.len(), inherited(5) - 2);
        // nothing named on the host: the script and options live in unnamed files
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        // hooks did not exist: created as a placeholder, mounted read-only by fd
        assert!(env.cwd.join(".git/hooks").is_dir());
        let mut options = String::new();
        File::from(l.fds[0].try_clone().unwrap())
            .read_to_string(&mut options)
            .unwrap();
        let options: Vec<&str> = options.split('\0').collect();
        let hooks = env.cwd.join(".git/hooks").display().to_string();
        let at = options.iter().position(|o| *o == hooks).unwrap();
        assert_eq!(options[at - 2], "--ro-bind-fd");
        let fd: usize = options[at - 1].parse().unwrap();
        let held = std::fs::read_link(format!("/proc/self/fd/{}", {
            use std::os::fd::AsRawFd;
            l.fds[fd - 3].as_raw_fd()
        }))
        .unwrap();
        assert_eq!(held.display().to_string(), hooks);
        // the script: the command byte for byte
        let script_fd = options[options.iter().position(|o| *o == "--ro-bind-data").unwrap() + 1];
        let mut script = String::new();
        File::from(
            l.fds[script_fd.parse::<usize>().unwrap() - 3]
                .try_clone()
                .unwrap(),
        )
        .read_to_string(&mut script)
        .unwrap();
        assert_eq!(script, "echo 'hi' \\ $HOME");
    }

    #[test]
    fn the_macos_profile_carries_the_same_rules_as_the_guard() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = crate::policy::config::Env::under(&root);
        std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&env.cwd).unwrap();
        let (guard, tmp) = default_guard(&root, &env);
        let found = scan(&guard);
        let setup = setup(&guard, "/usr/bin/sandbox-exec", &tmp, &found);
        let l = seatbelt(&setup, "echo hi").unwrap();
        let profile_file = &l.temp_files[0];
        let profile = std::fs::read_to_string(profile_file).unwrap();
        let r = |p: &str| root.join(p).display().to_string();
        assert!(
            profile.contains(&format!("(subpath \"{}\")", r("home/.ssh"))),
            "{profile}"
        );
        // auth.json does not exist yet: protected as a subpath so it cannot appear readable
        assert!(profile.contains(&format!("(subpath \"{}\")", r("home/.pi/agent/auth.json"))));
        assert!(profile.contains(&format!("(subpath \"{}\")", r("proj"))));
        assert!(
            profile.contains(r#"(regex #"(^|/)[^/]*\.pem(/.*)?$")"#),
            "{profile}"
        );
        // the agent dir, sessions included, is never writable; `.git` entries come from the table
        assert!(profile.contains(&format!("(subpath \"{}\")", r("home/.pi/agent"))));
        assert!(!profile.contains("sessions"), "{profile}");
        assert!(
            profile.contains(r#"(regex #"/\.git/worktrees/[^/]+/commondir(/.*)?$")"#),
            "{profile}"
        );
        assert!(!profile.contains("(allow network*)"));
        assert_eq!(l.args[0], "-f");
        assert_eq!(
            std::fs::read_to_string(&l.temp_files[1]).unwrap(),
            "echo hi"
        );
        // both files go when the run is over
        l.discard();
        assert!(!profile_file.exists());
        assert!(!l.temp_files[1].exists());
    }

    #[test]
    fn the_script_runs_as_pi_runs_a_command_with_bash_dash_c() {
        let t = tempfile::tempdir().unwrap();
        let cmd = "echo \"$0 $# ${__pi_sandbox_command-unset}\"\nnosuchcmd-zq\necho x > /nonexistent-dir/f\ncat <<EOF\n'$HOME' \\ \"q\"\nEOF\nexit 7";
        let script = write_script(t.path(), cmd).unwrap();
        let mut argv = bash_argv(&script);
        argv.retain(|a| a != "-l"); // the test machine's profile is not what is tested
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env("HOME", "/h")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout, "bash 0 unset\n'/h' \\ \"q\"\n");
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
