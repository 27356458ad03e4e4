// Filtered network with the real bubblewrap: the command's own network namespace whose one
// way out is the session's proxy. Servers on the host's 127.0.0.1 stand in for the internet:
// an allowed host answers through the proxy, a denied or unlisted one is refused with the
// reason, direct TCP and UDP find no route, DNS has no resolver to leak to, and `off` has not
// even the proxy. Unlisted hosts are asked about through onNetworkPrompt.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { createSocket } from "node:dgram";
import { networkInterfaces } from "node:os";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { runPrepared } from "./helpers/launch.mjs";
import { makeWorld, openPathForAnyone, repo } from "./helpers/pi-run.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

/** An HTTP server on `host` answering `hello-from-<tag> <path>`; its port and a closer. */
async function server(t, tag, host = "127.0.0.1") {
  const s = createServer((req, res) => res.end(`hello-from-${tag} ${req.url}\n`));
  await new Promise((resolve) => s.listen(0, host, resolve));
  t.after(() => s.close());
  return s.address().port;
}

function world(t, network) {
  const w = makeWorld("net");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ network }));
  const load = () => Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const env = { ...process.env, TMPDIR: w.tmp, HOME: w.home };
  // Async: the test's servers live in this process's event loop.
  const run = (command, mode, s = load()) => {
    const p = s.prepareBash(command, mode);
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPrepared(p, { cwd: w.project, env });
  };
  const runAsync = async (s, command, mode) => {
    const p = await s.prepareBashAsync(command, mode);
    assert.equal(p.verdict, "sandboxed", p.reason);
    return runPrepared(p, { cwd: w.project, env });
  };
  return { w, load, run, runAsync };
}

test("filtered: an allowed host answers through the proxy, denied and unlisted ones are refused with the reason, every decision is logged", async (t) => {
  const port = await server(t, "host");
  const { run, load } = world(t, { allowedDomains: ["localhost"], deniedDomains: ["denied.example"] });
  const s = load();
  const r = await run(
    [
      `curl -sS -m 10 http://localhost:${port}/a; echo "http=$?"`,
      // HTTPS goes through CONNECT; SOCKS5 with the name resolved by the proxy.
      `curl -sS -m 10 -p http://LOCALHOST.:${port}/b; echo "connect=$?"`,
      `curl -sS -m 10 -x "$ALL_PROXY" http://127.1:${port}/c; echo "socks=$?"`,
      `curl -sS -m 10 http://denied.example/; echo "denied=$?"`,
      `curl -sS -m 10 https://unlisted.example/; echo "unlisted=$?"`,
    ].join("; "),
    "filtered",
    s,
  );
  assert.match(r.stdout, new RegExp(`hello-from-host /a\\nhttp=0`), r.stdout + r.stderr);
  assert.match(r.stdout, /hello-from-host \/b\nconnect=0/, r.stdout + r.stderr);
  assert.match(r.stdout, /hello-from-host \/c\nsocks=0/, r.stdout + r.stderr);
  // A plain request gets the reason as the body; CONNECT a 403.
  assert.match(r.stdout, /denied.example is denied by network.deniedDomains "denied.example"/);
  assert.match(r.stdout, /denied=0/);
  assert.match(r.stderr, /CONNECT tunnel failed, response 403/);
  // After the command: which hosts were blocked and how to allow them.
  const notes = r.findings.join("\n");
  assert.match(notes, /Blocked: a connection to denied\.example:80: .*deniedDomains/);
  assert.match(notes, /Blocked: a connection to unlisted\.example:443: .*no UI to ask.*add "unlisted\.example" to network\.allowedDomains in /);
  const log = s.recentViolations(20).filter((v) => v.layer === "network");
  const seen = log.map((v) => `${v.host}:${v.port} ${v.decision}`);
  // Each distinct host, port and decision once per command.
  assert.deepEqual(seen, [
    `localhost:${port} allowed`,
    `127.0.0.1:${port} allowed`,
    "denied.example:80 denied",
    "unlisted.example:443 denied",
  ]);
  assert.match(log[0].rule, /allowedDomains "localhost"/);
  assert.match(log[2].rule, /deniedDomains "denied.example"/);
});

