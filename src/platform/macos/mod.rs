//! macOS: the sandbox-exec (SBPL) profile.

pub mod seatbelt;
