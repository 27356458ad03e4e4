//! `MountPlan` → bubblewrap argv (Linux). Pure: the plan already says which paths exist and
//! what they are; this only orders the flags.
//!
//! Order matters: later mounts cover earlier ones. Read-only root first, then /tmp (the
//! session's folder, or a private tmpfs), then the plan's mounts (each deeper path after its
//! parents, so it wins), then the script (in the sandbox's own /dev).
//!
//! Every bind of a path the agent can reach is by fd (`--bind-fd`, `--ro-bind-fd`): the
//! caller opens `BwrapArgs::sources` without following links, so a symlink planted or swapped
//! in after the plan was made cannot redirect a mount; bwrap also checks that what it mounted
//! is the fd's inode.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::platform::mounts::{MountKind, MountPlan};
use crate::policy::bash::{Features, Network};

/// The fd on which bwrap finds its options (`--args`); `BwrapArgs::fds` follow it.
pub(crate) const ARGS_FD: u32 = 3;

/// What bwrap reads from one of the fds its options name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FdSource {
    /// The command's script (`--ro-bind-data`).
    Script,
    /// The `i`th seccomp program (`--add-seccomp-fd`).
    Filter(usize),
    /// `pi-sandbox-init`'s executable (`--ro-bind-data`, mode 0555).
    Init,
    /// `pi-sandbox-init`'s executable as a file the command inherits and bwrap executes as
    /// `/proc/self/fd/N` (an executable sealed memfd); not read by bwrap.
    InitExecutable,
    /// The filter `pi-sandbox-init` installs; inherited by it, not read by bwrap.
    NotifyFilter,
    /// The socket `pi-sandbox-init` hands the filter's listener over; inherited by it.
    SupervisorSocket,
    /// A mount source, to be opened without following any link.
    Path(PathBuf),
    /// `PLACEHOLDER_IGNORE`, for a placeholder's `.gitignore` (`--file`).
    PlaceholderIgnore,
}

/// What git inside finds in a placeholder (`MountKind::Placeholder`): everything in it is
/// ignored, this file too, so the empty directory is no untracked one git must remove.
pub(crate) const PLACEHOLDER_IGNORE: &str = "# pi-sandbox: this file exists inside the sandbox only. On the host this folder is an\n# empty placeholder that a command may not fill (pi loads what is in it); git ignores it.\n*\n";

/// bwrap's options and what each fd they name must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BwrapArgs {
    /// Everything up to and including `--`, then the command.
    pub(crate) args: Vec<OsString>,
    /// `fds[i]` is expected on fd `ARGS_FD + 1 + i`.
    pub(crate) fds: Vec<FdSource>,
}

impl BwrapArgs {
    fn next_fd(&self) -> u32 {
        ARGS_FD + 1 + self.fds.len() as u32
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BwrapError {
    NulByte {
        path: PathBuf,
    },
    NotAbsolute {
        path: PathBuf,
    },
    /// Filtered network needs `pi-sandbox-init` to open the proxy's door inside.
    FilteredNeedsInit,
}

impl fmt::Display for BwrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BwrapError::NulByte { path } => write!(
                f,
                "path {:?} holds a NUL byte and cannot be passed to bubblewrap; remove it from the config",
                path
            ),
            BwrapError::NotAbsolute { path } => write!(
                f,
                "path {} is not absolute; the sandbox only mounts absolute paths",
                path.display()
            ),
            BwrapError::FilteredNeedsInit => write!(
                f,
                "filtered network needs pi-sandbox-init inside the sandbox, which this launch does not run; use --sandbox-network off"
            ),
        }
    }
}

impl std::error::Error for BwrapError {}