test("filtered: direct TCP and UDP find no route, DNS has no resolver to reach, the proxy is the only way out", async (t) => {
  const port = await server(t, "any", "0.0.0.0");
  const { run } = world(t, { allowedDomains: ["localhost"] });
  const udp = createSocket("udp4");
  const datagrams = [];
  udp.on("message", (m) => datagrams.push(String(m)));
  await new Promise((resolve) => udp.bind(0, "0.0.0.0", resolve));
  t.after(() => udp.close());
  const udpPort = udp.address().port;
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
  const targets = ["127.0.0.1", ...(external ? [external] : [])];
  const script = [
    ...targets.map((ip) => `(echo > /dev/tcp/${ip}/${port}) 2>/dev/null; echo "devtcp ${ip} $?"`),
    ...targets.map((ip) => `curl -sS -m 5 --noproxy '*' http://${ip}:${port}/ >/dev/null 2>&1; echo "noproxy ${ip} $?"`),
    `python3 -c 'import socket,sys
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
for ip in sys.argv[1:]:
    try: s.sendto(b"leak",(ip,${udpPort})); print("udp",ip,"sent")
    except OSError as e: print("udp",ip,e.errno)' ${targets.join(" ")}`,
    "getent hosts deb.debian.org >/dev/null; echo \"getent $?\"",
    `curl -sS -m 5 http://localhost:${port}/ok; echo "proxy $?"`,
  ].join("\n");
  const r = await run(script, "filtered");
  for (const ip of targets) {
    assert.match(r.stdout, new RegExp(`devtcp ${ip} 1`), r.stdout);
    assert.match(r.stdout, new RegExp(`noproxy ${ip} 7`), r.stdout);
  }
  // The sandbox's own loopback takes the datagram (nothing listens there); no other route.
  if (external) assert.match(r.stdout, new RegExp(`udp ${external.replaceAll(".", "\\.")} 101`), r.stdout);
  assert.match(r.stdout, /getent 2/, r.stdout);
  assert.match(r.stdout, /hello-from-any \/ok\nproxy 0/, r.stdout + r.stderr);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(datagrams, [], "no datagram left the sandbox");
});

test("off: no proxy at all, not even for an allowed host", async (t) => {
  const port = await server(t, "host");
  const { run } = world(t, { allowedDomains: ["localhost"] });
  const r = await run(
    `env | grep -cE '^(HTTP|HTTPS|ALL|http|https|all)_(PROXY|proxy)=|^npm_config_(https_)?proxy=' ; curl -sS -m 5 http://localhost:${port}/; echo "curl $?"; for p in $(seq 1024 1030); do (echo > /dev/tcp/127.0.0.1/$p) 2>/dev/null && echo open $p; done; true`,
    "off",
  );
  assert.match(r.stdout, /^0$/m, "no proxy variable");
  assert.match(r.stdout, /curl 7/, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /hello-from-host|open/);
});

test("the default is filtered when the config lists domains, off when it lists none", async (t) => {
  const withDomains = world(t, { allowedDomains: ["localhost"] });
  assert.equal(withDomains.load().defaultNetwork, "filtered");
  const r = await withDomains.run("echo \"$HTTPS_PROXY|$ALL_PROXY|$NODE_USE_ENV_PROXY|$npm_config_https_proxy\"", undefined);
  assert.match(r.stdout, /^http:\/\/127\.0\.0\.1:(\d+)\|socks5h:\/\/127\.0\.0\.1:\1\|1\|http:\/\/127\.0\.0\.1:\1$/m);
  const none = world(t, { allowedDomains: [], deniedDomains: [] });
  assert.equal(none.load().defaultNetwork, "off");
  assert.match((await none.run("echo \"[$HTTPS_PROXY]\"", undefined)).stdout, /^\[\]$/m);
  // The built-in defaults list npm, PyPI and GitHub.
  const defaults = world(t, {});
  assert.equal(defaults.load().defaultNetwork, "filtered");
  assert.throws(() => defaults.load().prepareBash("true", "sometimes"), /filtered/);
});

test("NO_PROXY: the sandbox's own loopback stays its own unless the host's is allowed", async (t) => {
  const port = await server(t, "host");
  // A server the command starts inside, on the same port number as the host's.
  const inside = `python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 & for i in $(seq 50); do (echo > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && break; sleep 0.1; done`;
  const notListed = world(t, { allowedDomains: ["example.org"] });
  let r = await notListed.run(`${inside}; echo "[$NO_PROXY]"; curl -sS -m 5 http://localhost:${port}/ | head -c 15; echo; kill %1`, "filtered");
  assert.match(r.stdout, /\[localhost,127\.0\.0\.1,::1\]/);
  assert.match(r.stdout, /<!DOCTYPE HTML/i, "the command's own server answers");
  const listed = world(t, { allowedDomains: ["localhost"] });
  r = await listed.run(`echo "[$NO_PROXY]"; curl -sS -m 5 http://localhost:${port}/x`, "filtered");
  assert.match(r.stdout, /^\[\]$/m);
  assert.match(r.stdout, /hello-from-host \/x/, "the host's server, through the proxy");
});

