//! Network filtering: which hosts a sandboxed command may reach (the proxy that enforces it
//! comes with the network issue). `domains` is the pure matcher.

pub mod domains;