fn check(path: &Path) -> Result<(), BwrapError> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(BwrapError::NulByte {
            path: path.to_path_buf(),
        });
    }
    if !path.is_absolute() {
        return Err(BwrapError::NotAbsolute {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// What a run adds to the mount plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extras<'a> {
    pub(crate) features: Features,
    /// How many seccomp programs are loaded, in order, each from its own fd.
    pub(crate) filters: usize,
    /// Environment variables the command does not get.
    pub(crate) unset_env: &'a [String],
    /// Environment variables set for the command (`environment::cache_redirects`).
    pub(crate) set_env: &'a [(String, String)],
    /// Run the command under `pi-sandbox-init` (the socket supervisor's filter).
    pub(crate) supervised: bool,
    /// `pi-sandbox-init` runs straight from the fd it inherits, rather than from a copy bwrap
    /// writes into the private /tmp for every command (a megabyte: about 1.4 ms a command).
    pub(crate) init_from_fd: bool,
    /// The command runs in the session's pod (`linux::pod`), not on its own.
    pub(crate) pod: Option<InPod>,
}

/// What a command run in the session's pod needs to be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InPod {
    /// The user's own ids: the pod's user namespace makes them root there, and the command's
    /// own namespace maps them back.
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The proxy's door on the pod's 127.0.0.1 (filtered network).
    pub(crate) door_port: Option<u16>,
}

/// Tells `pi-sandbox-init` the port of the session's door, which the pod opened.
pub(crate) const PROXY_PORT_FLAG: &str = "--proxy-port";

/// Tells `pi-sandbox-init` to open the proxy's listening socket inside the command's network
/// namespace, hand it to the supervisor and point the proxy variables at it.
pub(crate) const PROXY_FLAG: &str = "--proxy";

/// Where `pi-sandbox-init` appears inside the sandbox when it cannot run from its fd: the
/// sandbox's own /dev, read-only (/tmp may be the session's host folder).
pub(crate) const INIT_INSIDE: &str = "/dev/.pi-sandbox-init";

/// The bwrap arguments (without the `bwrap` program itself), ending in `-- <command...>`.
pub(crate) fn build(
    plan: &MountPlan,
    extras: Extras,
    command: &[OsString],
) -> Result<BwrapArgs, BwrapError> {
    let Extras {
        features,
        filters,
        unset_env,
        set_env,
        supervised,
        init_from_fd,
        pod,
    } = extras;
    let mut out = BwrapArgs {
        args: Vec::new(),
        fds: Vec::new(),
    };
    out.isolation(features, plan.network, pod);
    // The proxy's listener is made inside the namespace by pi-sandbox-init.
    if plan.network == Network::Filtered && !supervised {
        return Err(BwrapError::FilteredNeedsInit);
    }
    for i in 0..filters {
        let fd = out.next_fd();
        out.fds.push(FdSource::Filter(i));
        out.args
            .extend(["--add-seccomp-fd".into(), fd.to_string().into()]);
    }
    out.mounts(plan)?;
    let prefix = if supervised {
        out.init_prefix(plan.network, init_from_fd, pod.and_then(|p| p.door_port))
    } else {
        Vec::new()
    };
    out.environment(unset_env, set_env);
    check(&plan.cwd)?;
    out.args.push("--chdir".into());
    out.args.push(plan.cwd.as_os_str().into());
    out.args.push("--".into());
    out.args.extend(prefix);
    out.args.extend(command.iter().cloned());
    Ok(out)
}

impl BwrapArgs {
    /// The namespaces and capabilities the command loses. In the session's pod, what it leaves
    /// running outlives it (no `--die-with-parent`), in the pod's network namespace.
    fn isolation(&mut self, features: Features, network: Network, pod: Option<InPod>) {
        if pod.is_none() {
            self.args.push("--die-with-parent".into());
        }
        for f in [
            // setsid: the sandboxed command cannot push keystrokes into pi's terminal (TIOCSTI).
            "--new-session",
            // Own PID namespace: host processes (and other commands') are invisible; without
            // the pod, everything started inside (setsid, nohup, &) dies with the command.
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--cap-drop",
            "ALL",
        ] {
            self.args.push(f.into());
        }
        if let Some(pod) = pod {
            self.args.push("--unshare-user".into());
            for (flag, id) in [("--uid", pod.uid), ("--gid", pod.gid)] {
                self.args.push(flag.into());
                self.args.push(id.to_string().into());
            }
            if features.disable_userns {
                self.args.push("--disable-userns".into());
            }
            // The pod's network namespace, entered before bwrap runs.
            return;
        }
        if features.disable_userns {
            self.args.push("--unshare-user".into());
            self.args.push("--disable-userns".into());
        }
        if network.own_namespace() {
            self.args.push("--unshare-net".into());
        }
    }

    /// A mount of `src` on `dst`, by name.
    fn mount(&mut self, f: &str, src: &Path, dst: &Path) -> Result<(), BwrapError> {
        check(src)?;
        check(dst)?;
        self.args.push(f.into());
        self.args.push(src.into());
        self.args.push(dst.into());
        Ok(())
    }

    /// A bind of `path` onto itself, by fd.
    fn bind_fd(&mut self, f: &str, path: &Path) -> Result<(), BwrapError> {
        self.bind_fd_at(f, path, path)
    }

    /// A bind of `src` on `dst`, by fd.
    fn bind_fd_at(&mut self, f: &str, src: &Path, dst: &Path) -> Result<(), BwrapError> {
        check(src)?;
        check(dst)?;
        let fd = self.next_fd();
        self.fds.push(FdSource::Path(src.to_path_buf()));
        self.args
            .extend([f.into(), fd.to_string().into(), dst.into()]);
        Ok(())
    }

    /// The system's paths, the plan's mounts, and the command's script.
    fn mounts(&mut self, plan: &MountPlan) -> Result<(), BwrapError> {
        // Fixed system paths, not writable by the agent: by name.
        self.mount("--ro-bind", Path::new("/"), Path::new("/"))?;
        self.args
            .extend(["--proc", "/proc", "--dev", "/dev"].map(OsString::from));
        match &plan.tmp {
            // The session's own /tmp, the same for every command.
            Some(tmp) => self.bind_fd_at("--bind-fd", tmp, Path::new("/tmp"))?,
            None => self.args.extend(["--tmpfs", "/tmp"].map(OsString::from)),
        }
        // The plan is ordered so that a deeper path comes after its parents: it wins.
        for m in &plan.mounts {
            match m.kind {
                MountKind::Writable => self.bind_fd("--bind-fd", &m.path)?,
                MountKind::ReadOnly => self.bind_fd("--ro-bind-fd", &m.path)?,
                MountKind::Placeholder => self.placeholder(&m.path)?,
                MountKind::MaskDir => {
                    check(&m.path)?;
                    self.args.extend([
                        OsString::from("--tmpfs"),
                        m.path.as_os_str().into(),
                        "--remount-ro".into(),
                        m.path.as_os_str().into(),
                    ]);
                }
                MountKind::MaskFile => self.mount("--ro-bind", Path::new("/dev/null"), &m.path)?,
            }
        }
        if let Some(script) = &plan.script {
            // Copied from an fd (an unnamed file) into the private /tmp: nothing is left on the
            // host, even if the run is killed.
            check(script)?;
            let fd = self.next_fd();
            self.fds.push(FdSource::Script);
            self.args.extend([
                OsString::from("--ro-bind-data"),
                fd.to_string().into(),
                script.into(),
            ]);
        }
        Ok(())
    }

    /// A placeholder bound read-only by fd (bwrap checks it mounted that directory), then
    /// covered by a tmpfs holding only the ignore file, made read-only.
    fn placeholder(&mut self, path: &Path) -> Result<(), BwrapError> {
        self.bind_fd("--ro-bind-fd", path)?;
        let fd = self.next_fd();
        self.fds.push(FdSource::PlaceholderIgnore);
        self.args.extend([
            OsString::from("--tmpfs"),
            path.into(),
            "--perms".into(),
            "0444".into(),
            "--file".into(),
            fd.to_string().into(),
            path.join(".gitignore").into(),
            "--remount-ro".into(),
            path.into(),
        ]);
        Ok(())
    }

    /// What the command runs under, before its own argv: pi-sandbox-init (from its executable
    /// fd, or copied into the private /tmp), its filter's and socket's fds.
    fn init_prefix(
        &mut self,
        network: Network,
        init_from_fd: bool,
        door_port: Option<u16>,
    ) -> Vec<OsString> {
        let init = self.next_fd();
        let program: OsString = if init_from_fd {
            self.fds.push(FdSource::InitExecutable);
            format!("/proc/self/fd/{init}").into()
        } else {
            self.fds.push(FdSource::Init);
            self.args.extend([
                "--perms".into(),
                "0555".into(),
                "--ro-bind-data".into(),
                init.to_string().into(),
                INIT_INSIDE.into(),
            ]);
            INIT_INSIDE.into()
        };
        // Not named in bwrap's options: bwrap leaves them open for the command.
        let filter = self.next_fd();
        self.fds.push(FdSource::NotifyFilter);
        let socket = self.next_fd();
        self.fds.push(FdSource::SupervisorSocket);
        let mut prefix: Vec<OsString> = vec![
            program,
            filter.to_string().into(),
            socket.to_string().into(),
        ];
        match (network, door_port) {
            (Network::Filtered, Some(port)) => {
                prefix.push(PROXY_PORT_FLAG.into());
                prefix.push(port.to_string().into());
            }
            (Network::Filtered, None) => prefix.push(PROXY_FLAG.into()),
            _ => {}
        }
        prefix.push("--".into());
        prefix
    }

    /// The variables the command does not get, and those set for it.
    fn environment(&mut self, unset_env: &[String], set_env: &[(String, String)]) {
        // Names come from the environment itself, which cannot hold NUL bytes.
        for name in unset_env.iter().filter(|n| !n.contains('\0')) {
            self.args.extend(["--unsetenv".into(), name.into()]);
        }
        // The host's TMPDIR is read-only or invisible inside; mktemp and friends need one that
        // is writable: the private /tmp.
        self.args
            .extend(["--setenv", "TMPDIR", "/tmp"].map(OsString::from));
        for (name, value) in set_env
            .iter()
            .filter(|(n, v)| !n.contains('\0') && !v.contains('\0'))
        {
            self.args
                .extend(["--setenv".into(), name.into(), value.into()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::mounts::Mount;

    fn plan() -> MountPlan {
        let m = |p: &str, kind| Mount {
            path: p.into(),
            kind,
        };
        MountPlan {
            cwd: "/w/proj/src".into(),
            mounts: vec![
                m("/home/u/.ssh", MountKind::MaskDir),
                m("/w/proj", MountKind::Writable),
                m("/w/proj/.pi", MountKind::Placeholder),
                m("/w/proj/.git/hooks", MountKind::ReadOnly),
                m("/home/u/.pi/agent/auth.json", MountKind::MaskFile),
                m("/home/u/.pi/agent/sessions", MountKind::Writable),
            ],
            placeholders: vec![],
            network: Network::Off,
            script: Some("/dev/.pi-bash-1-2-abc.sh".into()),
            tmp: Some("/var/t/pi-sandbox-0/1-abc".into()),
        }
    }

    const NONE: Extras = Extras {
        features: Features {
            disable_userns: false,
        },
        filters: 0,
        unset_env: &[],
        set_env: &[],
        supervised: false,
        init_from_fd: false,
        pod: None,
    };

    fn strings(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn golden_argv_in_the_tested_order() {
        let built = build(
            &plan(),
            Extras {
                features: Features {
                    disable_userns: true,
                },
                filters: 2,
                unset_env: &["GITHUB_TOKEN".into()],
                set_env: &[],
                supervised: true,
                init_from_fd: false,
                pod: None,
            },
            &[
                "bash".into(),
                "-c".into(),
                "/dev/.pi-bash-1-2-abc.sh".into(),
            ],
        )
        .unwrap();
        // One mount or flag group per line; split on whitespace (no path here has spaces).
        let expected: Vec<&str> = "
            --die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts
            --cap-drop ALL --unshare-user --disable-userns --unshare-net
            --add-seccomp-fd 4 --add-seccomp-fd 5
            --ro-bind / /
            --proc /proc --dev /dev --bind-fd 6 /tmp
            --tmpfs /home/u/.ssh --remount-ro /home/u/.ssh
            --bind-fd 7 /w/proj
            --ro-bind-fd 8 /w/proj/.pi
            --tmpfs /w/proj/.pi --perms 0444 --file 9 /w/proj/.pi/.gitignore
            --remount-ro /w/proj/.pi
            --ro-bind-fd 10 /w/proj/.git/hooks
            --ro-bind /dev/null /home/u/.pi/agent/auth.json
            --bind-fd 11 /home/u/.pi/agent/sessions
            --ro-bind-data 12 /dev/.pi-bash-1-2-abc.sh
            --perms 0555 --ro-bind-data 13 /dev/.pi-sandbox-init
            --unsetenv GITHUB_TOKEN
            --setenv TMPDIR /tmp
            --chdir /w/proj/src
            -- /dev/.pi-sandbox-init 14 15 -- bash -c /dev/.pi-bash-1-2-abc.sh"
            .split_whitespace()
            .collect();
        assert_eq!(strings(&built.args), expected);
        // what each fd the options name must hold, in fd order from 4
        let p = |s: &str| FdSource::Path(s.into());
        assert_eq!(
            built.fds,
            [
                FdSource::Filter(0),
                FdSource::Filter(1),
                p("/var/t/pi-sandbox-0/1-abc"),
                p("/w/proj"),
                p("/w/proj/.pi"),
                FdSource::PlaceholderIgnore,
                p("/w/proj/.git/hooks"),
                p("/home/u/.pi/agent/sessions"),
                FdSource::Script,
                FdSource::Init,
                FdSource::NotifyFilter,
                FdSource::SupervisorSocket,
            ]
        );
    }

    #[test]
    fn init_from_its_inherited_fd_is_executed_there_and_not_copied() {
        let extras = Extras {
            supervised: true,
            init_from_fd: true,
            ..NONE
        };
        let built = build(&plan(), extras, &["true".into()]).unwrap();
        let args = strings(&built.args);
        assert!(!args.contains(&INIT_INSIDE.to_string()));
        assert!(!args.windows(2).any(|w| w == ["--perms", "0555"]));
        // the fd after the mount sources and the script, executed through the sandbox's /proc
        let tail = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            args[tail + 1..],
            ["/proc/self/fd/11", "12", "13", "--", "true"]
        );
        assert_eq!(
            built.fds[built.fds.len() - 3..],
            [
                FdSource::InitExecutable,
                FdSource::NotifyFilter,
                FdSource::SupervisorSocket
            ]
        );
    }

    #[test]
    fn without_a_session_folder_tmp_is_a_private_tmpfs() {
        let mut p = plan();
        p.tmp = None;
        let built = build(&p, NONE, &["true".into()]).unwrap();
        let args = strings(&built.args);
        let at = args.iter().position(|a| a == "--tmpfs").unwrap();
        assert_eq!(args[at + 1], "/tmp");
        assert!(!built
            .fds
            .contains(&FdSource::Path("/var/t/pi-sandbox-0/1-abc".into())));
    }

    #[test]
    fn network_on_keeps_the_host_network() {
        let mut p = plan();
        p.network = Network::On;
        let args = strings(&build(&p, NONE, &["true".into()]).unwrap().args);
        assert!(!args.contains(&"--unshare-net".to_string()));
        // an older bwrap: the seccomp filter alone keeps user namespaces out
        assert!(!args.contains(&"--disable-userns".to_string()));
        assert!(args.contains(&"--unshare-pid".to_string()));
    }

    #[test]
    fn filtered_network_is_an_empty_namespace_whose_door_init_opens() {
        let mut p = plan();
        p.network = Network::Filtered;
        let supervised = Extras {
            supervised: true,
            ..NONE
        };
        let args = strings(&build(&p, supervised, &["true".into()]).unwrap().args);
        assert!(args.contains(&"--unshare-net".to_string()));
        let tail = args.iter().rposition(|a| a == INIT_INSIDE).unwrap();
        assert_eq!(args[tail + 3..], ["--proxy", "--", "true"]);
        // Off: no door.
        p.network = Network::Off;
        let args = strings(&build(&p, supervised, &["true".into()]).unwrap().args);
        assert!(!args.contains(&PROXY_FLAG.to_string()));
        // Without init there is no way to open one: refused, not run unfiltered.
        p.network = Network::Filtered;
        assert_eq!(
            build(&p, NONE, &["true".into()]).unwrap_err(),
            BwrapError::FilteredNeedsInit
        );
    }

    #[test]
    fn nul_bytes_and_relative_paths_are_refused() {
        use std::os::unix::ffi::OsStringExt;
        let mut p = plan();
        p.mounts.push(Mount {
            path: PathBuf::from(OsString::from_vec(b"/w/a\0b".to_vec())),
            kind: MountKind::Writable,
        });
        assert!(matches!(
            build(&p, NONE, &[]),
            Err(BwrapError::NulByte { .. })
        ));
        let mut p = plan();
        p.mounts.push(Mount {
            path: "relative/file".into(),
            kind: MountKind::MaskFile,
        });
        assert!(matches!(
            build(&p, NONE, &[]),
            Err(BwrapError::NotAbsolute { .. })
        ));
    }
}
