//! Turning a command into a sandboxed launch: the temp script, the wrapped command string
//! pi's bash tool runs instead, exit-code preservation and cleanup.
//!
//! The user's command is never quoted or parsed: it is written byte for byte into a script
//! file, so heredocs, quotes, `$`, backslashes and unicode arrive intact. Only paths we
//! generate ourselves are quoted for the outer shell.

use std::ffi::OsString;
use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::guard::Guard;
use crate::platform::bwrap::{self, BwrapError, ARGS_FD, SCRIPT_FD};
use crate::platform::mounts::{self, Facts, FileKind, MountPlan, Scan};
use crate::platform::seatbelt::{self, SeatbeltPolicy};
use crate::protected::{Place, TABLE};

#[derive(Debug)]
pub enum LaunchError {
    Script { dir: PathBuf, message: String },
    Bwrap(BwrapError),
    NotUtf8 { path: PathBuf },
    Placeholder { path: PathBuf, message: String },
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
            LaunchError::NotUtf8 { path } => write!(
                f,
                "path {} is not valid UTF-8 and cannot be passed to the shell",
                path.display()
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The temp script holding the user's command, if any (removed by the shell command).
    pub script: Option<PathBuf>,
    /// bwrap's arguments, NUL-separated (`--args`): with it, the script reaches the sandbox on
    /// fd `SCRIPT_FD` and the arguments on `ARGS_FD`; the shell command opens both and deletes
    /// the files before the sandbox starts.
    pub args_file: Option<PathBuf>,
    /// Other temp files of this run (the macOS profile), removed after it.
    pub temp_files: Vec<PathBuf>,
    /// Protected directories that did not exist, created empty as mount points (by `prepare`)
    /// and kept:
    /// removing one while another sandbox has it mounted would lift that sandbox's protection
    /// (the kernel detaches mounts in other namespaces on rmdir). An empty directory is
    /// invisible to git and builds.
    pub placeholders: Vec<PathBuf>,
}

/// Single-quotes `s` for bash.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn utf8(p: &std::ffi::OsStr) -> Result<&str, LaunchError> {
    p.to_str().ok_or_else(|| LaunchError::NotUtf8 {
        path: PathBuf::from(p),
    })
}

impl Launch {
    /// The command pi's bash runs in place of the user's: creates the placeholders, runs the
    /// sandbox, keeps its exit code (a signal shows as 128+N, as in bash), removes temp files.
    pub fn shell_command(&self) -> Result<String, LaunchError> {
        let mut out = String::new();
        let program = sh_quote(utf8(self.program.as_os_str())?);
        if let (Some(script), Some(args)) = (&self.script, &self.args_file) {
            // Nothing is left to clean up afterwards: open both files on their fds, delete
            // them, and let bwrap replace the shell, so its exit status is the command's.
            debug_assert!(self.temp_files.is_empty());
            let s = sh_quote(utf8(script.as_os_str())?);
            let a = sh_quote(utf8(args.as_os_str())?);
            out.push_str(&format!(
                "exec {SCRIPT_FD}< {s} {ARGS_FD}< {a} && rm -f -- {s} {a} && exec {program} --args {ARGS_FD}"
            ));
            // bwrap takes options from the file, the command from its own argv.
            for a in self.command_part() {
                out.push(' ');
                out.push_str(&sh_quote(utf8(a)?));
            }
            return Ok(out);
        }
        let mut run = program;
        for a in &self.args {
            run.push(' ');
            run.push_str(&sh_quote(utf8(a)?));
        }
        out.push_str(&format!("{run}; __pi_sandbox_rc=$?; "));
        for f in self.script.iter().chain(&self.temp_files) {
            out.push_str(&format!("rm -f -- {}; ", sh_quote(utf8(f.as_os_str())?)));
        }
        out.push_str("exit $__pi_sandbox_rc");
        Ok(out)
    }

