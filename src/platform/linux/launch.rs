//! The bwrap launch: the plan's placeholders, then every fd bwrap's options name (mount
//! sources opened without following links, the script, the kernel filters, pi-sandbox-init,
//! the options themselves as unnamed files) and the socket supervisor.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Seek as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use crate::platform::command::{
    bash_argv, plan_for, script_error, Command, Launch, LaunchError, Setup, Supervisor,
};
use crate::platform::linux::bwrap::{self, FdSource, ARGS_FD};
use crate::platform::linux::fd_passing::socket_pair;
use crate::platform::linux::seccomp::Program;
use crate::platform::mounts::MountPlan;
use crate::policy::bash::Network;

/// Where the command's script appears inside the sandbox: its own /dev, fresh for each
/// command, so a fixed name cannot collide (/tmp is shared by the session's commands).
const SCRIPT_INSIDE: &str = "/dev/.pi-bash-command.sh";

/// A bwrap launch of `command`.
pub(crate) fn bwrap(setup: &Setup, command: Command) -> Result<Launch, LaunchError> {
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
    let in_pod = setup.pod.map(|pod| bwrap::InPod {
        // SAFETY: getuid and getgid cannot fail.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        door_port: pod.door_port(),
    });
    let built = bwrap::build(
        plan,
        bwrap::Extras {
            features: setup.features,
            filters: filters.len(),
            unset_env: setup.unset_env,
            set_env: setup.set_env,
            supervised: true,
            init_from_fd: executable_init().is_some(),
            pod: in_pod,
        },
        command,
    )?;
    let (supervisor, mut supervisor_end) = if built.fds.contains(&FdSource::SupervisorSocket) {
        let (supervisor, theirs) = start_supervisor(setup, plan)?;
        (Some(supervisor), Some(theirs))
    } else {
        (None, None)
    };
    create_placeholders(&plan.placeholders)?;
    let options: Vec<OsString> = built
        .args
        .iter()
        .take_while(|a| *a != "--")
        .cloned()
        .collect();
    let mut fds = vec![unnamed_file(tmp_dir, &nul_separated(&options))?];
    for source in &built.fds {
        fds.push(open_fd(
            source,
            tmp_dir,
            filters,
            script,
            &mut supervisor_end,
        )?);
    }
    let mut args: Vec<OsString> = vec!["--args".into(), ARGS_FD.to_string().into()];
    args.extend(built.args.iter().skip(options.len()).cloned());
    let mut program = setup.program.to_path_buf();
    if let Some(pod) = setup.pod {
        (program, args) = joining(
            pod,
            &setup.program.as_os_str().to_os_string(),
            args,
            &mut fds,
        )?;
    }
    Ok(Launch {
        program,
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
        in_pod: setup.pod.is_some(),
    })
}

/// The launch of bwrap (`bwrap_program` with `args`) in `pod`: through `pi-sandbox-init
/// --join`, which enters the pod's namespaces first. The fds it needs follow bwrap's in
/// `fds`. Returns the program to spawn and its arguments.
fn joining(
    pod: &crate::platform::linux::pod::Pod,
    bwrap_program: &OsString,
    args: Vec<OsString>,
    fds: &mut Vec<OwnedFd>,
) -> Result<(PathBuf, Vec<OsString>), LaunchError> {
    let pod_error = |e: std::io::Error| LaunchError::Pod(e.to_string());
    let (user, net, pid) = pod.join_fds().map_err(pod_error)?;
    // The fd numbers the child gets: 3 onwards, in `fds` order.
    let next = |fd: OwnedFd, fds: &mut Vec<OwnedFd>| -> OsString {
        fds.push(fd);
        (ARGS_FD as usize + fds.len() - 1).to_string().into()
    };
    let mut joined: Vec<OsString> = vec!["--join".into(), next(user, fds)];
    joined.push(match net {
        Some(net) => next(net, fds),
        None => "-".into(),
    });
    joined.push(next(pid, fds));
    joined.push("--".into());
    joined.push(bwrap_program.clone());
    joined.extend(args);
    let (program, init_fd) = init_to_run()?;
    let program = match init_fd {
        Some(fd) => format!("/proc/self/fd/{}", next(fd, fds).to_string_lossy()).into(),
        None => program,
    };
    Ok((program, joined))
}

/// How a process outside the sandbox runs `pi-sandbox-init` (a pod, a command's `--join`):
/// from its executable memfd (the path names the fd it must get) or from the file on disk.
pub(crate) fn init_to_run() -> Result<(PathBuf, Option<OwnedFd>), LaunchError> {
    if let Some(memfd) = executable_init() {
        let fd = reopen(memfd).map_err(|e| LaunchError::Pod(e.to_string()))?;
        return Ok((PathBuf::new(), Some(fd)));
    }
    init_found().map(|(path, _)| (path.clone(), None))
}

