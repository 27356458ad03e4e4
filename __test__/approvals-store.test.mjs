// The approvals store under load and damage, through the addon: several pi processes granting
// at once lose nothing, and a damaged or newer file is never read as "approved".
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { makeWorld, repo } from "./helpers/pi-run.mjs";

const addonPath = path.join(repo, "index.js");
const { Sandbox } = createRequire(import.meta.url)(addonPath);

/**
 * A child node process that grants `count` exact commands named `<tag>-<i>`, for good, and
 * parses the store right after each of its writes (the others write meanwhile). Resolves
 * with its exit code and how many of those reads it made and failed.
 */
function granter(w, tag, count) {
  const code = `
    const { Sandbox } = require(${JSON.stringify(addonPath)});
    const { readFileSync } = require("node:fs");
    const file = ${JSON.stringify(path.join(w.agentDir, "sandbox-approvals.json"))};
    const s = Sandbox.load({ cwd: ${JSON.stringify(w.project)}, home: ${JSON.stringify(w.home)}, agentDir: ${JSON.stringify(w.agentDir)} });
    let checked = 0, invalid = 0;
    for (let i = 0; i < ${count}; i++) {
      s.grantCommand("${tag}-" + i, "always", "exact");
      try {
        const store = JSON.parse(readFileSync(file, "utf8"));
        if (store.version !== 2 || !store.approvals.some((e) => e.grant.command === "${tag}-" + i)) invalid++;
      } catch {
        invalid++;
      }
      checked++;
    }
    console.log(JSON.stringify({ checked, invalid }));
  `;
  const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, PI_SANDBOX_INDEX: "off" }, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, ...(code === 0 ? JSON.parse(out) : {}) })));
}

test("4 processes x 1,000 grants at once: nothing lost, the file valid JSON after every write", async (t) => {
  const w = makeWorld("store4x");
  t.after(w.cleanup);
  const file = path.join(w.agentDir, "sandbox-approvals.json");
  // Each writer parses the file after each of its own writes (holding its grant); a fifth
  // reader parses it as often as it can besides.
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
  const writers = await Promise.all([0, 1, 2, 3].map((p) => granter(w, `p${p}`, 1000)));
  running = false;
  await reader;
  assert.deepEqual(
    writers.map((r) => r.code),
    [0, 0, 0, 0],
  );
  for (const r of writers) {
    assert.equal(r.checked, 1000);
    assert.equal(r.invalid, 0, `${r.invalid} of a writer's reads after its write saw a partial file or lacked its grant`);
  }
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

/** A project whose .pi/sandbox.json widens the rules (a writable directory outside it). */
function widenedProject(name) {
  const w = makeWorld(name);
  const project = path.join(w.project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(project), { recursive: true });
  writeFileSync(project, JSON.stringify({ filesystem: { allowWrite: [".", path.join(w.root, "outside")] } }, null, 2));
  mkdirSync(path.join(w.root, "elsewhere"));
  const load = () => Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  return { w, project, load, target: path.join(w.root, "elsewhere", "notes.txt") };
}

test("a grant for this project carries the answer about the content the user saw, never to a change made meanwhile", (t) => {
  const { w, project, load, target } = widenedProject("carry");
  t.after(w.cleanup);
  const secret = path.join(w.home, ".ssh", "id_rsa");

  // Trusted, then a grant of ours: still trusted, with the grant in it.
  let s = load();
  s.answerTrust(s.trustPrompt(false).sha256, true);
  assert.equal(s.check("write", target).verdict, "prompt");
  assert.match(s.grantWrite(target, "project"), /sandbox\.json/);
  assert.equal(s.projectTrust.trust, "trusted");
  assert.equal(s.check("write", target).verdict, "allow");
  assert.equal(load().projectTrust.trust, "trusted", "another session trusts the edited content too");

  // While the next dialog is open, something else loosens the file (a git pull, another
  // process): the user's grant must not trust what they never saw.
  const other = path.join(w.root, "elsewhere2", "x.txt");
  mkdirSync(path.dirname(other));
  assert.equal(s.check("write", other).verdict, "prompt");
  const loosened = JSON.parse(readFileSync(project, "utf8"));
  loosened.enabled = false;
  writeFileSync(project, JSON.stringify(loosened, null, 2));
  assert.match(s.grantWrite(other, "project"), /for this session/);
  assert.equal(s.projectTrust.trust, "not yet trusted");
  assert.equal(s.check("read", secret).verdict, "deny", "the sandbox was not switched off");
  assert.equal(s.check("write", other).verdict, "allow", "the grant holds for this session meanwhile");
  const fresh = load();
  assert.equal(fresh.projectTrust.trust, "not yet trusted");
  assert.equal(fresh.check("read", secret).verdict, "deny");
  assert.ok(fresh.trustPrompt(false), "the changed file is shown to the user");
});

test("a grant for this project into a declined file keeps it declined, without asking again", (t) => {
  const { w, load, target } = widenedProject("declined");
  t.after(w.cleanup);
  let s = load();
  s.answerTrust(s.trustPrompt(false).sha256, false);
  assert.equal(s.projectTrust.trust, "declined");
  assert.match(s.grantWrite(target, "project"), /for this session/);
  assert.equal(s.check("write", target).verdict, "allow");
  s = load();
  assert.equal(s.projectTrust.trust, "declined");
  assert.equal(s.trustPrompt(false), null, "our own change is not a new file to ask about");
  assert.equal(s.check("write", path.join(w.root, "outside", "f")).verdict, "prompt", "its widening rules still do not apply");
});

test("a grant for all projects holds in this project too when its file sets its own list", (t) => {
  const { w, project, load, target } = widenedProject("allprojects");
  t.after(w.cleanup);
  const s = load();
  s.answerTrust(s.trustPrompt(false).sha256, true);
  assert.match(s.grantWrite(target, "global"), /replaces the global list in this project/);
  const dir = path.dirname(target);
  const global = JSON.parse(readFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), "utf8"));
  assert.ok(global.filesystem.allowWrite.includes(dir));
  assert.ok(JSON.parse(readFileSync(project, "utf8")).filesystem.allowWrite.includes(dir));
  const fresh = load();
  assert.equal(fresh.projectTrust.trust, "trusted");
  assert.equal(fresh.check("write", target).verdict, "allow", "a new session in this project is not asked again");
});

