// Benchmark (not a test): what the hardening of issue 9 costs.
//   node bench/hardening-bench.mjs [--quick]
// 1. A sandboxed `true` (as bench/bash-bench.mjs runs it), interleaved, medians:
//    bare bwrap with the same mounts · + the kernel seccomp filters · + pi-sandbox-init and the
//    socket supervisor (ours, complete). The hardening is taken out of our own prepared
//    arguments, so every other argument is the same.
// 2. The redactor: 100 MB of output with 100 secrets in it, pushed through a RedactStream in
//    64 KiB chunks (N-API calls included), against the same bytes only copied.
// 3. Streaming: `seq 1 10000000` in the sandbox, its output read with and without redaction.
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = require(path.join(repo, "index.js"));
const quick = process.argv.includes("--quick");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

mkdirSync(path.join(repo, ".bench"), { recursive: true });
const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "hardening-")));
const home = path.join(root, "home");
const agentDir = path.join(home, ".pi", "agent");
const cwd = path.join(root, "proj");
const tmp = path.join(root, "tmp");
for (const d of [agentDir, cwd, tmp]) mkdirSync(d, { recursive: true });
Object.assign(process.env, { HOME: home, TMPDIR: tmp });
// 100 secrets in the environment, in the shapes real tokens have (GitHub, Anthropic, Slack,
// AWS, npm, hex): each is dropped from commands and hidden in output. How fast the search is
// depends on them (their first bytes against the text's), so they are not all alike.
const b62 = (n) => Array.from(randomBytes(n), (x) => "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[x % 62]).join("");
const shapes = [() => `ghp_${b62(36)}`, () => `sk-ant-api03-${b62(40)}`, () => `xoxb-${b62(30)}`, () => `AKIA${b62(16).toUpperCase()}`, () => `npm_${b62(36)}`, () => randomBytes(20).toString("hex")];
const secrets = Array.from({ length: 100 }, (_, i) => [`BENCH_${i}_TOKEN`, shapes[i % shapes.length]()]);
for (const [k, v] of secrets) process.env[k] = v;
process.chdir(cwd);

function run(program, args, stdio, onStdout) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd, stdio });
    if (onStdout) child.stdout.on("data", onStdout);
    child.on("error", reject);
    child.on("close", resolve);
  });
}

/** Our arguments (from the --args file) with parts of the hardening taken out. */
function edited(p, { seccomp, init }) {
  const all = readFileSync(`/proc/self/fd/${p.fds[0]}`, "utf8").split("\0");
  if (all.at(-1) === "") all.pop();
  const args = [...all, ...p.args.slice(2)];
  const out = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--add-seccomp-fd" && !seccomp) i += 1;
    else if (a === "--perms" && args[i + 4] === "/dev/.pi-sandbox-init" && !init) i += 4;
    else if ((a === "/dev/.pi-sandbox-init" || /^\/proc\/self\/fd\/\d+$/.test(a)) && !init) i += 3;
    else out.push(a);
  }
  return out;
}

