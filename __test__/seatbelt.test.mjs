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
