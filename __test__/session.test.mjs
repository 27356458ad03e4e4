// A working session inside the sandbox, through a real pi: what one call leaves is there for
// the next, whichever tool made it, and bash runs a command as pi's own bash does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { makeWorld, runPi } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });

test("one /tmp for the session: a file the write tool puts in /tmp runs in bash, what bash leaves there is there for the next command, the read tool and grep; the host's /tmp is untouched and the folder goes with the session; no login profile runs", async (t) => {
  const w = makeWorld("session-tmp");
  t.after(w.cleanup);
  for (const rc of [".profile", ".bash_profile", ".bashrc"]) writeFileSync(path.join(w.home, rc), "echo PROFILE-RAN\n");
  const name = `pi-sandbox-session-test-${process.pid}-${Date.now()}`;
  const r = await runPi({
    world: w,
    script: [
      [call("write", { path: `/tmp/${name}.py`, content: "print('PY-RAN')\n" })],
      [call("bash", { command: `python3 /tmp/${name}.py; echo LEFT-BY-BASH > /tmp/${name}.txt` })],
      [call("bash", { command: `cat /tmp/${name}.txt; ls /tmp` })],
      [call("read", { path: `/tmp/${name}.txt` })],
      [call("grep", { pattern: "LEFT-BY", path: "/tmp" })],
      [call("bash", { command: "shopt -q login_shell && echo LOGIN-SHELL || echo NOT-LOGIN" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [write, run, next, read, grep, shell] = r.results.map((x) => x.text);
  assert.doesNotMatch(write, /Blocked|error/i, write);
  assert.match(run, /PY-RAN/, run);
  assert.match(next, /LEFT-BY-BASH/, next);
  assert.match(next, new RegExp(`${name}\\.py`), "the write tool's file is in bash's /tmp");
  assert.match(read, /LEFT-BY-BASH/, read);
  assert.match(grep, new RegExp(`${name}\\.txt`), grep);
  // pi's bash: `bash -c`, not a login shell, and no profile ran before any command.
  assert.match(shell, /NOT-LOGIN/, shell);
  for (const x of [run, next, shell]) assert.doesNotMatch(x, /PROFILE-RAN/, x);
  // The model was told up front how bash differs, in the system prompt and bash's description.
  assert.match(r.system, /pi-sandbox: the bash tool runs each command inside a sandbox/, r.system);
  assert.match(r.system, /Writable: the project \(.*project\), \/tmp; everything else is read-only/, r.system);
  assert.match(r.system, /\/tmp is this session's own/);
  assert.match(r.system, /Network goes through the session's proxy/);
  assert.match(r.system, /The environment holds only what builds need/);
  const bashTool = r.tools.find((x) => x.function?.name === "bash");
  assert.match(bashTool.function.description, /Commands run inside pi-sandbox/);
  // Neither file reached the host's /tmp, and the session's folder went with the session.
  assert.equal(existsSync(`/tmp/${name}.py`), false, "the write tool wrote the host's /tmp");
  assert.equal(existsSync(`/tmp/${name}.txt`), false);
  const parents = readdirSync(w.tmp).filter((n) => n.startsWith("pi-sandbox-"));
  assert.equal(parents.length, 1, `${readdirSync(w.tmp)}`);
  assert.deepEqual(readdirSync(path.join(w.tmp, parents[0])), [], "the session's /tmp was left behind");
});

test("the host's /tmp is out of the file tools' reach by any name: a project link to /tmp leads to the host's folder, which is not writable, so pi's loader cache there cannot be replaced", async (t) => {
  const w = makeWorld("session-tmp-link");
  t.after(w.cleanup);
  symlinkSync("/tmp", path.join(w.project, "hosttmp"));
  const name = `pi-sandbox-link-test-${process.pid}-${Date.now()}`;
  const r = await runPi({
    world: w,
    script: [
      [call("write", { path: `hosttmp/${name}.mjs`, content: "PWNED" })],
      [call("write", { path: `/tmp/../tmp/${name}.mjs`, content: "SESSION" })],
      [call("bash", { command: `cat /tmp/${name}.mjs; ls -la /tmp/ | grep -c pi-sandbox- ; true` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [link, dotdot, bash] = r.results.map((x) => x.text);
  assert.match(link, /Blocked|not allowed|outside/i, link);
  assert.equal(existsSync(`/tmp/${name}.mjs`), false, "the write reached the host's /tmp");
  assert.match(dotdot, /Successfully wrote/, dotdot);
  assert.match(bash, /SESSION/, bash);
});

test("failures the sandbox causes say so in one line: a write outside the writable folders, a connection to a server on the host's 127.0.0.1", async (t) => {
  const w = makeWorld("session-notes");
  t.after(w.cleanup);
  const server = createServer((_req, res) => res.end("HOST-SERVICE"));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const port = server.address().port;
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `echo x > ${w.root}/outside/notes.txt` })],
      [call("bash", { command: `curl -sS --max-time 5 http://127.0.0.1:${port}/` })],
      [call("bash", { command: `echo x > ${w.home}/notes.txt` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [write, connect, home] = r.results.map((x) => x.text);
  assert.match(write, /Read-only file system/, write);
  assert.match(write, /\[pi-sandbox\] .*outside\/notes\.txt is outside the folders bash may write.*"this session" opens .*outside to bash too.*filesystem\.allowWrite/, write);
  assert.equal((write.match(/\[pi-sandbox\]/g) ?? []).length, 1, write);
  // A folder grant as wide as the home is not suggested.
  assert.match(home, /\[pi-sandbox\] .*home\/notes\.txt is outside the folders bash may write.*holds your home or the project: add a narrower folder/, home);
  assert.doesNotMatch(connect, /HOST-SERVICE/, connect);
  assert.match(connect, /\[pi-sandbox\] .*127\.0\.0\.1 is the sandbox's own loopback \(where servers this session's commands leave running listen\), not the host's.*"localhost" to network\.allowedDomains/, connect);
});
