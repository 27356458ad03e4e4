//! Linux: the bubblewrap argv, the kernel filter (seccomp), the unix-socket supervisor.

pub mod bwrap;
#[cfg(target_os = "linux")]
pub mod fd_passing;
pub(crate) mod launch;
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod supervisor;
