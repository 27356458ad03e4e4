// Benchmark (not a test): what sandboxing costs one bash command.
//   A. bare `bash -c true`
//   B. the same bwrap line the sandbox builds, run directly: bwrap <args> -- bash -l <script>
//      with the script on fd 3 (as the pipeline passes it)
//   C. that line through `bash -c`, the way pi starts every command (with or without sandbox)
//   D. the full pipeline as pi runs it: prepareBash("true") (policy, mount plan, temp script),
//      `bash -c <wrapped>` (bwrap, `bash -l <script>`), then the audit of what it created
// Medians over many runs, interleaved so that machine noise hits all three alike.
//   node bench/bash-bench.mjs [--quick]
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from "node:fs";
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

const bare = sandbox.prepareBash("true", "off");
if (bare.verdict !== "sandboxed") throw new Error(`no sandbox: ${bare.reason}`);
const bareScript = path.join(root, "bare-script.sh");
writeFileSync(bareScript, "true");
rmSync(bare.script, { force: true });
// bwrap's options come from an args file on fd 4; keep a copy for the repeated bare runs.
const bareArgs = path.join(root, "bare-args");
copyFileSync(bare.argsFile, bareArgs);
rmSync(bare.argsFile, { force: true });

function time(fn) {
  const t0 = process.hrtime.bigint();
  const r = fn();
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}
const cases = {
  "bash -c true": () => spawnSync("bash", ["-c", "true"], { cwd, env }),
  "same bwrap line, run bare": () => {
    const fd = openSync(bareScript, "r");
    try {
      return spawnSync(bare.program, bare.args, { cwd, env, stdio: ["ignore", "pipe", "pipe", fd] });
    } finally {
      closeSync(fd);
    }
  },
  "same bwrap line via bash -c": () => {
    const line = bare.command
      .replace(/'[^']*pi-bash-[^']*\.sh'/g, `'${bareScript}'`)
      .replace(/'[^']*pi-bwrap-args-[^']*'/g, `'${bareArgs}'`)
      .replace(/ && rm -f -- '[^']*' '[^']*'/, "");
    return spawnSync("bash", ["-c", line], { cwd, env });
  },
  "sandboxed (prepare + run + audit)": () => {
    const p = sandbox.prepareBash("true", "off");
    const r = spawnSync("bash", ["-c", p.command], { cwd, env });
    sandbox.auditAfterCommand();
    return r;
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
  rmSync(p.script, { force: true });
  rmSync(p.argsFile, { force: true });
}
rmSync(root, { recursive: true, force: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ref = median(samples["same bwrap line, run bare"]);
console.log(`one command, median of ${RUNS} interleaved runs (ms); target: sandboxed ≤ 1.3× bare bwrap\n`);
const viaShell = median(samples["same bwrap line via bash -c"]);
console.log("| command | median ms | × bare bwrap | × bwrap line via bash -c |");
console.log("|---|---:|---:|---:|");
for (const [k, xs] of Object.entries(samples)) {
  console.log(`| ${k} | ${median(xs).toFixed(2)} | ${(median(xs) / ref).toFixed(2)} | ${(median(xs) / viaShell).toFixed(2)} |`);
}
console.log(`\nprepareBash alone (policy + mount plan + workspace scan of 200 files + script): median ${median(prep).toFixed(2)} ms`);
