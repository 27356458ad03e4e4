// Servers live for the session, through a real pi: what a command leaves running in the
// background keeps running in the sandbox, later commands reach it on 127.0.0.1, /sandbox lists
// it, and it is gone when the session ends, when the user stops it, or with a command that is
// stopped; what it does between commands is audited before the next one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });

/** Host processes whose command line holds `marker` (none: []). */
function processesWith(marker) {
  try {
    return execFileSync("pgrep", ["-f", marker], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

for (const network of ["filtered", "off"]) {
  test(`servers live for the session (network ${network}): a server one bash call starts in the background answers the next on 127.0.0.1 and localhost, the note says it runs on, and it is gone when the session ends`, async (t) => {
    const w = makeWorld(`session-server-${network}`);
    t.after(w.cleanup);
    const port = 20000 + ((process.pid * 7 + (network === "off" ? 1 : 0)) % 20000);
    const marker = `http.server ${port}`;
    t.after(() => {
      for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
    });
    const r = await runPi({
      world: w,
      args: ["--sandbox-network", network],
      script: [
        [call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1 --directory /tmp > /tmp/server.log 2>&1 &\nfor i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:${port}/ && break; sleep 0.1; done; echo STARTED` })],
        [call("bash", { command: `curl -sS --max-time 5 http://127.0.0.1:${port}/ | head -c 200; echo; curl -sS --max-time 5 -o /dev/null -w 'LOCALHOST-%{http_code}\\n' http://localhost:${port}/` })],
        [call("bash", { command: "cat /tmp/server.log | head -c 300" })],
      ],
    });
    assert.equal(r.code, 0, r.stderr);
    const [start, next, log] = r.results.map((x) => x.text);
    assert.match(start, /STARTED/, start);
    assert.match(start, new RegExp(`\\[pi-sandbox\\] Still running in the sandbox: .*${marker}.* keeps running for this session`), start);
    assert.match(next, /Directory listing/, next);
    assert.match(next, /LOCALHOST-200/, next);
    assert.doesNotMatch(next, /Still running/, "the note is for the command that left it");
    assert.match(log, /GET \/ HTTP/, log);
    // pi has exited: the session's servers went with it.
    assert.deepEqual(processesWith(marker), [], "a server outlived the session");
  });
}

test("/sandbox lists what commands left running and /sandbox stop ends it", async (t) => {
  const w = makeWorld("session-server-stop");
  t.after(w.cleanup);
  const port = 40000 + (process.pid % 20000);
  const marker = `http.server ${port}`;
  t.after(() => {
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
  });
  const reports = [];
  let step = 0;
  let runningDuring = [];
  const r = await runPiRpc({
    world: w,
    script: [[call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1 > /dev/null 2>&1 & sleep 0.5; echo STARTED` })]],
    onMessage: (msg, send) => {
      if (msg.type === "agent_end" && step === 0) {
        step = 1;
        runningDuring = processesWith(marker);
        send({ id: "p2", type: "prompt", message: "/sandbox" });
      } else if (msg.type === "extension_ui_request" && msg.method === "notify") {
        reports.push(msg.message);
        if (step === 1 && /^pi-sandbox: /.test(msg.message)) {
          step = 2;
          send({ id: "p3", type: "prompt", message: "/sandbox stop" });
        } else if (step === 2 && /background process/.test(msg.message)) step = 3;
      }
    },
    until: () => step === 3,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(runningDuring.length, 1, `the server was not running between prompts: ${runningDuring}`);
  const summary = reports.find((m) => /^pi-sandbox: /.test(m));
  assert.match(summary, new RegExp(`^Running in the background: .*${marker}.*/sandbox stop ends them$`, "m"), summary);
  assert.ok(reports.some((m) => /^Stopped 1 background process left by this session's commands\.$/.test(m)), reports.join("\n"));
  assert.deepEqual(processesWith(marker), []);
});

test("a command that times out takes what it started with it: its background server is gone for the next command", async (t) => {
  const w = makeWorld("session-server-timeout");
  t.after(w.cleanup);
  const port = 30000 + (process.pid % 10000);
  const marker = `http.server ${port}`;
  t.after(() => {
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
  });
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1 > /dev/null 2>&1 &\nsleep 30`, timeout: 2 })],
      [call("bash", { command: `curl -sS --max-time 3 http://127.0.0.1:${port}/ ; echo RC=$?` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [timedOut, next] = r.results.map((x) => x.text);
  assert.match(timedOut, /timed out/i, timedOut);
  assert.match(next, /RC=7/, `the server outlived the command that was stopped: ${next}`);
});

test("what a background process writes on pi's control surface between commands is moved aside before the next command", async (t) => {
  const w = makeWorld("session-server-audit");
  t.after(w.cleanup);
  const planted = path.join(w.project, "sub", ".pi", "extensions", "planted.ts");
  // Waits for the test's go-ahead (after the command has ended and been audited), then plants.
  const writer = "(while [ ! -e go ]; do sleep 0.05; done; mkdir -p sub/.pi/extensions && echo 'export default () => {}' > sub/.pi/extensions/planted.ts) > /dev/null 2>&1 &";
  let step = 0;
  let plantedBetween = false;
  const r = await runPiRpc({
    world: w,
    script: [[call("bash", { command: `${writer}\necho STARTED` })], [], [call("bash", { command: "ls -R sub 2>&1; echo LISTED" })]],
    onMessage: (msg, send) => {
      if (msg.type === "agent_end" && step === 0) {
        step = 1;
        writeFileSync(path.join(w.project, "go"), "");
        for (let i = 0; i < 100 && !existsSync(planted); i++) execFileSync("sleep", ["0.05"]);
        plantedBetween = existsSync(planted);
        send({ id: "p2", type: "prompt", message: "go on" });
      } else if (msg.type === "agent_end" && step === 1) step = 2;
    },
    until: () => step === 2,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(plantedBetween, "the background writer did not plant its file between the commands");
  const listed = r.results[1].text;
  assert.match(listed, /LISTED/, listed);
  assert.equal(existsSync(planted), false, "a file planted between commands stayed where pi loads extensions from");
  assert.doesNotMatch(listed, /^planted\.ts$/m, listed);
  // Said after the command it was found before.
  assert.match(listed, /\[pi-sandbox\] .*sub\/\.pi.* moved to /, listed);
  const quarantine = readdirSync(path.join(w.agentDir), { recursive: true }).filter((p) => String(p).endsWith("planted.ts"));
  assert.equal(quarantine.length, 1, "the planted file was not kept in quarantine");
});

test("a server that writes its log to the command's own output keeps serving after the command returned", async (t) => {
  const w = makeWorld("session-server-output");
  t.after(w.cleanup);
  const port = 50000 + (process.pid % 10000);
  const marker = `http.server ${port}`;
  t.after(() => {
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
  });
  // http.server logs every request to stderr: the command's output, which pi stops reading.
  const get = `curl -sS --max-time 5 -o /dev/null -w 'HTTP-%{http_code}\\n' http://127.0.0.1:${port}/`;
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1 &\nfor i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:${port}/ && break; sleep 0.1; done; echo STARTED` })],
      [call("bash", { command: `${get}; ${get}` })],
      [call("bash", { command: `${get}` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [start, second, third] = r.results.map((x) => x.text);
  assert.match(start, /STARTED/, start);
  assert.equal((second.match(/HTTP-200/g) ?? []).length, 2, second);
  assert.match(third, /HTTP-200/, third);
});

test("a port held by a server an earlier command left running: the note names it and how to end it", async (t) => {
  const w = makeWorld("session-server-port");
  t.after(w.cleanup);
  const port = 31000 + (process.pid % 10000);
  const marker = `http.server ${port}`;
  t.after(() => {
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
  });
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1 > /dev/null 2>&1 &\nsleep 0.5; echo STARTED` })],
      [call("bash", { command: `python3 -m http.server ${port} --bind 127.0.0.1` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const again = r.results[1].text;
  assert.match(again, /Address already in use/, again);
  assert.match(again, new RegExp(`\\[pi-sandbox\\] .*Address already in use.*: a process an earlier command left running may hold that port: .*${marker}.*/sandbox stop`), again);
  assert.equal((again.match(/\[pi-sandbox\]/g) ?? []).length, 1, again);
});
