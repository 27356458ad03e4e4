//! Linux: the bubblewrap argv, the kernel filter (seccomp), the unix-socket supervisor, and
//! the launch that puts them together (Linux only; `bwrap` and `seccomp` build anywhere).

pub(crate) mod bwrap;
#[cfg(target_os = "linux")]
pub(crate) mod fd_passing;
#[cfg(target_os = "linux")]
pub(crate) mod launch;
#[cfg(target_os = "linux")]
pub(crate) mod pod;
pub(crate) mod seccomp;
#[cfg(target_os = "linux")]
pub(crate) mod supervisor;
