//! What bash's writable trees hold: the index of the trees, the audit after each command,
//! the env files bash hides, the git lookups (hooks, configs, gitfiles), the quarantine.

pub mod audit;
pub mod committed_env;
pub mod env_files;
pub mod git_config;
pub mod hooks;
pub mod index;
mod index_verify;
pub(crate) mod protected_links;
pub mod quarantine;
pub(crate) mod scan;
