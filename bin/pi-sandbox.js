#!/usr/bin/env node
// pi-sandbox CLI: the sandbox's policy without a model. Formatting only; decisions are Rust's.
"use strict";

const path = require("node:path");
const fs = require("node:fs");
const { spawnSync } = require("node:child_process");
const os = require("node:os");

const USAGE = `pi-sandbox — check the pi-sandbox-rs policy from the shell

Usage:
  pi-sandbox check read|write PATH [--json]   decide one access (exit 0 allowed, 1 blocked)
  pi-sandbox explain read|write PATH [--json] the same, with every rule consulted
  pi-sandbox config                           effective config and the file each value came from
  pi-sandbox run [--network filtered|off|on] -- CMD [ARGS...]
                                              run CMD in the OS sandbox from the current directory;
                                              exit code passed through (126 when refused, with why;
                                              127 / 126 when CMD is missing / not executable). The
                                              words from CMD on are the command's, options too.
                                              Network: filtered (the default when the config lists
                                              domains: only allowedDomains, through the proxy; other
                                              hosts are refused, there is no one to ask), off, on

Options:
  --cwd DIR          session directory (default: the current directory); PATH is relative to it
  --session-dir DIR  where pi keeps its transcripts, as pi's own --session-dir (default: as pi
                     resolves it: PI_CODING_AGENT_SESSION_DIR, then sessionDir of pi's settings)
  -h, --help         this text

Config files: $PI_CODING_AGENT_DIR/extensions/sandbox.json (default ~/.pi/agent/...), then
<cwd>/.pi/sandbox.json. PI_SANDBOX_APPROVAL_MODE (ask|always|deny) applies as in pi.`;

