// The index of bash's writable trees (src/index.rs) when the kernel limits it: with the inotify
// watch limit forced low (in a user namespace of this test's own), it gives up on itself,
// says so in the status and the footer text, and every command walks the trees in full —
// nothing is left unprotected. (Its exactness under churn and queue overflow: the Rust tests
// in src/index.rs, and the differential test with PI_SANDBOX_INDEX_VERIFY=1.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo } from "./helpers/pi-run.mjs";

const { sandboxCapability } = await import(path.join(repo, "index.js"));
const userns = spawnSync("unshare", ["-Ur", "true"]).status === 0;

const CHILD = `
const { Sandbox } = require(${JSON.stringify(path.join(repo, "index.js"))});
const { spawnSync } = require("node:child_process");
const [cwd, home, agentDir] = process.argv.slice(2);
const s = Sandbox.load({ cwd, home, agentDir, approvalMode: "ask" });
const p = s.prepareBash("echo x > sub7/.pi/planted; echo rc=$?; mkdir -p sub8/.pi && echo y > sub8/.pi/new", "off");
if (p.verdict !== "sandboxed") { console.log(JSON.stringify({ status: s.indexStatus, verdict: p.verdict, reason: p.reason })); process.exit(0); }
const r = spawnSync(p.program, p.args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe", ...p.fds] });
const findings = p.finish();
console.log(JSON.stringify({ status: s.indexStatus, verdict: p.verdict, stdout: r.stdout, stderr: r.stderr, findings }));
`;

test("with the watch limit reached, the index gives up and every command is scanned in full", { skip: (!userns && "needs unprivileged user namespaces") || (sandboxCapability().kind !== "bwrap" && "needs bubblewrap") }, (t) => {
  const w = makeWorld("index");
  t.after(w.cleanup);
  for (let i = 0; i < 10; i++) mkdirSync(path.join(w.project, `sub${i}`, "deeper"), { recursive: true });
  mkdirSync(path.join(w.project, "sub7", ".pi"));
  const script = path.join(w.root, "child.cjs");
  writeFileSync(script, CHILD);
  const r = spawnSync(
    "unshare",
    ["-Ur", "sh", "-c", 'echo 4 > /proc/sys/user/max_inotify_watches && exec "$@"', "_", process.execPath, script, w.project, w.home, w.agentDir],
    { encoding: "utf8", env: { ...process.env, TMPDIR: w.tmp } },
  );
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.ok(!out.reason, out.reason);
  assert.match(out.status, /^full scan for every command: the inotify watch limit was reached/);
  assert.equal(out.verdict, "sandboxed", out.reason);
  // the existing .pi stays read-only, the new one is moved aside: the full scan's protection
  assert.match(out.stderr, /sub7\/\.pi\/planted: Read-only file system/);
  assert.match(out.stdout, /rc=1/);
  assert.ok(out.findings.some((f) => /sub8\/\.pi was created or changed by the command/.test(f)), JSON.stringify(out.findings));
});
