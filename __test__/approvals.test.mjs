// Permission prompts through a real pi: a UI (RPC mode) answers each choice, print mode has
// no one to ask. Every grant is checked where it landed and on the next call of the same
// session, without a restart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPi, picking, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const approvals = (w) => readJson(path.join(w.agentDir, "sandbox-approvals.json"));

// ---- writes outside allowWrite -------------------------------------------------------------

const writeScript = (w) => [
  [call("write", { path: path.join(w.root, "outside", "a.txt"), content: "A" })],
  [call("write", { path: path.join(w.root, "outside", "b.txt"), content: "B" })],
  [call("bash", { command: `echo C > ${path.join(w.root, "outside", "c.txt")}` })],
];

test("a blocked write asks; Abort keeps it blocked and tells the model the user declined", async (t) => {
  const w = makeWorld("wabort");
  t.after(w.cleanup);
  const r = await runPiRpc({ world: w, script: writeScript(w).slice(0, 1), answer: picking(/^Abort/) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 1);
  const d = r.dialogs[0];
  assert.match(d.title, /allow writes in .*outside\?\n\nThe agent wants to write a\.txt there/);
  assert.match(d.title, /outside allowWrite/, "names the rule");
  assert.deepEqual(
    d.options.map((o) => o.split(" ")[0]),
    ["Abort", "Allow", "Allow", "Allow"],
  );
  assert.match(byId(r.results).call_0_0, /the user was asked and declined/);
  assert.equal(existsSync(path.join(w.root, "outside", "a.txt")), false);
});

test("a write whose folder is too wide to open offers the file alone: once, then for the session; its neighbours still ask", async (t) => {
  const w = makeWorld("wfile");
  t.after(w.cleanup);
  const notes = path.join(w.home, "notes.txt");
  const script = [
    [call("write", { path: notes, content: "ONCE" })],
    [call("write", { path: notes, content: "AGAIN" })],
    [call("write", { path: notes, content: "SESSION" })],
    [call("write", { path: path.join(w.home, "other.txt"), content: "X" })],
  ];
  const answer = picking(/^Allow this write only/, /^Abort/, /^Allow writing this file for this session/, /^Abort/);
  const r = await runPiRpc({ world: w, script, answer });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 4, JSON.stringify(r.dialogs.map((d) => d.title)));
  const d = r.dialogs[0];
  assert.match(d.title, /too wide to open: only this file can be allowed/);
  assert.deepEqual(d.options.map((o) => o.split(" (")[0]), ["Abort", "Allow this write only", "Allow writing this file for this session"]);
  const res = byId(r.results);
  assert.match(res.call_0_0, /Successfully wrote/);
  assert.match(res.call_1_0, /declined/, "once was for that write only");
  assert.match(res.call_2_0, /Successfully wrote/);
  assert.equal(readFileSync(notes, "utf8"), "SESSION");
  assert.equal(existsSync(path.join(w.home, "other.txt")), false);
});

for (const [scope, pick] of [
  ["session", /for this session/],
  ["project", /for this project/],
  ["global", /for all projects/],
]) {
  test(`a blocked write granted ${scope}: lands there and holds for the next write and bash at once`, async (t) => {
    const w = makeWorld(`w${scope}`);
    t.after(w.cleanup);
    const outside = path.join(w.root, "outside");
    const r = await runPiRpc({ world: w, script: writeScript(w), answer: picking(pick) });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.dialogs.length, 1, "asked once: the grant covers the next calls");
    const res = byId(r.results);
    assert.match(res.call_0_0, /Successfully wrote/);
    assert.match(res.call_1_0, /Successfully wrote/);
    assert.equal(readFileSync(path.join(outside, "a.txt"), "utf8"), "A");
    assert.equal(readFileSync(path.join(outside, "b.txt"), "utf8"), "B");
    // The next bash command's mounts include the grant.
    assert.equal(readFileSync(path.join(outside, "c.txt"), "utf8"), "C\n", res.call_2_0);

    const project = path.join(w.project, ".pi", "sandbox.json");
    const global = path.join(w.agentDir, "extensions", "sandbox.json");
    if (scope === "session") {
      assert.equal(existsSync(project), false);
      assert.equal(existsSync(global), false);
    } else {
      const file = scope === "project" ? project : global;
      const other = scope === "project" ? global : project;
      assert.deepEqual(readJson(file).filesystem.allowWrite, [".", "/tmp", outside]);
      assert.equal(existsSync(other), false);
    }

    // A new pi (print mode: no one to ask) keeps project and global grants, not session ones.
    const again = await runPi({ world: w, script: [[call("write", { path: path.join(outside, "d.txt"), content: "D" })]] });
    const text = byId(again.results).call_0_0;
    if (scope === "session") assert.match(text, /there is no UI to ask the user in/);
    else assert.match(text, /Successfully wrote/);
  });
}

