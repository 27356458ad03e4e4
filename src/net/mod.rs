//! Network filtering: which hosts a sandboxed command may reach. `domains` is the pure
//! matcher; `proxy` the HTTP + SOCKS5 proxy on a unix socket that applies it. Not wired into
//! bash yet: the bridge into the sandbox's network namespace, the prompt for unlisted hosts
//! and the violation log come with the rest of the network issue.

pub mod domains;
pub mod proxy;
