// The approvals store under load and damage, through the addon: several pi processes granting
// at once lose nothing, and a damaged or newer file is never read as "approved".
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo } from "./helpers/pi-run.mjs";

const addonPath = path.join(repo, "index.js");

/** A child node process that grants `count` exact commands named `<tag>-<i>`, for good. */
function granter(w, tag, count) {
  const code = `
    const { Sandbox } = require(${JSON.stringify(addonPath)});
    const s = Sandbox.load({ cwd: ${JSON.stringify(w.project)}, home: ${JSON.stringify(w.home)}, agentDir: ${JSON.stringify(w.agentDir)} });
    for (let i = 0; i < ${count}; i++) s.grantCommand("${tag}-" + i, "always", "exact");
  `;
  const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, PI_SANDBOX_INDEX: "off" }, stdio: ["ignore", "inherit", "inherit"] });
  return new Promise((resolve) => child.on("close", resolve));
}

test("4 processes x 1,000 grants at once: nothing lost, the file valid JSON after every write", async (t) => {
  const w = makeWorld("store4x");
  t.after(w.cleanup);
  const file = path.join(w.agentDir, "sandbox-approvals.json");
  // A reader parses the file as often as it can while the writers run.
  let reads = 0;
  let invalid = 0;
  let running = true;
  const reader = (async () => {
    while (running) {
      if (existsSync(file)) {
        try {
          JSON.parse(readFileSync(file, "utf8"));
          reads++;
        } catch {
          invalid++;
        }
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  const codes = await Promise.all([0, 1, 2, 3].map((p) => granter(w, `p${p}`, 1000)));
  running = false;
  await reader;
  assert.deepEqual(codes, [0, 0, 0, 0]);
  assert.equal(invalid, 0, `${invalid} of ${reads + invalid} reads saw a partial file`);
  assert.ok(reads > 10, `the reader saw the file ${reads} times`);
  const store = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(store.version, 2);
  const commands = new Set(store.approvals.map((e) => e.grant.command));
  assert.equal(commands.size, 4000);
  for (let p = 0; p < 4; p++) for (let i = 0; i < 1000; i += 97) assert.ok(commands.has(`p${p}-${i}`));
  // No temporary files left behind.
  assert.deepEqual(readdirSync(w.agentDir).filter((n) => n.startsWith(".tmp")), []);
});

test("a corrupt store is kept aside and read as no approvals; a newer version is refused and left alone", async (t) => {
  const { Sandbox } = await import(addonPath);
  const w = makeWorld("storebad");
  t.after(w.cleanup);
  const file = path.join(w.agentDir, "sandbox-approvals.json");
  const load = () => Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir });

  writeFileSync(file, '{"version": 2, "approvals": [ {"scope": "always", "grant": {"kind": "command", "command": "rm -rf /"');
  let s = load();
  assert.match(s.approvalsNotice, /sandbox-approvals\.json/);
  assert.match(s.describe(), /0 grant\(s\)/);
  const aside = readdirSync(w.agentDir).filter((n) => n.startsWith("sandbox-approvals.json.corrupt-"));
  assert.equal(aside.length, 1, "kept aside under a new name");
  assert.match(readFileSync(path.join(w.agentDir, aside[0]), "utf8"), /rm -rf/);

  const future = '{"version": 3, "approvals": {"anything": "goes"}}\n';
  writeFileSync(file, future);
  s = load();
  assert.match(s.approvalsNotice, /version 3/);
  assert.throws(() => s.grantCommand("echo hi", "always", "exact"), /version 3/);
  assert.equal(readFileSync(file, "utf8"), future, "never overwritten");
});
