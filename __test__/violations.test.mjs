// The violation log through a real pi: a guard block, an audit move-aside and a refused unix
// socket connection each leave a JSON line in the agent dir, and `/sandbox log` shows them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });

test("every refusal is logged as a JSON line in the agent dir, and /sandbox log shows the recent ones", async (t) => {
  const w = makeWorld("violations");
  t.after(w.cleanup);
  // A host service on a unix socket, outside the sandbox.
  const sock = path.join(w.root, "outside", "host.sock");
  const server = createServer((c) => c.end("HOST-SERVICE\n"));
  await new Promise((resolve) => server.listen(sock, resolve));
  t.after(() => server.close());
  const connect = `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("${sock}"); print(s.recv(100))' 2>&1; echo END`;
  const r = await runPi({
    world: w,
    script: [
      [
        call("read", { path: path.join(w.home, ".ssh", "id_rsa") }),
        // A name that would drive the terminal if shown raw.
        call("read", { path: path.join(w.home, ".ssh", "\u001b[2J\u001b]0;pwned\u0007x") }),
        call("bash", { command: "mkdir -p sub/.pi && echo '{\"enabled\": false}' > sub/.pi/sandbox.json; echo MADE" }),
        call("bash", { command: connect }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [read, , made, connected] = r.results;
  assert.match(read.text, /Blocked read/);
  assert.match(made.text, /MADE/);
  assert.doesNotMatch(connected.text, /HOST-SERVICE/);
  assert.match(connected.text, /END/);

  const logFile = path.join(w.agentDir, "sandbox-violations.jsonl");
  assert.ok(existsSync(logFile), "no log");
  const entries = readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const guard = entries.find((e) => e.layer === "guard");
  assert.ok(guard, JSON.stringify(entries));
  assert.equal(guard.operation, "read");
  assert.equal(guard.target, path.join(w.home, ".ssh", "id_rsa"));
  assert.match(guard.rule, /denyRead/);
  assert.ok(guard.source);
  assert.match(guard.time, /^\d{4}-\d\d-\d\dT.*Z$/);
  const audit = entries.find((e) => e.layer === "audit");
  assert.ok(audit, JSON.stringify(entries));
  assert.match(audit.target, /\.pi/);
  assert.match(audit.operation, /moved to/);
  const socket = entries.find((e) => e.layer === "sockets");
  assert.ok(socket, JSON.stringify(entries));
  assert.equal(socket.operation, "connect");
  assert.equal(socket.target, sock);

  // /sandbox log, through pi's UI (RPC mode).
  const rpc = await runPiRpc({
    world: w,
    script: [],
    message: "/sandbox log",
    until: (msg) => msg.type === "extension_ui_request" && msg.method === "notify" && /The last \d+ entries/.test(msg.message),
  });
  const shown = rpc.uiEvents.find((e) => e.method === "notify" && /The last \d+ entries/.test(e.message));
  assert.ok(shown, JSON.stringify(rpc.uiEvents));
  assert.match(shown.message, /guard {2}read {2}.*id_rsa/);
  assert.match(shown.message, /sockets {2}connect {2}.*host\.sock/);
  assert.match(shown.message, /audit/);
  assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(shown.message), JSON.stringify(shown.message));
  assert.match(shown.message, /\\x1b\[2J/);
});
