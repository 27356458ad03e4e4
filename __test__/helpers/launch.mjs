// Running a `PreparedCommand` the way the extension does: the sandbox program spawned
// directly, with the launch's fds as the child's fds 3, 4, ...
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";

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

/**
 * `runPreparedSync` with the output in files in `dir` rather than pipes: it returns when the
 * child exits, even when a process the command left running (and the sandbox's first process,
 * which waits for it) still holds the command's output open.
 */
export function runPreparedToFiles(prepared, { cwd, env, dir }) {
  env = withLaunchEnv(prepared, env);
  const out = path.join(dir, `out-${process.pid}-${Date.now()}`);
  const err = `${out}.err`;
  const fds = [openSync(out, "w"), openSync(err, "w")];
  let r;
  try {
    r = spawnSync(prepared.program, prepared.args, { cwd, env, stdio: ["ignore", ...fds, ...prepared.fds] });
  } finally {
    fds.forEach((fd) => closeSync(fd));
    r = { ...r, findings: prepared.finish() };
  }
  const stdout = readFileSync(out, "utf8");
  const stderr = readFileSync(err, "utf8");
  rmSync(out);
  rmSync(err);
  return { ...r, stdout, stderr };
}
