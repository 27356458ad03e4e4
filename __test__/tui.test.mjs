// pi's interactive TUI in tmux: the user's own `!cmd` runs in the sandbox, the footer shows the
// mode, and Alt+S cycles it (yolo, after a confirmation, really turns the sandbox off) — a key neither pi 0.73 nor
// 0.87 binds, so no conflict is reported and pi's own action does not run instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo } from "./helpers/pi-run.mjs";
import { stopSession, tmux, waitForScreen as waitFor } from "./helpers/tmux.mjs";

test("TUI: !cmd is sandboxed, the footer shows the mode, Alt+S cycles to yolo only once confirmed", async (t) => {
  const w = makeWorld("tui");
  const session = `pi-sandbox-tui-${process.pid}`;
  t.after(async () => {
    await stopSession(session);
    w.cleanup();
  });
  // A model is configured but never called: `!cmd` does not reach it.
  writeFileSync(path.join(w.agentDir, "settings.json"), JSON.stringify({ defaultProvider: "mock", defaultModel: "mock-1" }));
  writeFileSync(
    path.join(w.agentDir, "models.json"),
    JSON.stringify({
      providers: {
        mock: {
          baseUrl: "http://127.0.0.1:9/v1",
          api: "openai-completions",
          apiKey: "x",
          models: [{ id: "mock-1", name: "m", reasoning: false, input: ["text"], contextWindow: 1000, maxTokens: 100, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }],
        },
      },
    }),
  );
  const env = `HOME=${w.home} PI_CODING_AGENT_DIR=${w.agentDir} TMPDIR=${w.tmp} PI_OFFLINE=1 PI_TELEMETRY=0 PATH=${process.env.PATH}`;
  const pi = process.env.PI_SANDBOX_TEST_PI ?? path.join(repo, "node_modules", ".bin", "pi");
  const started = tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", `cd ${w.project} && env ${env} ${pi} -e ${path.join(repo, "extensions", "index.ts")}`);
  assert.equal(started.status, 0, started.stderr);
  const first = await waitFor(session, /sandbox: read-write · bash in bwrap, net filtered/, "the footer status");
  assert.doesNotMatch(first, /shortcut conflict/i);

  const outside = path.join(w.root, "outside", "o.txt");
  tmux("send-keys", "-t", session, `!echo x > ${outside}; echo rc=$?`, "Enter");
  const screen = await waitFor(session, /rc=\d/, "the command's output");
  assert.match(screen, /o\.txt: Read-only file system/);
  assert.match(screen, /rc=1/);
  assert.equal(existsSync(outside), false);

  // Alt+S never turns the sandbox off without a confirmation: declined, the mode stays.
  tmux("send-keys", "-t", session, "M-s");
  await waitFor(session, /Turn the sandbox off\?/, "the confirmation");
  tmux("send-keys", "-t", session, "Escape");
  const kept = await waitFor(session, /Sandbox mode stays read-write/, "the mode kept");
  assert.match(kept, /sandbox: read-write/);
  tmux("send-keys", "-t", session, "M-s");
  await waitFor(session, /Turn the sandbox off\?/, "the confirmation again");
  tmux("send-keys", "-t", session, "Enter");
  await waitFor(session, /sandbox: yolo \(off\)/, "yolo in the footer");
  tmux("send-keys", "-t", session, `!echo x > ${outside}; echo yolo-rc=$?`, "Enter");
  await waitFor(session, /yolo-rc=0/, "the unsandboxed command");
  assert.equal(existsSync(outside), true, "yolo is an explicit choice to run unprotected");
});
