//! The seccomp filters every sandboxed command runs under (bwrap `--add-seccomp-fd`): the
//! kernel interfaces a coding task never needs and that are among the kernel's largest attack
//! surfaces, in the spirit of Docker's default profile. Pure: policy → BPF programs, built
//! with `seccompiler`; `launch` hands each to bwrap in an unnamed file.
//!
//! Three groups of rules, one per answer, since a seccompiler filter has one action for its
//! matches, chained into one program (`chained`): each filter a process carries is run at
//! every one of its system calls, and each costs a load into the kernel per command.
//! - `EPERM`: the kernel keyring (`keyctl`, `add_key`, `request_key`), `bpf`,
//!   `perf_event_open`, `userfaultfd`, `setns`, and `unshare`/`clone` asking for any new
//!   namespace (a new user namespace is also refused by bwrap's `--disable-userns` where
//!   bwrap has it).
//! - `ENOSYS`: io_uring (its operations bypass seccomp entirely), and `clone3`, whose flags sit
//!   in memory a filter cannot read; ENOSYS makes libc fall back to `clone`, checked above.
//! - `EAFNOSUPPORT`: sockets of any family but local, IPv4, IPv6 and netlink (no vsock to a
//!   VM's host, no raw packets).
//!
//! On x86_64 every rule is doubled for the x32 ABI (the same numbers with bit 30 set), which
//! would otherwise reach the same kernel code under numbers the filter does not list, where
//! the kernel runs x32 calls at all (`x32_reachable`; most kernels today are built without,
//! and answer every such number ENOSYS before any system call's code runs).

#[cfg(target_os = "linux")]
use std::collections::BTreeMap;
use std::fmt;

#[cfg(target_os = "linux")]
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// One filter ready for bwrap: what it is for, and its instructions as the kernel reads
/// them (`struct sock_filter[]`, native byte order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    pub(crate) purpose: &'static str,
    pub(crate) bytes: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SeccompError {
    /// No filter is written for this CPU: the sandbox cannot be set up (fail closed).
    UnsupportedArch(String),
    Build(String),
}

impl fmt::Display for SeccompError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeccompError::UnsupportedArch(a) => write!(
                f,
                "no seccomp filter is defined for this CPU ({a}); sandboxed bash needs one (x86_64 or aarch64)"
            ),
            SeccompError::Build(e) => write!(f, "the seccomp filter could not be built: {e}"),
        }
    }
}

