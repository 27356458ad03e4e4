//! A session's pod: the namespaces a session's commands share so that what one of them leaves
//! running in the background lives on for the session, and later commands reach it.
//!
//! A pod is a bwrap with its own user and pid namespaces (and, unless the network is on, its
//! own network namespace), whose pid 1 is `pi-sandbox-init --pod`: it hands the namespaces
//! out, opens the proxy's door on the pod's 127.0.0.1 for a filtered network, and waits on a
//! lifeline (a pipe whose other end only this process holds). Each command then runs under
//! `pi-sandbox-init --join`, which enters the pod's namespaces and starts the command's bwrap
//! there: the command gets its own user, mount and pid namespaces, nested in the pod's, and
//! the pod's network. The command's bwrap does not die with its parent, so a process the
//! command leaves keeps its pid namespace (and its sandbox) alive after the command returns.
//!
//! The end: when the session drops its pod (session end, `/sandbox stop`), or when pi itself
//! is gone, the lifeline ends, pid 1 exits, and the kernel kills everything in the pod's pid
//! namespace, nested ones included. Nothing is left to a clean-up that might not run.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};

use crate::platform::linux::fd_passing::receive_fds;
use crate::policy::bash::Network;

/// One pod, for one network mode of a session.
#[derive(Debug)]
pub(crate) struct Pod {
    network: Network,
    bwrap: Option<Child>,
    /// Our end of the lifeline: dropped, the pod ends.
    lifeline: Option<OwnedFd>,
    /// The user namespace that owns the pod's others (entered first).
    user: OwnedFd,
    /// The pod's network namespace; None when the network is on (the host's).
    net: Option<OwnedFd>,
    pid: OwnedFd,
    /// The pod's pid namespace's inode: processes in namespaces nested in it are the pod's.
    pid_ns: u64,
    /// The port of the proxy's door on the pod's 127.0.0.1 (filtered network).
    door_port: Option<u16>,
}

/// A process a command left running in a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Background {
    /// Its pid on the host.
    pub(crate) pid: u32,
    /// Its command line, arguments joined by spaces (as `ps` shows it).
    pub(crate) command: String,
}

/// What starting a pod needs: bwrap, and `pi-sandbox-init` as bwrap can run it.
pub(crate) struct PodProgram<'a> {
    pub(crate) bwrap: &'a Path,
    /// The path bwrap runs init by (`/proc/self/fd/N` of `init_fd`, or a file on disk).
    pub(crate) init: OsString,
    /// The fd `init` names, if it names one: inherited by bwrap.
    pub(crate) init_fd: Option<OwnedFd>,
}

impl Pod {
    /// Starts a pod for `network`. With a filtered network the proxy's door comes back with
    /// it: the caller serves it for the session.
    pub(crate) fn start(
        program: PodProgram,
        network: Network,
    ) -> std::io::Result<(Pod, Option<TcpListener>)> {
        let (lifeline_read, lifeline) = pipe()?;
        let (ours, theirs) = crate::platform::linux::fd_passing::socket_pair()?;
        let mut cmd = pod_command(&program, network, &lifeline_read, &theirs);
        let mut bwrap = cmd.spawn()?;
        drop((lifeline_read, theirs, program.init_fd));
        let received = if network == Network::Filtered {
            receive_fds::<3>(ours.as_raw_fd()).map(|[n, p, d]| (n, p, Some(d)))
        } else {
            receive_fds::<2>(ours.as_raw_fd()).map(|[n, p]| (n, p, None))
        };
        let Some((net, pid, door)) = received else {
            let _ = bwrap.kill();
            let out = bwrap.wait_with_output()?;
            let said = String::from_utf8_lossy(&out.stderr);
            return Err(std::io::Error::other(format!(
                "the session's namespaces could not be set up ({}, {})",
                said.trim(),
                out.status
            )));
        };
        let user = owner_of(&pid)?;
        let pid_ns = std::fs::File::from(pid.try_clone()?).metadata()?.ino();
        let door = door.map(TcpListener::from);
        let door_port = match &door {
            Some(d) => Some(d.local_addr()?.port()),
            None => None,
        };
        let pod = Pod {
            network,
            bwrap: Some(bwrap),
            lifeline: Some(lifeline),
            user,
            net: network.own_namespace().then_some(net),
            pid,
            pid_ns,
            door_port,
        };
        Ok((pod, door))
    }

    pub(crate) fn network(&self) -> Network {
        self.network
    }

    pub(crate) fn door_port(&self) -> Option<u16> {
        self.door_port
    }

    /// Whether the pod still runs (its pid 1 did not die).
    pub(crate) fn alive(&mut self) -> bool {
        self.bwrap
            .as_mut()
            .is_some_and(|b| matches!(b.try_wait(), Ok(None)))
    }

    /// New descriptors for `--join`: the user namespace, the network one (None: the host's),
    /// the pid one.
    pub(crate) fn join_fds(&self) -> std::io::Result<(OwnedFd, Option<OwnedFd>, OwnedFd)> {
        let net = match &self.net {
            Some(n) => Some(n.try_clone()?),
            None => None,
        };
        Ok((self.user.try_clone()?, net, self.pid.try_clone()?))
    }

