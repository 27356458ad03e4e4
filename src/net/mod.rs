//! Network filtering: which hosts a sandboxed command may reach. `domains` is the pure
//! matcher, `addresses` what an address is; `proxy` the HTTP + SOCKS5 proxy that applies
//! them to each connection, `relay` what moves an allowed connection's bytes; `gate` the
//! session's decisions (rules, the user's answers, the log) and each filtered command's share
//! of them.

pub(crate) mod addresses;
pub(crate) mod domains;
pub(crate) mod gate;
pub(crate) mod proxy;
pub(crate) mod relay;
