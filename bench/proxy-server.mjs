// A proxy for bench/network-bench.mjs, in a process of its own (as each runs beside pi):
//   node bench/proxy-server.mjs ours  — pi-sandbox-rs's proxy (Sandbox.startHostProxy)
//   node bench/proxy-server.mjs srt   — @anthropic-ai/sandbox-runtime's HTTP proxy
// Both allow 127.0.0.1 and localhost. Prints "PORT [USER:PASSWORD]" (sandbox-runtime's proxy
// asks for the credential it gives its sandboxes), then serves until stdin ends.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const which = process.argv[2];
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const allowed = ["127.0.0.1", "localhost"];
let stop = () => {};

if (which === "ours") {
  const { Sandbox } = createRequire(import.meta.url)(path.join(repo, "index.js"));
  mkdirSync(path.join(repo, ".bench"), { recursive: true });
  const root = realpathSync(mkdtempSync(path.join(repo, ".bench", "proxy-")));
  const agentDir = path.join(root, "agent");
  mkdirSync(path.join(agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(agentDir, "extensions", "sandbox.json"), JSON.stringify({ network: { allowedDomains: allowed } }));
  const sandbox = Sandbox.load({ cwd: root, home: root, agentDir });
  if (sandbox.error) throw new Error(sandbox.error.message);
  const proxy = sandbox.startHostProxy();
  stop = () => {
    proxy.stop();
    rmSync(root, { recursive: true, force: true });
  };
  console.log(proxy.port);
} else if (which === "srt") {
  const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
  await SandboxManager.initialize({
    network: { allowedDomains: allowed, deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: ["."], denyWrite: [] },
  });
  stop = () => SandboxManager.reset();
  const token = SandboxManager.getProxyAuthToken();
  console.log(`${SandboxManager.getProxyPort()}${token ? ` srt:${token}` : ""}`);
} else {
  console.error("usage: node bench/proxy-server.mjs ours|srt");
  process.exit(2);
}
process.stdin.resume();
process.stdin.on("end", async () => {
  await stop();
  process.exit(0);
});
