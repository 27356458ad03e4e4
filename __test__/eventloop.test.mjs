// Nothing slow on Node's main thread: while a command is prepared (workspace scan, mount plan)
// and audited in a repository of PI_SANDBOX_LOOP_FILES files (default 1,000,000), a 10 ms
// interval on the main thread is never late by more than 50 ms. The same addon calls the
// extension makes (loadAsync, prepareBashAsync, finishAsync), in this process.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo } from "./helpers/pi-run.mjs";

const { Sandbox, sandboxCapability } = await import(path.join(repo, "index.js"));
const FILES = Number(process.env.PI_SANDBOX_LOOP_FILES || 1_000_000);
const PER_DIR = 1000;

/** A git repository of `files` empty files, 1,000 per directory (made by `touch`, in bulk). */
function bigRepo(dir, files) {
  execFileSync("git", ["init", "-q", dir]);
  const dirs = Math.ceil(files / PER_DIR);
  execFileSync(
    "bash",
    ["-c", `cd "$1" && for d in $(seq 1 ${dirs}); do mkdir -p src/d$d && (cd src/d$d && seq -f 'f%g.ts' 1 ${PER_DIR} | xargs touch); done`, "_", dir],
    { stdio: "inherit" },
  );
}

test(`the main thread keeps ticking while a command is prepared and audited among ${FILES} files`, { skip: sandboxCapability().kind !== "bwrap" && "needs bubblewrap", timeout: 30 * 60_000 }, async (t) => {
  const w = makeWorld("loop");
  t.after(w.cleanup);
  bigRepo(w.project, FILES);
  assert.equal(readdirSync(path.join(w.project, "src")).length, Math.ceil(FILES / PER_DIR));
  mkdirSync(path.join(w.project, "src", "d1", "x"), { recursive: true });

  let worst = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  try {
    const s = await Sandbox.loadAsync({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
    const started = performance.now();
    const p = await s.prepareBashAsync("mkdir -p src/d1/x/.pi && echo planted > src/d1/x/.pi/e.ts; echo ran", "off");
    assert.equal(p.verdict, "sandboxed", p.reason);
    const code = await new Promise((resolve) => {
      const child = spawn(p.program, p.args, { cwd: w.project, stdio: ["ignore", "ignore", "ignore", ...p.fds] });
      p.release();
      child.on("close", resolve);
    });
    assert.equal(code, 0);
    const findings = await p.finishAsync();
    const took = performance.now() - started;
    // the audit really ran over the tree: it found the planted .pi
    assert.ok(findings.some((f) => /src\/d1\/x\/\.pi was created or changed by the command/.test(f)), JSON.stringify(findings));
    t.diagnostic(`${FILES} files: prepare + run + audit took ${took.toFixed(0)} ms; the 10 ms interval was at worst ${worst.toFixed(1)} ms late`);
  } finally {
    clearInterval(ticker);
  }
  assert.ok(worst <= 50, `the main thread stalled for ${worst.toFixed(1)} ms`);
});
