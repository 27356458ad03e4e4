// Where a real pi keeps its transcripts, for each case read from stdin (JSON lines:
// {cwd, home, agentDir, envVar}), answered on stdout (JSON lines: {dir} absolute, {dir: null}
// for pi's per-project folder in the agent dir, or {throws} where pi would not start).
// Run with the node of the pi under test: argv[2] is that pi's package directory.
// The chain is pi's own main.js (startup session lookup): the environment variable through
// expandTildePath, else SettingsManager.create(cwd, agentDir).getSessionDir(); then
// SessionManager.create(cwd, that) decides (its default folder for a falsy one).
import { createInterface } from "node:readline";
import path from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
const { SettingsManager, SessionManager } = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
const { expandTildePath } = await import(pathToFileURL(path.join(pkg, "dist", "config.js")).href);

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line) continue;
  const c = JSON.parse(line);
  process.env.HOME = c.home;
  process.env.PI_CODING_AGENT_DIR = c.agentDir;
  process.chdir(c.cwd);
  let answer;
  try {
    const envDir = c.envVar ?? undefined;
    const sessionDir = (envDir ? expandTildePath(envDir) : undefined) ?? SettingsManager.create(c.cwd, c.agentDir).getSessionDir();
    const sm = SessionManager.create(c.cwd, sessionDir);
    const dir = path.resolve(c.cwd, sm.getSessionDir());
    const sessions = path.join(c.agentDir, "sessions");
    answer = { dir: path.dirname(dir) === sessions && path.basename(dir).startsWith("--") ? null : dir };
  } catch (e) {
    answer = { throws: String(e?.message ?? e).slice(0, 200) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
