// Benchmark (not a test): what filtered network costs. Side by side, interleaved so that
// machine noise hits all alike:
//   1. Throughput of a 1 GiB transfer through HTTP CONNECT: direct loopback; our proxy
//      (Sandbox.startHostProxy, in a process of its own); the floor (`netbench floor`: the
//      least any CONNECT proxy can do, a bare splice relay); @anthropic-ai/sandbox-runtime
//      0.0.78's HTTP proxy (in a process of its own); and ours end to end, from a filtered
//      command inside bwrap through its door in the network namespace. Sender and receiver
//      are socat with 256 KiB buffers, the file in the page cache.
//   2. Latency of a new connection (connect, CONNECT and its 200, one byte echoed) at 1 and
//      100 concurrent connections (100 clients connecting back to back; and 100 held open
//      while new ones are made one at a time), from a native client (examples/netbench.rs)
//      to a native echo server: p50 and p99, and what each proxy adds to direct's.
//   3. A filtered-network `true`: bare bwrap with the same mounts and --unshare-net; ours,
//      as the extension runs it (prepare, spawn, finish: proxy stopped, audit); ours with
//      network off; sandbox-runtime's wrapWithSandbox + spawn with a domain allowed.
// Medians (throughput: of per-round ratios; `true`) and percentiles over many runs.
//   node bench/network-bench.mjs [--quick]
//   PI_SANDBOX_BENCH_PARTS=throughput,latency node bench/network-bench.mjs   (some parts only)
import { execFileSync, spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox } = require(path.join(repo, "index.js"));
const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
const quick = process.argv.includes("--quick");
const GIB = 1 << 30;
const THROUGHPUT_RUNS = quick ? 3 : 15;
const TRUE_RUNS = quick ? 11 : 31;
const LATENCY_ROUNDS = quick ? 2 : 5;
const PARTS = new Set((process.env.PI_SANDBOX_BENCH_PARTS ?? "throughput,latency,true").split(","));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** Runs a child to its end; resolves with its wall time in ms. */
function timed(program, args, options = {}) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"], ...options });
    let stderr = "";
    child.stderr?.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`${program}: exit ${code}: ${stderr}`)),
    );
  });
}

/** A helper process that prints one line (a port) and lives until its stdin ends. */
function helper(program, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        const [port, auth] = out.slice(0, nl).split(" ");
        resolve({ port: Number(port), auth, stop: () => child.stdin.end(), child });
      }
    });
    child.on("error", reject);
    child.on("close", (code) => reject(new Error(`${args.join(" ")} exited ${code}`)));
  });
}

// Built before HOME is changed below (cargo finds its toolchain there).
execFileSync("cargo", ["build", "--release", "-q", "--example", "netbench"], { cwd: repo, stdio: "inherit" });
const netbench = path.join(repo, "target", "release", "examples", "netbench");
mkdirSync(path.join(repo, ".bench"), { recursive: true });
const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "net-")));
const home = path.join(root, "home");
const agentDir = path.join(home, ".pi", "agent");
const cwd = path.join(root, "proj");
const tmp = path.join(root, "tmp");
for (const d of [path.join(agentDir, "extensions"), cwd, tmp]) mkdirSync(d, { recursive: true });
writeFileSync(path.join(agentDir, "extensions", "sandbox.json"), JSON.stringify({ network: { allowedDomains: ["127.0.0.1", "localhost"] } }));
Object.assign(process.env, { HOME: home, TMPDIR: tmp });
const env = { ...process.env, PI_CODING_AGENT_DIR: agentDir };

const ours = await helper(process.execPath, [path.join(repo, "bench", "proxy-server.mjs"), "ours"]);
const srt = await helper(process.execPath, [path.join(repo, "bench", "proxy-server.mjs"), "srt"]);
const floor = await helper(netbench, ["floor"]);
const sandbox = await Sandbox.loadAsync({ cwd, home, agentDir, approvalMode: "ask" });
if (sandbox.error) throw new Error(sandbox.error.message);

