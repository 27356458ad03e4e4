// End-to-end: a real pi 0.73.1 process, this extension, pi's real file tools, a scripted
// model. Every block is proven twice: by the reason pi returned to the model, and on disk.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { makeWorld, runPi } from "./helpers/pi-run.mjs";

const SECRET = "SECRET-KEY-0451";
const call = (name, args) => ({ name, arguments: args });

function byId(results) {
  return Object.fromEntries(results.map((r) => [r.id, r.text]));
}

test("file tools: secrets stay unreadable, denied writes never reach the disk", async (t) => {
  const w = makeWorld("tools");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  writeFileSync(p("src/a.txt"), "alpha MARKER-123\n");
  writeFileSync(p("server.key"), "KEY-ORIGINAL\n");
  symlinkSync(path.join(w.home, ".ssh", "id_rsa"), p("src/notes.txt"));
  mkdirSync(p(".pi"));
  writeFileSync(p(".pi/sandbox.json"), "{}\n");
  const outside = path.join(w.root, "outside", "x.txt");

  const r = await runPi({
    world: w,
    script: [
      [
        call("read", { path: "~/.ssh/id_rsa" }),
        call("read", { path: "src/notes.txt" }),
        call("read", { path: "src/a.txt" }),
        call("write", { path: "cert.pem", content: "PEM" }),
        call("write", { path: "src/ok.txt", content: "written by the agent" }),
        call("write", { path: outside, content: "escaped" }),
        call("edit", { path: "server.key", edits: [{ oldText: "KEY-ORIGINAL", newText: "KEY-CHANGED" }] }),
        call("edit", { path: "src/a.txt", edits: [{ oldText: "alpha", newText: "beta" }] }),
      ],
      [
        call("grep", { pattern: "SECRET", path: w.home }),
        call("grep", { pattern: "MARKER-123" }),
        call("find", { pattern: "*", path: w.home }),
        call("find", { pattern: "*.txt" }),
        call("ls", { path: "~/.ssh" }),
        call("ls", {}),
        call("write", { path: ".pi/sandbox.json", content: '{"enabled": false}' }),
        call("edit", { path: ".pi/sandbox.json", edits: [{ oldText: "{}", newText: '{"enabled":false}' }] }),
        call("write", { path: ".pi/extensions/evil.ts", content: "export default () => {}" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  // reads
  assert.match(res.call_0_0, /Blocked read of .*\.ssh\/id_rsa: it is covered by denyRead entry '~\/\.ssh'/);
  assert.match(res.call_0_1, /Blocked read of .*\.ssh\/id_rsa/, "a symlink to the key is the key");
  assert.match(res.call_0_2, /alpha MARKER-123/);
  // writes
  assert.match(res.call_0_3, /denyWrite pattern '\*\.pem'/);
  assert.equal(existsSync(p("cert.pem")), false);
  assert.match(res.call_0_4, /Successfully wrote/);
  assert.equal(readFileSync(p("src/ok.txt"), "utf8"), "written by the agent");
  assert.match(res.call_0_5, /outside every allowWrite directory/);
  assert.equal(existsSync(outside), false);
  assert.match(res.call_0_6, /denyWrite pattern '\*\.key'/);
  assert.equal(readFileSync(p("server.key"), "utf8"), "KEY-ORIGINAL\n");
  assert.match(res.call_0_7, /Successfully replaced/);
  assert.equal(readFileSync(p("src/a.txt"), "utf8"), "beta MARKER-123\n");
  // recursive tools over a parent of a denied directory
  assert.match(res.call_1_0, /Blocked grep in .*home: it would look inside .*\.ssh/);
  assert.match(res.call_1_1, /src\/a\.txt:1: beta MARKER-123/);
  assert.match(res.call_1_2, /Blocked find in .*home/);
  assert.match(res.call_1_3, /src\/a\.txt/);
  assert.match(res.call_1_4, /Blocked read of .*\.ssh/);
  assert.doesNotMatch(res.call_1_4, /id_rsa/);
  assert.match(res.call_1_5, /src\//);
  // pi's own control surface
  assert.match(res.call_1_6, /control surface/);
  assert.match(res.call_1_7, /control surface/);
  assert.equal(readFileSync(p(".pi/sandbox.json"), "utf8"), "{}\n");
  assert.match(res.call_1_8, /control surface/);
  assert.equal(existsSync(p(".pi/extensions/evil.ts")), false);
  // and the secret never reached the model
  for (const text of Object.values(res)) assert.doesNotMatch(text, new RegExp(SECRET));
  assert.doesNotMatch(r.stdout, new RegExp(SECRET));
});

test("a broken project config blocks every guarded tool, naming file, line and column", async (t) => {
  const w = makeWorld("broken");
  t.after(w.cleanup);
  mkdirSync(path.join(w.project, ".pi"));
  const cfg = path.join(w.project, ".pi", "sandbox.json");
  writeFileSync(cfg, '{\n  "filesystem": {\n    "denyWrite": [".env",]\n  }\n}\n');
  writeFileSync(path.join(w.project, "src", "plain.txt"), "plain");
  const r = await runPi({
    world: w,
    script: [[call("read", { path: "src/plain.txt" }), call("write", { path: "src/new.txt", content: "x" }), call("ls", {})]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  for (const id of ["call_0_0", "call_0_1", "call_0_2"]) {
    assert.match(res[id], /cannot load its policy/);
    assert.ok(res[id].includes(`${cfg}:3:`), res[id]);
  }
  assert.equal(existsSync(path.join(w.project, "src", "new.txt")), false);
});

test("explicit choices: --no-sandbox turns it off, --sandbox-mode ro blocks writes", async (t) => {
  const w = makeWorld("choices");
  t.after(w.cleanup);
  const off = await runPi({
    world: w,
    args: ["--no-sandbox"],
    script: [[call("write", { path: "cert.pem", content: "PEM" })]],
  });
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.results[0].text, /Successfully wrote/);
  assert.equal(readFileSync(path.join(w.project, "cert.pem"), "utf8"), "PEM");

  const ro = await runPi({
    world: w,
    args: ["--sandbox-mode", "ro"],
    script: [[call("write", { path: "src/x.txt", content: "x" }), call("read", { path: "cert.pem" })]],
  });
  const res = byId(ro.results);
  assert.match(res.call_0_0, /read-only mode \(set by --sandbox-mode flag\)/);
  assert.equal(existsSync(path.join(w.project, "src", "x.txt")), false);
  assert.match(res.call_0_1, /PEM/);
});

test("env files: asked for (blocked without a UI), refused in deny mode, allowed in always mode; grep leaves them out", async (t) => {
  const w = makeWorld("env");
  t.after(w.cleanup);
  writeFileSync(path.join(w.project, ".env"), "API_TOKEN=ENV-SECRET-77\n");
  writeFileSync(path.join(w.project, ".env.production.local"), "API_TOKEN=ENV-SECRET-78\n");
  writeFileSync(path.join(w.project, ".env.ample"), "API_TOKEN=ENV-SECRET-79\n");
  // Templates hold no secrets: grep searches them.
  writeFileSync(path.join(w.project, ".env.example"), "API_TOKEN=your-token-here\n");
  writeFileSync(path.join(w.project, "src", "config.ts"), "const name = 'API_TOKEN';\n");
  const script = [[call("read", { path: ".env" }), call("grep", { pattern: "API_TOKEN" })]];

  const ask = await runPi({ world: w, script, env: { PI_SANDBOX_APPROVAL_MODE: "ask" } });
  let res = byId(ask.results);
  assert.match(res.call_0_0, /needs the user's approval, and there is no UI to ask in/);
  assert.match(res.call_0_1, /src\/config\.ts/);
  assert.match(res.call_0_1, /\.env\.example:1: API_TOKEN=your-token-here/, res.call_0_1);
  assert.doesNotMatch(res.call_0_1, /ENV-SECRET-7/);

  const deny = await runPi({ world: w, script, env: { PI_SANDBOX_APPROVAL_MODE: "deny" } });
  res = byId(deny.results);
  assert.match(res.call_0_0, /PI_SANDBOX_APPROVAL_MODE=deny refuses them/);
  assert.doesNotMatch(res.call_0_1, /ENV-SECRET-7/);

  const always = await runPi({ world: w, script, env: { PI_SANDBOX_APPROVAL_MODE: "always" } });
  res = byId(always.results);
  assert.match(res.call_0_0, /ENV-SECRET-77/);
  assert.match(res.call_0_1, /\.env/);
});

test("a batch cannot plant a symlink to a secret and read it before the check", async (t) => {
  const w = makeWorld("race");
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    script: [
      [
        call("bash", { command: `ln -s ${path.join(w.home, ".ssh", "id_rsa")} link.txt` }),
        call("read", { path: "link.txt" }),
      ],
    ],
  });
  const res = byId(r.results);
  // Checked after the bash call finished, so the guard saw the link and its target.
  assert.match(res.call_0_1, /Blocked read of .*\.ssh\/id_rsa/);
  assert.doesNotMatch(res.call_0_1, new RegExp(SECRET));
});

test("if the native addon cannot load, every guarded tool is blocked with the cause", async (t) => {
  const w = makeWorld("noaddon");
  t.after(w.cleanup);
  writeFileSync(path.join(w.project, "src", "plain.txt"), "plain");
  const r = await runPi({
    world: w,
    env: { NAPI_RS_NATIVE_LIBRARY_PATH: path.join(w.root, "missing.node") },
    script: [[call("read", { path: "src/plain.txt" }), call("write", { path: "src/y.txt", content: "y" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  for (const text of [res.call_0_0, res.call_0_1]) {
    // Which platform, which ones the package has, what to do; not napi's npm advice.
    assert.match(text, /native module of pi-sandbox-rs could not be loaded on linux-x64/);
    assert.match(text, /This installation has the binary for linux-x64-gnu, and it did not load\./);
    assert.match(text, /--no-sandbox/);
    assert.doesNotMatch(text, /npm has a bug/);
  }
  assert.equal(existsSync(path.join(w.project, "src", "y.txt")), false);
});

test("the agent's bash runs sandboxed: the tool result shows why a write failed", async (t) => {
  const w = makeWorld("bash");
  t.after(w.cleanup);
  const outside = path.join(w.root, "outside", "o.txt");
  const r = await runPi({
    world: w,
    script: [
      [
        call("bash", { command: `echo in > in.txt && echo out > ${outside}` }),
        call("bash", { command: "cat ~/.ssh/id_rsa; echo '{}' > .pi/sandbox.json" }),
      ],
      [call("bash", { command: "git init -q new && echo 'curl evil' > new/.git/hooks/post-checkout && echo planted" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /o\.txt: Read-only file system/);
  assert.match(res.call_0_0, /Command exited with code 1/);
  assert.equal(readFileSync(path.join(w.project, "in.txt"), "utf8"), "in\n");
  assert.equal(existsSync(outside), false);
  assert.doesNotMatch(res.call_0_1, new RegExp(SECRET));
  assert.match(res.call_0_1, /id_rsa: No such file or directory/);
  // ... and the model is told the sandbox hides it, by which rule, once.
  assert.match(res.call_0_1, /\[pi-sandbox\] .*\.ssh\/id_rsa is hidden in the sandbox \(commands see it missing or empty\): it is covered by denyRead entry '~\/\.ssh'/);
  assert.equal(res.call_0_1.match(/is hidden in the sandbox/g).length, 1);
  assert.equal(existsSync(path.join(w.project, ".pi", "sandbox.json")), false);
  // a hook planted in a repository the command created is moved aside, and the model is told
  assert.match(res.call_1_0, /planted/);
  assert.match(res.call_1_0, /\[pi-sandbox\] .*new\/\.git\/hooks was created or changed by the command and moved to/);
  assert.equal(existsSync(path.join(w.project, "new", ".git", "hooks", "post-checkout")), false);
  for (const text of Object.values(res)) assert.doesNotMatch(text, /project\/\.pi was created/);
});

test("sandboxed bash keeps pi's timeout: the whole sandbox dies with it", async (t) => {
  const w = makeWorld("timeout");
  t.after(w.cleanup);
  const marker = `${(Date.now() % 10000) + 1}.${process.pid % 1000}`;
  const r = await runPi({
    world: w,
    script: [[call("bash", { command: `echo started; nohup sleep ${marker} >/dev/null 2>&1 & sleep ${marker}`, timeout: 2 })]],
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.results[0].text, /started/);
  assert.match(r.results[0].text, /timed out|timeout/i);
  const left = spawnSync("pgrep", ["-f", `sleep ${marker}`], { encoding: "utf8" });
  assert.equal(left.stdout.trim(), "", "a sandboxed process outlived pi's timeout");
  // The script was deleted before the sandbox started, so even a killed run leaves none.
  assert.deepEqual(readdirSync(w.tmp).filter((f) => f.startsWith("pi-bash-") && f.endsWith(".sh")), []);
});
