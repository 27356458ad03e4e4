//! Each error of the N-API layer mapped to its JS `code`, in one place.

use napi::Error;

use crate::session::files::FileOpError;

/// A JS error whose `code` is our stable code (e.g. `E_BAD_MODE`).
pub(crate) fn js_error(code: &str, message: impl Into<String>) -> Error<String> {
    Error::new(code.to_string(), message.into())
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

/// A file operation's failure as a JS error: `E_BLOCKED` (the guard's reason), `E_CHANGED`
/// (a link appeared on the judged path), or the errno name Node would use (`ENOENT`, ...).
pub(crate) fn file_op_error(e: FileOpError) -> Error<String> {
    use crate::open::OpenError;
    match e {
        FileOpError::Blocked(reason) => js_error("E_BLOCKED", reason),
        FileOpError::Open(e @ OpenError::Changed { .. }) => js_error("E_CHANGED", e.to_string()),
        FileOpError::Open(e @ OpenError::HardLinked { .. }) => js_error("E_BLOCKED", e.to_string()),
        FileOpError::Open(e @ OpenError::NotRegular { .. }) => js_error("EISDIR", e.to_string()),
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
