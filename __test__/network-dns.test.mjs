// Registries behind any DNS, through a real pi and the mock model: the built-in allowlist
// reaches this machine's npm and PyPI registries, whose names resolve to a non-public address
// here (a mirror at 203.0.113.80); a registry of the test's own is reached by a name that
// resolves to the loopback address the allowlist names, while names that resolve to the
// loopback, this machine's own address or a cloud metadata address (DNS rebinding) are refused
// with a note and a refusal in the log.
//
// The test's names are resolved by pi's own resolver, not by a switch in the sandbox: pi runs
// in a user and mount namespace of the test's (`unshare`) with its own /etc/hosts bind-mounted
// there; bwrap nests inside as usual. Nothing leaves this machine but the real registries'
// traffic.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { makeWorld, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

const resolves = (name) => spawnSync("getent", ["ahosts", name], { encoding: "utf8" }).status === 0;
const noRegistries = !resolves("registry.npmjs.org") && "registry.npmjs.org does not resolve here";
const noUnshare =
  spawnSync("unshare", ["--user", "--map-root-user", "--mount", "true"]).status !== 0 && "needs unshare --user --mount (user namespaces)";
/** An address of this machine other than the loopback, for a server a name leads to. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

function worldWith(t, name, network) {
  const w = makeWorld(name);
  t.after(w.cleanup);
  if (network) {
    mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
    writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ network }));
  }
  return w;
}

/** The violation log's network entries: [target, decision, rule]. */
function networkLog(w) {
  const file = path.join(w.agentDir, "sandbox-violations.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((v) => v.layer === "network")
    .map((v) => [v.target, v.decision, v.rule]);
}

/**
 * What runs pi with `names` (name → address) in its /etc/hosts: a user and mount namespace
 * of the test's own, the host's /etc/hosts plus these lines bind-mounted over it.
 */
function withHosts(w, names) {
  const file = path.join(w.root, "hosts");
  const lines = Object.entries(names).map(([name, ip]) => `${ip} ${name}`);
  writeFileSync(file, `${readFileSync("/etc/hosts", "utf8")}\n${lines.join("\n")}\n`);
  return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', file];
}

/** An HTTP server on `host`: `routes[url]` answers, anything else 404; every request is kept. */
async function server(t, host, routes = {}) {
  const requests = [];
  const s = createServer((req, res) => {
    requests.push(req.url);
    const body = routes[req.url];
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
    res.end(body ? JSON.stringify(body) : "{}");
  });
  await new Promise((resolve) => s.listen(0, host, resolve));
  t.after(() => s.close());
  return { port: s.address().port, requests };
}

test("the built-in allowlist reaches this machine's npm and PyPI registries, which resolve to a non-public address", { skip: noRegistries }, async (t) => {
  const w = worldWith(t, "netdefaults", null);
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: "npm view left-pad version" })],
      // Not the machine's own wheel directory: the index and its file host, through the proxy.
      [call("bash", { command: "PIP_FIND_LINKS= pip download six --no-deps --no-cache-dir -d dl && ls dl" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /^\d+\.\d+\.\d+$/m, res.call_0_0);
  assert.match(res.call_1_0, /^six-[\d.]+-py2\.py3-none-any\.whl$/m, res.call_1_0);
  for (const text of Object.values(res)) assert.doesNotMatch(text, /Blocked|pi-sandbox:/, text);
  assert.ok(readdirSync(path.join(w.project, "dl")).some((f) => f.startsWith("six-")));
  const log = networkLog(w);
  for (const host of ["registry.npmjs.org:443", "pypi.org:443", "files.pythonhosted.org:443"]) {
    assert.ok(log.some(([target, decision]) => target === host && decision === "allowed"), `${host}: ${JSON.stringify(log)}`);
  }
  assert.ok(!log.some(([, decision]) => decision !== "allowed"), JSON.stringify(log));
});