/// The socket supervisor for one command, started: it judges the command's `connect` and
/// `bind` calls, and hands a filtered command's proxy its listening socket. Returns it and
/// the socket's end the command gets.
fn start_supervisor(setup: &Setup, plan: &MountPlan) -> Result<(Supervisor, OwnedFd), LaunchError> {
    let (ours, theirs) = socket_pair().map_err(|e| LaunchError::Supervisor(e.to_string()))?;
    let door: Option<crate::platform::linux::supervisor::Door> = match (plan.network, setup.net) {
        // The pod opened the door; init sends none.
        (Network::Filtered, _) if setup.pod.is_some() => None,
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
    let supervisor = Supervisor::start(
        ours,
        crate::platform::linux::supervisor::SocketRules {
            network: plan.network,
            allowed: setup.sockets.allowed.clone(),
            allow_all: setup.sockets.allow_all,
        },
        door,
    )
    .map_err(|e| LaunchError::Supervisor(e.to_string()))?;
    Ok((supervisor, theirs))
}

/// The fd for one of bwrap's fd options, opened now: `supervisor_end` is taken by the one
/// option that names the supervisor's socket.
fn open_fd(
    source: &FdSource,
    tmp_dir: &Path,
    filters: &[Program],
    script: Option<&str>,
    supervisor_end: &mut Option<OwnedFd>,
) -> Result<OwnedFd, LaunchError> {
    Ok(match source {
        FdSource::Path(p) => open_mount_source(p)?,
        FdSource::Script => unnamed_file(tmp_dir, script.unwrap_or_default().as_bytes())?,
        FdSource::PlaceholderIgnore => unnamed_file(
            tmp_dir,
            crate::platform::linux::bwrap::PLACEHOLDER_IGNORE.as_bytes(),
        )?,
        FdSource::Filter(i) => {
            static FILTERS: once_cell::sync::OnceCell<Vec<OwnedFd>> =
                once_cell::sync::OnceCell::new();
            let programs: Vec<&[u8]> = filters.iter().map(|f| f.bytes.as_slice()).collect();
            shared_file(&FILTERS, tmp_dir, &programs, *i)?
        }
        FdSource::Init => {
            static INIT: once_cell::sync::OnceCell<Vec<OwnedFd>> = once_cell::sync::OnceCell::new();
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
    })
}

/// `pi-sandbox-init`'s executable, read once per process from beside this library (the
/// addon, or for Rust's own tests the target directory): the copy taken when pi started
/// is what every sandbox runs, whatever happens to the file later.
fn init_program() -> Result<&'static [u8], LaunchError> {
    init_found().map(|(_, bytes)| bytes.as_slice())
}

/// Where `pi-sandbox-init` was found, and its bytes (`init_program`).
fn init_found() -> Result<&'static (PathBuf, Vec<u8>), LaunchError> {
    static INIT: once_cell::sync::OnceCell<Result<(PathBuf, Vec<u8>), String>> =
        once_cell::sync::OnceCell::new();
    INIT.get_or_init(|| {
        let tried = init_candidates();
        for path in &tried {
            if let Ok(bytes) = std::fs::read(path) {
                if bytes.starts_with(b"\x7fELF") {
                    return Ok((path.clone(), bytes));
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

fn open_mount_source(path: &Path) -> Result<OwnedFd, LaunchError> {
    crate::open::mount_source(path).map_err(LaunchError::MountSource)
}

/// `bytes` in a file without a name (gone when the last fd on it closes), read from the start:
/// a sealed memfd (no disk write per command, and no one holding a descriptor can change
/// it), an unlinked temp file in `dir` without memfds.
fn unnamed_file(dir: &Path, bytes: &[u8]) -> Result<OwnedFd, LaunchError> {
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

fn sealed_memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    sealed_memfd_with(bytes, false)
}

/// `bytes` in a sealed memfd, executable or not.
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
        let bytes = init_program().ok()?;
        let memfd = sealed_memfd_with(bytes, true).ok()?;
        // Executed once here: a policy that refuses to run it (SELinux, fapolicyd) means the
        // copy in /tmp instead, not a bash that never starts. Run without arguments it only
        // says how to run it (status 126).
        use std::os::fd::AsRawFd;
        let probe = reopen(&memfd).ok()?;
        let ran = std::process::Command::new(format!("/proc/self/fd/{}", probe.as_raw_fd()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        (ran.code() == Some(126)).then_some(memfd)
    })
    .as_ref()
}

/// A new open file description of `fd`'s file (through /proc): each child gets its own.
fn reopen(fd: &OwnedFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    Ok(File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))?.into())
}

/// What every launch passes unchanged (pi-sandbox-init, the seccomp programs): written once per process into sealed memfds (`cell`, one per item of `items`), then item
/// `i` opened anew for each launch, so that each reader starts at its beginning and nothing
/// is copied per command.
fn shared_file(
    cell: &'static once_cell::sync::OnceCell<Vec<OwnedFd>>,
    dir: &Path,
    items: &[&[u8]],
    i: usize,
) -> Result<OwnedFd, LaunchError> {
    let sealed = cell
        .get_or_try_init(|| items.iter().map(|b| sealed_memfd(b)).collect())
        .map_err(script_error(dir))?;
    if let Ok(f) = reopen(&sealed[i]) {
        return Ok(f);
    }
    // No /proc here: a copy of its own.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::command::scan;
    use crate::platform::command::tests::{default_guard, setup};

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
}
