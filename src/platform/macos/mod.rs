//! macOS: the sandbox-exec (SBPL) profile.

pub(crate) mod launch;
pub(crate) mod seatbelt;
