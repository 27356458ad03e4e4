//! The session's network gate seen from JS: the proxy on the host's loopback, the questions
//! about hosts sent to a JS callback.

use std::sync::Arc;

use napi_derive::napi;

use super::objects::*;

/// A proxy on the host's loopback, made by `Sandbox.startHostProxy` only.
#[napi]
pub struct HostProxy {
    pub(crate) port: u16,
    pub(crate) net: Option<Arc<crate::net::gate::CommandNet>>,
}

#[napi]
impl HostProxy {
    /// Its port on 127.0.0.1 (HTTP CONNECT, plain HTTP and SOCKS5).
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        self.port.into()
    }

    /// Stops it (every connection cut); returns a sentence per host it blocked.
    #[napi(catch_unwind)]
    pub fn stop(&mut self) -> Vec<String> {
        self.net.take().map(|n| n.finish()).unwrap_or_default()
    }
}

impl Drop for HostProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Questions of the network gate sent to JS and not answered yet, by id: the host asked
/// about, and where the answer goes.
#[derive(Default)]
pub struct NetworkQuestions {
    pub(crate) next: std::sync::atomic::AtomicU32,
    pub(crate) waiting: std::sync::Mutex<Waiting>,
}

/// By question id: the host, whether its command is over, where the answer goes.
pub(crate) type Waiting = std::collections::HashMap<
    u32,
    (
        String,
        Arc<std::sync::atomic::AtomicBool>,
        std::sync::mpsc::Sender<String>,
    ),
>;

impl NetworkQuestions {
    pub(crate) fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How long a connection waits for the user's answer before it is refused.
pub(crate) const NETWORK_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

pub(crate) type NetworkCallback = napi::threadsafe_function::ThreadsafeFunction<
    JsNetworkQuestion,
    (),
    JsNetworkQuestion,
    napi::Status,
    false,
    true,
>;