test("an unlisted host is asked about with the four answers of a blocked write: session holds in memory for the rest, deny refuses", async (t) => {
  const port = await server(t, "host");
  const { w, load, runAsync } = world(t, { allowedDomains: ["example.org"] });
  const s = load();
  const questions = [];
  let answer = "session";
  s.onNetworkPrompt((q) => {
    questions.push(q);
    setTimeout(() => s.answerNetworkPrompt(q.id, answer), 20);
  });
  // --noproxy '': localhost is not listed, so NO_PROXY would keep it on the sandbox's loopback.
  const twice = `for i in 1 2; do curl -sS -m 20 --noproxy '' http://localhost:${port}/$i; done`;
  let r = await runAsync(s, twice, "filtered");
  assert.match(r.stdout, /hello-from-host \/1\nhello-from-host \/2/, r.out);
  assert.equal(questions.length, 1, "asked once for both connections");
  assert.equal(questions[0].host, "localhost");
  assert.equal(questions[0].port, port);
  assert.equal(questions[0].prompt.kind, "network");
  assert.deepEqual(
    questions[0].prompt.choices.map((c) => c.id),
    ["abort", "session", "project", "global"],
  );
  r = await runAsync(s, twice, "filtered");
  assert.match(r.stdout, /hello-from-host \/2/, r.out);
  assert.equal(questions.length, 1, "allowed for the session: not asked again");
  // In memory only, like a write allowed for this session: nothing stored, and a new
  // session (a restarted pi) asks again.
  const storeFile = path.join(w.agentDir, "sandbox-approvals.json");
  assert.ok(!existsSync(storeFile) || !JSON.parse(readFileSync(storeFile, "utf8")).approvals.some((e) => e.grant.kind === "networkHost"));
  const restarted = load();
  const asked = [];
  restarted.onNetworkPrompt((q) => {
    asked.push(q.host);
    restarted.answerNetworkPrompt(q.id, "abort");
  });
  r = await runAsync(restarted, `curl -sS -m 20 --noproxy '' http://localhost:${port}/3; echo "curl $?"`, "filtered");
  assert.deepEqual(asked, ["localhost"]);
  assert.doesNotMatch(r.stdout, /hello-from-host/);
  // Deny: refused, with the user's answer in the reason.
  answer = "abort";
  r = await runAsync(s, "curl -sS -m 20 https://other.example/; echo \"curl $?\"", "filtered");
  assert.match(r.stdout, /curl 56/, r.out);
  assert.match(r.findings.join("\n"), /other\.example:443; the user was asked and declined/);
  // Without a UI to ask ("noUi"): refused with how to allow it.
  answer = "noUi";
  r = await runAsync(s, "curl -sS -m 20 http://third.example/", "filtered");
  assert.match(r.stdout, /third\.example is not in network\.allowedDomains, and there is no UI/);
});

test("grantDomain writes the host into the chosen config file and the running proxy uses it", async (t) => {
  const port = await server(t, "host");
  const { w, load, runAsync } = world(t, { allowedDomains: ["example.org"], deniedDomains: ["evil.example"] });
  const s = load();
  s.onNetworkPrompt((q) => {
    const said = s.grantDomain(q.host, "global");
    assert.match(said, /Connections to localhost are allowed in /);
    s.answerNetworkPrompt(q.id, "global");
  });
  const r = await runAsync(s, `curl -sS -m 20 --noproxy '' http://localhost:${port}/g`, "filtered");
  assert.match(r.stdout, /hello-from-host \/g/, r.out);
  const global = JSON.parse(readFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), "utf8"));
  assert.deepEqual(global.network.allowedDomains, ["example.org", "localhost"]);
  assert.deepEqual(global.network.deniedDomains, ["evil.example"]);
  // deniedDomains is never lifted from a prompt.
  assert.throws(() => s.grantDomain("EVIL.example.", "project"), /denied by network\.deniedDomains/);
  // The project file: created with the inherited list plus the host.
  s.grantDomain("pypi.org", "project");
  const project = JSON.parse(readFileSync(path.join(w.project, ".pi", "sandbox.json"), "utf8"));
  assert.deepEqual(project.network.allowedDomains, ["example.org", "localhost", "pypi.org"]);
  assert.equal(s.projectTrust?.trusted ?? true, true);
});

