//! Pure decisions: the layered config, project trust, path rules, the guard, pi's control
//! surface (the protected table), the credential list, the environment filter, the bash
//! decision, and where pi keeps and loads its own files.

pub mod bash;
pub mod config;
pub(crate) mod config_values;
pub mod credentials;
pub mod environment;
pub mod guard;
pub mod pi_loads;
pub mod pi_session;
pub(crate) mod project_layer;
pub mod protected;
pub mod rules;
pub(crate) mod session_env;
pub mod trust;