test("a registry reached by a name that leads to the address the allowlist names; names that lead to the loopback, this machine's own address or the metadata service are refused with a note and a refusal in the log", { skip: noUnshare }, async (t) => {
  // A local registry (as verdaccio would be) on a loopback address of its own.
  const registry = await server(t, "127.0.0.5", {
    "/left-pad": {
      name: "left-pad",
      "dist-tags": { latest: "9.9.9" },
      versions: { "9.9.9": { name: "left-pad", version: "9.9.9", dist: { tarball: "http://npm.corp.test/left-pad/-/left-pad-9.9.9.tgz" } } },
    },
  });
  // What a rebinding name would reach: services on the host's loopback, and on its own
  // network address (bound there as a service bound to every interface is).
  const local = await server(t, "127.0.0.1");
  const self = external ? await server(t, external) : null;
  // The exact entry first for the rebinding name, the wildcard for the others: neither
  // which entry matched nor how it was written changes where a name may lead.
  const w = worldWith(t, "netnames", { allowedDomains: ["rebind.corp.test", "*.corp.test", "127.0.0.5"] });
  const names = { "npm.corp.test": "127.0.0.5", "rebind.corp.test": "127.0.0.1", "meta.corp.test": "169.254.169.254" };
  if (external) names["self.corp.test"] = external;
  const r = await runPi({
    world: w,
    wrap: withHosts(w, names),
    script: [
      [call("bash", { command: `npm view left-pad version --registry http://npm.corp.test:${registry.port}/` })],
      [call("bash", { command: `curl -sS -m 10 http://rebind.corp.test:${local.port}/secret; echo curl=$?` })],
      [call("bash", { command: "curl -sS -m 10 http://meta.corp.test/latest/meta-data/; echo curl=$?" })],
      [call("bash", { command: `curl -sS -m 10 http://self.corp.test:${self?.port ?? 9}/secret; echo curl=$?` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /^9\.9\.9$/m, res.call_0_0);
  assert.ok(registry.requests.includes("/left-pad"), JSON.stringify(registry.requests));
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  // The note after the command: which name, which address, why, and the entry that allows it
  // in the file that holds the list.
  assert.ok(
    res.call_1_0.includes(
      `[pi-sandbox] Blocked: a connection to rebind.corp.test:${local.port}: rebind.corp.test resolves to 127.0.0.1, this machine's loopback: a name leads there only if that address is allowed itself (DNS-rebinding guard); add "127.0.0.1" to network.allowedDomains in ${global}.`,
    ),
    res.call_1_0,
  );
  // curl got the reason too (a plain request's body).
  assert.match(res.call_1_0, /^pi-sandbox: Blocked: a connection to rebind\.corp\.test/m);
  assert.deepEqual(local.requests, [], "nothing reached the loopback's service");
  assert.match(res.call_2_0, /\[pi-sandbox\] Blocked: a connection to meta\.corp\.test:80: meta\.corp\.test resolves to 169\.254\.169\.254, a cloud metadata service: .* add "169\.254\.169\.254" to network\.allowedDomains in /);
  if (self) {
    assert.ok(
      res.call_3_0.includes(`self.corp.test resolves to ${external}, an address of this machine itself: a name leads there only if that address is allowed itself`),
      res.call_3_0,
    );
    assert.deepEqual(self.requests, [], "nothing reached the service on this machine's own address");
  }
  const log = networkLog(w);
  assert.deepEqual(
    log.map(([target, decision]) => [target, decision]),
    [
      [`npm.corp.test:${registry.port}`, "allowed"],
      [`rebind.corp.test:${local.port}`, "denied"],
      ["meta.corp.test:80", "denied"],
      ...(self ? [[`self.corp.test:${self.port}`, "denied"]] : []),
    ],
  );
  assert.match(log[0][2], /allowedDomains "\*\.corp\.test"/);
  assert.match(log[1][2], /resolves to 127\.0\.0\.1, this machine's loopback: .*DNS-rebinding guard/);
});

test("with a UI: a network question still open when the command ended is said in the note", async (t) => {
  const w = worldWith(t, "netopen", { allowedDomains: ["example.org"] });
  const r = await runPiRpc({
    world: w,
    // curl gives up on its own while the question waits: the command ends with it open.
    script: [[call("bash", { command: "curl -sS -m 3 https://unlisted.example/; echo curl=$?" })]],
    answer: () => null,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 1);
  assert.match(r.dialogs[0].title, /connect to unlisted\.example \(port 443\)/);
  const res = byId(r.results);
  assert.match(res.call_0_0, /curl=28/, res.call_0_0);
  assert.ok(
    res.call_0_0.includes(
      "[pi-sandbox] Blocked: a connection to unlisted.example:443: the command ended before the question about unlisted.example was answered; run it again and answer the dialog.",
    ),
    res.call_0_0,
  );
  assert.deepEqual(
    networkLog(w).map(([target, decision]) => [target, decision]),
    [["unlisted.example:443", "denied"]],
  );
});
