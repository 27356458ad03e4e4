// Benchmark (not a test): what sandboxing costs one bash command.
//   A. bare `bash -c true`
//   B. bare bwrap with the same mounts the sandbox builds, by path, run directly:
//      bwrap <mounts> -- bash -l <script>, the script on fd 3
//   C. the full pipeline as the extension runs it: prepareBash("true") (policy, scan, mount
//      plan, mount sources opened), bwrap spawned directly with its fds, then the audit
// Medians over many runs, interleaved so that machine noise hits all of them alike.
//   node bench/bash-bench.mjs [--quick]
import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = require(path.join(repo, "index.js"));
const RUNS = process.argv.includes("--quick") ? 15 : 61;

mkdirSync(path.join(repo, ".bench"), { recursive: true });
const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "bash-")));
// A throwaway home without shell profiles: the login shell's own start-up files are the
// user's cost, not the sandbox's.
const home = path.join(root, "home");
const agentDir = path.join(home, ".pi", "agent");
const cwd = path.join(root, "proj");
const tmp = path.join(root, "tmp");
for (const d of [path.join(home, ".ssh"), agentDir, path.join(cwd, "src"), tmp]) mkdirSync(d, { recursive: true });
for (let i = 0; i < 200; i++) writeFileSync(path.join(cwd, "src", `f${i}.ts`), "");
const env = { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir, TMPDIR: tmp };
process.env.TMPDIR = tmp;
const sandbox = Sandbox.load({ cwd, home, agentDir, approvalMode: "ask" });
if (sandbox.error) throw new Error(sandbox.error.message);

const first = sandbox.prepareBash("true", "off");
if (first.verdict !== "sandboxed") throw new Error(`no sandbox: ${first.reason}`);
// The same mounts by path, the script on fd 3: what bwrap costs without us.
const bareScript = path.join(root, "bare-script.sh");
writeFileSync(bareScript, "true");
const bareArgs = [];
const shown = first.shown;
for (let i = 0; i < shown.length; i++) {
  const a = shown[i];
  if (a === "--bind-fd" || a === "--ro-bind-fd") {
    const p = shown[i + 2];
    bareArgs.push(a === "--bind-fd" ? "--bind" : "--ro-bind", p, p);
    i += 2;
  } else if (a === "--ro-bind-data") {
    bareArgs.push(a, "3", shown[i + 2]);
    i += 2;
  } else bareArgs.push(a);
}
const bwrapProgram = first.program;
first.finish();

function time(fn) {
  const t0 = process.hrtime.bigint();
  const r = fn();
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}
const cases = {
  "bash -c true": () => spawnSync("bash", ["-c", "true"], { cwd, env }),
  "bare bwrap, same mounts": () => {
    const fd = openSync(bareScript, "r");
    try {
      return spawnSync(bwrapProgram, bareArgs, { cwd, env, stdio: ["ignore", "pipe", "pipe", fd] });
    } finally {
      closeSync(fd);
    }
  },
  "sandboxed (prepare + run + audit)": () => {
    const p = sandbox.prepareBash("true", "off");
    try {
      return spawnSync(p.program, p.args, { cwd, env, stdio: ["ignore", "pipe", "pipe", ...p.fds] });
    } finally {
      p.finish(); // and the audit
    }
  },
};
const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let i = 0; i < 3; i++) for (const fn of Object.values(cases)) time(fn); // warm-up
for (let i = 0; i < RUNS; i++) for (const [k, fn] of Object.entries(cases)) samples[k].push(time(fn));
const prep = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = process.hrtime.bigint();
  const p = sandbox.prepareBash("true", "off");
  prep.push(Number(process.hrtime.bigint() - t0) / 1e6);
  p.finish();
}
rmSync(root, { recursive: true, force: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ref = median(samples["bare bwrap, same mounts"]);
console.log(`one command, median of ${RUNS} interleaved runs (ms); target: sandboxed ≤ 1.2× bare bwrap\n`);
console.log("| command | median ms | × bare bwrap |");
console.log("|---|---:|---:|");
for (const [k, xs] of Object.entries(samples)) {
  console.log(`| ${k} | ${median(xs).toFixed(2)} | ${(median(xs) / ref).toFixed(2)} |`);
}
console.log(`\nprepareBash alone (policy + scan of 200 files + mount plan + mount sources opened): median ${median(prep).toFixed(2)} ms`);
