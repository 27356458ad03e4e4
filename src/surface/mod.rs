//! What bash's writable trees hold: the index of the trees, the audit after each command,
//! the env files bash hides, the git lookups (hooks, configs, gitfiles), the quarantine.

pub(crate) mod audit;
pub(crate) mod committed_env;
pub(crate) mod env_files;
pub(crate) mod git_config;
pub(crate) mod git_objects;
pub(crate) mod hooks;
pub(crate) mod index;
mod index_verify;
pub(crate) mod protected_links;
pub(crate) mod quarantine;
pub(crate) mod scan;
