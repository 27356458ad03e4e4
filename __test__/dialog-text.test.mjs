// What a dialog, notice or note shows, when the disk, a config file or the model chose the
// words, through a real pi in RPC mode: every control, separator, bidi, tag or invisible
// character arrives as a visible escape, never raw (it could erase or redraw the line that
// says what is granted); the trust dialog shows what opens most first; every option says
// what will happen; a repository that tracks an env file is told about.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo, picking, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

// The characters that hide, redraw or reorder text, and what each must be shown as.
const ESC = "\u001b[2K";
// A newline too: the extension's last guard keeps a message's own line breaks, so only the
// escaping where a name enters the sentence stops this one.
const HOSTILE = `${ESC}\r\n\u2028\u202e\u{E0041}\u200b`;
const SHOWN = "\\x1b[2K\\x0d\\x0a\\u{2028}\\u{202e}\\u{e0041}\\u{200b}";
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069\u061c\u{E0000}-\u{E007F}]/u;

/** Every text of a dialog or notice the user would see. */
const seen = (e) => [e.title ?? "", e.message ?? "", ...(e.options ?? [])];

function noRawCharacters(events) {
  for (const e of events) {
    for (const text of seen(e)) assert.doesNotMatch(text, RAW, JSON.stringify(text));
  }
}

/** A project directory whose own name is hostile (a repository chooses it when cloned). */
function hostileProject(w) {
  const dir = path.join(w.root, `repo${HOSTILE}`);
  mkdirSync(path.join(dir, "src"), { recursive: true });
  return dir;
}

const report = (m) => m.type === "extension_ui_request" && m.method === "notify" && /effective configuration/.test(m.message);

test("a hostile sandbox.json: the trust dialog escapes entries and file name, and lists ~ writable first", async (t) => {
  const w = makeWorld("dlgtrust");
  t.after(w.cleanup);
  const project = hostileProject(w);
  const file = path.join(project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(file), { recursive: true });
  // Many harmless-looking widenings first, the one that matters last, and entries whose
  // characters would erase a line or reverse it.
  writeFileSync(
    file,
    JSON.stringify({
      env: { allow: Array.from({ length: 12 }, (_, i) => `VAR_${i}`) },
      network: { allowedDomains: Array.from({ length: 6 }, (_, i) => `d${i}.example`) },
      filesystem: {
        denyRead: ["~/.ssh", "~/.aws", "~/.gnupg", `~/.x${HOSTILE}`],
        allowWrite: [".", "/tmp", `/srv/cache${HOSTILE}`, "~"],
      },
    }),
  );
  const r = await runPiRpc({ world: w, cwd: project, script: [], answer: picking(/^Do not trust/) });
  assert.equal(r.code, 0, r.stderr);
  const dialog = r.dialogs.find((d) => /would loosen the sandbox/.test(d.title));
  assert.ok(dialog, JSON.stringify(r.dialogs));
  noRawCharacters(r.uiEvents);
  assert.ok(dialog.title.includes(`repo${SHOWN}/.pi/sandbox.json`), dialog.title);
  assert.ok(dialog.title.includes(`make "/srv/cache${SHOWN}" writable`), dialog.title);
  // The home made writable is the first widening listed; the rest are counted.
  const lines = dialog.title.split("\n");
  assert.match(lines[2], /• make "~" \(.*\) writable \(filesystem\.allowWrite\)/, dialog.title);
  assert.match(dialog.title, /… and \d+ more/);
  assert.ok(lines.length < 20, `${lines.length} lines`);

  // /sandbox: the entries (a tightening denyRead applies at once) and the paths, escaped.
  const rr = await runPiRpc({ world: w, cwd: project, script: [], message: "/sandbox full", until: report });
  noRawCharacters(rr.uiEvents);
  const text = rr.uiEvents.find(report).message;
  assert.ok(text.includes(`~/.x${SHOWN}`), text);
  assert.ok(text.includes(`effective configuration for ${path.join(w.root, `repo${SHOWN}`)}`), text);
  assert.match(text, /NOT TRUSTED YET|declined/);
});

