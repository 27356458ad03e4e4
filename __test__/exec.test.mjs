// The sandboxed bash's own exec (extensions/exec.ts) through a real pi in RPC mode: bwrap is
// pi's direct child (no outer shell), output streams while the command runs, exit codes and
// signals come through, and pi's abort kills the whole sandbox.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { makeWorld, runPiRpc } from "./helpers/pi-run.mjs";

const bash = (command) => ({ name: "bash", arguments: { command } });
const text = (result) => (result?.content ?? []).map((c) => c.text ?? "").join("");
const ends = (r) => r.messages.filter((m) => m.type === "tool_execution_end");

/** The parent pid and command name of `pid`, from /proc. */
function procInfo(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return { comm, ppid };
  } catch {
    return undefined;
  }
}

test("bash output streams while the command runs; exit codes and signals come through", async (t) => {
  const w = makeWorld("exec");
  t.after(w.cleanup);
  // Seconds: long enough to be seen running, short enough not to stall the test if it is not.
  const marker = `8.${process.pid}${Date.now() % 1000}`;
  let chain;
  let seen = false;
  const r = await runPiRpc({
    world: w,
    script: [
      [bash(`for i in 1 2 3 4; do echo tick-$i; sleep 0.4; done; sleep ${marker}`)],
      [bash("echo out; echo err >&2; exit 42")],
      [bash("kill -TERM $$")],
    ],
    onMessage: (msg, _send, piPid) => {
      // While the first command sleeps: walk from the sleep up to pi.
      if (seen || msg.type !== "tool_execution_update" || !/tick-4/.test(text(msg.partialResult))) return;
      seen = true;
      setTimeout(() => {
        const found = spawnSync("pgrep", ["-f", `^sleep ${marker}`], { encoding: "utf8" }).stdout.trim().split("\n")[0];
        if (!found) return;
        chain = [];
        for (let pid = Number(found); pid > 1 && pid !== piPid && chain.length < 10; pid = procInfo(pid)?.ppid ?? 1) {
          chain.push(procInfo(pid)?.comm);
        }
        chain.push(procInfo(piPid) ? "pi" : "?");
        spawnSync("pkill", ["-f", `^sleep ${marker}`]);
      }, 800);
    },
  });
  assert.equal(r.code, 0, r.stderr);
  // streamed: pi saw the ticks one by one, before the command ended
  const updates = r.messages
    .filter((m) => m.type === "tool_execution_update")
    .map((m) => text(m.partialResult))
    .filter((s) => /tick-/.test(s));
  assert.ok(updates.some((s) => /tick-1/.test(s) && !/tick-3/.test(s)), JSON.stringify(updates));
  // bwrap (outer and inner) runs under pi-sandbox-init --join (which enters the session's
  // namespaces), pi's own child: no `bash -c` between them
  assert.ok(chain, "the sleep was not seen running");
  assert.deepEqual(chain.slice(-4), ["bwrap", "bwrap", "pi-sandbox", "pi"], JSON.stringify(chain));
  const [, second, third] = ends(r);
  assert.match(text(second.result), /out\n[^]*err/);
  assert.match(text(second.result), /exited with code 42/);
  assert.match(text(third.result), /exited with code 143/);
});

test("pi's abort kills the sandboxed command and everything it started", async (t) => {
  const w = makeWorld("abort");
  t.after(w.cleanup);
  const marker = `9.${process.pid}${Date.now() % 1000}`;
  let aborted = false;
  const r = await runPiRpc({
    world: w,
    script: [[bash(`echo started; (setsid sleep ${marker} &); sleep ${marker}`)]],
    onMessage: (msg, send) => {
      if (!aborted && msg.type === "tool_execution_update" && /started/.test(text(msg.partialResult))) {
        aborted = true;
        setTimeout(() => send({ id: "a1", type: "abort" }), 300);
      }
    },
  });
  assert.ok(aborted, "the command never reported it had started");
  const left = spawnSync("pgrep", ["-f", `sleep ${marker}`], { encoding: "utf8" });
  assert.equal(left.stdout.trim(), "", "a sandboxed process outlived the abort");
  const [end] = ends(r);
  assert.ok(end, JSON.stringify(r.messages.map((m) => m.type)));
  assert.match(text(end.result), /abort/i);
  assert.equal(r.code, 0, r.stderr);
});
