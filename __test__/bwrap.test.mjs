// The OS layer with the real bubblewrap: commands prepared by the addon, run the way the
// extension runs them (bwrap spawned directly, its mount sources on fds), judged by what
// happened on disk, on the network and to processes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { runPrepared, runPreparedSync, runPreparedToFiles } from "./helpers/launch.mjs";
import { makeWorld, openPathForAnyone, repo } from "./helpers/pi-run.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

function setup(t, projectConfig) {
  const w = makeWorld("bwrap");
  t.after(w.cleanup);
  if (projectConfig) {
    mkdirSync(path.join(w.project, ".pi"), { recursive: true });
    writeFileSync(path.join(w.project, ".pi", "sandbox.json"), JSON.stringify(projectConfig));
  }
  const sandbox = () => Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  /** Runs `command` as pi's bash tool would, through the sandbox. */
  const run = (command, { network = "off", mode } = {}) => {
    const s = sandbox();
    if (mode) s.setMode(mode, "test");
    const p = s.prepareBash(command, network);
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPreparedSync(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  };
  /** Runs `command` in `s`, one sandbox of several commands (a pi session). */
  const runIn = (s, command) => {
    const p = s.prepareBash(command, "off");
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPreparedSync(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  };
  return { w, run, runIn, sandbox };
}

test("writes outside the workspace fail with EROFS and leave nothing; inside they work", (t) => {
  const { w, run } = setup(t);
  const outside = path.join(w.root, "outside", "escape.txt");
  const r = run(`echo hi > ${outside}; echo "rc=$?"; echo kept > inside.txt; touch /etc/pi-sandbox-probe 2>&1; true`);
  assert.match(r.stderr, /Read-only file system/);
  assert.match(r.stdout, /rc=1/);
  assert.equal(existsSync(outside), false);
  assert.equal(existsSync("/etc/pi-sandbox-probe"), false);
  assert.equal(readFileSync(path.join(w.project, "inside.txt"), "utf8"), "kept\n");
});

test("denied reads fail inside bash: directories masked, files emptied", (t) => {
  const { w, run } = setup(t);
  writeFileSync(path.join(w.agentDir, "auth.json"), '{"key":"API-KEY-999"}');
  const r = run(`ls -A ~/.ssh; cat ~/.ssh/id_rsa; cat ${path.join(w.agentDir, "auth.json")}; echo end`);
  assert.doesNotMatch(r.stdout + r.stderr, /SECRET-KEY-0451|API-KEY-999|id_rsa\n/);
  assert.match(r.stderr, /id_rsa: No such file or directory/);
  assert.match(r.stdout, /end/);
});

test("network off means no connection, not even to a server on 127.0.0.1", async (t) => {
  const { sandbox } = setup(t);
  const server = net.createServer((c) => c.end("hello-from-host\n"));
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const { port } = server.address();
  const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -n1 <&3`;
  // spawnSync would block the event loop the server answers on: run asynchronously.
  const go = (network) => runPrepared(sandbox().prepareBash(probe, network));
  const off = await go("off");
  assert.notEqual(off.code, 0);
  assert.doesNotMatch(off.stdout, /hello-from-host/);
  const on = await go("on");
  assert.equal(on.code, 0, on.stderr);
  assert.match(on.stdout, /hello-from-host/);
});

test("exit codes and signals are preserved; no temp file is left on the host", (t) => {
  const { w, run } = setup(t);
  for (const [cmd, code] of [
    ["true", 0],
    ["false", 1],
    ["exit 42", 42],
    ["kill -TERM $$", 143],
    ["kill -KILL $$", 137],
  ]) {
    const r = run(cmd);
    assert.equal(r.status, code, `${cmd}: ${r.stderr}`);
    assert.deepEqual(readdirSync(w.tmp), [], `${cmd}: temp files left behind`);
  }
});

test("host processes are invisible, no privileges; what a command leaves running lives on in its sandbox, and nothing outlives the session", (t) => {
  const { w, sandbox } = setup(t);
  const s = sandbox();
  const marker = `${Date.now() % 100000}.${process.pid}`;
  const p = s.prepareBash(`kill -0 ${process.pid} 2>/dev/null && echo host-visible; ls /proc | grep -c '^[0-9]'; setsid sleep ${marker} & nohup sleep ${marker} >/dev/null 2>&1 & disown; echo started; grep -E '^(NoNewPrivs|CapEff|CapPrm)' /proc/self/status`, "off");
  assert.equal(p.verdict, "sandboxed", p.reason);
  const r = runPreparedToFiles(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp }, dir: w.root });
  const pgrep = () => spawnSync("pgrep", ["-f", `sleep ${marker}`], { encoding: "utf8" }).stdout.trim();
  t.after(() => spawnSync("pkill", ["-9", "-f", `sleep ${marker}`]));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^NoNewPrivs:\s+1$/m);
  assert.match(r.stdout, /^CapEff:\s+0+$/m);
  assert.match(r.stdout, /^CapPrm:\s+0+$/m);
  assert.doesNotMatch(r.stdout, /host-visible/);
  const pids = Number(r.stdout.split("\n")[0]);
  assert.ok(pids < 10, `saw ${pids} processes`);
  assert.equal(pgrep().split("\n").filter(Boolean).length, 2, "what the command left running did not live on");
  assert.match(r.findings.join("\n"), /Still running in the sandbox: .*sleep/, r.findings.join("\n"));
  s.dispose();
  assert.equal(pgrep(), "", "a background process outlived the session");
});

test("tricky commands arrive byte for byte", (t) => {
  const { run } = setup(t);
  const cmd = [
    "cat <<'EOF'",
    `single 'quotes' and "double" $HOME \`backticks\` \\backslash \\n ünïcødé ✓ 🚀`,
    "EOF",
    `printf '%s|' "a b" 'c"d' "e'f" $'tab\\there'; echo`,
  ].join("\n");
  const r = run(cmd);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(
    r.stdout,
    `single 'quotes' and "double" $HOME \`backticks\` \\backslash \\n ünïcødé ✓ 🚀\n` + `a b|c"d|e'f|tab\there|\n`,
  );
});

test("pi's control surface stays protected inside bash, existing or not, without getting in git's way", (t) => {
  const { w, run } = setup(t);
  spawnSync("git", ["init", "-q", w.project]);
  writeFileSync(path.join(w.agentDir, "settings.json"), "{}");
  mkdirSync(path.join(w.agentDir, "sessions"));
  const r = run(
    [
      "mkdir -p .pi/extensions && echo planted > .pi/extensions/evil.ts; echo pi=$?",
      "echo x > .git/hooks/pre-commit; echo hook=$?",
      "mv .git .git-moved; echo mvgit=$?",
      "echo x >> .git/config; echo config=$?",
      `echo '{}' > ${w.agentDir}/settings.json; echo settings=$?`,
      `echo '{}' > ${w.agentDir}/models.json; echo models=$?`,
      `echo s > ${w.agentDir}/sessions/s.jsonl; echo sessions=$?`,
    ].join("\n"),
  );
  assert.match(r.stdout, /pi=1/);
  assert.match(r.stdout, /hook=1/);
  assert.match(r.stdout, /mvgit=1/);
  assert.match(r.stdout, /config=1/);
  assert.match(r.stdout, /settings=1/);
  assert.match(r.stdout, /models=1/);
  // session transcripts are pi's: pi appends to them on the host
  assert.match(r.stdout, /sessions=1/);
  // .pi did not exist: it was made an empty, read-only mount point; nothing was planted in it
  assert.deepEqual(readdirSync(path.join(w.project, ".pi")), []);
  assert.equal(existsSync(path.join(w.project, ".git", "hooks", "pre-commit")), false);
  assert.equal(existsSync(path.join(w.agentDir, "models.json")), false);
  assert.equal(readFileSync(path.join(w.agentDir, "settings.json"), "utf8"), "{}");
  // git still works on the workspace: the sandbox does not get in the way of real work
  writeFileSync(path.join(w.project, "src", "lib.rs"), "// work\n");
  const g = run("git add -A && git -c user.email=a@b -c user.name=n commit -qm x && git status --porcelain | wc -l");
  assert.equal(g.status, 0, `git: ${g.stderr}${g.stdout}`);
  assert.equal(g.stdout.trim(), "0");
});

test("existing denyWrite files are read-only; read-only mode makes the workspace read-only", (t) => {
  const { w, run } = setup(t);
  writeFileSync(path.join(w.project, "src", "server.pem"), "PEM-ORIGINAL");
  let r = run("echo changed > src/server.pem; echo pem=$?; echo ok > src/main.rs; echo main=$?");
  assert.match(r.stdout, /pem=1/);
  assert.match(r.stdout, /main=0/);
  assert.equal(readFileSync(path.join(w.project, "src", "server.pem"), "utf8"), "PEM-ORIGINAL");
  r = run("echo x > src/other.rs; echo w=$?; echo t > /tmp/t && cat /tmp/t", { mode: "read-only" });
  assert.match(r.stdout, /w=1/);
  assert.match(r.stdout, /^t$/m, "private /tmp stays writable");
  assert.equal(existsSync(path.join(w.project, "src", "other.rs")), false);
});

test("as an unprivileged user too (the CLI's run)", { skip: process.getuid() !== 0 && "needs root to switch user" }, (t) => {
  const w = makeWorld("unpriv");
  t.after(w.cleanup);
  // The world must be reachable by nobody: open the path to it, hand it over.
  openPathForAnyone(w.root);
  spawnSync("chown", ["-R", "65534:65534", w.root]);
  const outside = path.join(w.root, "outside", "o.txt");
  const r = spawnSync(
    "setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, path.join(repo, "bin", "pi-sandbox.js"), "run", "--", "bash", "-c", `id -u; echo in > in.txt; echo out > ${outside}; cat ~/.ssh/id_rsa`],
    { cwd: w.project, encoding: "utf8", env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp } },
  );
  assert.match(r.stdout, /^65534$/m, r.stderr);
  assert.equal(readFileSync(path.join(w.project, "in.txt"), "utf8"), "in\n");
  assert.equal(existsSync(outside), false);
  assert.match(r.stderr, /Read-only file system/);
  assert.doesNotMatch(r.stdout, /SECRET-KEY-0451/);
});

