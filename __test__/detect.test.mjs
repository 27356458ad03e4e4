// Capability detection: a missing bwrap, or one that exists but cannot build a sandbox
// (user namespaces blocked), means bash is blocked with the cause and the fix.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo, runPi } from "./helpers/pi-run.mjs";

const cli = path.join(repo, "bin", "pi-sandbox.js");

function runCli(w, pathDirs, args) {
  return spawnSync(process.execPath, [cli, ...args], {
    cwd: w.project,
    encoding: "utf8",
    env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, PATH: pathDirs.join(":") },
  });
}

function fakeBwrapDir(w) {
  const dir = path.join(w.root, "fakebin");
  mkdirSync(dir);
  const fake = path.join(dir, "bwrap");
  writeFileSync(fake, "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n");
  chmodSync(fake, 0o755);
  return dir;
}

test("no bwrap on PATH: run is refused (126) with how to install it", (t) => {
  const w = makeWorld("nobwrap");
  t.after(w.cleanup);
  const r = runCli(w, [path.join(w.root, "empty")], ["run", "--", "/bin/echo", "hi"]);
  assert.equal(r.status, 126);
  assert.doesNotMatch(r.stdout, /hi/);
  assert.match(r.stderr, /bubblewrap \(bwrap\) is not installed/);
  assert.match(r.stderr, /apt-get install bubblewrap/);
});

test("a bwrap that fails its probe is no sandbox: the probe's error and the fix are shown", (t) => {
  const w = makeWorld("badbwrap");
  t.after(w.cleanup);
  const r = runCli(w, [fakeBwrapDir(w), "/usr/bin", "/bin"], ["run", "--", "touch", "made.txt"]);
  assert.equal(r.status, 126);
  assert.equal(existsSync(path.join(w.project, "made.txt")), false);
  assert.match(r.stderr, /setting up uid map: Permission denied/);
  assert.match(r.stderr, /apparmor_restrict_unprivileged_userns/);
});

test("in pi without a working sandbox, bash is blocked and the file tools stay guarded", async (t) => {
  const w = makeWorld("pinobwrap");
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    env: { PATH: [fakeBwrapDir(w), path.dirname(process.execPath), "/usr/bin", "/bin"].join(":") },
    script: [
      [
        { name: "bash", arguments: { command: "echo ran > ran.txt" } },
        { name: "read", arguments: { path: "~/.ssh/id_rsa" } },
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, read] = r.results;
  assert.match(bash.text, /bash cannot be sandboxed here/);
  assert.match(bash.text, /setting up uid map/);
  assert.equal(existsSync(path.join(w.project, "ran.txt")), false);
  assert.match(read.text, /Blocked read of/);
});