try {
  // ---- 1. throughput ---------------------------------------------------------------------
  if (PARTS.has("throughput")) {
  const file = path.join(root, "1GiB");
  execFileSync("head", ["-c", String(GIB), "/dev/zero"], { stdio: ["ignore", openSync(file, "w"), "inherit"] });
  execFileSync("cat", [file], { stdio: ["ignore", "ignore", "inherit"] }); // into the page cache
  const sender = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = probe.address().port;
      probe.close(() => {
        const child = spawn("socat", ["-U", "-b", "262144", `TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `OPEN:${file},rdonly`], { stdio: "ignore" });
        setTimeout(() => resolve({ port, child }), 300);
      });
    });
  });
  const sink = "OPEN:/dev/null,wronly";
  const via = (proxyPort, auth) =>
    `PROXY:127.0.0.1:127.0.0.1:${sender.port},proxyport=${proxyPort}${auth ? `,proxyauth=${auth}` : ""}`;
  const transfers = {
    "direct loopback": () => timed("socat", ["-u", "-b", "262144", `TCP:127.0.0.1:${sender.port}`, sink]),
    "ours (host proxy)": () => timed("socat", ["-u", "-b", "262144", via(ours.port), sink]),
    "floor: a bare splice relay (netbench floor)": () => timed("socat", ["-u", "-b", "262144", via(floor.port), sink]),
    "sandbox-runtime 0.0.78": () => timed("socat", ["-u", "-b", "262144", via(srt.port, srt.auth), sink]),
    // Timed inside the sandbox, around the transfer alone (bwrap's start is part 3's).
    "ours, from inside bwrap (filtered)": async () => {
      const p = await sandbox.prepareBashAsync(
        `s=$(date +%s%N); socat -u -b 262144 ${via("${HTTP_PROXY##*:}")} ${sink} || exit 1; e=$(date +%s%N); echo $(( (e - s) / 1000 ))`,
        "filtered",
      );
      if (p.verdict !== "sandboxed") throw new Error(p.reason);
      const child = spawn(p.program, p.args, { cwd, env, stdio: ["ignore", "pipe", "pipe", ...p.fds] });
      p.release();
      let out = "";
      let err = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (err += d));
      try {
        const code = await new Promise((resolve) => child.on("close", resolve));
        if (code !== 0) throw new Error(`sandboxed socat: exit ${code}: ${err}`);
        return Number(out.trim()) / 1000;
      } finally {
        const notes = await p.finishAsync();
        if (notes.length) throw new Error(notes.join("\n"));
      }
    },
  };
  const rates = Object.fromEntries(Object.keys(transfers).map((k) => [k, []]));
  for (const fn of Object.values(transfers)) await fn(); // warm-up
  for (let i = 0; i < THROUGHPUT_RUNS; i++) for (const [k, fn] of Object.entries(transfers)) rates[k].push(GIB / 1e9 / ((await fn()) / 1000));
  sender.child.kill();
  rmSync(file);
  // The ratio is taken per round (each path against the direct transfer of the same round)
  // and its median reported: the machine's speed drifts between rounds far more than within one.
  const direct = rates["direct loopback"];
  console.log(`\n1 GiB through HTTP CONNECT — ${THROUGHPUT_RUNS} interleaved rounds\n`);
  console.log("| path | median GB/s | median × direct (per round) | min–max × direct |");
  console.log("|---|---:|---:|---:|");
  for (const [k, xs] of Object.entries(rates)) {
    const ratios = xs.map((x, i) => x / direct[i]);
    console.log(`| ${k} | ${median(xs).toFixed(2)} | ${median(ratios).toFixed(2)} | ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} |`);
  }

  }

  // ---- 2. connection latency -------------------------------------------------------------
  if (PARTS.has("latency")) {
  // A native client and echo server (examples/netbench.rs): the proxies' time, not a
  // JavaScript event loop's.
  const echo = await helper(netbench, ["echo"]);
  const targets = { direct: [], ours: [String(ours.port)], floor: [String(floor.port)], "sandbox-runtime 0.0.78": [String(srt.port), srt.auth] };
  const latencyOf = (concurrency, per, proxy, mode = "latency") =>
    new Promise((resolve, reject) => {
      const child = spawn(netbench, [mode, String(echo.port), String(concurrency), String(per), ...proxy.filter(Boolean)], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(out.trim().split("\n").map((l) => Number(l) / 1000)) : reject(new Error(`netbench: exit ${code}`))));
    });
  const latency = {};
  for (const concurrency of [1, 100]) {
    const per = concurrency === 1 ? 400 : 8;
    const samples = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      for (const [k, proxy] of Object.entries(targets)) samples[k].push(...(await latencyOf(concurrency, per, proxy)));
    }
    latency[concurrency] = samples;
  }
  // 100 connections held open (a byte each way every 100 ms) while new ones are made one at
  // a time: what a connection costs when the proxy already carries many, without the
  // saturation of 100 clients connecting back to back on two cores.
  {
    const samples = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
    for (let round = 0; round < LATENCY_ROUNDS; round++) {
      for (const [k, proxy] of Object.entries(targets)) samples[k].push(...(await latencyOf(100, 400, proxy, "held")));
    }
    latency["100 open, new ones 5 ms apart"] = samples;
  }
  echo.stop();
  console.log(`\nA new connection (connect, CONNECT and its 200, one byte echoed), ms — ${LATENCY_ROUNDS} interleaved rounds, a native client\n`);
  console.log("| concurrent | path | connections | p50 | p99 | p50 added | p99 added |");
  console.log("|---:|---|---:|---:|---:|---:|---:|");
  for (const [c, samples] of Object.entries(latency)) {
    const d = samples.direct;
    for (const [k, xs] of Object.entries(samples)) {
      const added = k === "direct" ? ["", ""] : [(pct(xs, 50) - pct(d, 50)).toFixed(3), (pct(xs, 99) - pct(d, 99)).toFixed(3)];
      console.log(`| ${c} | ${k} | ${xs.length} | ${pct(xs, 50).toFixed(3)} | ${pct(xs, 99).toFixed(3)} | ${added[0]} | ${added[1]} |`);
    }
  }
  }

  // ---- 3. a filtered `true` --------------------------------------------------------------
  if (PARTS.has("true")) {
  const first = await sandbox.prepareBashAsync("true", "filtered");
  const { shown, program: bwrap } = first;
  await first.finishAsync();
  // The same mounts by path, the script on fd 3, without pi-sandbox-init (run from the
  // /proc/self/fd/N it inherits, or a copy at /dev/.pi-sandbox-init) and the filters.
  const bare = [];
  for (let i = 0; i < shown.length; i++) {
    const a = shown[i];
    if (a === "--add-seccomp-fd") i += 1;
    else if (a === "--perms" && shown[i + 4] === "/dev/.pi-sandbox-init") i += 4;
    else if (a === "--" && (shown[i + 1] === "/dev/.pi-sandbox-init" || /^\/proc\/self\/fd\/\d+$/.test(shown[i + 1] ?? ""))) {
      bare.push(a);
      i += shown[i + 4] === "--proxy" ? 5 : 4;
    } else if (a === "--bind-fd" || a === "--ro-bind-fd") {
      bare.push(a === "--bind-fd" ? "--bind" : "--ro-bind", shown[i + 2], shown[i + 2]);
      i += 2;
    } else if (a === "--ro-bind-data") {
      bare.push(a, "3", shown[i + 2]);
      i += 2;
    } else bare.push(a);
  }
  if (!bare.includes("--unshare-net")) throw new Error("filtered launch without --unshare-net");
  const script = path.join(root, "bare-script.sh");
  writeFileSync(script, "true");
  await SandboxManager.initialize({
    network: { allowedDomains: ["localhost"], deniedDomains: [] },
    filesystem: { denyRead: ["~/.ssh", "~/.aws", "~/.gnupg"], allowWrite: ["."], denyWrite: [".env", ".env.*", "*.pem", "*.key"] },
  });
  const ourRun = (mode) => async () => {
    const p = await sandbox.prepareBashAsync("true", mode);
    const t = timed(p.program, p.args, { cwd, env, stdio: ["ignore", "ignore", "pipe", ...p.fds] });
    p.release();
    try {
      await t;
    } finally {
      await p.finishAsync();
    }
  };
  const cases = {
    "bare bwrap, same mounts, --unshare-net": async () => {
      const fd = openSync(script, "r");
      try {
        await timed(bwrap, bare, { cwd, env, stdio: ["ignore", "ignore", "pipe", fd] });
      } finally {
        closeSync(fd);
      }
    },
    "ours, filtered (prepare + run + finish)": ourRun("filtered"),
    "ours, off": ourRun("off"),
    "sandbox-runtime 0.0.78, a domain allowed": async () => {
      const wrapped = await SandboxManager.wrapWithSandbox("true");
      try {
        await timed("bash", ["-c", wrapped], { cwd, env });
      } finally {
        SandboxManager.cleanupAfterCommand();
      }
    },
  };
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const time = async (fn) => {
    const t0 = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  for (let i = 0; i < 3; i++) for (const fn of Object.values(cases)) await time(fn);
  for (let i = 0; i < TRUE_RUNS; i++) for (const [k, fn] of Object.entries(cases)) samples[k].push(await time(fn));
  await SandboxManager.reset();
  const ref = median(samples["bare bwrap, same mounts, --unshare-net"]);
  console.log(`\nA sandboxed \`true\` — median of ${TRUE_RUNS} interleaved runs\n`);
  console.log("| command | median ms | × bare bwrap |");
  console.log("|---|---:|---:|");
  for (const [k, xs] of Object.entries(samples)) console.log(`| ${k} | ${median(xs).toFixed(2)} | ${(median(xs) / ref).toFixed(2)} |`);
  }
} finally {
  ours.stop();
  srt.stop();
  floor.stop();
  rmSync(root, { recursive: true, force: true });
}
