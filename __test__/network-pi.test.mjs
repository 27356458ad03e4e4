// Filtered network through a real pi and the mock model: curl to an allowed host answers,
// curl to a disallowed one is blocked and the tool result says which host and how to allow
// it; with a UI (RPC mode) an unlisted host is asked about and the answer holds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

async function hostServer(t, address = "127.0.0.1") {
  const s = createServer((req, res) => res.end(`hello-from-host ${req.url}\n`));
  await new Promise((resolve) => s.listen(0, address, resolve));
  t.after(() => s.close());
  return s.address().port;
}

function worldWith(t, name, network) {
  const w = makeWorld(name);
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ network }));
  return w;
}

test("print mode: curl to an allowed host answers, a disallowed one is blocked with the host and how to allow it", async (t) => {
  const port = await hostServer(t);
  const w = worldWith(t, "netpi", { allowedDomains: ["localhost"], deniedDomains: ["denied.example"] });
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `curl -sS -m 10 http://localhost:${port}/ok` })],
      [call("bash", { command: "curl -sS -m 10 https://blocked.example/" })],
      [call("bash", { command: "curl -sS -m 10 http://denied.example/" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /hello-from-host \/ok/);
  assert.match(res.call_1_0, /CONNECT tunnel failed, response 403/);
  assert.match(res.call_1_0, /Blocked: a connection to blocked\.example:443: blocked\.example is not in network\.allowedDomains, and there is no UI/);
  assert.match(res.call_1_0, /add "blocked\.example" to network\.allowedDomains in /);
  assert.match(res.call_2_0, /denied\.example is denied by network\.deniedDomains "denied\.example"/);
  const log = readFileSync(path.join(w.agentDir, "sandbox-violations.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((v) => v.layer === "network");
  assert.deepEqual(
    log.map((v) => [v.host, v.port, v.decision]),
    [
      ["localhost", port, "allowed"],
      ["blocked.example", 443, "denied"],
      ["denied.example", 80, "denied"],
    ],
  );
});

test("with a UI: an unlisted host is asked about while the command runs; allowed for the session, it is not asked again", async (t) => {
  const port = await hostServer(t);
  const w = worldWith(t, "netrpc", { allowedDomains: ["example.org"] });
  // localhost is not listed: --noproxy '' sends it to the proxy (NO_PROXY would keep it inside).
  const curl = (p) => call("bash", { command: `curl -sS -m 20 --noproxy '' http://localhost:${port}/${p}` });
  const r = await runPiRpc({
    world: w,
    script: [[curl("one")], [curl("two")]],
    answer: (msg) => {
      if (msg.method !== "select") return { cancelled: true };
      const value = msg.options.find((o) => /for this session/.test(o));
      return value ? { value } : { cancelled: true };
    },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 1, "asked once");
  assert.match(r.dialogs[0].title, /allow the running command to connect to localhost \(port \d+\)/);
  assert.deepEqual(
    r.dialogs[0].options.map((o) => o.split(" (")[0]),
    ["Abort", "Allow for this session", "Allow for this project", "Allow for all projects"],
  );
  const res = byId(r.results);
  assert.match(res.call_0_0, /hello-from-host \/one/);
  assert.match(res.call_1_0, /hello-from-host \/two/);
});

test("with a UI: a host allowed for this project or for all projects lands in that config file and is not asked again", async (t) => {
  // Two hosts the filter tells apart (localhost and 127.0.0.1 are one: the host's loopback).
  const ports = { localhost: await hostServer(t), "127.0.0.2": await hostServer(t, "127.0.0.2") };
  const w = worldWith(t, "netscopes", { allowedDomains: ["example.org"] });
  const curl = (host, p) => call("bash", { command: `curl -sS -m 20 --noproxy '' http://${host}:${ports[host]}/${p}` });
  const r = await runPiRpc({
    world: w,
    script: [[curl("localhost", "a")], [curl("127.0.0.2", "b")], [curl("localhost", "c")], [curl("127.0.0.2", "d")]],
    answer: (msg) => {
      if (msg.method !== "select") return { cancelled: true };
      const wanted = /localhost/.test(msg.title) ? /for this project/ : /for all projects/;
      const value = msg.options.find((o) => wanted.test(o));
      return value ? { value } : { cancelled: true };
    },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 2, `each host asked about once: ${JSON.stringify(r.dialogs.map((d) => d.title))}`);
  const res = byId(r.results);
  for (const [id, p] of [["call_0_0", "a"], ["call_1_0", "b"], ["call_2_0", "c"], ["call_3_0", "d"]]) {
    assert.match(res[id], new RegExp(`hello-from-host /${p}`), res[id]);
  }
  const project = JSON.parse(readFileSync(path.join(w.project, ".pi", "sandbox.json"), "utf8"));
  // The project's file sets its own list after the first answer, which replaces the global
  // one here: "all projects" lands in both.
  assert.deepEqual(project.network.allowedDomains, ["example.org", "localhost", "127.0.0.2"]);
  const global = JSON.parse(readFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), "utf8"));
  assert.deepEqual(global.network.allowedDomains, ["example.org", "127.0.0.2"]);
});

test("with a UI: Deny blocks the host and the tool result says the user declined", async (t) => {
  const w = worldWith(t, "netdeny", { allowedDomains: ["example.org"] });
  const r = await runPiRpc({
    world: w,
    script: [[call("bash", { command: "curl -sS -m 20 https://unlisted.example/; echo curl=$?" })]],
    answer: (msg) => (msg.method === "select" ? { value: msg.options[0] } : { cancelled: true }),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 1);
  const res = byId(r.results);
  assert.match(res.call_0_0, /curl=56/);
  assert.match(res.call_0_0, /unlisted\.example:443; the user was asked and declined/);
});
