//! Linux: the bubblewrap argv, the kernel filter (seccomp), the unix-socket supervisor, and
//! the launch that puts them together (Linux only; `bwrap` and `seccomp` build anywhere).

pub mod bwrap;
#[cfg(target_os = "linux")]
pub mod fd_passing;
#[cfg(target_os = "linux")]
pub(crate) mod launch;
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod supervisor;