test("as an unprivileged user: env files anywhere in the home are hidden from bash, also in a directory that can be entered but not listed", { skip: process.getuid() !== 0 && "needs root to switch user" }, (t) => {
  const w = makeWorld("unprivenv");
  t.after(w.cleanup);
  const other = path.join(w.home, "work", "x", "api");
  const locked = path.join(w.home, "locked");
  mkdirSync(other, { recursive: true });
  mkdirSync(locked);
  writeFileSync(path.join(other, ".env"), "A=ENV-SECRET-31\n");
  writeFileSync(path.join(locked, ".env.local"), "B=ENV-SECRET-32\n");
  openPathForAnyone(w.root);
  spawnSync("chown", ["-R", "65534:65534", w.root]);
  chmodSync(locked, 0o311);
  const asNobody = (...argv) =>
    spawnSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", ...argv], {
      cwd: w.project,
      encoding: "utf8",
      env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp },
    });
  // Without the sandbox, nobody can list the locked directory but can read the file by name.
  assert.notEqual(asNobody("ls", locked).status, 0);
  assert.match(asNobody("cat", path.join(locked, ".env.local")).stdout, /ENV-SECRET-32/);
  const r = asNobody(process.execPath, path.join(repo, "bin", "pi-sandbox.js"), "run", "--", "bash", "-c", `cat ${other}/.env ${locked}/.env.local; echo rc=$?`);
  assert.match(r.stdout, /rc=1/, r.stderr);
  assert.match(r.stderr, /api\/\.env: Permission denied/);
  assert.match(r.stderr, /locked\/\.env\.local: Permission denied/);
  assert.doesNotMatch(r.stdout, /ENV-SECRET/);
});