    /// Whether a command's namespace may still hold something: a command's bwrap that leaves
    /// a process behind leaves its own pid 1 with it, which becomes a child of the pod's pid 1
    /// (two small reads, against a walk of every process). True when it cannot be told.
    fn may_hold_background(&self) -> bool {
        let children =
            |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
        let Some(bwrap) = self.bwrap.as_ref().map(|b| b.id()) else {
            return false;
        };
        let Ok(init) = children(bwrap) else {
            return true;
        };
        match init.split_whitespace().next().map(str::parse::<u32>) {
            Some(Ok(init)) => children(init).map_or(true, |c| !c.trim().is_empty()),
            _ => true,
        }
    }

    /// The processes commands left running here: every process in a pid namespace nested in
    /// the pod's but the namespaces' own first processes (bwrap's reapers).
    pub(crate) fn background(&self) -> Vec<Background> {
        if !self.may_hold_background() {
            return vec![];
        }
        let mut parents: std::collections::HashMap<u64, bool> = Default::default();
        let mut out = Vec::new();
        for pid in crate::process::pids() {
            let Some(ns) = crate::process::pid_namespace(pid) else {
                continue;
            };
            // Once per namespace: whether it is nested in the pod's.
            let nested = *parents.entry(ns).or_insert_with(|| {
                std::fs::File::open(format!("/proc/{pid}/ns/pid"))
                    .ok()
                    .and_then(|ns| parent_ns(&ns))
                    .is_some_and(|p| p == self.pid_ns)
            });
            if !nested || innermost_pid(pid) == Some(1) {
                continue;
            }
            // Every process counts, whatever its command line: one a process emptied (`exec -a
            // ''`) would otherwise run unlisted and unaudited.
            out.push(Background {
                pid,
                command: command_line(pid).unwrap_or_else(|| name_of(pid)),
            });
        }
        out.sort_by_key(|b| b.pid);
        out
    }
}

/// The pod's bwrap: `program.init --pod` as pid 1, given the lifeline's and the socket's ends
/// (and init's own fd).
fn pod_command(
    program: &PodProgram,
    network: Network,
    lifeline: &OwnedFd,
    socket: &OwnedFd,
) -> std::process::Command {
    let inherited: Vec<i32> = [lifeline, socket]
        .into_iter()
        .chain(program.init_fd.as_ref())
        .map(|f| f.as_raw_fd())
        .collect();
    let mut cmd = std::process::Command::new(program.bwrap);
    // Neither bwrap nor init needs pi's environment (API keys among it) for the session.
    cmd.env_clear();
    cmd.args([
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]);
    if network.own_namespace() {
        cmd.arg("--unshare-net");
    }
    cmd.args(["--as-pid-1", "--ro-bind", "/", "/", "--proc", "/proc"])
        .args(["--dev", "/dev", "--chdir", "/", "--"])
        .arg(&program.init)
        .arg("--pod")
        .arg(lifeline.as_raw_fd().to_string())
        .arg(socket.as_raw_fd().to_string());
    if network == Network::Filtered {
        cmd.arg("--proxy");
    }
    // What bwrap or init say when the pod cannot start is read then; nothing else is said.
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: only fcntl between fork and exec, on descriptors this process owns.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &inherited {
                if libc::fcntl(*fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd
}

impl Drop for Pod {
    fn drop(&mut self) {
        // The lifeline ends: pid 1 exits and the kernel kills the rest.
        self.lifeline.take();
        if let Some(mut bwrap) = self.bwrap.take() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while matches!(bwrap.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let _ = bwrap.kill();
            let _ = bwrap.wait();
        }
    }
}

/// `ioctl(NS_GET_USERNS)`: the user namespace that owns `ns`.
fn owner_of(ns: &OwnedFd) -> std::io::Result<OwnedFd> {
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    // SAFETY: an ioctl without arguments on our own descriptor; a new descriptor on success.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_USERNS) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The inode of the pid namespace `ns` is nested in (`NS_GET_PARENT`); None at the top.
fn parent_ns(ns: &std::fs::File) -> Option<u64> {
    const NS_GET_PARENT: libc::c_ulong = 0xb702;
    // SAFETY: as `owner_of`.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_PARENT) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new descriptor we own.
    let parent = unsafe { std::fs::File::from_raw_fd(fd) };
    parent.metadata().ok().map(|m| m.ino())
}

/// The pid `pid` has in its own (innermost) pid namespace.
fn innermost_pid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

fn command_line(pid: u32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let words: Vec<String> = bytes
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.iter().any(|w| w.starts_with("__pi_sandbox_command=")) {
        // A subshell (`( ... ) &`) still shows the sandbox's own way of running the command.
        return Some("bash (a subshell of the command)".into());
    }
    (!words.is_empty()).then(|| words.join(" "))
}

/// The name the kernel keeps for `pid` (`/proc/PID/comm`), in brackets as `ps` shows a process
/// without a command line.
fn name_of(pid: u32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("[{}]", comm.trim_end())
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
