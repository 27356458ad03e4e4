#!/usr/bin/env bash
# Builds what one platform package publishes into npm/<platform>/: the addon (fat LTO,
# stripped) and, on Linux, pi-sandbox-init. Linux addons are linked against glibc 2.17 by
# napi-rs's cross toolchain (`--use-napi-cross`, needs node >= 22.20 when `npm ci` ran, for
# its xz decoder); pi-sandbox-init is linked statically, so it runs whatever the C library
# inside the sandbox is. Usage: scripts/build-dist.sh [TARGET]  (default: this machine's)
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-$(rustc -vV | sed -n 's/^host: //p')}
case "$target" in
  x86_64-unknown-linux-gnu) platform=linux-x64-gnu ;;
  aarch64-unknown-linux-gnu) platform=linux-arm64-gnu ;;
  x86_64-apple-darwin) platform=darwin-x64 ;;
  aarch64-apple-darwin) platform=darwin-arm64 ;;
  *) echo "build-dist: no package for target $target (see napi.targets in package.json)" >&2; exit 2 ;;
esac
out="npm/$platform"
[ -f "$out/package.json" ] || { echo "build-dist: $out/package.json is missing" >&2; exit 2; }

napi_args=(build --platform --profile dist --strip --target "$target" --output-dir "$out" --no-js --dts ../../target/dist-index.d.ts)
case "$target" in *-linux-gnu) napi_args+=(--use-napi-cross) ;; esac
npx napi "${napi_args[@]}"

case "$target" in
  *-linux-gnu)
    # Built on another architecture: link with the cross toolchain napi-rs just set up (the
    # release builds each target on its own runner and needs none).
    host=$(rustc -vV | sed -n 's/^host: //p')
    if [ "$target" != "$host" ]; then
      version=$(node -p 'const cli = require.resolve("@napi-rs/cli/package.json");
        require(require.resolve("@napi-rs/cross-toolchain/package.json", { paths: [cli] })).version')
      gcc="$HOME/.napi-rs/cross-toolchain/$version/$target/bin/$target-gcc"
      [ -x "$gcc" ] || { echo "build-dist: no linker for $target at $gcc" >&2; exit 1; }
      var="CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_LINKER"
      export "$var=$gcc"
    fi
    bash scripts/build-init.sh dist "$target" "$out/pi-sandbox-init"

    # What the package promises: an addon that loads on glibc 2.17 and an init with no
    # dynamic dependencies at all.
    addon="$out/pi-sandbox.$platform.node"
    newest=$(objdump -T "$addon" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1)
    if [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -n1)" != "GLIBC_2.17" ]; then
      echo "build-dist: $addon needs $newest, newer than glibc 2.17: was napi-rs's cross toolchain used?" >&2
      exit 1
    fi
    if objdump -p "$out/pi-sandbox-init" | grep -q NEEDED; then
      echo "build-dist: $out/pi-sandbox-init is not static" >&2
      exit 1
    fi
    ;;
esac
ls -l "$out"
