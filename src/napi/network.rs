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

pub(crate) type NetworkCallback = napi::threadsafe_function::ThreadsafeFunction<
    JsNetworkQuestion,
    (),
    JsNetworkQuestion,
    napi::Status,
    false,
    true,
>;
