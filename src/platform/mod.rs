//! OS-level isolation for bash: detection, mount planning, the launch, and each OS's builder
//! (`linux`: bubblewrap, the kernel filter, the socket supervisor; `macos`: sandbox-exec).

pub(crate) mod command;
pub(crate) mod detect;
pub(crate) mod launch;
pub(crate) mod linux;
pub(crate) mod macos;
pub(crate) mod mounts;