test("env files inside directories bound read-only whole in a writable home (pi's agent dir, a .pi) are hidden from bash too", (t) => {
  // Found by the differential test (seed 638846626): with allowWrite reaching the home, the
  // index covers it but does not look inside what it binds whole; the home search does.
  const w = makeWorld("envwhole");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ filesystem: { allowWrite: [".", "~"] } }));
  writeFileSync(path.join(w.agentDir, ".env.production"), "A=ENV-SECRET-41\n");
  mkdirSync(path.join(w.home, "other", ".pi"), { recursive: true });
  writeFileSync(path.join(w.home, "other", ".pi", ".env"), "B=ENV-SECRET-42\n");
  const r = spawnSync(process.execPath, [path.join(repo, "bin", "pi-sandbox.js"), "run", "--", "bash", "-c", `cat ${w.agentDir}/.env.production ${w.home}/other/.pi/.env; echo rc=$?`], {
    cwd: w.project,
    encoding: "utf8",
    env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp },
  });
  assert.match(r.stdout, /rc=1/, r.stderr);
  assert.match(r.stderr, /agent\/\.env\.production: Permission denied/);
  assert.match(r.stderr, /other\/\.pi\/\.env: Permission denied/);
  assert.doesNotMatch(r.stdout, /ENV-SECRET/);
});

