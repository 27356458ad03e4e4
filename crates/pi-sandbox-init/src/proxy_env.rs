//! The proxy variables a filtered command gets: shared by `pi-sandbox-init` (bwrap: the port
//! is only known inside) and pi-sandbox (sandbox-exec: the proxy listens on the host).
//! Constants only: `pi-sandbox-init` has no allocator.

/// `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`, and their lower-case forms, each with the
/// scheme of its value `<scheme>://127.0.0.1:<port>` (HTTP and SOCKS5 on the same port;
/// socks5h: names resolved there); npm's own settings too, which win over those when the
/// user's environment sets them.
pub const PROXY_VARS: [(&str, &str); 8] = [
    ("HTTP_PROXY", "http"),
    ("HTTPS_PROXY", "http"),
    ("ALL_PROXY", "socks5h"),
    ("http_proxy", "http"),
    ("https_proxy", "http"),
    ("all_proxy", "socks5h"),
    ("npm_config_proxy", "http"),
    ("npm_config_https_proxy", "http"),
];
