// Driving pi's TUI in tmux.
import { spawnSync } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";

export const tmux = (...args) => spawnSync("tmux", args, { encoding: "utf8" });

/**
 * Ends the tmux session and waits for every process of its pane: pi (node 22 too) still
 * writes under TMPDIR while it exits after the hangup, so removing the test's folder before
 * that races it.
 */
export async function stopSession(session) {
  const leader = tmux("list-panes", "-t", session, "-F", "#{pane_pid}").stdout.trim();
  tmux("kill-session", "-t", session);
  for (let i = 0; leader && i < 100; i++) {
    if (!spawnSync("ps", ["-s", leader, "-o", "pid="], { encoding: "utf8" }).stdout.trim()) break;
    await sleep(100);
  }
}

/** The pane's text once `pattern` shows on it (fails after 15 s with the screen). */
export async function waitForScreen(session, pattern, what) {
  let screen = "";
  for (let i = 0; i < 100; i++) {
    screen = tmux("capture-pane", "-p", "-t", session).stdout;
    if (pattern.test(screen)) return screen;
    await sleep(150);
  }
  throw new Error(`timed out waiting for ${what}; screen:\n${screen}`);
}
