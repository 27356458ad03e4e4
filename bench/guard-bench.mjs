// Benchmark (not a test): cost of one guard decision through N-API, by rule count.
// Medians over many samples; ratios against a baseline measured in the same run.
//   node bench/guard-bench.mjs [--quick]
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = require(path.join(repo, "index.js"));

const quick = process.argv.includes("--quick");
const SAMPLES = quick ? 11 : 41;
const BATCH = 2000;
const RULE_COUNTS = [10, 100, 1000, 10000];

mkdirSync(path.join(repo, ".bench"), { recursive: true });
const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "guard-")));
const home = path.join(root, "home");
const agentDir = path.join(home, ".pi", "agent");
const cwd = path.join(root, "proj");
mkdirSync(path.join(cwd, "src/a/b/c"), { recursive: true });
mkdirSync(path.join(cwd, "config0/x"), { recursive: true });
mkdirSync(path.join(home, "secret-0/inner"), { recursive: true });
mkdirSync(agentDir, { recursive: true });
writeFileSync(path.join(cwd, "src/a/b/c/file.ts"), "");

/** N rules: a third denyRead paths, a third basename globs, a third path globs. */
function config(n) {
  const third = Math.max(1, Math.floor(n / 3));
  const denyRead = [];
  const denyWrite = [];
  for (let i = 0; i < third; i++) denyRead.push(`~/secret-${i}`);
  for (let i = 0; i < third; i++) denyWrite.push(i % 2 ? `*.ext${i}` : `secret-${i}.*`);
  for (let i = 0; denyRead.length + denyWrite.length < n; i++) {
    denyWrite.push(i % 2 ? `config${i}/**/*.json` : `**/vault${i}/**`);
  }
  return { filesystem: { denyRead, allowWrite: ["."], denyWrite } };
}

const queries = [
  ["read", path.join(cwd, "src/a/b/c/file.ts"), "allow"],
  ["write", path.join(cwd, "src/a/b/c/new.ts"), "allow"],
  ["write", path.join(cwd, "src/a/secret-0.txt"), "deny"],
  ["read", path.join(home, "secret-0/inner/key"), "deny"],
];

function writeConfig(n) {
  mkdirSync(path.join(cwd, ".pi"), { recursive: true });
  writeFileSync(path.join(cwd, ".pi", "sandbox.json"), JSON.stringify(n === 0 ? {} : config(n)));
}

function loadWritten(n) {
  const s = Sandbox.load({ cwd, home, agentDir, approvalMode: "ask" });
  if (s.error) throw new Error(`config with ${n} rules rejected: ${s.error.message}`);
  return s;
}

function load(n) {
  writeConfig(n);
  return loadWritten(n);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))];
}

/** One batch: ns per call of fn(op, path), cycling the queries. */
function batch(fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i++) fn(queries[i & 3][0], queries[i & 3][1]);
  return Number(process.hrtime.bigint() - t0) / BATCH;
}

/**
 * Interleaved rounds: each round times one batch of every candidate back to back, so a noisy
 * moment on this shared machine slows all of them alike; ratios are taken within a round.
 */
function measureAll(fns) {
  for (const fn of fns) batch(fn); // warm-up
  const rounds = fns.map(() => []);
  for (let s = 0; s < SAMPLES; s++) fns.forEach((fn, k) => rounds[k].push(batch(fn)));
  return rounds;
}

function summary(samples, base) {
  const sorted = [...samples].sort((a, b) => a - b);
  const ratios = base ? samples.map((v, i) => v / base[i]).sort((a, b) => a - b) : null;
  return {
    median: percentile(sorted, 0.5),
    p10: percentile(sorted, 0.1),
    p90: percentile(sorted, 0.9),
    ratio: ratios && percentile(ratios, 0.5),
  };
}

const us = (ns) => (ns / 1000).toFixed(2);
const sandboxes = [[0, load(0)]];
const loads = [];
for (const n of RULE_COUNTS) {
  const s = load(n);
  for (const [op, p, want] of queries) {
    const got = s.check(op, p).verdict;
    if (got !== want) throw new Error(`${n} rules: ${op} ${p} gave ${got}, expected ${want}`);
  }
  sandboxes.push([n, s]);
  // Sandbox.load returns once every rule is parsed and checked; the glob index finishes
  // building on a thread of its own, and the first decision waits for it: timed apart.
  const times = [];
  const firsts = [];
  for (let i = 0; i < (quick ? 3 : 11); i++) {
    const t0 = process.hrtime.bigint();
    const fresh = loadWritten(n);
    const t1 = process.hrtime.bigint();
    fresh.check("write", queries[2][1]);
    times.push(Number(t1 - t0));
    firsts.push(Number(process.hrtime.bigint() - t1));
  }
  times.sort((a, b) => a - b);
  firsts.sort((a, b) => a - b);
  loads.push([n, percentile(times, 0.5), percentile(firsts, 0.5)]);
}
// The floor for resolving a path safely: libc realpath of each query's directory.
const realpathFn = (op, p) => realpathSync.native(dirname(p));
const jsFn = (op, p) => (op.length + p.length) & 1; // N-API-free loop of the same shape
const rounds = measureAll([jsFn, realpathFn, ...sandboxes.map(([, s]) => (op, p) => s.check(op, p))]);
const [jsRounds, realpathRounds, ...guardRounds] = rounds;
const js = summary(jsRounds);
const realpath = summary(realpathRounds);
const baseline = summary(guardRounds[0], realpathRounds);
const rows = sandboxes.slice(1).map(([n], k) => [n, summary(guardRounds[k + 1], realpathRounds)]);
rmSync(root, { recursive: true, force: true });

console.log(`guard decision through N-API (sandbox.check), ${SAMPLES} interleaved rounds × ${BATCH} decisions, 4-query mix`);
console.log("targets: ≤ 1.2× a bare realpath of the same directory, flat from 10 to 10,000 rules\n");
console.log("| rules | median µs/decision | p10 | p90 | × realpath (median of per-round ratios) | × 10 rules |");
console.log("|---:|---:|---:|---:|---:|---:|");
console.log(`| JS loop (no N-API) | ${us(js.median)} | ${us(js.p10)} | ${us(js.p90)} | | |`);
console.log(`| realpath(dirname) only | ${us(realpath.median)} | ${us(realpath.p10)} | ${us(realpath.p90)} | 1.00× | |`);
console.log(`| defaults only | ${us(baseline.median)} | ${us(baseline.p10)} | ${us(baseline.p90)} | ${baseline.ratio.toFixed(2)}× | |`);
const ref = rows[0][1].median;
for (const [n, m] of rows) {
  console.log(`| ${n} | ${us(m.median)} | ${us(m.p10)} | ${us(m.p90)} | ${m.ratio.toFixed(2)}× | ${(m.median / ref).toFixed(2)}× |`);
}
console.log("\n| rules | Sandbox.load median ms (parse, check, resolve) | first decision after it, ms (waits for the glob index) |");
console.log("|---:|---:|---:|");
for (const [n, ns, first] of loads) console.log(`| ${n} | ${(ns / 1e6).toFixed(2)} | ${(first / 1e6).toFixed(2)} |`);