    /// bwrap's arguments when the options come from an args file on `fd`: `--args fd -- CMD`.
    pub fn argv_with_args_fd(&self, fd: u32) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["--args".into(), fd.to_string().into()];
        out.extend(self.command_part().cloned());
        out
    }

    /// `-- CMD ARGS...`: the part of bwrap's arguments that is not in the args file.
    fn command_part(&self) -> impl Iterator<Item = &OsString> {
        self.args.iter().skip_while(|a| *a != "--")
    }

    /// Removes the temp files of a launch that will not run.
    pub fn discard(&self) {
        for f in self
            .script
            .iter()
            .chain(&self.args_file)
            .chain(&self.temp_files)
        {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Writes `command` to `<dir>/pi-bash-<pid>-<ms>-<rand>.sh`, mode 0700.
pub fn write_script(dir: &Path, command: &str) -> Result<PathBuf, LaunchError> {
    write_temp(dir, "pi-bash", ".sh", command.as_bytes())
}

fn write_temp(dir: &Path, prefix: &str, suffix: &str, text: &[u8]) -> Result<PathBuf, LaunchError> {
    let err = |e: std::io::Error| LaunchError::Script {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    };
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
        .map_err(err)?;
    file.write_all(text).map_err(err)?;
    file.flush().map_err(err)?;
    let (_, path) = file.keep().map_err(|e| err(e.error))?;
    Ok(path)
}

/// What the guard keeps read-only in bash's writable trees, found now (the mount plan binds
/// it; the audit after a command compares against it).
pub fn scan(guard: &Guard) -> Scan {
    mounts::scan_protected(guard, &mounts::writable_roots(guard))
}

/// The mount plan for `guard` as the disk is now; `scan` comes from `scan`.
pub fn plan_for(guard: &Guard, network: bool, script: Option<&Path>, scan: &Scan) -> MountPlan {
    let facts = Facts {
        kind_of: &mounts::kind_on_disk,
        scan,
    };
    mounts::plan(guard, &facts, network, script)
}

/// bwrap's options (its arguments before `--`) as an args file; see `write_args_file`.
fn write_options_file(dir: &Path, args: &[OsString]) -> Result<PathBuf, LaunchError> {
    let options: Vec<OsString> = args.iter().take_while(|a| *a != "--").cloned().collect();
    write_args_file(dir, &options)
}

/// bwrap's arguments as a file of NUL-terminated strings (`bwrap --args FD`): paths reach
/// bwrap byte for byte, whatever their encoding, and no shell quoting is involved.
fn write_args_file(dir: &Path, args: &[OsString]) -> Result<PathBuf, LaunchError> {
    let mut bytes = Vec::new();
    for a in args {
        bytes.extend_from_slice(a.as_encoded_bytes());
        bytes.push(0);
    }
    write_temp(dir, "pi-bwrap-args", "", &bytes)
}

/// A bwrap launch of the shell command `command` (`bash -l <script>`), script in `tmp_dir`.
pub fn bwrap_bash(
    guard: &Guard,
    bwrap_program: &Path,
    network: bool,
    command: &str,
    tmp_dir: &Path,
    scan: &Scan,
) -> Result<Launch, LaunchError> {
    let script = write_script(tmp_dir, command)?;
    // Inside, the script sits in the private /tmp whatever TMPDIR is outside: bwrap creates
    // it there from the fd, so no mount point is needed in a host directory.
    let inside = Path::new("/tmp").join(script.file_name().expect("a temp file has a name"));
    let plan = plan_for(guard, network, Some(&inside), scan);
    let argv = [
        OsString::from("bash"),
        "-l".into(),
        inside.as_os_str().into(),
    ];
    let built = bwrap::build(&plan, &argv)
        .map_err(LaunchError::from)
        .and_then(|args| Ok((write_options_file(tmp_dir, &args)?, args)));
    match built {
        Ok((args_file, args)) => Ok(Launch {
            program: bwrap_program.to_path_buf(),
            args,
            script: Some(script),
            args_file: Some(args_file),
            temp_files: vec![],
            placeholders: plan.placeholders,
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&script);
            Err(e)
        }
    }
}

/// A bwrap launch of `argv` as given (the CLI's `run -- CMD ARGS`): no shell, no script; the
/// options go in an args file the caller passes on an fd (`Launch::argv_with_args_fd`).
pub fn bwrap_argv(
    guard: &Guard,
    bwrap_program: &Path,
    network: bool,
    argv: &[OsString],
    tmp_dir: &Path,
    scan: &Scan,
) -> Result<Launch, LaunchError> {
    let plan = plan_for(guard, network, None, scan);
    let args = bwrap::build(&plan, argv)?;
    Ok(Launch {
        program: bwrap_program.to_path_buf(),
        args_file: Some(write_options_file(tmp_dir, &args)?),
        args,
        script: None,
        temp_files: vec![],
        placeholders: plan.placeholders,
    })
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
    network: bool,
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

/// A sandbox-exec launch of `command` (`bash -l <script>` under a generated profile).
pub fn seatbelt_bash(
    guard: &Guard,
    program: &Path,
    network: bool,
    command: &str,
    tmp_dir: &Path,
    scan: &Scan,
) -> Result<Launch, LaunchError> {
    let profile = seatbelt::build(&seatbelt_policy(guard, network, tmp_dir, scan));
    let profile_file = write_temp(tmp_dir, "pi-sandbox", ".sb", profile.as_bytes())?;
    let script = match write_script(tmp_dir, command) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&profile_file);
            return Err(e);
        }
    };
    Ok(Launch {
        program: program.to_path_buf(),
        args: vec![
            "-f".into(),
            profile_file.as_os_str().into(),
            "bash".into(),
            "-l".into(),
            script.as_os_str().into(),
        ],
        script: Some(script),
        args_file: None,
        temp_files: vec![profile_file],
        placeholders: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_every_byte_we_generate() {
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        let l = Launch {
            program: "/usr/bin/bwrap".into(),
            args: vec![
                "--bind".into(),
                "/w/it's here".into(),
                "--".into(),
                "bash".into(),
            ],
            script: Some("/var/t/pi-bash-1-2-x.sh".into()),
            args_file: Some("/var/t/it's-args".into()),
            temp_files: vec![],
            placeholders: vec!["/w/.pi".into()],
        };
        // the arguments travel in the args file, not through the shell
        assert_eq!(
            l.shell_command().unwrap(),
            r"exec 3< '/var/t/pi-bash-1-2-x.sh' 4< '/var/t/it'\''s-args' && rm -f -- '/var/t/pi-bash-1-2-x.sh' '/var/t/it'\''s-args' && exec '/usr/bin/bwrap' --args 4 '--' 'bash'"
        );
    }

    #[test]
    fn args_file_carries_any_bytes_nul_separated() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let odd = OsString::from(std::ffi::OsStr::from_bytes(b"/w/\xff\xfe name"));
        let f = write_args_file(t.path(), &["--bind".into(), odd.clone(), odd]).unwrap();
        assert_eq!(
            std::fs::read(&f).unwrap(),
            b"--bind\0/w/\xff\xfe name\0/w/\xff\xfe name\0"
        );
    }

    #[test]
    fn the_macos_profile_carries_the_same_rules_as_the_guard() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let env = crate::config::Env::under(&root);
        std::fs::create_dir_all(env.home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&env.cwd).unwrap();
        let cfg = crate::config::merge(&env.auth_json(), &[]).unwrap();
        let guard = Guard::new(&cfg, &env, crate::guard::ApprovalMode::Ask).unwrap();
        let tmp = root.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let l = seatbelt_bash(
            &guard,
            Path::new("/usr/bin/sandbox-exec"),
            false,
            "echo hi",
            &tmp,
            &scan(&guard),
        )
        .unwrap();
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
            std::fs::read_to_string(l.script.as_ref().unwrap()).unwrap(),
            "echo hi"
        );
        let cmd = l.shell_command().unwrap();
        assert!(cmd.contains(&format!("rm -f -- '{}'", profile_file.display())));
        // the shell command cleans up both files
        let status = std::process::Command::new("bash")
            .arg("-c")
            .arg(cmd.replace("'/usr/bin/sandbox-exec'", "true"))
            .status()
            .unwrap();
        assert!(status.success());
        assert!(!profile_file.exists());
        assert!(!l.script.as_ref().unwrap().exists());
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
