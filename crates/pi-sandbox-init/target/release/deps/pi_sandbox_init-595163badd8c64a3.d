/work/main/crates/pi-sandbox-init/target/release/deps/pi_sandbox_init-595163badd8c64a3.d: src/main.rs src/proxy_env.rs src/session.rs src/sys.rs Cargo.toml

/work/main/crates/pi-sandbox-init/target/release/deps/libpi_sandbox_init-595163badd8c64a3.rmeta: src/main.rs src/proxy_env.rs src/session.rs src/sys.rs Cargo.toml

src/main.rs:
src/proxy_env.rs:
src/session.rs:
src/sys.rs:
Cargo.toml:

# env-dep:CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# env-dep:CLIPPY_CONF_DIR
