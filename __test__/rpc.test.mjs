// With a UI (pi's RPC mode: dialogs travel as JSON lines): the footer and /sandbox. The
// permission prompts and their answers are in approvals.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { makeWorld, runPiRpc } from "./helpers/pi-run.mjs";

test("the footer shows the mode and how bash runs; /sandbox full shows each rule's source", async (t) => {
  const w = makeWorld("rpcstatus");
  t.after(w.cleanup);
  const r = await runPiRpc({
    world: w,
    script: [],
    message: "/sandbox full",
    until: (msg) => msg.type === "extension_ui_request" && msg.method === "notify" && /effective configuration/.test(msg.message),
  });
  const statuses = r.uiEvents.filter((e) => e.method === "setStatus").map((e) => e.statusText);
  // The built-in defaults list domains: filtered network by default.
  assert.ok(statuses.includes("sandbox: read-write · bash in bwrap, net filtered"), JSON.stringify(r.uiEvents));
  const report = r.uiEvents.find((e) => e.method === "notify" && /effective configuration/.test(e.message));
  assert.ok(report, JSON.stringify(r.uiEvents));
  assert.match(report.message, /filesystem\.denyRead\s+~\/\.ssh, ~\/\.aws, ~\/\.gnupg/);
  assert.match(report.message, /↳ from built-in defaults/);
  assert.match(report.message, /Network for bash: filtered \(the default: the config lists domains\)\n\s+network\.allowedDomains and network\.deniedDomains are ENFORCED/);
});

test("/sandbox fits one screen: mode, engine, network, where bash writes, what is hidden, grants, the latest refusals; the full view is behind /sandbox full", async (t) => {
  const w = makeWorld("rpcsummary");
  t.after(w.cleanup);
  const r = await runPiRpc({
    world: w,
    script: [],
    message: "/sandbox",
    until: (msg) => msg.type === "extension_ui_request" && msg.method === "notify" && /^pi-sandbox: /.test(msg.message),
  });
  const report = r.uiEvents.find((e) => e.method === "notify" && /^pi-sandbox: /.test(e.message))?.message;
  assert.ok(report, JSON.stringify(r.uiEvents));
  const lines = report.trimEnd().split("\n");
  assert.ok(lines.length <= 14, `${lines.length} lines:\n${report}`);
  assert.match(lines[0], /^pi-sandbox: read-write · bash in bubblewrap · network filtered \(\d+ domains allowed, the rest asked\)$/);
  assert.match(report, /^Writable: the project, \/tmp \(the session's own\)$/m);
  assert.match(report, /^Hidden from bash: \d+ denyRead entries, env files$/m);
  assert.match(report, /^Environment: the allow-list and env\.allow; \d+ variables? held back \([^)]+\)$/m);
  assert.match(report, /^Grants this session: none$/m);
  assert.match(report, /^Refusals: none yet$/m);
  assert.match(report, /^\/sandbox full: every rule/m);
  assert.doesNotMatch(report, /↳ from/, "the full view's sources are not repeated here");
});

// The footer is refreshed wherever a config file is re-read: a file tool's check and bash's
// prepare. The approvals store breaking mid-session is told once.
for (const [tool, args] of [
  ["read", { path: "src" }],
  ["bash", { command: "true" }],
]) {
  test(`the footer follows the config through ${tool} calls: BROKEN when it breaks mid-session, back when it is fixed`, async (t) => {
    const { mkdirSync, writeFileSync } = await import("node:fs");
    const path = await import("node:path");
    const w = makeWorld(`rpcfooter${tool}`);
    t.after(w.cleanup);
    const config = path.join(w.agentDir, "extensions", "sandbox.json");
    mkdirSync(path.dirname(config), { recursive: true });
    const call = { name: tool, arguments: args };
    let ended = 0;
    const r = await runPiRpc({
      world: w,
      script: [[call], [call], [call]],
      onMessage: (msg) => {
        if (msg.type !== "tool_execution_end") return;
        ended++;
        // Between the calls, the user breaks the file (and the approvals store), then fixes it.
        if (ended === 1) {
          writeFileSync(config, '{"mode": ');
          writeFileSync(path.join(w.agentDir, "sandbox-approvals.json"), "{ not json");
        }
        if (ended === 2) writeFileSync(config, '{"mode": "read-only"}');
      },
    });
    assert.equal(r.code, 0, r.stderr);
    const statuses = r.uiEvents.filter((e) => e.method === "setStatus").map((e) => e.statusText);
    const broken = statuses.findIndex((s) => /BROKEN config/.test(s));
    assert.ok(broken > 0, JSON.stringify(statuses));
    assert.ok(statuses.slice(broken).some((s) => s.startsWith("sandbox: read-only")), JSON.stringify(statuses));
    const notices = r.uiEvents.filter((e) => e.method === "notify" && /sandbox-approvals\.json/.test(e.message));
    assert.equal(notices.length, 1, JSON.stringify(r.uiEvents));
  });
}
