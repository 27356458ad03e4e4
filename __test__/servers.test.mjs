// Servers live for the session, through a real pi: what a command leaves running in the
// background keeps running in the sandbox, later commands reach it on 127.0.0.1, /sandbox lists
// it, and it is gone when the session ends, when the user stops it, or with a command that is
// stopped; what it does between commands is audited before the next one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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

/** A port for a test's `http.server` and the marker that finds it; whatever still runs with it
 * when the test ends is killed. */
function serverPort(t, port) {
  const marker = `http.server ${port}`;
  t.after(() => {
    for (const pid of processesWith(marker)) process.kill(Number(pid), "SIGKILL");
  });
  return { port, marker };
}

for (const network of ["filtered", "off"]) {
  test(`servers live for the session (network ${network}): a server one bash call starts in the background answers the next on 127.0.0.1 and localhost, the note says it runs on, and it is gone when the session ends`, async (t) => {
    const w = makeWorld(`session-server-${network}`);
    t.after(w.cleanup);
    const { port, marker } = serverPort(t, 20000 + ((process.pid * 7 + (network === "off" ? 1 : 0)) % 20000));
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
  const { port, marker } = serverPort(t, 40000 + (process.pid % 20000));
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
  const { port, marker } = serverPort(t, 30000 + (process.pid % 10000));
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
  const { port, marker } = serverPort(t, 50000 + (process.pid % 10000));
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
  const { port, marker } = serverPort(t, 31000 + (process.pid % 10000));
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

// Found by a review of the pods change.

test("a command pi times out ends with everything it started: neither its foreground nor its background runs into the next command", async (t) => {
  const w = makeWorld("session-timeout");
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: "(sleep 3; echo BACKGROUND-ALIVE > bg.txt) & echo started; sleep 3; echo FOREGROUND-ALIVE > fg.txt", timeout: 1 })],
      [call("bash", { command: "sleep 4; cat fg.txt bg.txt 2>&1; echo END" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [killed, next] = r.results.map((x) => x.text);
  assert.match(killed, /started/, killed);
  assert.match(killed, /timed out|timeout/i, killed);
  assert.match(next, /END/, next);
  assert.doesNotMatch(next, /FOREGROUND-ALIVE/, "the timed-out command ran on");
  assert.doesNotMatch(next, /BACKGROUND-ALIVE/, "what the timed-out command put in the background ran on");
  assert.equal(existsSync(path.join(w.project, "fg.txt")), false);
});

test("what a background process wrote on pi's control surface after its command and before the session's end is audited at the end, though it has exited by then", async (t) => {
  const w = makeWorld("session-bg-audit-end");
  t.after(w.cleanup);
  let step = 0;
  const r = await runPiRpc({
    world: w,
    script: [[call("bash", { command: "(sleep 1; mkdir -p sub/.pi/extensions && echo 'export default function () {}' > sub/.pi/extensions/x.ts) > /dev/null 2>&1 & echo STARTED" })]],
    onMessage: (msg, send) => {
      if (msg.type === "agent_end" && step === 0) {
        step = 1;
        // The background process writes and exits; no command follows.
        setTimeout(() => send({ id: "p2", type: "prompt", message: "/sandbox" }), 3000);
      } else if (step === 1 && msg.type === "extension_ui_request" && msg.method === "notify" && /^pi-sandbox: /.test(msg.message)) step = 2;
    },
    until: () => step === 2,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.results[0].text, /STARTED/);
  assert.equal(existsSync(path.join(w.project, "sub/.pi/extensions/x.ts")), false, "an extension a background process planted survived the session's end");
});

test("the session's pod keeps none of pi's environment: its pid 1 outlives every command, so an API key in it would be one process away from them", async (t) => {
  const w = makeWorld("session-pod-env");
  t.after(w.cleanup);
  const secret = `POD-ENV-SECRET-${process.pid}`;
  let environs = null;
  const r = await runPiRpc({
    world: w,
    env: { PI_SANDBOX_TEST_TOKEN: secret },
    script: [[call("bash", { command: "echo STARTED" })]],
    onMessage: (msg, _send, piPid) => {
      if (msg.type !== "agent_end" || environs) return;
      const pods = processesWith("[-]-pod ").filter((pid) => {
        for (let p = Number(pid), i = 0; p > 1 && i < 5; i++) {
          if (p === piPid) return true;
          p = Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ")[1]);
        }
        return false;
      });
      environs = pods.map((pid) => readFileSync(`/proc/${pid}/environ`, "utf8"));
    },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.results[0].text, /STARTED/);
  assert.ok(environs?.length >= 1, "no pod of this pi was found");
  for (const env of environs) assert.ok(!env.includes(secret), "pi's environment reached the pod");
});

test("a background process that empties its command line is still listed and audited: what it plants after its command is moved aside at the session's end", async (t) => {
  const w = makeWorld("session-bg-hidden");
  t.after(w.cleanup);
  let step = 0;
  let summary = "";
  // bash run as `exec -a ''` with its script on stdin: /proc/PID/cmdline is empty.
  const plant = "read -t 5 <>/tmp/f; mkdir -p sub/.pi/extensions; echo 'export default function () {}' > sub/.pi/extensions/x.ts";
  const r = await runPiRpc({
    world: w,
    script: [[call("bash", { command: `mkfifo /tmp/f; printf '%s\\n' "${plant}" > /tmp/s.sh; (exec -a '' bash < /tmp/s.sh) > /dev/null 2>&1 & echo STARTED` })]],
    onMessage: (msg, send) => {
      if (msg.type === "agent_end" && step === 0) {
        step = 1;
        setTimeout(() => send({ id: "p2", type: "prompt", message: "/sandbox" }), 1000);
      } else if (step === 1 && msg.type === "extension_ui_request" && msg.method === "notify" && /^pi-sandbox: /.test(msg.message)) {
        summary = msg.message;
        step = 2;
        // The session ends after the process has planted its file and exited.
        setTimeout(() => (step = 3), 6000);
        setTimeout(() => send({ id: "p3", type: "prompt", message: "/sandbox" }), 6000);
      }
    },
    until: () => step === 3,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.results[0].text, /STARTED/);
  assert.match(r.results[0].text, /Still running in the sandbox: \[bash\]/, r.results[0].text);
  assert.match(summary, /^Running in the background: \[bash\]/m, summary);
  assert.equal(existsSync(path.join(w.project, "sub/.pi/extensions/x.ts")), false, "a hidden background process planted an extension that outlived the session");
});

test("a background process that keeps writing to the command's output neither holds the command open nor dies of a closed pipe when it returns", async (t) => {
  const w = makeWorld("session-bg-output");
  t.after(w.cleanup);
  const started = Date.now();
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: "(for i in $(seq 60); do echo tick-$i; echo tock-$i >&2; sleep 0.05; done; echo alive > alive.txt) & echo STARTED" })],
      [call("bash", { command: "sleep 5; cat alive.txt 2>&1; echo END" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [first, next] = r.results.map((x) => x.text);
  assert.match(first, /STARTED/, first);
  assert.doesNotMatch(first, /tick-60/, "the command waited for what it left running");
  assert.match(next, /^alive$/m, "the background process died when the command returned");
  assert.ok(Date.now() - started < 60_000);
});
