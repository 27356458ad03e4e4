// Capability detection: a missing bwrap, or one that exists but cannot build a sandbox
// (user namespaces blocked), means bash is blocked with the cause and the fix.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo, runPi } from "./helpers/pi-run.mjs";

const cli = path.join(repo, "bin", "pi-sandbox.js");

/** The CLI with bwrap looked for in `systemDirs` only (PI_SANDBOX_SYSTEM_DIRS), and `path` as PATH. */
function runCli(w, systemDirs, args, path = process.env.PATH) {
  return spawnSync(process.execPath, [cli, ...args], {
    cwd: w.project,
    encoding: "utf8",
    env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, PI_SANDBOX_SYSTEM_DIRS: systemDirs.join(":"), PATH: path },
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

test("no bwrap in the system directories: run is refused (126) with how to install it", (t) => {
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
    env: { PI_SANDBOX_SYSTEM_DIRS: fakeBwrapDir(w) },
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

/** A `bwrap` that leaves a marker where it ran, then does the real work. */
function plantBwrap(dir, marker) {
  mkdirSync(dir, { recursive: true });
  const fake = path.join(dir, "bwrap");
  writeFileSync(fake, `#!/bin/sh\necho planted >> ${marker}\nexec /usr/bin/bwrap "$@"\n`);
  chmodSync(fake, 0o755);
}

test("a bwrap planted in a PATH directory the agent can write never runs on the host", (t) => {
  const w = makeWorld("plantedbwrap");
  t.after(w.cleanup);
  const marker = path.join(w.root, "planted-ran");
  const venvBin = path.join(w.project, ".venv", "bin");
  plantBwrap(venvBin, marker);
  // An activated virtualenv: its bin first on PATH. bwrap is not looked for on PATH at all.
  const r = runCli(w, ["/usr/bin", "/bin"], ["run", "--", "bash", "-c", "echo inside"], [venvBin, process.env.PATH].join(":"));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /inside/);
  assert.equal(existsSync(marker), false, "the planted bwrap ran");
});

test("a sandbox program found in a directory the agent can write is refused at launch", (t) => {
  const w = makeWorld("writablebwrap");
  t.after(w.cleanup);
  const marker = path.join(w.root, "planted-ran");
  const dir = path.join(w.project, "tools");
  plantBwrap(dir, marker);
  const r = runCli(w, [dir], ["run", "--", "bash", "-c", "echo inside > ran.txt"]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /lies in .*which the agent may write/);
  assert.equal(existsSync(path.join(w.project, "ran.txt")), false);
});
