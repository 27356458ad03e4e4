// Tests of the addon's exported API and of the CLI, on real files in a throwaway tree.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const addon = require(path.join(repo, "index.js"));
const { Sandbox, parseMode, guardedTools } = addon;

/** A tree outside /tmp (the defaults make /tmp writable): home with a secret, agent dir, project. */
function world() {
  const base = path.join(repo, "__test__", ".work");
  mkdirSync(base, { recursive: true });
  const root = realpathSync(mkdtempSync(path.join(base, "addon-")));
  const home = path.join(root, "home");
  const agentDir = path.join(home, ".pi", "agent");
  const cwd = path.join(root, "proj");
  for (const d of [path.join(home, ".ssh"), agentDir, path.join(cwd, "src"), path.join(root, "outside")]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(path.join(home, ".ssh", "id_rsa"), "SECRET");
  const load = (extra = {}) => Sandbox.load({ cwd, home, agentDir, approvalMode: "ask", ...extra });
  return { root, home, agentDir, cwd, load, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

test("check names the rule and the file it came from", (t) => {
  const w = world();
  t.after(w.cleanup);
  mkdirSync(path.join(w.cwd, ".pi"));
  const project = path.join(w.cwd, ".pi", "sandbox.json");
  writeFileSync(project, JSON.stringify({ filesystem: { denyWrite: ["**/secrets/**", "*.pem"] } }));
  const s = w.load();
  assert.equal(s.error, null);
  const d = s.check("write", "a/secrets/token");
  assert.equal(d.verdict, "deny");
  assert.equal(d.rule, "denyWrite pattern '**/secrets/**'");
  assert.equal(d.source, project);
  assert.equal(d.path, path.join(w.cwd, "a/secrets/token"));
  assert.match(d.reason, /denyWrite wins over allowWrite/);
  assert.equal(s.check("write", "src/main.rs").verdict, "allow");
  const r = s.check("read", path.join(w.home, ".ssh/id_rsa"));
  assert.equal(r.verdict, "deny");
  assert.equal(r.source, "built-in defaults");
});

test("paths are canonicalised: a symlink to a secret is the secret", (t) => {
  const w = world();
  t.after(w.cleanup);
  symlinkSync(path.join(w.home, ".ssh", "id_rsa"), path.join(w.cwd, "src", "notes.txt"));
  const s = w.load();
  const d = s.check("read", "src/notes.txt");
  assert.equal(d.verdict, "deny");
  assert.equal(d.path, path.join(w.home, ".ssh", "id_rsa"));
});

test("explain returns every rule consulted", (t) => {
  const w = world();
  t.after(w.cleanup);
  const e = w.load().explain("write", path.join(w.root, "outside", "x"));
  assert.equal(e.decision.verdict, "prompt", "outside allowWrite: the user may grant it");
  assert.equal(e.decision.rule, "outside allowWrite");
  assert.deepEqual(
    e.steps.map((s) => s.rule),
    ["enabled = true", "mode read-write", "pi control surface", "git hooks directory (core.hooksPath) or included git config", "denyRead (writes into hidden paths)", "denyWrite", "allowWrite"],
  );
  assert.equal(e.steps.at(-1).matched, false);
});

test("checkTool resolves inputs as pi does and patches grep's glob", (t) => {
  const w = world();
  t.after(w.cleanup);
  const s = w.load();
  assert.equal(s.checkTool("bash", { command: "ls" }), null);
  const read = s.checkTool("read", { path: "@../home/.ssh/id_rsa" });
  assert.equal(read.decision.verdict, "deny");
  assert.equal(read.patch, undefined);
  const grep = s.checkTool("grep", { pattern: "x" });
  assert.equal(grep.decision.verdict, "allow");
  // Secret env files stay out; templates (.env.example) are searched since they hold no secrets.
  assert.match(grep.patch.glob, /^!\{\.env,/);
  assert.notEqual(grep.patch.glob, "!{.env,.env.*}");
  assert.equal(s.checkTool("grep", { pattern: "x", path: w.home }).decision.verdict, "deny");
  assert.equal(s.checkTool("write", { path: ".pi/extensions/x.ts", content: "" }).decision.verdict, "deny");
  assert.deepEqual(guardedTools(), ["read", "write", "edit", "grep", "find", "ls"]);
});

test("a broken config loads in a refusing state and recovers once fixed", (t) => {
  const w = world();
  t.after(w.cleanup);
  mkdirSync(path.join(w.cwd, ".pi"));
  const project = path.join(w.cwd, ".pi", "sandbox.json");
  writeFileSync(project, '{\n  "filesystem": {\n    "denyWrite": [".env",]\n  }\n}\n');
  const s = w.load();
  assert.equal(s.error.code, "E_CONFIG_PARSE");
  assert.equal(s.error.file, project);
  assert.match(s.error.message, new RegExp(`^${project.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3:`));
  const d = s.checkTool("read", { path: "src/ok.txt" });
  assert.equal(d.decision.verdict, "deny");
  assert.match(d.decision.reason, /cannot load its policy/);
  assert.match(s.describe(), /BROKEN \(E_CONFIG_PARSE\)/);
  // Fixed on disk: the next tool call picks it up without a restart.
  writeFileSync(project, JSON.stringify({ filesystem: { denyWrite: [".env"] } }));
  assert.equal(s.checkTool("read", { path: "src/ok.txt" }).decision.verdict, "allow");
  assert.equal(s.error, null);
});

test("schema errors carry the key path; bad rules name the entry", (t) => {
  const w = world();
  t.after(w.cleanup);
  mkdirSync(path.join(w.cwd, ".pi"));
  const project = path.join(w.cwd, ".pi", "sandbox.json");
  writeFileSync(project, JSON.stringify({ filesystem: { allowWrite: ".", denyRead: [] } }));
  let s = w.load();
  assert.equal(s.error.code, "E_CONFIG_SCHEMA");
  assert.match(s.error.message, /filesystem\.allowWrite/);
  writeFileSync(project, JSON.stringify({ network: { alowedDomains: [] } }));
  s = w.load();
  assert.match(s.error.message, /network\.alowedDomains/);
  writeFileSync(project, JSON.stringify({ filesystem: { denyRead: ["~/*.txt"] } }));
  s = w.load();
  assert.equal(s.error.code, "E_CONFIG_RULE");
  assert.match(s.error.message, /~\/\*\.txt/);
});

test("modes: aliases, errors with codes, cycling", (t) => {
  const w = world();
  t.after(w.cleanup);
  assert.equal(parseMode("ro"), "read-only");
  assert.equal(parseMode("readwrite"), "read-write");
  assert.throws(() => parseMode("off"), (e) => e.code === "E_BAD_MODE" && /read-only/.test(e.message));
  const s = w.load();
  assert.equal(s.mode, "read-write");
  assert.equal(s.setMode("ro", "test"), "read-only");
  const d = s.check("write", "src/a.ts");
  assert.equal(d.rule, "mode read-only");
  assert.equal(d.source, "test");
  assert.equal(s.cycleMode("Ctrl+X"), "read-write");
  assert.equal(s.cycleMode("Ctrl+X"), "yolo");
  assert.equal(s.check("read", path.join(w.home, ".ssh/id_rsa")).verdict, "allow");
  assert.equal(s.cycleMode("Ctrl+X"), "read-only");
  assert.throws(() => s.check("delete", "x"), (e) => e.code === "E_BAD_OP");
  assert.throws(() => s.check("read", "a\0b"), (e) => e.code === "E_BAD_PATH");
  assert.throws(() => Sandbox.load({ cwd: "relative" }), (e) => e.code === "E_BAD_PATH");
});

test("approval modes for env files, and a bad value fails closed", (t) => {
  const w = world();
  t.after(w.cleanup);
  writeFileSync(path.join(w.cwd, ".env"), "TOKEN=1");
  assert.equal(w.load({ approvalMode: "ask" }).check("read", ".env").verdict, "prompt");
  assert.equal(w.load({ approvalMode: "deny" }).check("read", ".env").verdict, "deny");
  assert.equal(w.load({ approvalMode: "always" }).check("read", ".env").verdict, "allow");
  const bad = w.load({ approvalMode: "maybe" });
  assert.equal(bad.error.code, "E_APPROVAL_MODE");
  assert.equal(bad.check("read", "src/x").verdict, "deny");
});

test("enabled:false turns the guard off, and /sandbox says so with its source", (t) => {
  const w = world();
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  writeFileSync(global, JSON.stringify({ enabled: false }));
  const s = w.load();
  assert.equal(s.enabled, false);
  assert.equal(s.check("write", "/etc/passwd").verdict, "allow");
  assert.match(s.describe(), new RegExp(`enabled\\s+false\\s+↳ from ${global.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
});

function cli(args, opts = {}) {
  return spawnSync(process.execPath, [path.join(repo, "bin", "pi-sandbox.js"), ...args], {
    encoding: "utf8",
    ...opts,
  });
}

test("CLI: check and explain exit 0/1 with the reason; config shows sources", (t) => {
  const w = world();
  t.after(w.cleanup);
  const env = { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, PI_SANDBOX_APPROVAL_MODE: "" };
  let r = cli(["check", "read", "~/.ssh/id_rsa"], { cwd: w.cwd, env });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stdout, /BLOCKED: read .*\.ssh\/id_rsa/);
  assert.match(r.stdout, /denyRead entry '~\/\.ssh'/);
  r = cli(["check", "write", "src/new.ts", "--json"], { cwd: w.cwd, env });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).verdict, "allow");
  // The session's own /tmp is named /tmp, as pi's users and commands name it, not by the
  // run's ephemeral host folder.
  r = cli(["check", "write", "/tmp/x"], { cwd: w.cwd, env });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^ALLOWED: write \/tmp\/x\n/, r.stdout);
  assert.doesNotMatch(r.stdout, /pi-sandbox-\d+\//, r.stdout);
  r = cli(["explain", "write", "/tmp/x", "--json"], { cwd: w.cwd, env });
  assert.equal(JSON.parse(r.stdout).decision.path, "/tmp/x", r.stdout);
  assert.match(JSON.parse(r.stdout).decision.reason, /^Write to \/tmp\/x is allowed/, r.stdout);
  // ... and so is it where another decision names it (the allowWrite list).
  r = cli(["check", "write", "/etc/x"], { cwd: w.cwd, env });
  assert.match(r.stdout, /outside every allowWrite directory \([^)]*, \/tmp;/, r.stdout);
  assert.doesNotMatch(r.stdout, /pi-sandbox-\d+\//, r.stdout);
  r = cli(["explain", "write", "key.pem", "--cwd", w.cwd], { env });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /● denyWrite/);
  r = cli(["config"], { cwd: w.cwd, env });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /filesystem\.denyRead\s+~\/\.ssh/);
  assert.match(r.stdout, /\(absent\)/);
  r = cli(["check", "delete", "x"], { cwd: w.cwd, env });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /usage: pi-sandbox check read\|write PATH/);
  mkdirSync(path.join(w.cwd, ".pi"));
  writeFileSync(path.join(w.cwd, ".pi", "sandbox.json"), "{ nope");
  r = cli(["config"], { cwd: w.cwd, env });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /BROKEN \(E_CONFIG_PARSE\).*sandbox\.json:1:3/);
});

test("a command's errors about hidden or read-only paths get the rule; others nothing", (t) => {
  const w = world();
  t.after(w.cleanup);
  const s = Sandbox.load({ cwd: w.cwd, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const notes = s.explainWriteFailures(
    [
      `cat: ${w.home}/.ssh/id_rsa: No such file or directory`,
      "cat: missing.txt: No such file or directory",
      `ls: cannot open directory '${w.home}/.ssh': Permission denied`,
      "bash: .pi/x: Read-only file system",
    ].join("\n"),
  );
  assert.equal(notes.length, 3, JSON.stringify(notes));
  assert.match(notes[0], /\.ssh\/id_rsa is hidden in the sandbox \(commands see it missing or empty\): it is covered by denyRead entry '~\/\.ssh'/);
  assert.match(notes[1], /\.ssh is hidden in the sandbox/);
  assert.match(notes[2], /\.pi\/x is read-only in the sandbox: /);
  // Each names its path once.
  for (const n of notes) assert.equal(n.split(n.split(" is ")[0]).length - 1, 1, n);
});

test("CLI run: the command's words are its own from the program on; 127 and 126 as a shell", { skip: addon.sandboxCapability().kind !== "bwrap" && "needs bubblewrap" }, (t) => {
  const w = world();
  t.after(w.cleanup);
  const env = { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, PI_SANDBOX_APPROVAL_MODE: "" };
  let r = cli(["run", "echo", "a", "--cwd", "/tmp", "b"], { cwd: w.cwd, env });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, "a --cwd /tmp b\n");
  r = cli(["run", "--network", "off", "ls", "-la", "."], { cwd: w.cwd, env });
  assert.equal(r.status, 0, r.stderr);
  // The run's own /tmp is gone when the CLI ends.
  const tmp = path.join(w.cwd, "..", "clitmp");
  mkdirSync(tmp);
  r = cli(["run", "sh", "-c", "echo left > /tmp/f && cat /tmp/f"], { cwd: w.cwd, env: { ...env, TMPDIR: tmp } });
  assert.equal(r.stdout, "left\n", r.stderr);
  const [own] = readdirSync(tmp);
  assert.deepEqual(readdirSync(path.join(tmp, own)), [], "the CLI run's /tmp was left behind");
  r = cli(["run", "no-such-program-here"], { cwd: w.cwd, env });
  assert.equal(r.status, 127, r.stderr);
  assert.match(r.stderr, /no-such-program-here: command not found/);
  writeFileSync(path.join(w.cwd, "not-executable.sh"), "echo hi\n");
  r = cli(["run", "./not-executable.sh"], { cwd: w.cwd, env });
  assert.equal(r.status, 126, r.stderr);
  assert.match(r.stderr, /not-executable\.sh: Permission denied/);
  // Found on PATH as execvp finds it (a directory that lacks it, then one that has it), and
  // a script without `#!` runs under /bin/sh, as a shell would run it.
  mkdirSync(path.join(w.cwd, "bin"));
  writeFileSync(path.join(w.cwd, "bin", "no-shebang"), 'echo "sh ran $0 with $1"\n');
  chmodSync(path.join(w.cwd, "bin", "no-shebang"), 0o755);
  const withBin = { ...env, PATH: `/nonexistent:${path.join(w.cwd, "bin")}:${process.env.PATH}` };
  r = cli(["run", "no-shebang", "arg1"], { cwd: w.cwd, env: withBin });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `sh ran ${path.join(w.cwd, "bin", "no-shebang")} with arg1\n`);
});

test("one command at a time: its audit belongs to its handle, and a second waits for the first", { skip: addon.sandboxCapability().kind !== "bwrap" && "needs bubblewrap" }, async (t) => {
  const w = world();
  t.after(w.cleanup);
  const s = await Sandbox.loadAsync({ cwd: w.cwd, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const first = await s.prepareBashAsync("mkdir -p src/.pi && echo x > src/.pi/e.ts", "off");
  assert.equal(first.verdict, "sandboxed", first.reason);
  // prepared again before the first was audited: refused, the first's baseline is kept
  const second = s.prepareBash("true", "off");
  assert.equal(second.verdict, "denied");
  assert.match(second.reason, /has not been audited yet/);
  const r = spawnSync(first.program, first.args, { cwd: w.cwd, stdio: ["ignore", "pipe", "pipe", ...first.fds] });
  assert.equal(r.status, 0, String(r.stderr));
  const findings = await first.finishAsync();
  assert.equal(findings.length, 1, JSON.stringify(findings));
  assert.match(findings[0], /src\/\.pi was created or changed by the command and moved to/);
  // finished once: a second finish audits nothing, and the next command may run
  assert.deepEqual(first.finish(), []);
  const third = s.prepareBash("true", "off");
  assert.equal(third.verdict, "sandboxed", third.reason);
  assert.deepEqual(third.finish(), []);
  // bad input to the async API is an error with a code, as for the sync one
  assert.throws(() => s.prepareBashAsync("true", "sideways"), /unknown network mode "sideways"/);
  assert.throws(() => Sandbox.loadAsync({ cwd: "relative" }), /cwd must be absolute/);
});

test("two sessions in one project at once: a repository one makes while the other's command runs gets no live hook from it", { skip: addon.sandboxCapability().kind !== "bwrap" && "needs bubblewrap" }, async (t) => {
  const w = world();
  t.after(w.cleanup);
  const git = (cwd, ...args) => spawnSync("git", ["-c", "user.email=u@h", "-c", "user.name=u", ...args], { cwd, encoding: "utf8", env: { ...process.env, HOME: cwd, GIT_CONFIG_NOSYSTEM: "1" } });
  const marker = path.join(w.root, "host-ran");
  // A vendored repository with its hooks in its worktree, made by the user before.
  const lib = path.join(w.cwd, "vendor", "lib");
  mkdirSync(path.join(lib, "githooks"), { recursive: true });
  git(lib, "init", "-q", "-b", "main");
  writeFileSync(path.join(lib, "githooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
  chmodSync(path.join(lib, "githooks", "pre-commit"), 0o755);
  git(lib, "config", "core.hooksPath", "githooks");
  // Two pi sessions on the same project (as two pi processes would have).
  const a = await Sandbox.loadAsync({ cwd: w.cwd, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const b = await Sandbox.loadAsync({ cwd: w.cwd, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const hook = `#!/bin/sh\necho ran >> ${marker}\n`;
  const pa = await a.prepareBashAsync(
    `while [ ! -e go ]; do sleep 0.02; done; printf 'echo ran >> ${marker}\\n' >> vendor/lib/githooks/pre-commit; echo rcA=$?; printf '${hook.replace(/\n/g, "\\n")}' > vendor/new/.git/hooks/post-commit && chmod +x vendor/new/.git/hooks/post-commit && echo planted`,
    "off",
  );
  assert.equal(pa.verdict, "sandboxed", pa.reason);
  const running = new Promise((resolve) => {
    const c = spawn(pa.program, pa.args, { cwd: w.cwd, stdio: ["ignore", "pipe", "pipe", ...pa.fds] });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (out += d));
    c.on("close", (code) => resolve({ code, out }));
  });
  pa.release();
  // Meanwhile the other session's command makes a new repository (its audit finds only
  // git's sample hooks); then the first goes on.
  const pb = await b.prepareBashAsync("git init -q vendor/new && echo made", "off");
  assert.equal(pb.verdict, "sandboxed", pb.reason);
  const rb = spawnSync(pb.program, pb.args, { cwd: w.cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe", ...pb.fds] });
  assert.match(rb.stdout, /made/, rb.stderr);
  assert.deepEqual(await pb.finishAsync(), []);
  writeFileSync(path.join(w.cwd, "go"), "");
  const ra = await running;
  assert.match(ra.out, /rcA=1/, ra.out);
  assert.match(ra.out, /planted/, ra.out);
  const findings = await pa.finishAsync();
  assert.ok(findings.some((f) => /vendor\/new\/\.git\/hooks.* was created or changed by the command and moved to/.test(f)), JSON.stringify(findings));
  // The user's commits in both repositories run nothing the first command wrote.
  for (const dir of [lib, path.join(w.cwd, "vendor", "new")]) {
    writeFileSync(path.join(dir, "c.txt"), "c\n");
    git(dir, "add", "c.txt");
    assert.equal(git(dir, "commit", "-qm", "user").status, 0);
  }
  assert.equal(existsSync(marker), false, "a hook written by the first session's command ran on the host");
});

test("the async file backends judge like the sync ones and reject with the same codes", async (t) => {
  const w = world();
  t.after(w.cleanup);
  const s = w.load();
  await assert.rejects(s.readFileAsync(path.join(w.home, ".ssh", "id_rsa")), (e) => e.code === "E_BLOCKED" && /denyRead entry '~\/\.ssh'/.test(e.message));
  await assert.rejects(s.readFileAsync(path.join(w.cwd, "missing.txt")), (e) => e.code === "ENOENT");
  await s.writeFileAsync(path.join(w.cwd, "src", "new.txt"), "written");
  assert.equal(String(await s.readFileAsync("src/new.txt")), "written");
  await assert.rejects(s.writeFileAsync(path.join(w.root, "outside", "x.txt"), "no"), (e) => e.code === "E_BLOCKED");
  await s.mkdirAsync(path.join(w.cwd, "src", "made", "deeper"));
  await s.accessFileAsync(path.join(w.cwd, "src", "new.txt"), true);
  const d = await s.checkToolAsync("read", { path: "~/.ssh/id_rsa" });
  assert.equal(d.decision.verdict, "deny");
  assert.equal(await s.checkToolAsync("some_other_tool", {}), null);
});

test("a session loaded in yolo runs bash sandboxed once the mode is switched back (the env file search was started at load)", async (t) => {
  const w = world();
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ mode: "yolo" }));
  const s = w.load();
  assert.equal(s.mode, "yolo");
  s.setMode("read-write", "test");
  const p = await s.prepareBashAsync("true", "off");
  assert.equal(p.verdict, "sandboxed", p.reason);
  await p.finishAsync();
  s.dispose();
});
