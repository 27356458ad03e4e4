//! Each error of the N-API layer mapped to its JS `code`, in one place: the session's typed
//! errors, and what this layer refuses itself (a JS value it cannot take or hand back).

use std::ffi::OsString;
use std::fmt;

use napi::Error;

use crate::session::files::FileOpError;
use crate::session::grants::GrantError;
use crate::session::UnknownMode;

/// A JS error whose `code` is our stable code (e.g. `E_BAD_MODE`).
fn js_error(code: &str, message: impl Into<String>) -> Error<String> {
    Error::new(code.to_string(), message.into())
}

/// What the N-API layer refuses before or after the session is asked.
#[derive(Debug)]
pub(crate) enum CallError {
    /// Not `read` or `write`.
    BadOp(String),
    /// Not a path, or not one the call takes; the message says which.
    BadPath(String),
    BadNetwork(String),
    /// Not a write scope (`session`, `project`, `global`).
    BadScope(String),
    /// `prepareRun` with an empty argv.
    NoCommand,
    /// A launch argument spawn could not pass.
    ArgNotUtf8(OsString),
    /// The host proxy could not listen.
    Proxy(std::io::Error),
}

impl CallError {
    fn code(&self) -> &'static str {
        match self {
            CallError::BadOp(_) => "E_BAD_OP",
            CallError::BadPath(_) => "E_BAD_PATH",
            CallError::BadNetwork(_) => "E_BAD_NETWORK",
            CallError::BadScope(_) => "E_BAD_SCOPE",
            CallError::NoCommand => "E_BAD_COMMAND",
            CallError::ArgNotUtf8(_) => "E_LAUNCH",
            CallError::Proxy(_) => "E_PROXY",
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::BadOp(op) => {
                write!(f, "unknown operation {op:?}; use \"read\" or \"write\"")
            }
            CallError::BadPath(why) => f.write_str(why),
            CallError::BadNetwork(n) => write!(
                f,
                "unknown network mode {n:?}; use \"filtered\", \"off\" or \"on\""
            ),
            CallError::BadScope(scope) => {
                write!(f, "unknown scope {scope:?}: session, project or global")
            }
            CallError::NoCommand => f.write_str("no command given"),
            CallError::ArgNotUtf8(a) => write!(
                f,
                "argument {a:?} is not valid UTF-8 and cannot be passed to spawn"
            ),
            CallError::Proxy(e) => write!(f, "cannot start the proxy: {e}"),
        }
    }
}

impl From<CallError> for Error<String> {
    fn from(e: CallError) -> Self {
        js_error(e.code(), e.to_string())
    }
}

/// Every grant the user could not make: `E_GRANT` (an unknown scope or key too).
impl From<GrantError> for Error<String> {
    fn from(e: GrantError) -> Self {
        js_error("E_GRANT", e.to_string())
    }
}

impl From<UnknownMode> for Error<String> {
    fn from(e: UnknownMode) -> Self {
        js_error("E_BAD_MODE", e.to_string())
    }
}

/// A file operation's failure as a JS error: `E_BLOCKED` (the guard's reason), `E_CHANGED`
/// (a link appeared on the judged path), or the errno name Node would use (`ENOENT`, ...).
impl From<FileOpError> for Error<String> {
    fn from(e: FileOpError) -> Self {
        use crate::open::OpenError;
        match e {
            FileOpError::Blocked(reason) => js_error("E_BLOCKED", reason),
            FileOpError::Open(e @ OpenError::Changed { .. }) => {
                js_error("E_CHANGED", e.to_string())
            }
            FileOpError::Open(e @ OpenError::HardLinked { .. }) => {
                js_error("E_BLOCKED", e.to_string())
            }
            FileOpError::Open(e @ OpenError::NotRegular { .. }) => {
                js_error("EISDIR", e.to_string())
            }
            FileOpError::Open(OpenError::Io { path, source }) => {
                let code = match source.raw_os_error() {
                    Some(libc::ENOENT) => "ENOENT",
                    Some(libc::EACCES) => "EACCES",
                    Some(libc::EPERM) => "EPERM",
                    Some(libc::EISDIR) => "EISDIR",
                    Some(libc::ENOTDIR) => "ENOTDIR",
                    Some(libc::EROFS) => "EROFS",
                    Some(libc::ENOSPC) => "ENOSPC",
                    Some(libc::EEXIST) => "EEXIST",
                    _ => "EIO",
                };
                js_error(code, format!("{code}: {source}, open '{}'", path.display()))
            }
        }
    }
}

/// An error of a call run off the main thread (its code and message, sent back to it),
/// thrown again on the main thread with the same `code`, as the synchronous call throws.
pub(crate) fn rethrown(env: napi::Env, (code, message): (String, String)) -> Error {
    let js = napi::JsError::from(js_error(&code, message)).into_unknown(env);
    Error::from(js)
}

/// Runs `f` on a worker thread's behalf: a panic becomes a JS error instead of aborting pi.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> napi::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        Error::new(
            napi::Status::GenericFailure,
            "E_INTERNAL: pi-sandbox-rs hit an internal error (a bug; please report it). The operation did not happen.",
        )
    })
}
