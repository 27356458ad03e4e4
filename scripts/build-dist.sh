#!/usr/bin/env bash
# Builds what one platform package publishes into npm/<platform>/: the addon (fat LTO,
# stripped) and, on Linux, pi-sandbox-init. Linux addons are linked against glibc 2.17 by
# napi-rs's cross toolchain (`--use-napi-cross`); pi-sandbox-init is linked statically, so it
# runs whatever the C library inside the sandbox is. A Linux target of another architecture is
# cross-built. Usage: scripts/build-dist.sh [TARGET]  (default: this machine's)
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

# The version of napi-rs's cross toolchain manager `napi build --use-napi-cross` runs.
manager_version() {
  node -p 'const cli = require.resolve("@napi-rs/cli/package.json");
    require(require.resolve("@napi-rs/cross-toolchain/package.json", { paths: [cli] })).version'
}

# napi-rs's cross toolchain (gcc and a glibc 2.17 sysroot), unpacked where `--use-napi-cross`
# looks for it. Its manager would fetch the toolchain of its own version, which a registry
# need not hold (the one reachable here has x86_64's at 1.0.0 and aarch64's at 1.0.3 only),
# and would need node >= 22.20 to unpack it; the newest one published is unpacked here instead.
ensure_cross_toolchain() {
  local dir="$HOME/.napi-rs/cross-toolchain/$(manager_version)/$1"
  [ -f "$dir/package.json" ] && return 0
  local host_arch arch
  case "$(uname -m)" in x86_64) host_arch=x64 ;; aarch64 | arm64) host_arch=arm64 ;; *) host_arch=$(uname -m) ;; esac
  arch=${1%%-*}
  local pkg="@napi-rs/cross-toolchain-$host_arch-target-$arch"
  local version tmp
  version=$(npm view "$pkg" version 2>/dev/null) || { echo "build-dist: $pkg is not on the npm registry" >&2; exit 1; }
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack -q "$pkg@$version" >/dev/null 2>&1 && tar xzf ./*.tgz)
  mkdir -p "$dir"
  xz -dc "$tmp"/package/*.tar.xz | tar xf - -C "$dir"
  rm -rf "$tmp"
  [ -f "$dir/package.json" ] || { echo "build-dist: $pkg@$version did not unpack into $dir" >&2; exit 1; }
  echo "build-dist: cross toolchain $pkg@$version in $dir"
}

napi_args=(build --platform --profile dist --strip --target "$target" --output-dir "$out" --no-js --dts ../../target/dist-index.d.ts)
case "$target" in *-linux-gnu) ensure_cross_toolchain "$target" && napi_args+=(--use-napi-cross) ;; esac
npx napi "${napi_args[@]}"

case "$target" in
  *-linux-gnu)
    # Built on another architecture: link with the cross toolchain napi-rs just set up (the
    # release builds each target on its own runner and needs none).
    host=$(rustc -vV | sed -n 's/^host: //p')
    if [ "$target" != "$host" ]; then
      gcc="$HOME/.napi-rs/cross-toolchain/$(manager_version)/$target/bin/$target-gcc"
      [ -x "$gcc" ] || { echo "build-dist: no linker for $target at $gcc" >&2; exit 1; }
      var="CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_LINKER"
      export "$var=$gcc"
    fi
    bash scripts/build-init.sh dist "$target" "$out/pi-sandbox-init"

    # What the package promises: an addon that loads on glibc 2.17 and an init with no
    # dynamic dependencies at all.
    addon="$out/pi-sandbox.$platform.node"
    # Outputs captured first: with pipefail, a grep that stops early or finds nothing must
    # not pass for a result.
    symbols=$(objdump -T "$addon") || { echo "build-dist: objdump cannot read $addon" >&2; exit 1; }
    newest=$(printf '%s\n' "$symbols" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1 || true)
    [ -n "$newest" ] || { echo "build-dist: $addon names no glibc version" >&2; exit 1; }
    if [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -n1)" != "GLIBC_2.17" ]; then
      echo "build-dist: $addon needs $newest, newer than glibc 2.17: was napi-rs's cross toolchain used?" >&2
      exit 1
    fi
    headers=$(objdump -p "$out/pi-sandbox-init") || { echo "build-dist: objdump cannot read $out/pi-sandbox-init" >&2; exit 1; }
    if grep -q NEEDED <<<"$headers"; then
      echo "build-dist: $out/pi-sandbox-init is not static" >&2
      exit 1
    fi
    ;;
esac
ls -l "$out"
