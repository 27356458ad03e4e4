#!/usr/bin/env bash
# The main job without a model: set up, then run commands through the sandbox (a secret read
# and a write outside the project fail, work inside succeeds, exit codes pass through) and ask
# the policy about file-tool access, in a throwaway home and project. Exits 1 if anything is
# not as expected.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
repo=$(pwd)
cli() { node "$repo/bin/pi-sandbox.js" "$@"; }

# Not under /tmp: inside the sandbox /tmp is private, and the demo's home must stay visible.
demo=$(mktemp -d /var/tmp/pi-sandbox-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
export HOME="$demo/home" PI_CODING_AGENT_DIR="$demo/home/.pi/agent"
unset PI_SANDBOX_APPROVAL_MODE PI_CODING_AGENT_SESSION_DIR
mkdir -p "$HOME/.ssh" "$PI_CODING_AGENT_DIR" "$demo/project/src"
echo "-----BEGIN OPENSSH PRIVATE KEY----- (demo)" > "$HOME/.ssh/id_rsa"
cd "$demo/project"

failures=0
expect() { # expect EXIT_CODE|fail -- pi-sandbox args...
  local want=$1; shift; shift
  printf '\n$ pi-sandbox %s\n' "$*"
  set +e; cli "$@"; local got=$?; set -e
  printf '(exit %s)\n' "$got"
  if { [ "$want" = fail ] && [ "$got" -eq 0 ]; } || { [ "$want" != fail ] && [ "$got" -ne "$want" ]; }; then
    echo "!! expected exit $want, got $got"; failures=$((failures+1))
  fi
}

echo "Demo project: $demo/project   (HOME=$HOME)"
echo
echo "== bash through the OS sandbox (pi-sandbox run)"
expect fail -- run -- cat "$HOME/.ssh/id_rsa"
expect fail -- run -- sh -c "echo pwned >> $HOME/.bashrc"
expect fail -- run -- sh -c 'echo "{}" > .pi/sandbox.json'
expect 0 -- run -- sh -c 'echo "fn main() {}" > src/main.rs && cat src/main.rs'
expect 42 -- run -- sh -c 'exit 42'
expect fail -- run --network off -- curl -sS -m 3 https://registry.npmjs.org/
echo
echo "== the same policy for pi's file tools (pi-sandbox check / explain)"
expect 1 -- check read ~/.ssh/id_rsa
expect 1 -- check write certs/server.pem
expect 1 -- check write .pi/sandbox.json
expect 1 -- check write /etc/profile.d/pi-demo.sh
expect 0 -- check write src/lib.rs
expect 1 -- explain write .env.local
expect 0 -- config

echo
if [ "$failures" -eq 0 ]; then echo "demo: every answer as expected"; else echo "demo: $failures unexpected answer(s)"; exit 1; fi