test("an untrusted project file: 'this project' says the grant lasts this session, not 'saved'", async (t) => {
  const w = makeWorld("dlgscope");
  t.after(w.cleanup);
  const project = hostileProject(w);
  const file = path.join(project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ network: { allowedDomains: ["evil.example"] } }));
  // The model names the file: a newline and an erase that would fake a line of the dialog.
  const target = path.join(w.root, "outside", `a${ESC}\nAllowing adds nothing.txt`);
  const r = await runPiRpc({
    world: w,
    cwd: project,
    script: [[call("write", { path: target, content: "A" })]],
    answer: picking(/^Do not trust/, /for this session only/),
  });
  assert.equal(r.code, 0, r.stderr);
  noRawCharacters(r.uiEvents);
  const write = r.dialogs.find((d) => /allow writes in/.test(d.title));
  assert.ok(write, JSON.stringify(r.dialogs));
  assert.ok(write.title.includes("a\\x1b[2K\\x0aAllowing adds nothing.txt"), write.title);
  const label = write.options[2];
  assert.doesNotMatch(label, /saved/, label);
  assert.ok(label.includes(`for this session only: this project's ${path.join(w.root, `repo${SHOWN}`, ".pi", "sandbox.json")} is not trusted`), label);
  assert.match(write.options[3], /for all projects \(saved in /);
  // What the option said is what happened: the write ran, and the notice says for how long.
  assert.match(byId(r.results).call_0_0, /Successfully wrote/);
  const notice = r.uiEvents.find((e) => e.method === "notify" && /Writes in/.test(e.message));
  assert.match(notice.message, /are allowed for this session only/, notice.message);
});

