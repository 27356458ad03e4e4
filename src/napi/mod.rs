//! The N-API skin: JS objects and classes, converted and handed to the session; each error
//! mapped to its JS `code`.

#[cfg(test)]
mod dts_tests;

// First: napi-rs names a Rust type by its `js_name` in the declarations only once the
// macro has met its definition, so the objects come before the functions that return them.
pub mod objects;

pub(crate) mod errors;
pub mod functions;
pub mod network;
pub mod prepared;
pub mod sandbox;
pub mod tasks;
pub mod views;
