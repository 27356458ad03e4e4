//! On Linux, pi-sandbox-init is its own start-up code (`sys`): linked static, without the C
//! library or its start files, and not position-independent (no code runs before `start`
//! to relocate it).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        for arg in ["-nostartfiles", "-nostdlib", "-static", "-no-pie"] {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}
