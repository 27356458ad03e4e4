#!/usr/bin/env bash
# The main job without a model: set up, then ask the policy about a secret read, a few writes
# and pi's own config, in a throwaway home and project. Exits 1 if any answer is unexpected.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
repo=$(pwd)
cli() { node "$repo/bin/pi-sandbox.js" "$@"; }

demo=$(mktemp -d "${TMPDIR:-/tmp}/pi-sandbox-demo.XXXXXX")
trap 'rm -rf "$demo"' EXIT
export HOME="$demo/home" PI_CODING_AGENT_DIR="$demo/home/.pi/agent"
unset PI_SANDBOX_APPROVAL_MODE PI_CODING_AGENT_SESSION_DIR
mkdir -p "$HOME/.ssh" "$PI_CODING_AGENT_DIR" "$demo/project/src"
echo "-----BEGIN OPENSSH PRIVATE KEY----- (demo)" > "$HOME/.ssh/id_rsa"
cd "$demo/project"

failures=0
expect() { # expect EXIT_CODE -- pi-sandbox args...
  local want=$1; shift; shift
  printf '\n$ pi-sandbox %s\n' "$*"
  set +e; cli "$@"; local got=$?; set -e
  if [ "$got" -ne "$want" ]; then echo "!! expected exit $want, got $got"; failures=$((failures+1)); fi
}

echo "Demo project: $demo/project   (HOME=$HOME)"
expect 1 -- check read ~/.ssh/id_rsa
expect 1 -- check write certs/server.pem
expect 1 -- check write .pi/sandbox.json
expect 1 -- check write /etc/profile.d/pi-demo.sh
expect 0 -- check write src/main.rs
expect 1 -- explain write .env.local
expect 0 -- config

echo
if [ "$failures" -eq 0 ]; then echo "demo: every answer as expected"; else echo "demo: $failures unexpected answer(s)"; exit 1; fi
