// Benchmark (not a test): what sandboxing costs one bash command, by repository size.
// In generated git repositories of 1,000, 100,000 and 1,000,000 files (1,000 per directory),
// side by side, interleaved so that machine noise hits all alike:
//   A. bare `bash -c true`
//   B. bare bwrap with the same mounts ours builds, by path, the script on fd 3
//   C. ours, as the extension runs it: prepareBashAsync("true") (policy, the index's answer,
//      mount plan, mount sources opened), bwrap spawned directly with its fds, finishAsync()
//      (the audit)
//   D. @anthropic-ai/sandbox-runtime 0.0.78: SandboxManager.wrapWithSandbox("true"), then the
//      wrapped command through `bash -c`, then cleanupAfterCommand()
// Also the index's build time (the first command waits for it) and the process's memory
// growth for it. Medians; ratios against B of the same size.
// Each size runs in two homes: an empty one, and one laid out like a developer's
// (bench/developer-home.mjs: profiles that start a version manager, toolchains, caches, other
// projects; 200,000 entries), with `bash -lc true` beside it to show what a login profile costs.
//   node bench/bash-bench.mjs [--quick]        (--quick: 1,000 and 100,000 files, fewer runs)
//   PI_SANDBOX_BENCH_SIZES=1000,1000000 PI_SANDBOX_BENCH_HOMES=developer node bench/bash-bench.mjs
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync, openSync, closeSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { makeDeveloperHome } from "./developer-home.mjs";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = require(path.join(repo, "index.js"));
const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
const quick = process.argv.includes("--quick");
const RUNS = quick ? 11 : 31;
const SIZES = (process.env.PI_SANDBOX_BENCH_SIZES ?? (quick ? "1000,100000" : "1000,100000,1000000")).split(",").map(Number);
const PER_DIR = 1000;
const HOMES = (process.env.PI_SANDBOX_BENCH_HOMES ?? "empty,developer").split(",");
const DEV_HOME_ENTRIES = 200_000;

mkdirSync(path.join(repo, ".bench"), { recursive: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs a child to its end; resolves with its exit code. */
function run(program, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"], ...options });
    let stderr = "";
    child.stderr?.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(code) : reject(new Error(`${program}: exit ${code}: ${stderr}`))));
  });
}

