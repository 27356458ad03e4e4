// With a UI (pi's RPC mode: dialogs travel as JSON lines), a read that needs approval asks
// the user, and the user's answer decides.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPiRpc } from "./helpers/pi-run.mjs";

const script = [[{ name: "read", arguments: { path: ".env" } }]];

for (const confirmed of [true, false]) {
  test(`reading .env asks first; answering ${confirmed ? "yes lets it through" : "no keeps it blocked"}`, async (t) => {
    const w = makeWorld("rpc");
    t.after(w.cleanup);
    writeFileSync(path.join(w.project, ".env"), "API_TOKEN=ENV-SECRET-77\n");
    const r = await runPiRpc({ world: w, script, env: { PI_SANDBOX_APPROVAL_MODE: "ask" }, answer: () => ({ confirmed }) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.dialogs.length, 1, JSON.stringify(r.dialogs));
    assert.equal(r.dialogs[0].method, "confirm");
    assert.match(r.dialogs[0].title, /allow read of .*\.env/);
    assert.match(r.dialogs[0].message, /env files usually hold secrets/);
    const text = r.results[0].text;
    if (confirmed) assert.match(text, /ENV-SECRET-77/);
    else {
      assert.match(text, /needs your approval/);
      assert.doesNotMatch(text, /ENV-SECRET-77/);
    }
  });
}

test("the footer shows the mode and how bash runs; /sandbox shows each rule's source", async (t) => {
  const w = makeWorld("rpcstatus");
  t.after(w.cleanup);
  const r = await runPiRpc({
    world: w,
    script: [],
    message: "/sandbox",
    until: (msg) => msg.type === "extension_ui_request" && msg.method === "notify" && /effective configuration/.test(msg.message),
  });
  const statuses = r.uiEvents.filter((e) => e.method === "setStatus").map((e) => e.statusText);
  assert.ok(statuses.includes("sandbox: read-write · bash in bwrap, net off"), JSON.stringify(r.uiEvents));
  const report = r.uiEvents.find((e) => e.method === "notify" && /effective configuration/.test(e.message));
  assert.ok(report, JSON.stringify(r.uiEvents));
  assert.match(report.message, /filesystem\.denyRead\s+~\/\.ssh, ~\/\.aws, ~\/\.gnupg/);
  assert.match(report.message, /↳ from built-in defaults/);
});
