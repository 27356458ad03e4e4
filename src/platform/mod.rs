//! OS-level isolation for bash: detection, mount planning, the launch, and each OS's builder
//! (`linux`: bubblewrap, the kernel filter, the socket supervisor; `macos`: sandbox-exec).

pub mod command;
pub mod detect;
pub mod launch;
pub mod linux;
pub mod macos;
pub mod mounts;
