#!/usr/bin/env bash
# Builds pi-sandbox-init (the program that runs first inside bubblewrap) and copies it to DEST.
# On Linux it is linked statically: each command's sandbox starts it without the dynamic
# loader (about a millisecond less per command here), and it runs whatever C library the
# sandbox shows. Usage: scripts/build-init.sh [PROFILE] [TARGET] [DEST]
#   PROFILE release (default) or dist; TARGET a Rust triple (default: this machine's);
#   DEST the file to write (default: ./pi-sandbox-init, beside the development addon).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-release}
target=${2:-$(rustc -vV | sed -n 's/^host: //p')}
dest=${3:-pi-sandbox-init}
flags=()
case "$target" in *-linux-*) flags=(-C target-feature=+crt-static) ;; esac
# `--target` keeps the flags off build scripts and proc macros.
RUSTFLAGS="${flags[*]}" cargo build -q --profile "$profile" --target "$target" \
  --manifest-path crates/pi-sandbox-init/Cargo.toml --target-dir target/init
cp "target/init/$target/$profile/pi-sandbox-init" "$dest"
