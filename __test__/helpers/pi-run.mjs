// Runs a real pi process (the devDependency) with this extension against the scripted mock
// model, in a throwaway world outside /tmp (the defaults make /tmp writable).
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startMockModel } from "./mock-model.mjs";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
// PI_SANDBOX_TEST_PI runs the same tests against another pi (e.g. a newer one on node 22).
export const piBin = process.env.PI_SANDBOX_TEST_PI || path.join(repo, "node_modules", ".bin", "pi");
const ownExtension = path.join(repo, "extensions", "index.ts");

/** Directory holding an fd new enough for pi's find tool, or null. */
function fdDir() {
  for (const candidate of [spawnSync("which", ["fd"], { encoding: "utf8" }).stdout.trim(), path.join(process.env.HOME ?? "/root", ".cargo/bin/fd")]) {
    if (candidate && existsSync(candidate)) return path.dirname(candidate);
  }
  return null;
}

/**
 * Lets any user reach `dir`: each directory from it up to `/` gains read and search for
 * everyone, and keeps every bit it had (a clone below /tmp must not cost /tmp its sticky,
 * world-writable mode).
 */
export function openPathForAnyone(dir) {
  for (let d = dir; d !== "/"; d = path.dirname(d)) chmodSync(d, (statSync(d).mode & 0o7777) | 0o755);
}

/** A home (with a secret key), pi's agent dir and a project, under __test__/.work. */
/** For runPiRpc: answers each select with the option matching the next of `picks` (regexes), in order. */
export function picking(...picks) {
  const queue = [...picks];
  return (msg) => {
    if (msg.method !== "select") return { cancelled: true };
    const pick = queue.shift();
    const value = pick && msg.options.find((o) => pick.test(o));
    return value ? { value } : { cancelled: true };
  };
}

export function makeWorld(name = "pi") {
  const base = path.join(repo, "__test__", ".work");
  mkdirSync(base, { recursive: true });
  const root = realpathSync(mkdtempSync(path.join(base, `${name}-`)));
  const home = path.join(root, "home");
  const agentDir = path.join(home, ".pi", "agent");
  const project = path.join(root, "project");
  const tmp = path.join(root, "tmp");
  for (const d of [path.join(home, ".ssh"), agentDir, path.join(project, "src"), tmp, path.join(root, "outside")]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(path.join(home, ".ssh", "id_rsa"), "SECRET-KEY-0451\n");
  return { root, home, agentDir, project, tmp, cleanup: () => rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }) };
}

/**
 * @param {object} o
 * @param {Array<Array<{name: string, arguments: object}>>} o.script  tool calls per turn
 * @param {ReturnType<typeof makeWorld>} o.world
 * @param {string[]} [o.args]  extra pi arguments
 * @param {Record<string,string>} [o.env]  extra environment
 * @param {string} [o.apiKey]  the mock provider's apiKey in models.json
 * @param {string|null} [o.extension]  loaded with `-e`; null: only what pi's settings install
 * @param {object} [o.settings]  more keys of pi's settings.json
 * @param {string[]} [o.wrap]  a command pi runs under (its argv, pi's own appended)
 */
export async function runPi({ script, world, args = [], env = {}, cwd = world.project, apiKey = "x", extension = ownExtension, settings = {}, wrap = [] }) {
  const { model, childEnv } = await prepare(world, script, env, apiKey, settings);
  // Extra args go first: pi 0.73 lets an unknown flag take the next bare word as its value,
  // so `--no-sandbox go` would swallow the prompt.
  const [bin, ...argv] = [...wrap, piBin, ...args, "-p", ...commonArgs(extension), "go"];
  const child = spawn(bin, argv, { cwd, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const code = await exitOf(child);
  await model.close();
  return { code, stdout, stderr, results: model.results(), system: model.system(), tools: model.tools() };
}

function commonArgs(extension = ownExtension) {
  return [
    ...(extension ? ["-e", extension] : []),
    "--provider",
    "mock",
    "--model",
    "mock-1",
    "--no-context-files",
    "--tools",
    "read,bash,edit,write,grep,find,ls",
  ];
}

function exitOf(child) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("close", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
}

/**
 * pi in RPC mode (ctx.hasUI is true): sends the prompt, answers each dialog with
 * `answer(request)` (an extension_ui_response body without type/id; null leaves the dialog
 * open), waits for agent_end.
 * `onMessage(msg, send, pid)` sees every message; `send(obj)` writes a command to pi.
 */
export async function runPiRpc({
  script,
  world,
  answer = () => ({ cancelled: true }),
  env = {},
  cwd = world.project,
  message = "go",
  until = (msg) => msg.type === "agent_end",
  onMessage = () => {},
  settings = {},
}) {
  const { model, childEnv } = await prepare(world, script, env, "x", settings);
  const child = spawn(piBin, ["--mode", "rpc", ...commonArgs()], { cwd, env: childEnv, stdio: ["pipe", "pipe", "pipe"] });
  const dialogs = [];
  const uiEvents = [];
  const messages = [];
  const send = (obj) => child.stdin.writable && child.stdin.write(`${JSON.stringify(obj)}\n`);
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let buffer = "";
  child.stdout.on("data", (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      messages.push(msg);
      onMessage(msg, send, child.pid);
      if (msg.type === "extension_ui_request") uiEvents.push(msg);
      if (msg.type === "extension_ui_request" && ["confirm", "select", "input", "editor"].includes(msg.method)) {
        dialogs.push(msg);
        const reply = answer(msg);
        if (reply) child.stdin.write(`${JSON.stringify({ type: "extension_ui_response", id: msg.id, ...reply })}\n`);
      }
      if (until(msg)) child.stdin.end();
    }
  });
  child.stdin.write(`${JSON.stringify({ id: "p1", type: "prompt", message })}\n`);
  const code = await exitOf(child);
  await model.close();
  return { code, stderr, dialogs, uiEvents, messages, results: model.results() };
}

/** `apiKey` is the mock provider's models.json value: a literal, or a variable's name. */
async function prepare(world, script, env, apiKey = "x", settings = {}) {
  const model = await startMockModel(script);
  writeFileSync(
    path.join(world.agentDir, "models.json"),
    JSON.stringify({
      providers: {
        mock: {
          baseUrl: `http://127.0.0.1:${model.port}/v1`,
          api: "openai-completions",
          apiKey,
          compat: { supportsDeveloperRole: false },
          models: [{ id: "mock-1", name: "mock", reasoning: false, input: ["text"], contextWindow: 100000, maxTokens: 4000, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }],
        },
      },
    }),
  );
  writeFileSync(
    path.join(world.agentDir, "settings.json"),
    JSON.stringify({ defaultProvider: "mock", defaultModel: "mock-1", retry: { enabled: false }, ...settings }),
  );
  const fd = fdDir();
  const childEnv = {
    ...process.env,
    HOME: world.home,
    PI_CODING_AGENT_DIR: world.agentDir,
    TMPDIR: world.tmp,
    PI_OFFLINE: "1",
    PI_TELEMETRY: "0",
    // Every answer of bash's index is checked against a full walk (a difference fails the call).
    PI_SANDBOX_INDEX_VERIFY: "1",
    PATH: [fd, process.env.PATH].filter(Boolean).join(":"),
    ...env,
  };
  for (const k of Object.keys(childEnv)) if (childEnv[k] === undefined) delete childEnv[k];
  return { model, childEnv };
}