async function time(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/**
 * The same mounts as `prepared`, by path, with the script on fd 3; without the hardening
 * (seccomp filters, pi-sandbox-init and its socket supervisor), which is timed apart.
 */
function bareArgsOf(prepared, dataFile) {
  const out = [];
  const shown = prepared.shown;
  for (let i = 0; i < shown.length; i++) {
    const a = shown[i];
    if (a === "--add-seccomp-fd") {
      i += 1;
    } else if (a === "--perms" && shown[i + 4] === "/dev/.pi-sandbox-init") {
      i += 4;
    } else if (a === "--" && (shown[i + 1] === "/dev/.pi-sandbox-init" || /^\/proc\/self\/fd\/\d+$/.test(shown[i + 1]))) {
      out.push(a);
      i += 4;
    } else if (a === "--bind-fd" || a === "--ro-bind-fd") {
      out.push(a === "--bind-fd" ? "--bind" : "--ro-bind", shown[i + 2], shown[i + 2]);
      i += 2;
    } else if (a === "--ro-bind-data" && shown[i + 2].startsWith("/dev/")) {
      out.push(a, "3", shown[i + 2]);
      i += 2;
    } else if (a === "--perms" && shown[i + 2] === "--file") {
      // The `.gitignore` over an empty `.pi`: a file of the same kind, by path.
      out.push("--ro-bind", dataFile, shown[i + 4]);
      i += 4;
    } else out.push(a);
  }
  return out;
}

async function benchSize(files, homeKind) {
  const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "bash-")));
  try {
    const home = path.join(root, "home");
    const agentDir = path.join(home, ".pi", "agent");
    const cwd = path.join(root, "proj");
    const tmp = path.join(root, "tmp");
    for (const d of [path.join(home, ".ssh"), agentDir, cwd, tmp]) mkdirSync(d, { recursive: true });
    if (homeKind === "developer") {
      const t0 = Date.now();
      const n = makeDeveloperHome(home, DEV_HOME_ENTRIES);
      console.error(`developer home: ${n.toLocaleString("en")} entries in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    execFileSync("git", ["init", "-q", cwd]);
    const dirs = Math.ceil(files / PER_DIR);
    const made = Date.now();
    execFileSync("bash", ["-c", `cd "$1" && for d in $(seq 1 ${dirs}); do mkdir -p src/d$d && (cd src/d$d && seq -f 'f%g.ts' 1 ${Math.min(PER_DIR, files)} | xargs touch); done`, "_", cwd]);
    const env = { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir, TMPDIR: tmp };
    Object.assign(process.env, { HOME: home, TMPDIR: tmp });
    process.chdir(cwd);
    console.error(`${files} files made in ${((Date.now() - made) / 1000).toFixed(1)} s`);

    const rssBefore = process.memoryUsage().rss;
    const loadStart = performance.now();
    const sandbox = await Sandbox.loadAsync({ cwd, home, agentDir, approvalMode: "ask" });
    if (sandbox.error) throw new Error(sandbox.error.message);
    const first = await sandbox.prepareBashAsync("true", "off");
    const build = performance.now() - loadStart;
    if (first.verdict !== "sandboxed") throw new Error(`no sandbox: ${first.reason}`);
    const rss = process.memoryUsage().rss - rssBefore;
    const dataFile = path.join(root, "data-file");
    writeFileSync(dataFile, "*\n");
    const bareArgs = bareArgsOf(first, dataFile);
    // In the session's pod, bwrap runs under pi-sandbox-init --join USERNS NETNS PIDNS -- bwrap ...
    const bwrap = first.args[0] === "--join" ? first.args[first.args.indexOf("--") + 1] : first.program;
    await first.finishAsync();
    const script = path.join(root, "bare-script.sh");
    writeFileSync(script, "true");

    await SandboxManager.initialize({
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { denyRead: ["~/.ssh", "~/.aws", "~/.gnupg"], allowWrite: ["."], denyWrite: [".env", ".env.*", "*.pem", "*.key"] },
    });
    const cases = {
      "bash -c true": () => run("bash", ["-c", "true"], { cwd, env }),
      ...(homeKind === "developer" ? { "bash -lc true (the login profile)": () => run("bash", ["-lc", "true"], { cwd, env }) } : {}),
      "bare bwrap, same mounts": async () => {
        const fd = openSync(script, "r");
        try {
          await run(bwrap, bareArgs, { cwd, env, stdio: ["ignore", "ignore", "pipe", fd] });
        } finally {
          closeSync(fd);
        }
      },
      "ours (prepare + run + audit)": async () => {
        const p = await sandbox.prepareBashAsync("true", "off");
        const child = run(p.program, p.args, { cwd, env, stdio: ["ignore", "ignore", "pipe", ...p.fds] });
        p.release();
        try {
          await child;
        } finally {
          await p.finishAsync();
        }
      },
      "sandbox-runtime 0.0.78": async () => {
        const wrapped = await SandboxManager.wrapWithSandbox("true");
        try {
          await run("bash", ["-c", wrapped], { cwd, env });
        } finally {
          SandboxManager.cleanupAfterCommand();
        }
      },
    };
    const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    for (let i = 0; i < 3; i++) for (const fn of Object.values(cases)) await time(fn); // warm-up
    for (let i = 0; i < RUNS; i++) for (const [k, fn] of Object.entries(cases)) samples[k].push(await time(fn));
    await SandboxManager.reset();
    const ref = median(samples["bare bwrap, same mounts"]);
    const homeSaid = homeKind === "developer" ? `a developer's home of ${DEV_HOME_ENTRIES.toLocaleString("en")} entries` : "an empty home";
    console.log(`\n${files.toLocaleString("en")} files, ${homeSaid} — median of ${RUNS} interleaved runs (index: ${sandbox.indexStatus})\n`);
    console.log("| command | median ms | × bare bwrap |");
    console.log("|---|---:|---:|");
    for (const [k, xs] of Object.entries(samples)) console.log(`| ${k} | ${median(xs).toFixed(2)} | ${(median(xs) / ref).toFixed(2)} |`);
    console.log(`\nindex build (load + first prepare): ${build.toFixed(0)} ms; process memory +${(rss / 1048576).toFixed(1)} MiB`);
  } finally {
    process.chdir(repo);
    rmSync(root, { recursive: true, force: true });
  }
}

for (const size of SIZES) for (const home of HOMES) await benchSize(size, home);