test("names the model chose in a command: notes after it, the fallback's prefix labels, a block reason", async (t) => {
  const w = makeWorld("dlgnotes");
  t.after(w.cleanup);
  mkdirSync(path.join(w.project, ".pi"), { recursive: true });
  // An error line naming a protected path: the sandbox's note explains it, escaped.
  const bad = `.pi/x${ESC}\u202ey`;
  const r = await runPiRpc({
    world: w,
    script: [
      [call("bash", { command: `printf 'touch: cannot touch %s: Read-only file system\\n' "'${bad}'"` })],
      [call("write", { path: `.pi/z${ESC}\u2028\n.ts`, content: "x" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  const notes = res.call_0_0.split("\n").filter((l) => l.startsWith("[pi-sandbox]"));
  assert.ok(notes.some((n) => n.includes(".pi/x\\x1b[2K\\u{202e}y is read-only")), res.call_0_0);
  for (const n of notes) assert.doesNotMatch(n, RAW, n);
  // A hard block's reason names the path escaped (pi shows it, the model reads it).
  assert.ok(res.call_1_0.includes(".pi/z\\x1b[2K\\u{2028}\\x0a.ts"), res.call_1_0);
  assert.doesNotMatch(res.call_1_0, RAW);

  // No OS sandbox: the "starting with" labels of the prefix question are escaped too.
  const noSandbox = { PI_SANDBOX_SYSTEM_DIRS: path.join(w.root, "no-system-dirs") };
  mkdirSync(noSandbox.PI_SANDBOX_SYSTEM_DIRS);
  const command = `touch 'a\u2028b' \u202ex\u{E0041}`;
  const f = await runPiRpc({ world: w, env: noSandbox, script: [[call("bash", { command })]], answer: picking(/^Always/, /^Cancel/) });
  assert.equal(f.code, 0, f.stderr);
  assert.equal(f.dialogs.length, 2, JSON.stringify(f.dialogs));
  noRawCharacters(f.dialogs);
  assert.ok(f.dialogs[0].title.includes("touch 'a\\u{2028}b' \\u{202e}x\\u{e0041}"), f.dialogs[0].title);
  assert.ok(f.dialogs[1].options.includes("Any command starting with: touch 'a\\u{2028}b' …"), JSON.stringify(f.dialogs[1].options));
});

test("a config file whose error quotes a hostile key: the notice shows it escaped", async (t) => {
  const w = makeWorld("dlgconfigerr");
  t.after(w.cleanup);
  const file = path.join(w.project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(file), { recursive: true });
  // An unknown key breaks the file (everything is blocked, fail closed); the parser quotes
  // the key back, and the key would otherwise draw its own line in the notice.
  writeFileSync(file, JSON.stringify({ [`x\npi-sandbox-rs: all clear${HOSTILE}`]: 1 }));
  const r = await runPiRpc({ world: w, script: [], message: "/sandbox full", until: report });
  assert.equal(r.code, 0, r.stderr);
  noRawCharacters(r.uiEvents);
  const notices = r.uiEvents.filter((e) => e.method === "notify").map((e) => e.message);
  const error = notices.find((m) => /unknown field/.test(m));
  assert.ok(error, JSON.stringify(notices));
  assert.ok(error.includes(`x\\x0api-sandbox-rs: all clear${SHOWN}`), error);
  assert.ok(!notices.some((m) => m.split("\n").some((l) => l.startsWith("pi-sandbox-rs: all clear"))), JSON.stringify(notices));
});

test("a repository that tracks .env: the first bash note and /sandbox say so, once", async (t) => {
  const w = makeWorld("dlgcommitted");
  t.after(w.cleanup);
  const git = (...args) => {
    const r = spawnSync("git", ["-c", "user.email=u@h", "-c", "user.name=user", ...args], { cwd: w.project, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
  };
  git("init", "-q");
  writeFileSync(path.join(w.project, ".env"), "API_TOKEN=COMMITTED-SECRET-31\n");
  mkdirSync(path.join(w.project, `api${ESC}`));
  writeFileSync(path.join(w.project, `api${ESC}`, ".env.production"), "B=2\n");
  writeFileSync(path.join(w.project, "README.md"), "hi\n");
  git("add", "-A");
  git("commit", "-q", "-m", "init");
  const r = await runPiRpc({ world: w, script: [[call("bash", { command: "true" })], [call("bash", { command: "true" })]] });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /\[pi-sandbox\] This repository tracks \.env, api\\x1b\[2K\/\.env\.production in git/, res.call_0_0);
  assert.doesNotMatch(res.call_0_0, RAW);
  assert.doesNotMatch(res.call_1_0, /tracks/, "once per session");
  const rr = await runPiRpc({ world: w, script: [], message: "/sandbox full", until: report });
  const text = rr.uiEvents.find(report).message;
  assert.match(text, /Env files tracked by git: \.env, api\\x1b\[2K\/\.env\.production\n.*git show HEAD:/, text);
  assert.ok(existsSync(path.join(w.project, ".env")));
});

test("a repository without tracked env files gets no note", async (t) => {
  const w = makeWorld("dlgnocommitted");
  t.after(w.cleanup);
  spawnSync("git", ["init", "-q"], { cwd: w.project });
  writeFileSync(path.join(w.project, ".env"), "A=1\n");
  const r = await runPiRpc({ world: w, script: [[call("bash", { command: "true" })]] });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(byId(r.results).call_0_0, /tracks/);
});

test("the CLI: explain and config show paths, rules and entries escaped", (t) => {
  const w = makeWorld("dlgcli");
  t.after(w.cleanup);
  const file = path.join(w.project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(file), { recursive: true });
  // No `[` (a glob's class): ESC c resets a terminal.
  const hostile = "\u001bc\r\n\u2028\u202e\u{E0041}\u200b";
  const shown = "\\x1bc\\x0d\\x0a\\u{2028}\\u{202e}\\u{e0041}\\u{200b}";
  writeFileSync(file, JSON.stringify({ filesystem: { denyWrite: ["*.pem", `*.k${hostile}`] } }));
  const env = { ...process.env, HOME: w.home, PI_CODING_AGENT_DIR: w.agentDir, PI_SANDBOX_APPROVAL_MODE: "" };
  const cli = (...args) => spawnSync(process.execPath, [path.join(repo, "bin", "pi-sandbox.js"), ...args], { cwd: w.project, env, encoding: "utf8" });
  const explained = cli("explain", "write", `src/a.k${hostile}`);
  assert.equal(explained.status, 1, explained.stderr);
  assert.ok(explained.stdout.includes(`a.k${shown}`), explained.stdout);
  assert.ok(explained.stdout.includes(`denyWrite pattern '*.k${shown}'`), explained.stdout);
  const config = cli("config");
  assert.equal(config.status, 0, config.stderr);
  assert.ok(config.stdout.includes(`*.k${shown}`), config.stdout);
  for (const out of [explained.stdout, config.stdout]) {
    for (const line of out.split("\n")) assert.doesNotMatch(line, RAW, line);
  }
});
