//! pi-sandbox-rs: the sandbox for the pi coding agent, exported to Node through N-API.
//!
//! One tool call flows down the tree: `napi` (the JS skin) → `session` (state, the file-tool
//! operations, the bash flow, grants) → `policy` (pure decisions: config, trust, the guard,
//! the protected table) and `surface` (what bash's writable trees hold: the index, the audit,
//! env files, git lookups) → `platform` (each OS's sandbox) and `net` (the proxy) → leaves
//! (`paths`, `open`, `content`, `process`, `redact`, `shown`, `violations`). docs/architecture.md is the map.

mod content;
pub mod napi;
mod net;
mod open;
mod paths;
mod platform;
mod policy;
mod process;
mod redact;
mod session;
mod shown;
mod surface;
mod violations;
