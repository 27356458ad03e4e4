//! The proxy variables a filtered command gets: shared by `pi-sandbox-init` (bwrap: the port
//! is only known inside) and pi-sandbox (sandbox-exec: the proxy listens on the host).

/// `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`, and their lower-case forms, for a proxy on
/// `port` of 127.0.0.1 (HTTP and SOCKS5 on the same port; socks5h: names resolved there);
/// npm's own settings too, which win over those when the user's environment sets them.
pub fn proxy_env(port: u16) -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    vec![
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("ALL_PROXY", socks.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http.clone()),
        ("all_proxy", socks),
        ("npm_config_proxy", http.clone()),
        ("npm_config_https_proxy", http),
    ]
}