impl std::error::Error for SeccompError {}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    /// Every `CLONE_NEW*` flag: a request for any of them is refused.
    pub(super) const NEW_NAMESPACE_FLAGS: [u64; 8] = [
        libc::CLONE_NEWNS as u64,
        libc::CLONE_NEWCGROUP as u64,
        libc::CLONE_NEWUTS as u64,
        libc::CLONE_NEWIPC as u64,
        libc::CLONE_NEWUSER as u64,
        libc::CLONE_NEWPID as u64,
        libc::CLONE_NEWNET as u64,
        0x80, // CLONE_NEWTIME (not in every libc)
    ];

    /// Socket families a sandboxed command may create.
    pub(super) const ALLOWED_FAMILIES: [u64; 4] = [
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
        libc::AF_NETLINK as u64,
    ];

    const X32_SYSCALL_BIT: i64 = 0x4000_0000;

    struct Arch {
        target: TargetArch,
        x32: bool,
        /// `clone`'s flags argument (x86_64 and aarch64 both pass it first).
        clone_flags_arg: u8,
    }

    /// Whether this kernel runs x32 system calls: `getpid` under its x32 number, tried once in
    /// a forked child (a filter above pi that kills such calls must not kill pi). A child that
    /// does not come back with the answer counts as "reachable": the rules are kept.
    pub(super) fn x32_reachable() -> bool {
        static REACHABLE: once_cell::sync::OnceCell<bool> = once_cell::sync::OnceCell::new();
        *REACHABLE.get_or_init(|| {
            // SAFETY: the child makes one system call and exits; nothing else runs in it.
            unsafe {
                let pid = libc::fork();
                if pid == 0 {
                    let r = libc::syscall(X32_SYSCALL_BIT | libc::SYS_getpid);
                    let enosys = r < 0 && *libc::__errno_location() == libc::ENOSYS;
                    libc::_exit(if enosys { 0 } else { 1 });
                }
                if pid < 0 {
                    return true;
                }
                let mut status = 0;
                let waited = loop {
                    let w = libc::waitpid(pid, &mut status, 0);
                    if w >= 0 || *libc::__errno_location() != libc::EINTR {
                        break w;
                    }
                };
                let enosys =
                    waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                !enosys
            }
        })
    }

    fn arch() -> Result<Arch, SeccompError> {
        match std::env::consts::ARCH {
            "x86_64" => Ok(Arch {
                target: TargetArch::x86_64,
                x32: x32_reachable(),
                clone_flags_arg: 0,
            }),
            "aarch64" => Ok(Arch {
                target: TargetArch::aarch64,
                x32: false,
                clone_flags_arg: 0,
            }),
            other => Err(SeccompError::UnsupportedArch(other.into())),
        }
    }

    fn build_err(e: impl fmt::Display) -> SeccompError {
        SeccompError::Build(e.to_string())
    }

    /// `arg & flag == flag`: one rule per flag, since rules of one syscall are alternatives.
    /// Every flag asked about sits in the low 32 bits, so only those are compared (half the
    /// instructions of a 64-bit compare).
    fn any_flag(arg: u8, flags: &[u64]) -> Result<Vec<SeccompRule>, SeccompError> {
        flags
            .iter()
            .map(|&f| {
                debug_assert!(f <= u32::MAX as u64);
                SeccompRule::new(vec![SeccompCondition::new(
                    arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(f),
                    f,
                )
                .map_err(build_err)?])
                .map_err(build_err)
            })
            .collect()
    }

    fn program(
        purpose: &'static str,
        arch: &Arch,
        rules: Vec<(i64, Vec<SeccompRule>)>,
        errno: i32,
    ) -> Result<Program, SeccompError> {
        compile(
            purpose,
            arch,
            rules,
            SeccompAction::Errno(errno as u32),
            |_| {},
        )
    }

    fn compile(
        purpose: &'static str,
        arch: &Arch,
        rules: Vec<(i64, Vec<SeccompRule>)>,
        on_match: SeccompAction,
        patch: impl Fn(&mut seccompiler::sock_filter),
    ) -> Result<Program, SeccompError> {
        let mut map: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for (nr, r) in rules {
            if arch.x32 {
                map.insert(nr | X32_SYSCALL_BIT, r.clone());
            }
            map.insert(nr, r);
        }
        let filter = SeccompFilter::new(map, SeccompAction::Allow, on_match, arch.target)
            .map_err(build_err)?;
        let mut compiled: BpfProgram = filter.try_into().map_err(build_err)?;
        compiled.iter_mut().for_each(patch);
        let mut bytes = Vec::with_capacity(compiled.len() * 8);
        for insn in &compiled {
            bytes.extend_from_slice(&insn.code.to_ne_bytes());
            bytes.push(insn.jt);
            bytes.push(insn.jf);
            bytes.extend_from_slice(&insn.k.to_ne_bytes());
        }
        Ok(Program { purpose, bytes })
    }

    /// `programs` as one, in order: where one would allow the call, it goes on to the next
    /// (its `ret ALLOW` becomes a jump to the next one's start, an instruction for an
    /// instruction, so no other jump moves). Every seccompiler program begins by loading the
    /// architecture, so none depends on what the one before left in the accumulator; and no
    /// two of ours match the same call, so the first answer is the one separate filters
    /// would give.
    fn chained(purpose: &'static str, programs: &[Program]) -> Program {
        const INSN: usize = 8;
        let mut bytes = Vec::new();
        for (i, p) in programs.iter().enumerate() {
            let mut own = p.bytes.clone();
            let len = own.len() / INSN;
            if i + 1 < programs.len() {
                for (at, insn) in own.chunks_exact_mut(INSN).enumerate() {
                    let code = u16::from_ne_bytes([insn[0], insn[1]]);
                    let k = u32::from_ne_bytes([insn[4], insn[5], insn[6], insn[7]]);
                    if code == (libc::BPF_RET | libc::BPF_K) as u16 && k == libc::SECCOMP_RET_ALLOW
                    {
                        let to_next = (len - at - 1) as u32;
                        insn[..2].copy_from_slice(
                            &((libc::BPF_JMP | libc::BPF_JA) as u16).to_ne_bytes(),
                        );
                        insn[2] = 0;
                        insn[3] = 0;
                        insn[4..].copy_from_slice(&to_next.to_ne_bytes());
                    }
                }
            }
            bytes.extend_from_slice(&own);
        }
        Program { purpose, bytes }
    }

    /// The filters, in the order bwrap loads them; built once per process.
    pub(crate) fn kernel_filters() -> Result<&'static [Program], SeccompError> {
        static BUILT: once_cell::sync::OnceCell<Result<Vec<Program>, SeccompError>> =
            once_cell::sync::OnceCell::new();
        BUILT
            .get_or_init(build_kernel_filters)
            .as_deref()
            .map_err(Clone::clone)
    }

    fn build_kernel_filters() -> Result<Vec<Program>, SeccompError> {
        let arch = arch()?;
        let always = Vec::new;
        let refused = vec![
            (libc::SYS_socket, unix_datagrams()?),
            (libc::SYS_socketpair, unix_datagrams()?),
            (libc::SYS_keyctl, always()),
            (libc::SYS_add_key, always()),
            (libc::SYS_request_key, always()),
            (libc::SYS_bpf, always()),
            (libc::SYS_perf_event_open, always()),
            (libc::SYS_userfaultfd, always()),
            (libc::SYS_setns, always()),
            (libc::SYS_unshare, any_flag(0, &NEW_NAMESPACE_FLAGS)?),
            (
                libc::SYS_clone,
                any_flag(arch.clone_flags_arg, &NEW_NAMESPACE_FLAGS)?,
            ),
        ];
        let missing = vec![
            (libc::SYS_io_uring_setup, always()),
            (libc::SYS_io_uring_enter, always()),
            (libc::SYS_io_uring_register, always()),
            (libc::SYS_clone3, always()),
        ];
        let sockets = vec![
            (libc::SYS_socket, family_rules(0)?),
            (libc::SYS_socketpair, family_rules(0)?),
        ];
        let groups = [
            program(
                "keyring, bpf, perf, userfaultfd, namespaces, unix datagram sockets",
                &arch,
                refused,
                libc::EPERM,
            )?,
            program("io_uring, clone3", &arch, missing, libc::ENOSYS)?,
            program(
                "socket families other than unix, inet, inet6, netlink",
                &arch,
                sockets,
                libc::EAFNOSUPPORT,
            )?,
        ];
        Ok(vec![chained(
            "keyring, bpf, perf, userfaultfd, namespaces, unix datagram sockets (EPERM); io_uring, clone3 (ENOSYS); socket families other than unix, inet, inet6, netlink (EAFNOSUPPORT)",
            &groups,
        )])
    }

    /// A unix datagram socket sends to whatever address each call names, past the
    /// supervisor that judges `connect`; stream and seqpacket sockets take no address
    /// after it. (AF_UNIX makes SOCK_RAW a datagram socket too.)
    fn unix_datagrams() -> Result<Vec<SeccompRule>, SeccompError> {
        [libc::SOCK_DGRAM, libc::SOCK_RAW]
            .iter()
            .map(|&kind| {
                SeccompRule::new(vec![
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        libc::AF_UNIX as u64,
                    )
                    .map_err(build_err)?,
                    SeccompCondition::new(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(0xf),
                        kind as u64,
                    )
                    .map_err(build_err)?,
                ])
                .map_err(build_err)
            })
            .collect()
    }

    /// One rule, its conditions all required: the family is none of the allowed ones
    /// (so families the kernel adds later are refused too). A long list of refused
    /// families made a filter of 1,250 instructions whose loading cost every command a
    /// millisecond.
    fn family_rules(syscall_family_arg: u8) -> Result<Vec<SeccompRule>, SeccompError> {
        let not_allowed = ALLOWED_FAMILIES
            .iter()
            .map(|&f| {
                SeccompCondition::new(
                    syscall_family_arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    f,
                )
                .map_err(build_err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(vec![SeccompRule::new(not_allowed).map_err(build_err)?])
    }

    /// `notify_filters` as `pi-sandbox-init` reads them (`framed`), built once per process.
    pub(crate) fn notify_file() -> Result<&'static [u8], SeccompError> {
        static BUILT: once_cell::sync::OnceCell<Result<Vec<u8>, SeccompError>> =
            once_cell::sync::OnceCell::new();
        BUILT
            .get_or_init(|| notify_filters().map(|p| framed(&p)))
            .as_deref()
            .map_err(Clone::clone)
    }

    /// The filter `pi-sandbox-init` installs inside the sandbox (installed with a listener,
    /// which goes to the supervisor), its two parts chained:
    ///
    /// 1. every `connect` waits for the supervisor (`platform::supervisor`), which performs
    ///    it itself on the socket it judged, with the address it read, or refuses it;
    /// 2. no filter with a listener of its own may follow: of two filters that both hand a
    ///    call to a listener, the newer one gets it, and a command's own supervisor could
    ///    let every connect through. (Current kernels refuse a second listener in one chain
    ///    with EBUSY already; this does not depend on it.) A filter answers every call made
    ///    after it is installed, so this part holds from the moment the first does.
    ///
    /// seccompiler has no user-notification action: the first is built with `Trap` as the
    /// match action and those returns are rewritten.
    fn notify_filters() -> Result<Vec<Program>, SeccompError> {
        let arch = arch()?;
        let notify = compile(
            "connect, judged by the supervisor",
            &arch,
            vec![(libc::SYS_connect, Vec::new())],
            SeccompAction::Trap,
            |insn| {
                if insn.code == (libc::BPF_RET | libc::BPF_K) as u16
                    && insn.k == libc::SECCOMP_RET_TRAP
                {
                    insn.k = libc::SECCOMP_RET_USER_NOTIF;
                }
            },
        )?;
        let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
        let seal = program(
            "no second supervisor",
            &arch,
            vec![(
                libc::SYS_seccomp,
                vec![SeccompRule::new(vec![
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        libc::SECCOMP_SET_MODE_FILTER as u64,
                    )
                    .map_err(build_err)?,
                    SeccompCondition::new(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(listener),
                        listener,
                    )
                    .map_err(build_err)?,
                ])
                .map_err(build_err)?],
            )],
            libc::EPERM,
        )?;
        Ok(vec![chained(
            "connect, judged by the supervisor; no second supervisor",
            &[notify, seal],
        )])
    }
}

