// The two enforcement layers must agree: what the path guard allows pi's file tools, bash may
// do inside the real bubblewrap sandbox, and what it denies, bash may not (or the audit after
// the command undoes it). Random trees and policies from a seed, plus the fixed cases;
// see helpers/differential.mjs for how each layer is asked.
//
//   PI_SANDBOX_DIFF_SEED=<n>    reproduce a run (the seed is printed with every failure)
//   PI_SANDBOX_DIFF_PATHS=<n>   paths per run (default 10,000); `npm run fuzz` runs 1,000,000
//
// Bash's mounts and audit come from the index of the writable trees (src/index.rs); here each
// of its answers is also checked against a full walk (PI_SANDBOX_INDEX_VERIFY=1).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { makeWorld, openPathForAnyone, repo } from "./helpers/pi-run.mjs";
import { formatFindings, formatGroups, runDifferential, seedFrom } from "./helpers/differential.mjs";

const { sandboxCapability } = await import(path.join(repo, "index.js"));

process.env.PI_SANDBOX_INDEX_VERIFY ??= "1";
const seed = seedFrom(process.env.PI_SANDBOX_DIFF_SEED);
const paths = Number(process.env.PI_SANDBOX_DIFF_PATHS || 10_000);
const noBwrap = sandboxCapability().kind !== "bwrap" && "needs bubblewrap (Linux)";

test(`guard and bash agree on ${paths} paths (seed ${seed})`, { skip: noBwrap }, (t) => {
  const summary = runDifferential({ seed, paths, log: (line) => t.diagnostic(line) });
  t.diagnostic(
    `seed ${seed}: ${summary.paths} paths (${summary.compared.read} reads, ${summary.compared.write} writes compared) ` +
      `in ${summary.trees} trees, ${summary.runs} sandboxed runs, ${summary.seconds.toFixed(1)}s; whitelisted ${JSON.stringify(summary.whitelisted)}`,
  );
  assert.ok(summary.paths >= paths, `seed ${seed}: only ${summary.paths} of ${paths} paths were compared`);
  // The cases must really have been tried, not skipped as not applicable.
  assert.deepEqual(
    summary.fixed.filter((f) => !f.compared).map((f) => `${f.label} (${f.op}, policy ${f.policy})`),
    [],
    `seed ${seed}: fixed cases not compared`,
  );
  assert.equal(summary.findings.length, 0, formatFindings(summary));
});

test("guard and bash agree for an unprivileged user too", { skip: noBwrap || (process.getuid() !== 0 && "needs root to switch user") }, (t) => {
  const w = makeWorld("diff-unpriv");
  t.after(w.cleanup);
  // The world must be reachable by nobody: open the path to it, hand it over.
  openPathForAnyone(w.root);
  spawnSync("chown", ["-R", "65534:65534", w.root]);
  const r = spawnSync(
    "setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, path.join(repo, "scripts", "fuzz.mjs")],
    {
      encoding: "utf8",
      maxBuffer: 1 << 26,
      env: { ...process.env, PI_SANDBOX_DIFF_SEED: String(seed), PI_SANDBOX_DIFF_PATHS: "2000", PI_SANDBOX_DIFF_ROOT: w.root, PI_SANDBOX_DIFF_JOBS: "1" },
    },
  );
  const last = r.stdout.trim().split("\n").at(-1) ?? "";
  assert.ok(last.startsWith("{"), `the unprivileged run did not finish (exit ${r.status}): ${r.stderr.slice(-3000)}`);
  const result = JSON.parse(last);
  assert.deepEqual(result.harnessErrors, [], "the unprivileged run failed");
  t.diagnostic(`unprivileged, seed ${seed}: ${result.paths} paths in ${result.seconds.toFixed(1)}s`);
  assert.ok(result.paths >= 2000, `only ${result.paths} paths were compared`);
  assert.equal(result.disagreements, 0, formatGroups(result.groups, `unprivileged (uid 65534), seed ${seed}: ${result.disagreements} disagreements`));
});