test("git worktree: started at its root, git can write its git dirs (hooks still protected); from a subdirectory it cannot", (t) => {
  const w = makeWorld("worktree");
  t.after(w.cleanup);
  const main = path.join(w.root, "outside", "main");
  const git = (...args) => spawnSync("git", ["-c", "user.email=a@b", "-c", "user.name=n", ...args], { encoding: "utf8" });
  git("init", "-q", main);
  writeFileSync(path.join(main, "a.txt"), "a\n");
  git("-C", main, "add", "-A");
  git("-C", main, "commit", "-qm", "init");
  const wt = path.join(w.root, "wt");
  assert.equal(git("-C", main, "worktree", "add", "-q", wt).status, 0);
  mkdirSync(path.join(wt, "sub"));
  const runIn = (cwd, command) => {
    const s = Sandbox.load({ cwd, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
    const p = s.prepareBash(command, "off");
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPreparedSync(p, { cwd, env: { ...process.env, TMPDIR: w.tmp } });
  };
  const commit = "echo b > b.txt && git add -A && git -c user.email=a@b -c user.name=n commit -qm wt && echo committed";
  let r = runIn(wt, `${commit}; echo evil > ${main}/.git/hooks/pre-commit; echo hook=$?`);
  assert.match(r.stdout, /committed/, r.stderr);
  assert.match(r.stdout, /hook=1/);
  assert.equal(existsSync(path.join(main, ".git", "hooks", "pre-commit")), false);
  r = runIn(path.join(wt, "sub"), "echo c > c.txt && git add -A && git -c user.email=a@b -c user.name=n commit -qm sub && echo committed");
  assert.doesNotMatch(r.stdout, /committed/);
  assert.match(r.stderr, /Read-only file system|unable to create|Unable to create/);
});

test("concurrent sandboxes: one finishing does not lift another's protection of a missing .pi", async (t) => {
  const { w, sandbox } = setup(t);
  const start = (command) => {
    return runPrepared(sandbox().prepareBash(command, "off"), { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  };
  const slow = start("sleep 1; mkdir -p .pi/extensions && echo x > .pi/extensions/e.ts; echo slow=$?");
  await new Promise((r) => setTimeout(r, 300));
  const quick = await start("echo quick");
  assert.match(quick.out, /quick/);
  const s = await slow;
  assert.match(s.out, /slow=1/, s.out);
  assert.equal(existsSync(path.join(w.project, ".pi", "extensions")), false);
});

test("a project below /tmp is still visible and writable inside the private /tmp", (t) => {
  const dir = mkdtempSync("/tmp/pi-sandbox-test-");
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const home = path.join(dir, "home");
  const project = path.join(dir, "project");
  mkdirSync(path.join(home, ".ssh"), { recursive: true });
  mkdirSync(project);
  writeFileSync(path.join(home, ".ssh", "id_rsa"), "TMP-SECRET");
  const s = Sandbox.load({ cwd: project, home, agentDir: path.join(home, ".pi", "agent"), approvalMode: "ask" });
  const p = s.prepareBash(`pwd; echo ok > made.txt; cat ${home}/.ssh/id_rsa; ls /tmp | grep -c . || true`, "off");
  const r = runPreparedSync(p, { cwd: project });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^${project}$`, "m"));
  assert.equal(readFileSync(path.join(project, "made.txt"), "utf8"), "ok\n");
  assert.doesNotMatch(r.stdout, /TMP-SECRET/);
});

test("what a command creates on pi's control surface is moved aside and reported; the user's own is left", (t) => {
  const w = makeWorld("audit");
  t.after(w.cleanup);
  // The user's own repository with a real hook, and a .pi of their own in a subdirectory.
  spawnSync("git", ["init", "-q", path.join(w.project, "mine")]);
  writeFileSync(path.join(w.project, "mine", ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
  mkdirSync(path.join(w.project, "sub", ".pi"), { recursive: true });
  const r = spawnSync(
    process.execPath,
    [
      path.join(repo, "bin", "pi-sandbox.js"),
      "run",
      "--",
      "bash",
      "-c",
      [
        "git init -q fresh && echo 'curl evil' > fresh/.git/hooks/pre-commit",
        "git init -q tidy",
        "git init -q sneaky && git -C sneaky config core.hooksPath /var/tmp/x",
        "mkdir -p deep/.pi/extensions && echo planted > deep/.pi/extensions/e.ts",
        "echo K > id.key",
      ].join(" && "),
    ],
    { cwd: w.project, encoding: "utf8", env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp } },
  );
  assert.equal(r.status, 0, r.stderr);
  const p = (rel) => path.join(w.project, rel);
  assert.equal(existsSync(p("fresh/.git/hooks/pre-commit")), false, "planted hook still live");
  // moved into the project's quarantine in pi's agent dir, with a note of where it was
  const moved = r.stderr.match(/fresh\/\.git\/hooks was created or changed by the command and moved to (\S+\/sandbox-quarantine\/--[^/]+--\/\d{8}T\d{6}-[A-Za-z0-9]{8}\/hooks\.quarantined):/);
  assert.ok(moved, r.stderr);
  assert.ok(moved[1].startsWith(w.agentDir + "/"), moved[1]);
  assert.equal(readFileSync(path.join(moved[1], "pre-commit"), "utf8"), "curl evil\n");
  assert.equal(readFileSync(path.join(path.dirname(moved[1]), "origin"), "utf8"), `${p("fresh/.git/hooks")}\n`);
  // nothing of the quarantine in the project: the user's git status stays clean of it
  const names = spawnSync("find", [w.project, "-name", "*quarantine*"], { encoding: "utf8" });
  assert.equal(names.stdout, "");
  assert.equal(existsSync(p("sneaky/.git/config")), false);
  assert.match(r.stderr, /core\.hookspath/);
  assert.equal(existsSync(p("deep/.pi")), false);
  assert.match(r.stderr, /deep\/\.pi was created or changed by the command/);
  // a new file matching denyWrite is moved aside too (kept): the file tools could not create it
  assert.match(r.stderr, /id\.key was created or changed by the command and moved to .*id\.key\.quarantined: it matches denyWrite pattern '\*\.key'/);
  assert.equal(existsSync(p("id.key")), false);
  // left alone: a plain new repository, the user's own hook and .pi
  assert.equal(existsSync(p("tidy/.git/config")), true);
  assert.doesNotMatch(r.stderr, /tidy/);
  assert.equal(existsSync(p("mine/.git/hooks/pre-commit")), true);
  assert.equal(existsSync(p("sub/.pi")), true);
  // the project's own .pi did not exist: its placeholder is ours, not the command's work
  assert.doesNotMatch(r.stderr, /project\/\.pi was created/);
  assert.deepEqual(readdirSync(p(".pi")), []);
});

test("an env file is hidden from bash by every name: a link named .env hides what it leads to", (t) => {
  const { w, run } = setup(t);
  mkdirSync(path.join(w.home, "secrets"), { recursive: true });
  writeFileSync(path.join(w.home, "secrets", "api.env"), "TOKEN=HOME-SECRET-1\n");
  writeFileSync(path.join(w.root, "outside", "prod.cfg"), "TOKEN=OUTSIDE-SECRET-2\n");
  writeFileSync(path.join(w.project, "notes.txt"), "TOKEN=CHAIN-SECRET-3\n");
  // the project's .env leads into the home; another one outside home and project; a chain
  symlinkSync(path.join(w.home, "secrets", "api.env"), path.join(w.project, ".env"));
  symlinkSync(path.join(w.root, "outside", "prod.cfg"), path.join(w.project, "src", ".env.production"));
  symlinkSync("notes-link", path.join(w.project, ".env.local"));
  symlinkSync("notes.txt", path.join(w.project, "notes-link"));
  // and one in another folder of the home, found by the home search
  mkdirSync(path.join(w.home, "other"), { recursive: true });
  symlinkSync(path.join(w.root, "outside", "prod.cfg"), path.join(w.home, "other", ".env"));
  const r = run(`cat .env src/.env.production .env.local notes-link ${w.home}/secrets/api.env ${w.root}/outside/prod.cfg ${w.home}/other/.env; echo end`);
  assert.match(r.stdout, /end/);
  assert.doesNotMatch(r.stdout, /SECRET-[0-9]/);
  // without the links they are ordinary files, readable
  for (const l of [".env", "src/.env.production", ".env.local"]) rmSync(path.join(w.project, l));
  rmSync(path.join(w.home, "other", ".env"));
  const plain = run(`cat ${w.home}/secrets/api.env ${w.root}/outside/prod.cfg notes.txt`);
  assert.match(plain.stdout, /HOME-SECRET-1[\s\S]*OUTSIDE-SECRET-2[\s\S]*CHAIN-SECRET-3/);
});

test("a link the user makes mid-session in pi's agent dir or in .pi protects its target from the next command and the file tools", (t) => {
  const { w, sandbox, runIn } = setup(t);
  const s = sandbox();
  const go = (command) => runIn(s, command);
  const p = (rel) => path.join(w.project, rel);
  mkdirSync(p("tools"));
  writeFileSync(p("tools/a.ts"), "a\n");
  writeFileSync(p("tools/b.ts"), "b\n");
  assert.equal(go("echo first").status, 0);
  assert.equal(s.check("write", p("tools/a.ts")).verdict, "allow");
  // the user links an extension of theirs into pi's agent dir, and one into the project's .pi
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  symlinkSync(p("tools/a.ts"), path.join(w.agentDir, "extensions", "a.ts"));
  mkdirSync(p(".pi/extensions"), { recursive: true });
  symlinkSync("../../tools/b.ts", p(".pi/extensions/b.ts"));
  // the file tools know at once, before any command
  for (const f of ["tools/a.ts", "tools/b.ts"]) assert.equal(s.check("write", p(f)).verdict, "deny", f);
  const r = go("echo x >> tools/a.ts; echo y >> tools/b.ts; echo end");
  assert.match(r.stdout, /end/);
  assert.match(r.stderr, /Read-only file system/);
  assert.equal(readFileSync(p("tools/a.ts"), "utf8"), "a\n");
  assert.equal(readFileSync(p("tools/b.ts"), "utf8"), "b\n");
  for (const f of ["tools/a.ts", "tools/b.ts"]) {
    const d = s.check("write", p(f));
    assert.equal(d.verdict, "deny", f);
    assert.match(d.rule, /target of protected link/);
  }
});

test("links on the way of a protected link, and links inside a folder one leads to, are protected too", (t) => {
  const { w, sandbox } = setup(t);
  const p = (rel) => path.join(w.project, rel);
  const sh = (cmd) => spawnSync("bash", ["-c", cmd], { cwd: w.project, encoding: "utf8", env: { ...process.env, HOME: w.home, GIT_CONFIG_NOSYSTEM: "1" } });
  // a hook reached through a second link, an extension through a linked folder, and an
  // extension package whose file is a link again
  sh("git init -q . && mkdir -p scripts src packages/ext .pi/extensions && printf '#!/bin/sh\\necho user-hook\\n' > scripts/pre-commit && chmod +x scripts/pre-commit && ln -s scripts/pre-commit hook && ln -s ../../hook .git/hooks/pre-commit && echo 'export default function(){}' > src/ext.ts && ln -s src cur && ln -s ../../cur/ext.ts .pi/extensions/x.ts && echo 'export const real = 1' > src/real.ts && ln -s ../../src/real.ts packages/ext/index.ts && ln -s ../../packages/ext .pi/extensions/pkg");
  const marker = path.join(w.root, "outside", "HOST-RAN");
  const s = sandbox();
  assert.equal(s.check("write", p("src/real.ts")).verdict, "deny");
  const p1 = s.prepareBash(`rm hook && printf '#!/bin/sh\\ntouch ${marker}\\n' > evil && chmod +x evil && ln -s evil hook; rm cur && mkdir cur && echo PWNED > cur/ext.ts; echo PWNED > src/real.ts; echo done`, "off");
  const r = runPreparedSync(p1, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  assert.match(r.stdout, /done/);
  const judged = r.findings.join("\n");
  assert.match(judged, /\/hook was created or changed by the command and moved to .*leads through it/);
  assert.match(judged, /\/cur was created or changed by the command and moved to .*leads through it/);
  // put back as they were: the hook and the extension are the user's again
  assert.equal(readlinkSync(p("hook")), "scripts/pre-commit");
  assert.equal(readlinkSync(p("cur")), "src");
  assert.equal(readFileSync(p(".pi/extensions/x.ts"), "utf8"), "export default function(){}\n");
  assert.equal(readFileSync(p("src/real.ts"), "utf8"), "export const real = 1\n");
  sh("git -c user.name=u -c user.email=u@x commit -q --allow-empty -m x");
  assert.equal(existsSync(marker), false, "the planted hook ran on the host");
});

test("what a session's commands wrote is not the user's in the next session either", (t) => {
  const { w, sandbox, runIn } = setup(t);
  const go = runIn;
  const marker = path.join(w.root, "outside", "HOST-RAN");
  // session 1 writes what a repository runs, in folders that are no repository yet
  const first = go(sandbox(), `mkdir -p stash/hooks sub && printf '#!/bin/sh\\ntouch ${marker}\\n' > stash/hooks/post-checkout && printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n\\tworktree = ../sub\\n' > stash/config`);
  assert.deepEqual(first.findings, []);
  // a new pi session arms it
  const second = go(sandbox(), "sleep 0.05; mkdir stash/objects stash/refs && echo 'ref: refs/heads/main' > stash/HEAD && echo 'gitdir: ../stash' > sub/.git");
  const judged = second.findings.join("\n");
  assert.match(judged, /stash\/config was created or changed by the command and moved to/);
  assert.match(judged, /stash\/hooks was created or changed by the command and moved to/);
  spawnSync("git", ["status"], { cwd: path.join(w.project, "sub"), env: { ...process.env, HOME: w.home, GIT_CONFIG_NOSYSTEM: "1", GIT_CEILING_DIRECTORIES: w.root } });
  assert.equal(existsSync(marker), false, "fsmonitor ran on the host");
});

test("an env file's other names are env files too: a hard link to .env, and grep below what a link named .env leads to", (t) => {
  const { w, sandbox } = setup(t);
  const p = (rel) => path.join(w.project, rel);
  mkdirSync(p("config"));
  writeFileSync(p("config/app.cfg"), "API_KEY=HARD-SECRET-1\n");
  linkSync(p("config/app.cfg"), p(".env"));
  mkdirSync(path.join(w.root, "outside", "cfg"));
  writeFileSync(path.join(w.root, "outside", "cfg", "prod.cfg"), "API_KEY=LINKED-SECRET-2\n");
  symlinkSync(path.join(w.root, "outside", "cfg", "prod.cfg"), p(".env.production"));
  const s = sandbox();
  const p1 = s.prepareBash(`cat config/app.cfg ${w.root}/outside/cfg/prod.cfg; echo end`, "off");
  const r = runPreparedSync(p1, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  assert.match(r.stdout, /end/);
  assert.doesNotMatch(r.stdout, /SECRET-[0-9]/);
  // the file tools ask about them under those names, and grep may not read them in passing
  assert.equal(s.check("read", p("config/app.cfg")).verdict, "prompt");
  const grep = s.checkTool("grep", { pattern: "API_KEY", path: path.join(w.root, "outside") }).decision;
  assert.equal(grep.verdict, "deny");
  assert.match(grep.reason, /env file under another name/);
});

test("a folder of old files moved into place as a repository runs nothing: what made it one goes, the files stay", (t) => {
  const { w, run } = setup(t);
  const p = (rel) => path.join(w.project, rel);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  // git must not climb out of the world (the repository this test runs in is above it)
  const env = { ...process.env, HOME: w.home, GIT_CONFIG_NOSYSTEM: "1", GIT_CEILING_DIRECTORIES: w.root };
  spawnSync("git", ["init", "-q"], { cwd: w.project, env });
  // inert files the project had before the session (a vendored tree, say)
  mkdirSync(p("vendor/x/hooks"), { recursive: true });
  mkdirSync(p("sub"));
  writeFileSync(p("vendor/x/hooks/post-checkout"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
  writeFileSync(p("vendor/x/config"), `[core]\n\tfsmonitor = "touch ${marker}; false"\n`);
  spawnSync("sleep", ["0.05"]);
  const r = run("mv vendor/x sub/.git && mkdir sub/.git/objects sub/.git/refs && echo 'ref: refs/heads/main' > sub/.git/HEAD && echo done");
  assert.match(r.stdout, /done/);
  const judged = r.findings.join("\n");
  for (const made of ["HEAD", "objects", "refs"]) {
    assert.match(judged, new RegExp(`sub/\\.git/${made} was created or changed by the command and moved to .*predates the session`));
  }
  assert.equal(existsSync(p("sub/.git/config")), true);
  assert.equal(existsSync(p("sub/.git/hooks/post-checkout")), true);
  spawnSync("git", ["status"], { cwd: p("sub"), env });
  spawnSync("git", ["checkout", "-q", "-b", "x"], { cwd: p("sub"), env });
  assert.equal(existsSync(marker), false, "git ran the moved config or hook on the host");
});

test("what the audit moves aside leaves the project's git status clean", (t) => {
  const { w, run } = setup(t);
  const git = (...a) => spawnSync("git", ["-C", w.project, "-c", "user.name=u", "-c", "user.email=u@x", ...a], { encoding: "utf8" });
  git("init", "-q");
  writeFileSync(path.join(w.project, "README"), "x\n");
  git("add", "README");
  git("commit", "-q", "-m", "init");
  const r = run("echo K > id.key && mkdir -p deep/.pi && echo '{}' > deep/.pi/settings.json && git init -q nested && echo evil > nested/.git/hooks/post-checkout");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.findings.length, 3, JSON.stringify(r.findings));
  // nothing moved aside stays in the worktree, ignored files included
  // nothing moved aside stays in the worktree, ignored files included: only the new repository
  assert.equal(git("status", "--porcelain", "--ignored", "--untracked-files=all").stdout, "?? nested/\n");
});

test("a command's files are judged as the command's however many commands later they become a git dir", (t) => {
  const { w, sandbox, runIn } = setup(t);
  const s = sandbox();
  const go = (command) => runIn(s, command);
  // first command: what a repository would run, in a folder that is no repository yet
  const first = go("mkdir -p r/hooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > r/hooks/pre-commit && chmod +x r/hooks/pre-commit && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > r/config");
  assert.equal(first.status, 0, first.stderr);
  assert.deepEqual(first.findings, []);
  // the next command makes it a bare repository git would push to
  const second = go("sleep 0.05; mkdir r/objects r/refs && echo 'ref: refs/heads/main' > r/HEAD && git --git-dir=r rev-parse --git-dir");
  assert.equal(second.status, 0, second.stderr);
  const judged = second.findings.join("\n");
  assert.match(judged, /\/r\/hooks was created or changed by the command and moved to/);
  assert.match(judged, /\/r\/config was created or changed by the command and moved to .*core\.fsmonitor/);
  assert.equal(existsSync(path.join(w.project, "r/hooks/pre-commit")), false);
  assert.equal(existsSync(path.join(w.project, "r/config")), false);
});

/** `pi-sandbox run -- bash -c <command>` in the world's project, as the CLI runs it. */
function cliRun(w, command, timeout = 120_000) {
  return spawnSync(process.execPath, [path.join(repo, "bin", "pi-sandbox.js"), "run", "--", "bash", "-c", command], {
    cwd: w.project,
    encoding: "utf8",
    timeout,
    env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp },
  });
}

test("a git config is judged as git reads it: a quoted ] and a second header on one line do not hide core.fsmonitor", (t) => {
  const w = makeWorld("audit-gitcfg");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  const p = (rel) => path.join(w.project, rel);
  // read up to its first `]`, this line was `remote.*.url`; git reads core.fsmonitor in it
  const line = `[remote "a]url=x"] [core] fsmonitor = "echo ran >> ${marker}; false"`;
  const r = cliRun(w, `git init -q sub && printf '%s\\n' '${line}' >> sub/.git/config && git -C sub config --get core.fsmonitor`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /echo ran/, "git inside reads the key");
  assert.match(r.stderr, /sub\/\.git\/config was created or changed by the command and moved to .*core\.fsmonitor/);
  assert.equal(existsSync(p("sub/.git/config")), false);
  // the user's git there afterwards runs nothing
  spawnSync("git", ["status"], { cwd: p("sub"), env: { ...process.env, HOME: w.home, GIT_CEILING_DIRECTORIES: w.root } });
  assert.equal(existsSync(marker), false, "fsmonitor ran on the host");
});

test("a FIFO where git expects a config or a gitfile is moved aside with the reason, and the command returns", (t) => {
  const w = makeWorld("audit-fifo");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  const started = Date.now();
  const r = cliRun(w, "git init -q f && rm f/.git/config && mkfifo f/.git/config && mkdir g && mkfifo g/.git && echo made", 60_000);
  assert.equal(r.error, undefined, `the run did not return: ${r.error}`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /made/);
  // git asked to read the FIFO (the hooks lookup) would have waited out its 5 s limit
  assert.ok(Date.now() - started < 5_000, `the audit waited on a FIFO (${Date.now() - started} ms)`);
  assert.match(r.stderr, /f\/\.git\/config was created or changed by the command and moved to .*: it is a FIFO, not a git config/);
  assert.match(r.stderr, /g\/\.git was created or changed by the command and moved to .*it is a FIFO, not a gitfile/);
  assert.equal(existsSync(p("f/.git/config")), false);
  assert.equal(existsSync(p("g/.git")), false);
});

test("a directory git takes for a repository through links named objects and refs is judged as one", (t) => {
  const w = makeWorld("audit-gitdir-links");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  const p = (rel) => path.join(w.project, rel);
  // git's test for a git dir is access(X_OK) on objects and refs: links pass. With a config
  // naming a worktree, the user's `git status` in src runs its fsmonitor.
  const config = `[core]\\n\\tbare = false\\n\\tworktree = ${p("src")}\\n\\tfsmonitor = "echo ran >> ${marker}; false"\\n`;
  const r = cliRun(
    w,
    [
      "git init -q store && mkdir -p src",
      "ln -s ../store/.git/objects src/objects && ln -s ../store/.git/refs src/refs",
      "echo 'ref: refs/heads/main' > src/HEAD",
      `printf '${config}' > src/config`,
      "git -C src config --get core.fsmonitor",
    ].join(" && "),
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /echo ran/, "git inside takes src for a repository");
  assert.match(r.stderr, /src\/config was created or changed by the command and moved to .*core\.fsmonitor/);
  assert.equal(existsSync(p("src/config")), false);
  spawnSync("git", ["status"], { cwd: p("src"), env: { ...process.env, HOME: w.home, GIT_CEILING_DIRECTORIES: w.root } });
  assert.equal(existsSync(marker), false, "fsmonitor ran on the host");
});

test("a mount source swapped for a symlink after the plan was made cannot redirect the mount", async (t) => {
  const { w, sandbox } = setup(t);
  spawnSync("git", ["init", "-q", w.project]);
  const elsewhere = path.join(w.root, "outside", "elsewhere");
  mkdirSync(elsewhere, { recursive: true });
  const env = { ...process.env, TMPDIR: w.tmp };
  // The read-only hooks mount: its source becomes a link to a directory bash could write.
  let p = sandbox().prepareBash("echo evil > .git/hooks/pre-commit; echo rc=$?", "off");
  assert.equal(p.verdict, "sandboxed", p.reason);
  const hooks = path.join(w.project, ".git", "hooks");
  renameSync(hooks, `${hooks}.old`);
  symlinkSync(elsewhere, hooks);
  let r = runPreparedSync(p, { cwd: w.project, env });
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.deepEqual(readdirSync(elsewhere), [], "the mount followed the planted link");
  assert.doesNotMatch(r.stdout, /rc=0/);
  // (the audit after it moves the link aside, as a change to hooks)
  rmSync(hooks, { force: true });
  renameSync(`${hooks}.old`, hooks);
  // The writable root itself: swapped for a link to a directory outside.
  p = sandbox().prepareBash("echo escaped > f.txt; echo rc=$?", "off");
  const moved = `${w.project}.moved`;
  renameSync(w.project, moved);
  symlinkSync(elsewhere, w.project);
  r = runPreparedSync(p, { cwd: moved, env });
  rmSync(w.project);
  renameSync(moved, w.project);
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.deepEqual(readdirSync(elsewhere), [], "the writable bind followed the planted link");
  assert.match(r.stderr, /bwrap: /);
});

const missingTool = ["cargo", "make"].find((tool) => spawnSync(tool, ["--version"]).status !== 0);
test("real work runs inside: cargo build, npm install, make, mktemp", { skip: missingTool && `needs ${missingTool}` }, (t) => {
  const { w, run } = setup(t);
  spawnSync("git", ["init", "-q", w.project]);
  const r = run(
    [
      "set -e",
      "cargo new --vcs none hello -q && (cd hello && cargo build -q --offline && ./target/debug/hello)",
      "mkdir -p node/dep && (cd node/dep && npm init -y >/dev/null) && (cd node && npm init -y >/dev/null && npm install ./dep --offline --no-audit --no-fund >/dev/null && ls node_modules)",
      "printf 'all:\\n\\t@echo made\\n' > Makefile && make",
      "f=$(mktemp) && echo temp-ok > \"$f\" && cat \"$f\"",
    ].join("\n"),
  );
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /Hello, world!\ndep\nmade\ntemp-ok\n/, r.stderr);
  assert.equal(existsSync(path.join(w.project, "hello", "target", "debug", "hello")), true);
});
