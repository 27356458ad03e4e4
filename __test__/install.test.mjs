// `pi install npm:pi-sandbox-rs` as a user runs it: the packages go to a real npm registry
// (verdaccio on 127.0.0.1) the way the release publishes them, pi installs from there into a
// fresh HOME with no Rust toolchain on PATH, and the installed package — the platform
// package's addon and pi-sandbox-init, nothing from this checkout — guards pi's tools and
// sandboxes bash. Run with pi 0.73.1 (node 20) and again with pi 0.87.1 (node 22).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, piBin, runPi } from "./helpers/pi-run.mjs";
import { stopSession, tmux, waitForScreen } from "./helpers/tmux.mjs";
import { hostPlatform, publishCheckout, registryMissing, startRegistry } from "./helpers/registry.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

/** Every directory under `dir` named `name` (a package's install location differs by pi version). */
function findDirs(dir, name, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = path.join(dir, e.name);
    if (e.name === name) out.push(p);
    else findDirs(p, name, out);
  }
  return out;
}

const missing = registryMissing();

test("pi install npm:pi-sandbox-rs from a registry: the installed package guards the tools and sandboxes bash", { skip: missing ?? false }, async (t) => {
  const w = makeWorld("install");
  const registry = await startRegistry(path.join(w.root, "registry"));
  let stopTui = async () => {};
  t.after(async () => {
    await stopTui();
    await registry.stop();
    w.cleanup();
  });
  const published = await publishCheckout(registry, path.join(w.root, "stage"));
  const platformPackage = `pi-sandbox-rs-${hostPlatform()}`;
  assert.equal(published.optionalDependencies?.[platformPackage], published.version, "napi prepublish names the platform package");

  // The user's machine: node and the system's programs, no cargo, no rustc, no clone.
  const nodeDir = path.dirname(process.execPath);
  const PATH = [nodeDir, "/usr/local/bin", "/usr/bin", "/bin"].join(":");
  for (const tool of ["cargo", "rustc"]) {
    assert.notEqual(spawnSync("sh", ["-c", `command -v ${tool}`], { env: { PATH } }).status, 0, `${tool} must not be on the user's PATH`);
  }
  writeFileSync(path.join(w.home, ".npmrc"), readFileSync(registry.npmrc));
  const env = {
    PATH,
    NPM_CONFIG_USERCONFIG: path.join(w.home, ".npmrc"),
    npm_config_registry: registry.url,
    npm_config_prefix: path.join(w.root, "npm-global"), // pi 0.73 installs with `npm install -g`
    npm_config_cache: path.join(w.root, "npm-cache"),
    PI_SANDBOX_INDEX_VERIFY: undefined,
  };
  for (const k of Object.keys(process.env)) if (/^npm_/i.test(k) && !(k in env)) env[k] = undefined;
  const childEnv = { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, TMPDIR: w.tmp, PI_OFFLINE: "1", PI_TELEMETRY: "0", ...env };
  for (const k of Object.keys(childEnv)) if (childEnv[k] === undefined) delete childEnv[k];

  const install = spawnSync(piBin, ["install", "npm:pi-sandbox-rs"], { cwd: w.project, env: childEnv, encoding: "utf8", timeout: 120_000 });
  assert.equal(install.status, 0, `pi install failed:\n${install.stdout}\n${install.stderr}`);
  // Where pi put it: under npm's global prefix (0.73) or the agent dir (0.87).
  const installRoots = [path.join(w.root, "npm-global"), w.home].filter(existsSync);
  const installed = installRoots.flatMap((d) => findDirs(d, "pi-sandbox-rs")).filter((d) => existsSync(path.join(d, "package.json")));
  assert.equal(installed.length, 1, `one installed copy: ${installed.join(", ")}`);
  const pkgDir = installed[0];
  assert.equal(existsSync(path.join(pkgDir, "src")), false, "no sources in the package");
  assert.deepEqual(readdirSync(pkgDir).filter((f) => f.endsWith(".node") || f === "pi-sandbox-init"), [], "no binary in the main package");
  const native = installRoots.flatMap((d) => findDirs(d, platformPackage));
  assert.equal(native.length, 1, `the platform package is installed: ${native.join(", ")}`);
  assert.ok(existsSync(path.join(native[0], "pi-sandbox-init")), "pi-sandbox-init comes with the addon");
  const settings = JSON.parse(readFileSync(path.join(w.agentDir, "settings.json"), "utf8"));
  assert.deepEqual(settings.packages, ["npm:pi-sandbox-rs"]);

  // The installed CLI, run by node from the package.
  const cli = spawnSync(process.execPath, [path.join(pkgDir, "bin", "pi-sandbox.js"), "check", "read", "~/.ssh/id_rsa"], { cwd: w.project, env: childEnv, encoding: "utf8" });
  assert.equal(cli.status, 1, `the installed CLI blocks the key:\n${cli.stdout}${cli.stderr}`);
  const cliRun = spawnSync(process.execPath, [path.join(pkgDir, "bin", "pi-sandbox.js"), "run", "sh", "-c", `echo x > ${path.join(w.root, "outside", "cli.txt")}`], { cwd: w.project, env: childEnv, encoding: "utf8" });
  assert.notEqual(cliRun.status, 0, "the installed CLI runs commands in the sandbox");
  assert.match(cliRun.stderr, /Read-only file system/);

  const outside = path.join(w.root, "outside", "o.txt");
  mkdirSync(path.dirname(outside), { recursive: true });
  const r = await runPi({
    world: w,
    extension: null,
    settings: { packages: settings.packages },
    env,
    script: [[call("read", { path: "~/.ssh/id_rsa" }), call("bash", { command: `echo x > ${outside}; echo rc=$?` }), call("bash", { command: "echo made > inside.txt && cat inside.txt" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /Blocked read of .*\.ssh\/id_rsa/, "the guard of the installed package");
  assert.match(res.call_0_1, /o\.txt: Read-only file system/, "bash ran in bubblewrap");
  assert.match(res.call_0_1, /rc=1/);
  assert.match(res.call_0_1, /^bash: (line \d+: )?\S*o\.txt: Read-only file system$/m, "bash's own errors read as pi's bash -c has them");
  assert.doesNotMatch(res.call_0_1, /pi-bash/, "the script's name is not in the output");
  assert.equal(existsSync(outside), false);
  assert.match(res.call_0_2, /made/);
  assert.equal(readFileSync(path.join(w.project, "inside.txt"), "utf8"), "made\n");

  // pi's start screen lists the extension under the package's name.
  const session = `pi-sandbox-install-${process.pid}`;
  const envWords = Object.entries(childEnv)
    .filter(([k]) => !/^(npm_|NODE_OPTIONS$)/i.test(k) || k in env)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(" ");
  stopTui = () => stopSession(session);
  assert.equal(tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", `cd ${w.project} && env -i ${envWords} ${piBin}`).status, 0);
  const screen = await waitForScreen(session, /sandbox: read-write/, "pi's footer");
  assert.match(screen, /\[Extensions\]\s*\n\s*pi-sandbox-rs\s*$/m, `the extension listed as pi-sandbox-rs:\n${screen}`);
});
