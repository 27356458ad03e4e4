//! Turning a command into a sandboxed launch: the program to spawn, its arguments, and the
//! files it gets as fds 3, 4, ... (bwrap's options, the mount sources, the script).
//!
//! Each OS's launch lives in its folder (`linux::launch`, `macos::launch`); what they share
//! is in `command` (named from here too, as callers always did); this file picks between them.

pub(crate) use crate::platform::command::{
    scan, Command, Launch, LaunchError, Refusal, Setup, Sockets, Supervisor, NO_BWRAP_FEATURES,
};

// Each OS's launch, and what stands in for Linux's elsewhere: the one place that picks by OS.
// sandbox-exec's launch builds everywhere (its profile is pure, so Linux tests it); bwrap's
// only on Linux.

#[cfg(target_os = "linux")]
pub(crate) use crate::platform::linux::launch::bwrap;
pub(crate) use crate::platform::macos::launch::seatbelt;

/// No bwrap launch outside Linux: refused as on a machine without the kernel filter.
#[cfg(not(target_os = "linux"))]
pub(crate) fn bwrap(_setup: &Setup, _command: Command) -> Result<Launch, LaunchError> {
    Err(LaunchError::Seccomp(
        crate::platform::linux::seccomp::SeccompError::UnsupportedArch(std::env::consts::OS.into()),
    ))
}