/// Programs in one file for `pi-sandbox-init`: each as its length in bytes (u32, little
/// endian), then its instructions.
pub(crate) fn framed(programs: &[Program]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in programs {
        out.extend_from_slice(&(p.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&p.bytes);
    }
    out
}

#[cfg(target_os = "linux")]
pub(crate) use linux::{kernel_filters, notify_file};

/// No seccomp outside Linux: callers fail closed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn kernel_filters() -> Result<&'static [Program], SeccompError> {
    Err(SeccompError::UnsupportedArch(std::env::consts::OS.into()))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn notify_file() -> Result<&'static [u8], SeccompError> {
    Err(SeccompError::UnsupportedArch(std::env::consts::OS.into()))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Installs `programs` in a forked child and returns what `probe` gives there (an errno,
    /// or 0), so each rule is checked against the real kernel, not a model of it.
    fn in_filtered_child(programs: &[Program], probe: impl Fn() -> i32) -> i32 {
        let mut pipe = [0; 2];
        // SAFETY: plain pipe and fork; the child only makes system calls and exits.
        unsafe {
            assert_eq!(libc::pipe(pipe.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                for p in programs {
                    let prog = libc::sock_fprog {
                        len: (p.bytes.len() / 8) as u16,
                        filter: p.bytes.as_ptr() as *mut libc::sock_filter,
                    };
                    if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0 {
                        libc::_exit(99);
                    }
                }
                let r: i32 = probe();
                libc::write(pipe[1], &r as *const i32 as *const libc::c_void, 4);
                libc::_exit(0);
            }
            let mut r: i32 = -1;
            libc::read(pipe[0], &mut r as *mut i32 as *mut libc::c_void, 4);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::close(pipe[0]);
            libc::close(pipe[1]);
            r
        }
    }

    fn errno_of(ret: libc::c_long) -> i32 {
        if ret < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
        } else {
            0
        }
    }

    #[test]
    fn each_rule_answers_in_the_real_kernel() {
        let programs = kernel_filters().unwrap();
        type Case = (&'static str, fn() -> i32, i32);
        let cases: Vec<Case> = vec![
            (
                "keyctl",
                || errno_of(unsafe { libc::syscall(libc::SYS_keyctl, 0, 0, 0, 0, 0) }),
                libc::EPERM,
            ),
            (
                "add_key",
                || errno_of(unsafe { libc::syscall(libc::SYS_add_key, 0, 0, 0, 0, 0) }),
                libc::EPERM,
            ),
            (
                "bpf",
                || errno_of(unsafe { libc::syscall(libc::SYS_bpf, 0, 0, 0) }),
                libc::EPERM,
            ),
            (
                "unshare(CLONE_NEWUSER)",
                || errno_of(unsafe { libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER) }),
                libc::EPERM,
            ),
            (
                "unshare(CLONE_NEWNET | CLONE_FILES)",
                || {
                    errno_of(unsafe {
                        libc::syscall(libc::SYS_unshare, libc::CLONE_NEWNET | libc::CLONE_FILES)
                    })
                },
                libc::EPERM,
            ),
            (
                "io_uring_setup",
                || errno_of(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1, 0) }),
                libc::ENOSYS,
            ),
            (
                "clone3",
                || errno_of(unsafe { libc::syscall(libc::SYS_clone3, 0, 0) }),
                libc::ENOSYS,
            ),
            (
                "socket(AF_VSOCK)",
                || errno_of(unsafe { libc::socket(libc::AF_VSOCK, libc::SOCK_STREAM, 0) } as _),
                libc::EAFNOSUPPORT,
            ),
            (
                "socket(AF_PACKET)",
                || errno_of(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) } as _),
                libc::EAFNOSUPPORT,
            ),
            (
                "socketpair(AF_ALG)",
                || {
                    let mut fds = [0; 2];
                    errno_of(unsafe {
                        libc::socketpair(libc::AF_ALG, libc::SOCK_SEQPACKET, 0, fds.as_mut_ptr())
                    } as _)
                },
                libc::EAFNOSUPPORT,
            ),
            (
                "clone(CLONE_NEWNS with a high bit set)",
                || {
                    errno_of(unsafe {
                        libc::syscall(
                            libc::SYS_clone,
                            (libc::CLONE_NEWNS as u64 | 1 << 40) as libc::c_ulong,
                            0,
                            0,
                            0,
                            0,
                        )
                    })
                },
                libc::EPERM,
            ),
            // Still allowed: what ordinary work does.
            (
                "socket(AF_NETLINK)",
                || {
                    errno_of(unsafe {
                        libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE)
                    } as _)
                },
                0,
            ),
            (
                "socket(AF_INET)",
                || errno_of(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) } as _),
                0,
            ),
            (
                "unshare(CLONE_FILES)",
                || errno_of(unsafe { libc::syscall(libc::SYS_unshare, libc::CLONE_FILES) }),
                0,
            ),
            (
                "socket(AF_UNIX)",
                || errno_of(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) } as _),
                0,
            ),
            (
                "socket(AF_INET6)",
                || errno_of(unsafe { libc::socket(libc::AF_INET6, libc::SOCK_DGRAM, 0) } as _),
                0,
            ),
            (
                "fork",
                || {
                    // SAFETY: the grandchild exits at once.
                    let pid = unsafe { libc::fork() };
                    if pid == 0 {
                        unsafe { libc::_exit(0) };
                    }
                    if pid > 0 {
                        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
                        0
                    } else {
                        errno_of(-1)
                    }
                },
                0,
            ),
        ];
        for (what, probe, want) in cases {
            assert_eq!(in_filtered_child(programs, probe), want, "{what}");
        }
    }

    /// x32 numbers reach the same kernel code where the kernel runs x32 calls: there the
    /// filter refuses them; elsewhere the kernel answers ENOSYS before any call's code runs,
    /// and the filter leaves the x32 rules out.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_numbers_are_refused_too() {
        let programs = kernel_filters().unwrap();
        let x32_keyctl =
            || errno_of(unsafe { libc::syscall(libc::SYS_keyctl | 0x4000_0000, 0, 0, 0, 0, 0) });
        let unfiltered = in_filtered_child(&[], x32_keyctl);
        assert_eq!(linux::x32_reachable(), unfiltered != libc::ENOSYS);
        let want = if linux::x32_reachable() {
            libc::EPERM
        } else {
            libc::ENOSYS
        };
        assert_eq!(in_filtered_child(programs, x32_keyctl), want);
    }

    /// One program for bwrap, one for pi-sandbox-init: each filter is run at every system
    /// call of the command.
    #[test]
    fn the_rules_make_one_program_for_each_loader() {
        assert_eq!(kernel_filters().unwrap().len(), 1);
        let framed = notify_file().unwrap();
        let len = u32::from_le_bytes(framed[..4].try_into().unwrap()) as usize;
        assert_eq!(
            framed.len(),
            4 + len,
            "one program in pi-sandbox-init's file"
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            /// `unshare` is refused exactly when a new namespace is asked for, whatever else
            /// the flags hold.
            #[test]
            fn unshare_is_refused_exactly_for_namespaces(flags in any::<u32>()) {
                let programs = kernel_filters().unwrap();
                let ns = linux::NEW_NAMESPACE_FLAGS.iter().fold(0u64, |a, f| a | f) as u32;
                // The probe runs in a throwaway child: a granted unshare changes only it.
                let got = in_filtered_child(programs, || {
                    errno_of(unsafe { libc::syscall(libc::SYS_unshare, flags as libc::c_ulong) })
                });
                if flags & ns != 0 {
                    prop_assert_eq!(got, libc::EPERM, "flags {:#x}", flags);
                } else {
                    prop_assert_ne!(got, libc::EPERM, "flags {:#x}", flags);
                }
            }

            /// A socket of any family but unix, IPv4, IPv6 and netlink is refused; those
            /// four never are (for stream sockets).
            #[test]
            fn socket_families_are_refused_exactly_outside_the_list(family in prop_oneof![0i32..64, any::<i32>()]) {
                let programs = kernel_filters().unwrap();
                let got = in_filtered_child(programs, || {
                    errno_of(unsafe { libc::socket(family, libc::SOCK_STREAM, 0) } as _)
                });
                if linux::ALLOWED_FAMILIES.contains(&(family as u32 as u64)) {
                    prop_assert_ne!(got, libc::EAFNOSUPPORT, "family {}", family);
                } else {
                    prop_assert_eq!(got, libc::EAFNOSUPPORT, "family {}", family);
                }
            }
        }
    }
}