test("a refusal names the file that holds the allowedDomains in force: the global file over the built-in list, then the project's", async (t) => {
  const { w, load, run } = world(t, {});
  const s = load();
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  let r = await run("curl -sS -m 5 https://unlisted.example/", "filtered", s);
  assert.ok(
    r.findings.includes(`Blocked: a connection to unlisted.example:443: unlisted.example is not in network.allowedDomains, and there is no UI to ask the user. To allow it, add "unlisted.example" to network.allowedDomains in ${global} (a list there replaces the built-in one: keep its entries).`),
    r.findings.join("\n"),
  );
  // The project's file holds a list of its own now: an entry in the global one would change
  // nothing here.
  s.grantDomain("granted.example", "project");
  r = await run("curl -sS -m 5 https://unlisted.example/", "filtered", s);
  const project = path.join(w.project, ".pi", "sandbox.json");
  assert.ok(r.findings.some((f) => f.endsWith(`add "unlisted.example" to network.allowedDomains in ${project}.`)), r.findings.join("\n"));
});

test("many connections at once all go through", async (t) => {
  const port = await server(t, "host");
  const { run } = world(t, { allowedDomains: ["localhost"] });
  const r = await run(`for i in $(seq 40); do curl -sS -m 20 http://localhost:${port}/$i & done; wait`, "filtered");
  const got = r.stdout.split("\n").filter((l) => l.startsWith("hello-from-host"));
  assert.equal(got.length, 40, r.stdout + r.stderr);
});

test("filtered network as an unprivileged user (the CLI's run)", { skip: process.getuid() !== 0 && "needs root to switch user" }, async (t) => {
  const port = await server(t, "host");
  const { w } = world(t, { allowedDomains: ["localhost"] });
  openPathForAnyone(w.root);
  await new Promise((resolve) => spawn("chown", ["-R", "65534:65534", w.root]).on("close", resolve));
  const child = spawn(
    "setpriv",
    [
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "--",
      process.execPath,
      path.join(repo, "bin", "pi-sandbox.js"),
      "run",
      "--",
      "bash",
      "-c",
      `id -u; curl -sS -m 10 http://localhost:${port}/u; curl -sS -m 10 https://blocked.example/`,
    ],
    { cwd: w.project, env: { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp } },
  );
  const r = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (r.stdout += d));
  child.stderr.on("data", (d) => (r.stderr += d));
  await new Promise((resolve) => child.on("close", resolve));
  assert.match(r.stdout, /^65534$/m, r.stderr);
  assert.match(r.stdout, /hello-from-host \/u/, r.stderr);
  assert.match(r.stderr, /Blocked: a connection to blocked\.example:443/);
});

test("a question still open when its command ends is withdrawn; a late answer stores nothing", async (t) => {
  const port = await server(t, "host");
  const { w, load, runAsync } = world(t, { allowedDomains: ["example.org"] });
  const s = load();
  const asked = [];
  s.onNetworkPrompt((q) => asked.push(q)); // never answered
  const r = await runAsync(s, `curl -sS -m 2 --noproxy '' http://localhost:${port}/late; echo "curl $?"`, "filtered");
  assert.match(r.stdout, /curl 28/, r.out);
  assert.equal(asked.length, 1);
  // finish() withdrew it: the dialog would close, and an answer now changes nothing.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(s.networkPromptPending(asked[0].id), false);
  assert.equal(s.answerNetworkPrompt(asked[0].id, "global"), null);
  const global = JSON.parse(readFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), "utf8"));
  assert.deepEqual(global.network.allowedDomains, ["example.org"]);
  // Refused once withdrawn (after the command's notes were taken): the log has it.
  const last = s.recentViolations(5).filter((v) => v.layer === "network").at(-1);
  assert.equal(`${last.host}:${last.port} ${last.decision}`, `localhost:${port} denied`);
});

test("an allowed wildcard name cannot be pointed at this machine; literal private addresses ask as this machine", async (t) => {
  const { load, runAsync } = world(t, { allowedDomains: ["*.localhost"] });
  const s = load();
  const titles = [];
  s.onNetworkPrompt((q) => {
    titles.push(q.prompt.title);
    s.answerNetworkPrompt(q.id, "abort");
  });
  // `x.localhost` resolves to the loopback on this system (RFC 6761): a name leads there
  // only when the loopback itself is allowed.
  // --noproxy '': NO_PROXY's `localhost` covers its subdomains for curl.
  const r = await runAsync(s, "curl -sS -m 5 --noproxy '' http://x.localhost:9/; echo; curl -sS -m 5 http://10.1.2.3:9/", "filtered");
  assert.match(r.stdout, /resolves to (127\.0\.0\.1|\[::1\]), this machine's loopback: a name leads there only if that address is allowed itself|cannot resolve x\.localhost/, r.out);
  assert.equal(titles.length, 1, "asked about 10.1.2.3 only");
  assert.match(titles[0], /connect to 10\.1\.2\.3 \(port 9\)\?\n\nIt is THIS machine or its local network/);
});
