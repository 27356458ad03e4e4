#!/usr/bin/env node
// The differential test of __test__/differential.test.mjs at length: seed after seed (10,000
// paths each) until PI_SANDBOX_DIFF_PATHS paths (default 1,000,000) were compared, several
// seeds at a time. Progress and the disagreements, grouped, go to stderr; the last line on
// stdout is a JSON summary. Exits 1 if the layers disagreed anywhere.
//
//   PI_SANDBOX_DIFF_SEED=<n>   first seed (default random); the next ones count up from it
//   PI_SANDBOX_DIFF_PATHS=<n>  paths in all
//   PI_SANDBOX_DIFF_JOBS=<n>   seeds run at once (default: one per CPU)
//   PI_SANDBOX_DIFF_ROOT=<dir> build the trees in this existing directory (one job only;
//                              the test uses it to run as another user)
//   PI_SANDBOX_INDEX_VERIFY=0  do not check the index's answers against full walks (default on)
import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { formatGroups, groupFindings, mergeGroups, runDifferential, seedFrom } from "../__test__/helpers/differential.mjs";

process.env.PI_SANDBOX_INDEX_VERIFY ??= "1";
const PATHS_PER_SEED = 10_000;
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const EXAMPLES = 3;

/** One seed's run, reduced to what the report needs (a million paths' findings would not fit). */
function runSeed(seed, paths, root) {
  const s = runDifferential({ seed, paths, root });
  return {
    seed,
    paths: s.paths,
    seconds: s.seconds,
    disagreements: s.findings.length,
    groups: groupFindings(s.findings, EXAMPLES),
    whitelisted: s.whitelisted,
    fixedNotCompared: s.fixed.filter((f) => !f.compared).map((f) => f.label),
  };
}

if (process.argv[2] === "--one-seed") {
  // A worker: one seed, the result to the parent (a harness error too: the run goes on).
  const seed = Number(process.argv[3]);
  // Each worker's world sits in a directory of its own: a random link that climbs out of one
  // world must not land in another worker's, which that worker is rebuilding meanwhile.
  const own = fs.mkdtempSync(path.join(repo, "__test__", ".work", "fuzz-"));
  const root = path.join(own, "world");
  fs.mkdirSync(root);
  try {
    process.send(runSeed(seed, Number(process.argv[4]), root));
  } catch (e) {
    process.send({ seed, error: e.stack });
  } finally {
    fs.rmSync(own, { recursive: true, force: true });
  }
} else {
  await main();
}

async function main() {
  const total = Number(process.env.PI_SANDBOX_DIFF_PATHS || 1_000_000);
  const root = process.env.PI_SANDBOX_DIFF_ROOT || undefined;
  const jobs = root ? 1 : Number(process.env.PI_SANDBOX_DIFF_JOBS || os.availableParallelism());
  let nextSeed = seedFrom(process.env.PI_SANDBOX_DIFF_SEED);
  const started = Date.now();
  const totals = { paths: 0, disagreements: 0, seeds: [], groups: [], whitelisted: {}, fixedNotCompared: [], harnessErrors: [] };
  let assigned = 0;

  const inProcess = (seed, paths) => {
    try {
      return runSeed(seed, paths, root);
    } catch (e) {
      return { seed, error: e.stack };
    }
  };
  const one = (seed, paths) =>
    jobs === 1
      ? Promise.resolve(inProcess(seed, paths))
      : new Promise((resolve) => {
          const child = fork(fileURLToPath(import.meta.url), ["--one-seed", String(seed), String(paths)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
          let result;
          child.on("message", (m) => (result = m));
          child.on("exit", (code) => resolve(result ?? { seed, error: `the worker exited with ${code}` }));
        });

  const record = (r) => {
    if (r.error) {
      totals.harnessErrors.push(`seed ${r.seed}: ${r.error}`);
      console.error(`seed ${r.seed}: the harness failed: ${r.error}`);
      return;
    }
    totals.paths += r.paths;
    totals.disagreements += r.disagreements;
    totals.seeds.push(r.seed);
    totals.fixedNotCompared.push(...r.fixedNotCompared.map((l) => `seed ${r.seed}: ${l}`));
    for (const [k, v] of Object.entries(r.whitelisted)) totals.whitelisted[k] = (totals.whitelisted[k] ?? 0) + v;
    mergeGroups(totals.groups, r.groups, EXAMPLES);
    const minutes = (Date.now() - started) / 60_000;
    const rate = totals.paths / minutes;
    console.error(
      `[${((100 * totals.paths) / total).toFixed(1)}%] seed ${r.seed}: ${r.paths} paths, ${r.disagreements} disagreements in ${r.seconds.toFixed(0)}s; ` +
        `total ${totals.paths}/${total} paths, ${totals.disagreements} disagreements in ${totals.groups.length} groups, ` +
        `${Math.round(rate)} paths/min, ${Math.max(0, (total - totals.paths) / rate).toFixed(1)} min to go`,
    );
  };

  // A pool of `jobs` seeds in flight; each new seed takes what is left to do.
  await new Promise((resolve, reject) => {
    let running = 0;
    const startMore = () => {
      while (running < jobs && assigned < total) {
        const paths = Math.min(PATHS_PER_SEED, total - assigned);
        const seed = nextSeed;
        nextSeed = (nextSeed + 1) >>> 0;
        assigned += paths;
        running++;
        one(seed, paths).then((r) => {
          running--;
          record(r);
          startMore();
        }, reject);
      }
      if (running === 0) resolve();
    };
    startMore();
  });

  const seconds = (Date.now() - started) / 1000;
  console.error(
    formatGroups(
      totals.groups,
      `${totals.paths} paths over seeds ${totals.seeds.join(", ")} in ${(seconds / 60).toFixed(1)} min: ` +
        `${totals.disagreements} disagreements in ${totals.groups.length} groups; whitelisted ${JSON.stringify(totals.whitelisted)}`,
    ),
  );
  if (totals.fixedNotCompared.length) console.error(`fixed cases not compared:\n${totals.fixedNotCompared.join("\n")}`);
  if (totals.harnessErrors.length) console.error(`harness errors:\n${totals.harnessErrors.join("\n")}`);
  console.log(JSON.stringify({ ...totals, seconds }));
  process.exitCode = totals.disagreements || totals.fixedNotCompared.length || totals.harnessErrors.length ? 1 : 0;
}