test("PI_SANDBOX_SESSION_APPROVAL_TTL_MS sets how long a session grant lasts; a bad value is refused by name", async (t) => {
  const w = makeWorld("ttl");
  t.after(w.cleanup);
  const run = (ttl) => {
    const code = `
      const { Sandbox } = require(${JSON.stringify(addonPath)});
      const s = Sandbox.load({ cwd: ${JSON.stringify(w.project)}, home: ${JSON.stringify(w.home)}, agentDir: ${JSON.stringify(w.agentDir)}, sessionId: "s1" });
      let error = null;
      try { s.grantCommand("make test", "session", "exact"); } catch (e) { error = e.message; }
      console.log(JSON.stringify({ notice: s.approvalsNotice, error }));
    `;
    const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, PI_SANDBOX_INDEX: "off", PI_SANDBOX_SESSION_APPROVAL_TTL_MS: ttl }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    return new Promise((resolve) => child.on("close", () => resolve(JSON.parse(out))));
  };
  const ok = await run("1234");
  assert.equal(ok.error, null);
  const entry = JSON.parse(readFileSync(path.join(w.agentDir, "sandbox-approvals.json"), "utf8")).approvals.find((e) => e.grant.command === "make test");
  assert.equal(entry.scope, "session");
  // expiresAt is milliseconds since the epoch; grantedAt an RFC 3339 time.
  assert.equal(entry.expiresAt - Date.parse(entry.grantedAt), 1234);
  const bad = await run("six hours");
  assert.match(`${bad.notice} ${bad.error}`, /PI_SANDBOX_SESSION_APPROVAL_TTL_MS/);
});

test("grants written into one config file by 4 processes at once: none lost", async (t) => {
  const w = makeWorld("cfg4x");
  t.after(w.cleanup);
  const grantHosts = (tag) => {
    const code = `
      const { Sandbox } = require(${JSON.stringify(addonPath)});
      const s = Sandbox.load({ cwd: ${JSON.stringify(w.project)}, home: ${JSON.stringify(w.home)}, agentDir: ${JSON.stringify(w.agentDir)} });
      for (let i = 0; i < 50; i++) s.grantDomain("${tag}-" + i + ".example.org", "global");
    `;
    const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, PI_SANDBOX_INDEX: "off", PI_SANDBOX_APPROVAL_MODE: "always" }, stdio: ["ignore", "inherit", "inherit"] });
    return new Promise((resolve) => child.on("close", resolve));
  };
  assert.deepEqual(await Promise.all(["a", "b", "c", "d"].map(grantHosts)), [0, 0, 0, 0]);
  const global = JSON.parse(readFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), "utf8"));
  const hosts = new Set(global.network.allowedDomains);
  for (const tag of ["a", "b", "c", "d"]) for (let i = 0; i < 50; i++) assert.ok(hosts.has(`${tag}-${i}.example.org`), `${tag}-${i}`);
});
