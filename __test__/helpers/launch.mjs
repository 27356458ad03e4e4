// Running a `PreparedCommand` the way the extension does: the sandbox program spawned
// directly, with the launch's fds as the child's fds 3, 4, ...
import { spawn, spawnSync } from "node:child_process";

/** The child's environment from `env` as the extension makes it: the allow-list's variables, with the launch's own (sandbox-exec's proxy variables) set. */
function withLaunchEnv(prepared, env) {
  const given = Object.fromEntries(Object.entries(env ?? process.env).filter(([, v]) => typeof v === "string"));
  return prepared.childEnv(given);
}

/** Runs a sandboxed `prepared` to completion; spawnSync's result and the audit's `findings`. */
export function runPreparedSync(prepared, { cwd, env, maxBuffer } = {}) {
  env = withLaunchEnv(prepared, env);
  let r;
  try {
    r = spawnSync(prepared.program, prepared.args, {
      cwd,
      env,
      maxBuffer,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe", ...prepared.fds],
    });
  } finally {
    const findings = prepared.finish();
    r = { ...r, findings };
  }
  return r;
}

/** Starts a sandboxed `prepared`; resolves with { code, stdout, stderr, out, findings } when it closes. */
export function runPrepared(prepared, { cwd, env } = {}) {
  env = withLaunchEnv(prepared, env);
  const child = spawn(prepared.program, prepared.args, { cwd, env, stdio: ["ignore", "pipe", "pipe", ...prepared.fds] });
  prepared.release();
  let stdout = "";
  let stderr = "";
  let out = "";
  child.stdout.on("data", (d) => ((stdout += d), (out += d)));
  child.stderr.on("data", (d) => ((stderr += d), (out += d)));
  return new Promise((resolve) =>
    child.on("close", (code) => {
      const findings = prepared.finish();
      resolve({ code, stdout, stderr, out, findings });
    }),
  );
}