function fail(message, code = 2) {
  process.stderr.write(`pi-sandbox: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const opts = { json: false, cwd: process.cwd(), rest: [], network: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "-h" || a === "--help") opts.help = true;
    else if (a === "--json") opts.json = true;
    else if (a === "--network") {
      if (i + 1 >= argv.length) fail("--network needs filtered, off or on");
      opts.network = argv[++i];
    } else if (a.startsWith("--network=")) opts.network = a.slice(10);
    else if (a === "--cwd") {
      if (i + 1 >= argv.length) fail("--cwd needs a directory");
      opts.cwd = path.resolve(argv[++i]);
    } else if (a.startsWith("--cwd=")) opts.cwd = path.resolve(a.slice(6));
    else if (a === "--session-dir") {
      if (i + 1 >= argv.length) fail("--session-dir needs a directory");
      opts.sessionDir = argv[++i];
    } else if (a.startsWith("--session-dir=")) opts.sessionDir = a.slice(14);
    else if (a === "--") opts.rest.push(...argv.slice(i + 1)), (i = argv.length);
    // `run PROGRAM ARGS...`: from the program on, every word is the command's, options too.
    else if (opts.rest[0] === "run" && !(a.startsWith("-") && a !== "-")) opts.rest.push(...argv.slice(i)), (i = argv.length);
    else if (a.startsWith("-") && a !== "-") fail(`unknown option ${a}\n\n${USAGE}`);
    else opts.rest.push(a);
  }
  return opts;
}

function loadAddon() {
  try {
    return require("../index.js");
  } catch (e) {
    fail(require("../extensions/load-failure.cjs").describeLoadFailure(e).replace("Start pi with --no-sandbox to run this session unprotected, or build", "Build"));
  }
}

/** Text for the terminal: a path, a rule or a config entry must not drive it (src/shown.rs). */
let shownText = (text) => text;
let shownLines = (text) => text;

function printDecision(d) {
  const mark = d.verdict === "allow" ? "ALLOWED" : d.verdict === "prompt" ? "NEEDS APPROVAL" : "BLOCKED";
  console.log(`${mark}: ${d.op} ${shownText(d.path)}`);
  console.log(`  rule:   ${shownText(d.rule)}`);
  console.log(`  source: ${shownText(d.source)}`);
  console.log(`  ${shownLines(d.reason)}`);
}

/** Runs a prepared argv, returning its exit code (128+N for a signal, as shells report it). */
function runPrepared(prepared, argv) {
  // "denied", and "ask" (no sandbox, and no one to ask here): not run.
  if (prepared.verdict !== "sandboxed" && prepared.verdict !== "unsandboxed") {
    process.stderr.write(`pi-sandbox: ${shownLines(prepared.reason)}\n`);
    return 126;
  }
  let program = argv[0];
  let args = argv.slice(1);
  if (prepared.verdict === "sandboxed") {
    program = prepared.program;
    args = prepared.args;
  } else {
    process.stderr.write(`pi-sandbox: running unsandboxed: ${shownLines(prepared.reason)}\n`);
  }
  // The sandbox's options, mount sources and script arrive on fds 3, 4, ...
  const stdio = ["inherit", "inherit", "inherit", ...prepared.fds];
  // A sandboxed command gets what a build needs from the environment (the allow-list).
  const env = prepared.verdict === "sandboxed" ? prepared.childEnv({ ...process.env }) : { ...process.env };
  const r = spawnSync(program, args, { stdio, env });
  // The audit: what the command left on pi's control surface, moved aside.
  for (const finding of prepared.finish()) process.stderr.write(`pi-sandbox: ${shownText(finding)}\n`);
  if (r.error) {
    process.stderr.write(`pi-sandbox: cannot start ${program}: ${r.error.message}\n`);
    return 127;
  }
  if (r.signal) return 128 + (os.constants.signals[r.signal] ?? 0);
  return r.status ?? 1;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const [command, ...args] = opts.rest;
  if (opts.help || !command) {
    console.log(USAGE);
    process.exit(opts.help ? 0 : 2);
  }
  // One command, no session after it: what it leaves running ends with it, as it always did.
  process.env.PI_SANDBOX_BACKGROUND = "command";
  const addon = loadAddon();
  ({ shownText, shownLines } = addon);
  const { Sandbox } = addon;
  // A relative one from the session directory, where pi would have been started.
  const sessionDir = opts.sessionDir ? path.resolve(opts.cwd, opts.sessionDir) : undefined;
  const sandbox = Sandbox.load({ cwd: opts.cwd, sessionDir });
  // The session's /tmp and background work end with this process, as a pi session's do.
  process.on("exit", () => sandbox.dispose());
  switch (command) {
    case "check":
    case "explain": {
      const [op, target] = args;
      if (!["read", "write"].includes(op) || !target || args.length > 2) {
        fail(`usage: pi-sandbox ${command} read|write PATH`);
      }
      if (command === "check") {
        const d = sandbox.check(op, target);
        if (opts.json) console.log(JSON.stringify(d, null, 2));
        else printDecision(d);
        process.exit(d.verdict === "allow" ? 0 : 1);
      }
      const e = sandbox.explain(op, target);
      if (opts.json) console.log(JSON.stringify(e, null, 2));
      else {
        printDecision(e.decision);
        console.log("  rules consulted, in order:");
        for (const s of e.steps) console.log(`    ${s.matched ? "●" : "○"} ${shownText(s.rule)}  (${shownText(s.source)})`);
      }
      process.exit(e.decision.verdict === "allow" ? 0 : 1);
    }
    case "run": {
      if (!args.length) fail("usage: pi-sandbox run [--network filtered|off|on] -- CMD [ARGS...]");
      // Ctrl-C reaches the command (same process group) and ends it; this process then runs
      // the audit and removes the run's /tmp rather than dying at once.
      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => {});
      let prepared;
      try {
        prepared = sandbox.prepareRun(args, opts.network);
      } catch (e) {
        fail(shownLines(e.message));
      }
      process.exit(runPrepared(prepared, args));
    }
    case "config": {
      if (args.length) fail("usage: pi-sandbox config");
      process.stdout.write(shownLines(sandbox.describe()));
      process.exit(sandbox.error ? 1 : 0);
    }
    default:
      fail(`unknown command '${command}'\n\n${USAGE}`);
  }
}

main();
