//! `MountPlan` → bubblewrap argv (Linux). Pure: the plan already says which paths exist and
//! what they are; this only orders the flags.
//!
//! Order matters: later mounts cover earlier ones. Read-only root first, then the private
//! /tmp, then the plan's mounts (each deeper path after its parents, so it wins), then the
//! script (after /tmp, so that the tmpfs does not hide it).

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::platform::mounts::{MountKind, MountPlan};

/// The fd on which the outer shell passes the command's script to bwrap.
pub const SCRIPT_FD: u32 = 3;

/// The fd on which the outer shell passes bwrap its arguments (`--args`).
pub const ARGS_FD: u32 = 4;

/// Linux's ARG_MAX is usually 2 MiB for argv + envp together; stay well under it so that
/// the environment still fits.
pub const MAX_ARGV_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BwrapError {
    NulByte { path: PathBuf },
    NotAbsolute { path: PathBuf },
    TooLong { bytes: usize, mounts: usize },
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
            BwrapError::TooLong { bytes, mounts } => write!(
                f,
                "the sandbox would need {mounts} mounts ({bytes} bytes of arguments), over the {MAX_ARGV_BYTES}-byte limit; list fewer, broader denyRead/allowWrite entries"
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

/// The bwrap arguments (without the `bwrap` program itself), ending in `-- <command...>`.
pub fn build(plan: &MountPlan, command: &[OsString]) -> Result<Vec<OsString>, BwrapError> {
    let mut args: Vec<OsString> = Vec::new();
    let flag = |a: &mut Vec<OsString>, f: &str| a.push(f.into());
    for f in [
        "--die-with-parent",
        // setsid: the sandboxed command cannot push keystrokes into pi's terminal (TIOCSTI).
        "--new-session",
        // Own PID namespace: host processes are invisible, and everything started inside
        // (setsid, nohup, &) dies when the command's pid 1 exits.
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
    ] {
        flag(&mut args, f);
    }
    if !plan.network {
        flag(&mut args, "--unshare-net");
    }
    let mount =
        |a: &mut Vec<OsString>, f: &str, src: &Path, dst: &Path| -> Result<(), BwrapError> {
            check(src)?;
            check(dst)?;
            a.push(f.into());
            a.push(src.into());
            a.push(dst.into());
            Ok(())
        };
    mount(&mut args, "--ro-bind", Path::new("/"), Path::new("/"))?;
    args.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(OsString::from));
    // The plan is ordered so that a deeper path comes after its parents: it wins.
    for m in &plan.mounts {
        match m.kind {
            MountKind::Writable => mount(&mut args, "--bind", &m.path, &m.path)?,
            MountKind::ReadOnly => mount(&mut args, "--ro-bind", &m.path, &m.path)?,
            MountKind::MaskDir => {
                check(&m.path)?;
                args.extend([
                    OsString::from("--tmpfs"),
                    m.path.as_os_str().into(),
                    "--remount-ro".into(),
                    m.path.as_os_str().into(),
                ]);
            }
            MountKind::MaskFile => mount(&mut args, "--ro-bind", Path::new("/dev/null"), &m.path)?,
        }
    }
    if let Some(script) = &plan.script {
        // Copied from an fd the outer shell holds open, into the private /tmp: the host file
        // is deleted before the sandbox starts, so nothing is left even if the run is killed.
        check(script)?;
        args.extend([
            OsString::from("--ro-bind-data"),
            SCRIPT_FD.to_string().into(),
            script.into(),
        ]);
    }
    // The host's TMPDIR is read-only or invisible inside; mktemp and friends need one that
    // is writable: the private /tmp.
    args.extend(["--setenv", "TMPDIR", "/tmp"].map(OsString::from));
    check(&plan.cwd)?;
    args.push("--chdir".into());
    args.push(plan.cwd.as_os_str().into());
    args.push("--".into());
    args.extend(command.iter().cloned());
    let bytes: usize = args.iter().map(|a| a.len() + 1).sum();
    if bytes > MAX_ARGV_BYTES {
        return Err(BwrapError::TooLong {
            bytes,
            mounts: plan.mounts.len(),
        });
    }
    Ok(args)
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
                m("/w/proj/.pi", MountKind::ReadOnly),
                m("/w/proj/.git/hooks", MountKind::ReadOnly),
                m("/home/u/.pi/agent/auth.json", MountKind::MaskFile),
                m("/home/u/.pi/agent/sessions", MountKind::Writable),
            ],
            placeholders: vec![],
            network: false,
            script: Some("/tmp/pi-bash-1-2-abc.sh".into()),
        }
    }

    fn strings(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn golden_argv_in_the_tested_order() {
        let args = build(
            &plan(),
            &["bash".into(), "-l".into(), "/tmp/pi-bash-1-2-abc.sh".into()],
        )
        .unwrap();
        // One mount or flag group per line; split on whitespace (no path here has spaces).
        let expected: Vec<&str> = "
            --die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts
            --cap-drop ALL --unshare-net
            --ro-bind / /
            --proc /proc --dev /dev --tmpfs /tmp
            --tmpfs /home/u/.ssh --remount-ro /home/u/.ssh
            --bind /w/proj /w/proj
            --ro-bind /w/proj/.pi /w/proj/.pi
            --ro-bind /w/proj/.git/hooks /w/proj/.git/hooks
            --ro-bind /dev/null /home/u/.pi/agent/auth.json
            --bind /home/u/.pi/agent/sessions /home/u/.pi/agent/sessions
            --ro-bind-data 3 /tmp/pi-bash-1-2-abc.sh
            --setenv TMPDIR /tmp
            --chdir /w/proj/src
            -- bash -l /tmp/pi-bash-1-2-abc.sh"
            .split_whitespace()
            .collect();
        assert_eq!(strings(&args), expected);
    }

    #[test]
    fn network_on_keeps_the_host_network() {
        let mut p = plan();
        p.network = true;
        let args = strings(&build(&p, &["true".into()]).unwrap());
        assert!(!args.contains(&"--unshare-net".to_string()));
        assert!(args.contains(&"--unshare-pid".to_string()));
    }

    #[test]
    fn nul_bytes_and_relative_paths_are_refused() {
        use std::os::unix::ffi::OsStringExt;
        let mut p = plan();
        p.mounts.push(Mount {
            path: PathBuf::from(OsString::from_vec(b"/w/a\0b".to_vec())),
            kind: MountKind::Writable,
        });
        assert!(matches!(build(&p, &[]), Err(BwrapError::NulByte { .. })));
        let mut p = plan();
        p.mounts.push(Mount {
            path: "relative/file".into(),
            kind: MountKind::MaskFile,
        });
        assert!(matches!(
            build(&p, &[]),
            Err(BwrapError::NotAbsolute { .. })
        ));
    }

    #[test]
    fn too_many_rules_for_the_argv_limit_are_refused() {
        let mut p = plan();
        p.mounts = (0..40_000)
            .map(|i| Mount {
                path: PathBuf::from(format!("/home/u/secret/file-number-{i:08}")),
                kind: MountKind::MaskFile,
            })
            .collect();
        let e = build(&p, &[]).unwrap_err();
        assert!(matches!(e, BwrapError::TooLong { .. }));
        assert!(e.to_string().contains("fewer, broader"), "{e}");
    }
}
