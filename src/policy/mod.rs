//! Pure decisions: the layered config, project trust, path rules, the guard, pi's control
//! surface (the protected table), the credential list, the environment filter, the bash
//! decision, where pi keeps and loads its own files, and what `/tmp` means in a session.

pub(crate) mod bash;
pub(crate) mod config;
pub(crate) mod config_values;
pub(crate) mod credentials;
pub(crate) mod env_allow;
pub(crate) mod env_values;
pub(crate) mod environment;
pub(crate) mod guard;
pub(crate) mod pi_loads;
pub(crate) mod pi_session;
pub(crate) mod project_layer;
pub(crate) mod protected;
pub(crate) mod rules;
pub(crate) mod session_env;
pub(crate) mod tmp_map;
pub(crate) mod trust;