test("a blocked edit asks the same; granted for this session, the edit is made", async (t) => {
  const w = makeWorld("wedit");
  t.after(w.cleanup);
  const file = path.join(w.root, "outside", "e.txt");
  writeFileSync(file, "old line\n");
  const r = await runPiRpc({
    world: w,
    script: [[call("edit", { path: file, edits: [{ oldText: "old", newText: "new" }] })], [call("edit", { path: file, edits: [{ oldText: "line", newText: "text" }] })]],
    answer: picking(/for this session/),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 1, "asked once");
  assert.match(r.dialogs[0].title, /allow writes in .*outside\?\n\nThe agent wants to write e\.txt there/);
  assert.deepEqual(
    r.dialogs[0].options.map((o) => o.split(" ")[0]),
    ["Abort", "Allow", "Allow", "Allow"],
  );
  assert.equal(readFileSync(file, "utf8"), "new text\n");
});

test("hard blocks never prompt: denyWrite, denyRead, pi's control surface", async (t) => {
  const w = makeWorld("whard");
  t.after(w.cleanup);
  const r = await runPiRpc({
    world: w,
    script: [
      [
        call("write", { path: "key.pem", content: "x" }),
        call("write", { path: "~/.ssh/new", content: "x" }),
        call("write", { path: path.join(w.agentDir, "sandbox-approvals.json"), content: "{}" }),
        // denyRead alone (not pi's control surface): outside allowWrite, where a write asks.
        call("write", { path: "~/.aws/credentials", content: "x" }),
      ],
    ],
    answer: picking(/for all projects/, /for all projects/, /for all projects/, /for all projects/),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 0, JSON.stringify(r.dialogs));
  const res = byId(r.results);
  assert.match(res.call_0_0, /denyWrite/);
  assert.match(res.call_0_1, /denyRead|control surface/);
  assert.match(res.call_0_2, /control surface/);
  assert.match(res.call_0_3, /denyRead/);
  assert.doesNotMatch(res.call_0_3, /control surface/);
  assert.equal(existsSync(path.join(w.home, ".aws", "credentials")), false);
});

// ---- no OS sandbox: the unsandboxed fallback -------------------------------------------------

/**
 * bwrap looked for in an empty directory only: no OS sandbox here. The sandbox never takes
 * bwrap from PATH (a directory the agent can write could shadow it): it looks in the system
 * directories, which PI_SANDBOX_SYSTEM_DIRS replaces. So this is how bwrap is hidden; taking
 * it out of PATH would change nothing.
 */
const noSandbox = (w, mode) => {
  const empty = path.join(w.root, "nobin");
  mkdirSync(empty, { recursive: true });
  return { PI_SANDBOX_SYSTEM_DIRS: empty, ...(mode ? { PI_SANDBOX_APPROVAL_MODE: mode } : {}) };
};

test("without a sandbox, approval mode ask: Deny refuses, once runs and stores nothing", async (t) => {
  const w = makeWorld("fbonce");
  t.after(w.cleanup);
  const script = [[call("bash", { command: "echo one >> ran.txt" })], [call("bash", { command: "echo one >> ran.txt" })]];
  const r = await runPiRpc({ world: w, env: noSandbox(w), script, answer: picking(/^Deny/, /once/) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 2, "once does not carry over");
  assert.match(r.dialogs[0].title, /no OS sandbox works here/);
  assert.match(r.dialogs[0].title, /echo one >> ran\.txt/);
  const res = byId(r.results);
  assert.match(res.call_0_0, /the user declined to run this command unsandboxed/);
  assert.equal(readFileSync(path.join(w.project, "ran.txt"), "utf8"), "one\n", "the second ran once");
  assert.equal(existsSync(path.join(w.agentDir, "sandbox-approvals.json")), false, "once is never stored");
});

test("without a sandbox: a session grant of the exact command covers that command only", async (t) => {
  const w = makeWorld("fbsession");
  t.after(w.cleanup);
  const script = [
    [call("bash", { command: "echo s >> ran.txt" })],
    [call("bash", { command: "echo s >> ran.txt" })],
    [call("bash", { command: "echo s >> ran.txt; echo x > stretched.txt" })],
  ];
  const r = await runPiRpc({ world: w, env: noSandbox(w), script, answer: picking(/for this session/, /^Exactly this command/, /^Deny/) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 3, "asked for the first and for the stretched one");
  assert.match(r.dialogs[2].title, /stretched/);
  assert.equal(readFileSync(path.join(w.project, "ran.txt"), "utf8"), "s\ns\n");
  assert.equal(existsSync(path.join(w.project, "stretched.txt")), false);
  const store = approvals(w);
  assert.equal(store.version, 2);
  assert.equal(store.approvals.length, 1);
  const [e] = store.approvals;
  assert.equal(e.scope, "session");
  assert.deepEqual(e.grant, { kind: "command", command: "echo s >> ran.txt" });
  assert.ok(e.session, "bound to pi's session");
  assert.ok(e.expiresAt > Date.now(), "expires");
  // Another pi session does not inherit it: refused without a UI.
  const other = await runPi({ world: w, env: noSandbox(w), script: [[call("bash", { command: "echo s >> ran.txt" })]] });
  assert.match(byId(other.results).call_0_0, /cannot be asked for without a UI/);
});

test("without a sandbox: an always grant by prefix covers its simple commands, never a compound one", async (t) => {
  const w = makeWorld("fbalways");
  t.after(w.cleanup);
  const script = [
    [call("bash", { command: "touch a.txt" })],
    [call("bash", { command: "touch b.txt" })],
    [call("bash", { command: "touch c.txt && echo x > d.txt" })],
  ];
  const r = await runPiRpc({ world: w, env: noSandbox(w), script, answer: picking(/^Always/, /starting with: touch …/, /^Deny/) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.length, 3, JSON.stringify(r.dialogs.map((d) => d.title)));
  assert.ok(existsSync(path.join(w.project, "a.txt")));
  assert.ok(existsSync(path.join(w.project, "b.txt")), "covered by the prefix, not asked");
  assert.equal(existsSync(path.join(w.project, "c.txt")), false, "&& is not stretched by a prefix");
  const [e] = approvals(w).approvals;
  assert.equal(e.scope, "always");
  assert.equal(e.expiresAt, null);
  assert.deepEqual(e.grant, { kind: "commandPrefix", argv: ["touch"] });
  // It lasts: a new pi in print mode runs it without asking.
  const later = await runPi({ world: w, env: noSandbox(w), script: [[call("bash", { command: "touch e.txt" })]] });
  assert.equal(later.code, 0, later.stderr);
  assert.ok(existsSync(path.join(w.project, "e.txt")), byId(later.results).call_0_0);
});

test("without a sandbox: print mode refuses (ask), always runs, deny refuses", async (t) => {
  const w = makeWorld("fbmodes");
  t.after(w.cleanup);
  const script = [[call("bash", { command: "echo hi > out.txt" })]];
  const ask = await runPi({ world: w, env: noSandbox(w), script });
  assert.match(byId(ask.results).call_0_0, /without a UI/);
  assert.equal(existsSync(path.join(w.project, "out.txt")), false);
  const deny = await runPi({ world: w, env: noSandbox(w, "deny"), script });
  assert.match(byId(deny.results).call_0_0, /PI_SANDBOX_APPROVAL_MODE=deny/);
  assert.equal(existsSync(path.join(w.project, "out.txt")), false);
  // always: bash runs unsandboxed without asking; the file tools stay guarded.
  const always = await runPi({
    world: w,
    env: noSandbox(w, "always"),
    script: [...script, [call("read", { path: "~/.ssh/id_rsa" }), call("write", { path: path.join(w.root, "outside", "x.txt"), content: "x" })]],
  });
  assert.equal(always.code, 0, always.stderr);
  assert.equal(readFileSync(path.join(w.project, "out.txt"), "utf8"), "hi\n");
  const res = byId(always.results);
  assert.match(res.call_1_0, /denyRead/);
  assert.doesNotMatch(res.call_1_0, /SECRET-KEY/);
  assert.match(res.call_1_1, /outside every allowWrite directory/);
  assert.equal(existsSync(path.join(w.root, "outside", "x.txt")), false);
});

// ---- env files -----------------------------------------------------------------------------

for (const [choice, pick] of [
  ["deny", /^Deny/],
  ["once", /once/],
  ["session", /for this session/],
  ["always", /^Always allow this file/],
]) {
  test(`reading .env asks; "${choice}"`, async (t) => {
    const w = makeWorld(`env${choice}`);
    t.after(w.cleanup);
    writeFileSync(path.join(w.project, ".env"), "API_TOKEN=ENV-SECRET-77\n");
    const script = [[call("read", { path: ".env" })], [call("read", { path: ".env" })]];
    const r = await runPiRpc({ world: w, script, answer: picking(pick, /^Deny/) });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.dialogs[0].title, /allow the agent to read .*\.env/);
    assert.match(r.dialogs[0].title, /usually hold secrets/);
    assert.doesNotMatch(r.dialogs[0].title, /no UI/, "asking is not refusing");
    const res = byId(r.results);
    if (choice === "deny") {
      assert.match(res.call_0_0, /the user declined to let you read it/);
      assert.doesNotMatch(res.call_0_0, /ENV-SECRET-77|no UI/);
    } else {
      // The file's secret is hidden from the model by the redactor only if it is one; here it
      // is the content itself the user allowed.
      assert.match(res.call_0_0, /ENV-SECRET-77/);
    }
    const lasting = choice === "session" || choice === "always";
    assert.equal(r.dialogs.length, lasting ? 1 : 2, "a lasting grant is not asked again");
    if (lasting) {
      assert.match(res.call_1_0, /ENV-SECRET-77/);
      const [e] = approvals(w).approvals;
      assert.equal(e.scope, choice);
      assert.deepEqual(e.grant, { kind: "envRead", path: path.join(w.project, ".env") });
    } else assert.equal(existsSync(path.join(w.agentDir, "sandbox-approvals.json")), false);
  });
}

// ---- project trust -------------------------------------------------------------------------

test("project trust: an untrusted widening file is not applied, trusting applies it, editing it revokes the trust", async (t) => {
  const w = makeWorld("trust");
  t.after(w.cleanup);
  const outside = path.join(w.root, "outside");
  const file = path.join(w.project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(file), { recursive: true });
  const widening = { filesystem: { allowWrite: [".", "/tmp", outside], denyRead: ["~/.ssh"] } };
  writeFileSync(file, JSON.stringify(widening));
  const script = [[call("write", { path: path.join(outside, "t.txt"), content: "T" })]];

  // /sandbox says so before anything is answered.
  const report = async () => {
    const rr = await runPiRpc({ world: w, script: [], message: "/sandbox full", until: (m) => m.type === "extension_ui_request" && m.method === "notify" && /effective configuration/.test(m.message) });
    return rr.uiEvents.find((e) => e.method === "notify" && /effective configuration/.test(e.message)).message;
  };
  assert.match(await report(), /NOT TRUSTED YET: only its tightening rules apply[\s\S]*would make ".*outside" writable/);

  // Print mode: never trusted, so the write outside stays blocked.
  let r = await runPi({ world: w, script });
  assert.match(byId(r.results).call_0_0, /outside every allowWrite directory/);
  assert.equal(existsSync(path.join(outside, "t.txt")), false);

  // A UI: declining keeps it off (and the write then asks, and is aborted).
  r = await runPiRpc({ world: w, script, answer: picking(/^Do not trust/, /^Abort/) });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.dialogs[0].title, /would loosen the sandbox/);
  assert.match(r.dialogs[0].title, new RegExp(`make "${outside}" writable`));
  assert.match(r.dialogs[0].title, /stop hiding/, "the removed denyRead entries are listed");
  assert.equal(existsSync(path.join(outside, "t.txt")), false);
  // Declined: not asked again for the same content.
  r = await runPiRpc({ world: w, script, answer: picking(/^Abort/) });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.dialogs.filter((d) => /would loosen/.test(d.title)).length, 0);
  assert.match(await report(), /you declined to trust it: only its tightening rules apply/);

  // /sandbox trust asks again; trusting applies the file at once.
  r = await runPiRpc({ world: w, script, message: "/sandbox trust", until: (m) => m.type === "extension_ui_request" && m.method === "setStatus" && /sandbox:/.test(m.statusText ?? "") && !/not trusted/.test(m.statusText), answer: picking(/^Trust/) });
  assert.ok(r.dialogs.some((d) => /would loosen the sandbox/.test(d.title)), "asked again");
  assert.match(await report(), /trusted by you, applied in full/);
  const store = approvals(w);
  const record = store.approvals.find((e) => e.grant.kind === "projectTrust");
  assert.equal(record.grant.trusted, true);
  assert.equal(record.grant.file, file);
  r = await runPi({ world: w, script });
  assert.match(byId(r.results).call_0_0, /Successfully wrote/);

  // Any change not made by a grant revokes it.
  writeFileSync(file, JSON.stringify({ ...widening, mode: "read-write" }));
  r = await runPi({ world: w, script: [[call("write", { path: path.join(outside, "u.txt"), content: "U" })]] });
  assert.match(byId(r.results).call_0_0, /outside every allowWrite directory/);
  assert.equal(existsSync(path.join(outside, "u.txt")), false);
});

// ---- the agent cannot grant itself anything ------------------------------------------------

test("escape attempts: the agent cannot write the approvals store, either config file or a trust record", async (t) => {
  const w = makeWorld("grantself");
  t.after(w.cleanup);
  const store = path.join(w.agentDir, "sandbox-approvals.json");
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  const project = path.join(w.project, ".pi", "sandbox.json");
  const original = `${JSON.stringify({ version: 2, approvals: [] })}\n`;
  writeFileSync(store, original);
  const forged = JSON.stringify({
    version: 2,
    approvals: [
      { scope: "always", grant: { kind: "commandPrefix", argv: ["curl"] }, grantedBy: "user", grantedAt: "2026-01-01T00:00:00Z", expiresAt: null },
      { scope: "always", grant: { kind: "projectTrust", file: project, sha256: "0".repeat(64), trusted: true }, grantedBy: "user", grantedAt: "2026-01-01T00:00:00Z", expiresAt: null },
    ],
  });
  const opened = JSON.stringify({ enabled: false });
  const q = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const r = await runPi({
    world: w,
    script: [
      [
        call("write", { path: store, content: forged }),
        call("edit", { path: store, edits: [{ oldText: "[]", newText: "[1]" }] }),
        call("write", { path: global, content: opened }),
        call("write", { path: project, content: opened }),
      ],
      [
        call("bash", { command: `printf %s ${q(forged)} > ${q(store)}; echo status=$?` }),
        call("bash", { command: `printf %s ${q(forged)} > /tmp/f && mv /tmp/f ${q(store)}; echo status=$?` }),
        call("bash", { command: `mkdir -p ${q(path.dirname(global))} && printf %s ${q(opened)} > ${q(global)}; echo status=$?` }),
        call("bash", { command: `mkdir -p .pi && printf %s ${q(opened)} > .pi/sandbox.json; echo status=$?` }),
        call("bash", { command: `ln -s ${q(store)} link.json; ln -s ${q(path.dirname(store))} agentlink; echo made` }),
      ],
      [
        call("write", { path: "link.json", content: forged }),
        call("write", { path: "agentlink/sandbox-approvals.json", content: forged }),
        call("bash", { command: `printf %s ${q(forged)} > agentlink/sandbox-approvals.json; echo status=$?` }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(readFileSync(store, "utf8"), original, JSON.stringify(r.results, null, 1));
  assert.equal(existsSync(global), false);
  assert.equal(existsSync(project), false, "a .pi the command made is moved aside");
  // And nothing the agent did counts as a grant: bash without a sandbox still asks.
  const empty = path.join(w.root, "nobin");
  mkdirSync(empty, { recursive: true });
  const after = await runPi({ world: w, env: { PI_SANDBOX_SYSTEM_DIRS: empty }, script: [[call("bash", { command: "curl --version" })]] });
  assert.match(byId(after.results).call_0_0, /without a UI/);
});

test("escape attempts on both config files, present beforehand: edit, a link, a rename, every tool and bash", async (t) => {
  const w = makeWorld("cfgescape");
  t.after(w.cleanup);
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  const project = path.join(w.project, ".pi", "sandbox.json");
  mkdirSync(path.dirname(global), { recursive: true });
  mkdirSync(path.dirname(project), { recursive: true });
  const globalText = `${JSON.stringify({ network: { allowedDomains: ["example.org"] } }, null, 2)}\n`;
  const projectText = `${JSON.stringify({ filesystem: { denyRead: ["~/.ssh", "secrets"] } }, null, 2)}\n`;
  writeFileSync(global, globalText);
  writeFileSync(project, projectText);
  const opened = JSON.stringify({ enabled: false });
  const q = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const r = await runPi({
    world: w,
    script: [
      [
        call("edit", { path: project, edits: [{ oldText: "secrets", newText: "nothing" }] }),
        call("edit", { path: global, edits: [{ oldText: "example.org", newText: "evil.example" }] }),
        call("bash", { command: `ln -s ${q(project)} p.json; ln -s ${q(global)} g.json; ln -s ${q(path.dirname(global))} ext; echo made` }),
      ],
      [
        call("write", { path: "p.json", content: opened }),
        call("write", { path: "g.json", content: opened }),
        call("edit", { path: "ext/sandbox.json", edits: [{ oldText: "example.org", newText: "evil.example" }] }),
        call("write", { path: "ext/sandbox.json", content: opened }),
      ],
      [
        call("bash", { command: `printf %s ${q(opened)} > p.json; printf %s ${q(opened)} > ext/sandbox.json; echo status=$?` }),
        call("bash", { command: `mv .pi .pi-old; echo mv=$?; mkdir -p .pi && printf %s ${q(opened)} > .pi/sandbox.json; echo status=$?` }),
        call("bash", { command: `printf %s ${q(opened)} > /tmp/o.json; mv /tmp/o.json .pi/sandbox.json; mv /tmp/o.json ${q(global)}; echo status=$?` }),
        call("bash", { command: `rm -f .pi/sandbox.json; ln -sf /tmp/o.json .pi/sandbox.json; echo status=$?` }),
        call("bash", { command: `mv ${q(w.agentDir)} ${q(w.agentDir)}-old; mv ${q(path.dirname(global))} ${q(path.dirname(global))}-old; echo status=$?` }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const results = JSON.stringify(r.results, null, 1);
  assert.equal(readFileSync(project, "utf8"), projectText, results);
  assert.equal(readFileSync(global, "utf8"), globalText, results);
  assert.equal(existsSync(`${w.agentDir}-old`), false, results);
  assert.equal(existsSync(path.join(w.project, ".pi-old")), false, results);
  // The rules still hold in the next session.
  const after = await runPi({ world: w, script: [[call("read", { path: "secrets" })]] });
  assert.match(byId(after.results).call_0_0, /denyRead/);
});

test("bash hides env files until the user allows reading them; a grant for the read tool opens them to bash too", async (t) => {
  const w = makeWorld("envbash");
  t.after(w.cleanup);
  writeFileSync(path.join(w.project, ".env"), "API_TOKEN=ENV-SECRET-77\n");
  mkdirSync(path.join(w.project, "svc"));
  writeFileSync(path.join(w.project, "svc", ".env.local"), "DB=ENV-SECRET-88\n");
  // Outside the indexed trees, where a command looks next: the home and the parent directory;
  // and anywhere in the home directory (another project's), also one made mid-session.
  writeFileSync(path.join(w.home, ".env"), "HOME_KEY=ENV-SECRET-99\n");
  writeFileSync(path.join(w.root, ".env.shared"), "ROOT_KEY=ENV-SECRET-66\n");
  mkdirSync(path.join(w.home, "work", "x", "api"), { recursive: true });
  writeFileSync(path.join(w.home, "work", "x", "api", ".env"), "OTHER=ENV-SECRET-55\n");
  const cat = call("bash", { command: "cat .env svc/.env.local ~/.env ../.env.shared ~/work/x/api/.env; echo rc=$?" });
  const later = path.join(w.home, "work", "y", ".env.production");
  let ended = 0;
  const r = await runPiRpc({
    world: w,
    // The pause lets the search of the home directory pass again (every 2 s on a small home).
    script: [[cat], [call("read", { path: ".env" })], [cat], [call("bash", { command: "sleep 4" })], [call("bash", { command: `cat ${later}; echo rc=$?` })]],
    answer: picking(/for this session/),
    onMessage: (msg) => {
      if (msg.type === "tool_execution_end" && ++ended === 1) {
        mkdirSync(path.dirname(later), { recursive: true });
        writeFileSync(later, "LATER=ENV-SECRET-44\n");
      }
    },
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /work\/x\/api\/\.env: Permission denied/, "the command ran and met the mask");
  assert.doesNotMatch(res.call_0_0, /ENV-SECRET/, "hidden before any grant");
  assert.match(res.call_1_0, /ENV-SECRET-77/);
  assert.match(res.call_2_0, /ENV-SECRET-77/, "the grant opens it to bash");
  assert.doesNotMatch(res.call_2_0, /ENV-SECRET-(88|99|66|55)/, "only the file granted");
  assert.match(res.call_4_0, /\.env\.production: Permission denied/);
  assert.doesNotMatch(res.call_4_0, /ENV-SECRET-44/, "one the user made elsewhere mid-session is hidden too");

  // Print mode: deny hides them, always shows them.
  const deny = await runPi({ world: w, env: { PI_SANDBOX_APPROVAL_MODE: "deny" }, script: [[cat]] });
  assert.doesNotMatch(byId(deny.results).call_0_0, /ENV-SECRET/);
  const always = await runPi({ world: w, env: { PI_SANDBOX_APPROVAL_MODE: "always" }, script: [[cat]] });
  assert.match(byId(always.results).call_0_0, /ENV-SECRET-77[\s\S]*ENV-SECRET-88[\s\S]*ENV-SECRET-99[\s\S]*ENV-SECRET-66[\s\S]*ENV-SECRET-55/);
  // And in read-only mode the project's env files stay hidden (ask, no grant in this pi).
  const ro = await runPi({ world: w, args: ["--sandbox-mode", "ro"], script: [[cat]] });
  assert.doesNotMatch(byId(ro.results).call_0_0, /ENV-SECRET-88/);
});
