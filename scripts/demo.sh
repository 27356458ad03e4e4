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
echo "== network filtered by domain (a server on this machine's 127.0.0.1 stands in for the internet)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$demo/project" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$demo"' EXIT
mkdir -p "$PI_CODING_AGENT_DIR/extensions"
echo '{"network": {"allowedDomains": ["localhost"], "deniedDomains": ["evil.example"]}}' > "$PI_CODING_AGENT_DIR/extensions/sandbox.json"
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
expect 0 -- run -- curl -sS -m 5 -o /dev/null -w 'localhost answered %{http_code} through the proxy\n' "http://localhost:$port/"
expect fail -- run -- curl -sS -m 5 https://evil.example/
expect fail -- run -- curl -sS -m 5 https://unlisted.example/
expect fail -- run -- curl -sS -m 5 --noproxy '*' "http://127.0.0.1:$port/"
rm "$PI_CODING_AGENT_DIR/extensions/sandbox.json"
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
