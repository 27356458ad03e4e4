//! OS-level isolation for bash: detection, mount planning, and the per-platform builders.

pub mod bwrap;
pub mod detect;
#[cfg(target_os = "linux")]
pub mod fd_passing;
pub mod mounts;
pub(crate) mod protected_links;
pub mod seatbelt;
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod supervisor;
