// The macOS layer with the real sandbox-exec. Skipped elsewhere (see .github/workflows/macos.yml).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { runPreparedSync } from "./helpers/launch.mjs";
import { makeWorld, repo } from "./helpers/pi-run.mjs";

const onMac = process.platform === "darwin";
const { Sandbox } = await import(path.join(repo, "index.js"));

test("sandbox-exec: writes outside fail, secrets unreadable, network off, exit code kept", { skip: !onMac && "macOS only" }, (t) => {
  const w = makeWorld("seatbelt");
  t.after(w.cleanup);
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const outside = path.join(w.root, "outside", "o.txt");
  const p = s.prepareBash(
    `echo in > in.txt; echo out > ${outside}; cat ~/.ssh/id_rsa; curl -sS -m 3 https://example.com >/dev/null; echo net=$?; exit 42`,
    "off",
  );
  assert.equal(p.verdict, "sandboxed", p.reason);
  const r = runPreparedSync(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  assert.equal(r.status, 42, r.stderr);
  assert.equal(readFileSync(path.join(w.project, "in.txt"), "utf8"), "in\n");
  assert.equal(existsSync(outside), false);
  assert.doesNotMatch(r.stdout, /SECRET-KEY-0451/);
  assert.doesNotMatch(r.stdout, /net=0/);
  // the profile and the script are removed once the run is over
  assert.deepEqual(readdirSync(w.tmp), []);
});

test("sandbox-exec, filtered network: the proxy on the host's loopback is the only way out", { skip: !onMac && "macOS only" }, async (t) => {
  const { createServer } = await import("node:http");
  const { mkdirSync, writeFileSync } = await import("node:fs");
  const { runPrepared } = await import("./helpers/launch.mjs");
  const srv = createServer((req, res) => res.end(`hello-from-host ${req.url}\n`));
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  t.after(() => srv.close());
  const port = srv.address().port;
  const w = makeWorld("seatbeltnet");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ network: { allowedDomains: ["localhost"] } }));
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const p = s.prepareBash(
    `curl -sS -m 5 http://localhost:${port}/ok; curl -sS -m 5 https://blocked.example/; echo blocked=$?; curl -sS -m 5 --noproxy '*' http://127.0.0.1:${port}/; echo direct=$?`,
    "filtered",
  );
  assert.equal(p.verdict, "sandboxed", p.reason);
  assert.ok(p.setEnv.some(([k, v]) => k === "HTTPS_PROXY" && /^http:\/\/127\.0\.0\.1:\d+$/.test(v)));
  const r = await runPrepared(p, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp } });
  assert.match(r.stdout, /hello-from-host \/ok/, r.out);
  assert.match(r.stdout, /blocked=56/, r.out);
  assert.doesNotMatch(r.stdout, /direct=0/, r.out);
  assert.match(r.findings.join("\n"), /Blocked: a connection to blocked\.example:443/);
});
