//! Why a session has no usable policy: the error of a load, with the stable code the JS side
//! gets.

use std::path::PathBuf;

use crate::policy::config::ConfigError;
use crate::policy::guard::GuardError;

/// Why a session has no usable policy. Each carries a stable code for the JS side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadError {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    pub(crate) file: Option<PathBuf>,
}

impl LoadError {
    /// What stands before the first load, which `Session::load` does.
    pub(crate) fn not_loaded() -> LoadError {
        LoadError {
            code: "E_NOT_LOADED",
            message: String::new(),
            file: None,
        }
    }

    /// `PI_SANDBOX_APPROVAL_MODE` is none of the modes.
    pub(crate) fn approval_mode(raw: &str) -> LoadError {
        LoadError {
            code: "E_APPROVAL_MODE",
            message: format!(
                "PI_SANDBOX_APPROVAL_MODE={raw:?} is not one of ask, always, deny; set one of those or unset it (ask)"
            ),
            file: None,
        }
    }

    /// A list the config parsed but the session cannot compile (a domain, an env pattern).
    pub(crate) fn schema(message: String) -> LoadError {
        LoadError {
            code: "E_CONFIG_SCHEMA",
            message,
            file: None,
        }
    }
}

impl From<ConfigError> for LoadError {
    fn from(e: ConfigError) -> Self {
        LoadError {
            code: e.code(),
            file: Some(e.file().to_path_buf()),
            message: e.to_string(),
        }
    }
}

impl From<GuardError> for LoadError {
    fn from(e: GuardError) -> Self {
        LoadError {
            code: match e {
                GuardError::Rule { .. } => "E_CONFIG_RULE",
                GuardError::Path(_) => "E_CONFIG_PATH",
            },
            file: None,
            message: e.to_string(),
        }
    }
}