try {
  const s = await Sandbox.loadAsync({ cwd, home, agentDir, approvalMode: "ask" });
  if (s.error) throw new Error(s.error.message);
  await (await s.prepareBashAsync("true", "off")).finishAsync();

  // 1. The launch.
  const variants = {
    "bare bwrap, same mounts": { seccomp: false, init: false },
    "+ kernel seccomp filters": { seccomp: true, init: false },
    "+ pi-sandbox-init and the socket supervisor (ours)": { seccomp: true, init: true },
  };
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const runs = quick ? 21 : 61;
  for (let r = 0; r < runs + 3; r++) {
    for (const [k, v] of Object.entries(variants)) {
      const p = await s.prepareBashAsync("true", "off");
      const t0 = performance.now();
      await run(p.program, edited(p, v), ["ignore", "ignore", "inherit", ...p.fds]);
      const ms = performance.now() - t0;
      p.release();
      await p.finishAsync();
      if (r >= 3) samples[k].push(ms);
    }
  }
  const ref = median(samples["bare bwrap, same mounts"]);
  console.log(`\nsandboxed \`true\`, bwrap's run only (prepare and audit apart) — median of ${runs} interleaved runs\n`);
  console.log("| launch | median ms | × bare bwrap |\n|---|---:|---:|");
  for (const [k, xs] of Object.entries(samples)) console.log(`| ${k} | ${median(xs).toFixed(2)} | ${(median(xs) / ref).toFixed(2)} |`);

  // 2. The redactor's throughput.
  const MB = quick ? 50 : 100;
  const filler = Buffer.from("INFO request handled in 12 ms for /api/v1/items?page=3 by worker-7\n");
  const chunk = 65536;
  const text = Buffer.alloc(MB * 1e6);
  for (let at = 0; at < text.length; at += filler.length) filler.copy(text, at);
  for (let i = 0; i < 1000; i++) Buffer.from(secrets[i % 100][1]).copy(text, Math.floor((i + 0.5) * (text.length / 1000)));
  const pass = (fn) => {
    const t0 = performance.now();
    let out = 0;
    for (let at = 0; at < text.length; at += chunk) out += fn(text.subarray(at, at + chunk)).length;
    return [performance.now() - t0, out];
  };
  const copyMs = [];
  const redactMs = [];
  let redactedBytes = 0;
  for (let r = 0; r < 5; r++) {
    copyMs.push(pass((c) => Buffer.from(c))[0]);
    const st = s.redactStream();
    const [ms, n] = pass((c) => st.push(c));
    redactMs.push(ms);
    redactedBytes = n + st.finish().length;
  }
  // The same with 30 secrets (a typical session): few enough for the matcher's SIMD search.
  for (const [k] of secrets.slice(30)) delete process.env[k];
  const few = await Sandbox.loadAsync({ cwd, home, agentDir, approvalMode: "ask" });
  const fewMs = [];
  for (let r = 0; r < 5; r++) {
    const st = few.redactStream();
    fewMs.push(pass((c) => st.push(c))[0]);
    st.finish();
  }
  const gbps = (ms) => (text.length / 1e9 / (ms / 1000)).toFixed(2);
  console.log(`\nredactor: ${MB} MB with 1,000 occurrences of 100 secrets, 64 KiB chunks through N-API, median of 5`);
  console.log("| pass | median ms | GB/s |\n|---|---:|---:|");
  console.log(`| copy only (Buffer.from per chunk) | ${median(copyMs).toFixed(1)} | ${gbps(median(copyMs))} |`);
  console.log(`| RedactStream.push, 100 secrets | ${median(redactMs).toFixed(1)} | ${gbps(median(redactMs))} |`);
  console.log(`| RedactStream.push, 30 of them | ${median(fewMs).toFixed(1)} | ${gbps(median(fewMs))} |`);
  console.log(`(output ${redactedBytes.toLocaleString("en")} bytes for ${text.length.toLocaleString("en")} in)`);

  // 3. Streaming through the sandbox, with and without redaction.
  const seqN = quick ? 3_000_000 : 10_000_000;
  const stream = { plain: [], redacted: [] };
  for (let r = 0; r < (quick ? 3 : 7); r++) {
    for (const mode of ["plain", "redacted"]) {
      const p = await s.prepareBashAsync(`seq 1 ${seqN}`, "off");
      const st = mode === "redacted" ? s.redactStream() : null;
      let bytes = 0;
      const t0 = performance.now();
      await run(p.program, p.args, ["ignore", "pipe", "inherit", ...p.fds], (d) => {
        bytes += (st ? st.push(d) : d).length;
      });
      if (st) bytes += st.finish().length;
      stream[mode].push(performance.now() - t0);
      p.release();
      await p.finishAsync();
    }
  }
  const plain = median(stream.plain);
  const red = median(stream.redacted);
  console.log(`\n\`seq 1 ${seqN.toLocaleString("en")}\` in the sandbox, output read by Node — median of ${stream.plain.length}`);
  console.log("| output | median ms | × plain |\n|---|---:|---:|");
  console.log(`| plain | ${plain.toFixed(0)} | 1.00 |`);
  console.log(`| redacted (100 secrets) | ${red.toFixed(0)} | ${(red / plain).toFixed(3)} |`);
} finally {
  process.chdir(repo);
  rmSync(root, { recursive: true, force: true });
}
