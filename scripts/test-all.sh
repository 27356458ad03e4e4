#!/usr/bin/env bash
# Everything `npm test` runs: setup, Rust unit tests, type check, addon + CLI tests, the
# end-to-end tests through a real pi process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== Rust unit tests"
cargo test --quiet

echo "== TypeScript type check"
npx tsc --noEmit

echo "== Node tests (addon, CLI, pi end-to-end)"
node --test --test-concurrency=1 __test__/*.test.mjs
