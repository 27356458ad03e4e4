// Secrets a sandboxed agent must not see, tried through a real pi: the environment pi passes
// to bash, pi's own process files, and the credential files of the usual tools, each through
// the file tools and through bash.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, repo, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

test("secrets in pi's environment never reach a sandboxed command; /sandbox names them, never their values", async (t) => {
  const w = makeWorld("env-secrets");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ env: { allow: ["NPM_TOKEN"], deny: ["MY_PRIVATE_*"] } }));
  const env = {
    GITHUB_TOKEN: "ghp_VALUE0001",
    AWS_SECRET_ACCESS_KEY: "AWSVALUE0002",
    ANTHROPIC_API_KEY: "sk-ant-VALUE0003",
    DB_PASSWORD: "VALUE0004",
    MY_PRIVATE_THING: "VALUE0005",
    // pi takes the mock provider's key from this variable (models.json names it)
    CORP_LLM: "VALUE0006",
    NPM_TOKEN: "npm_KEPT0007",
    PLAIN_SETTING: "KEPT0008",
  };
  const r = await runPi({
    world: w,
    env,
    apiKey: "CORP_LLM",
    script: [[call("bash", { command: "env; echo END" }), call("read", { path: "/proc/self/environ" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, environ] = r.results;
  assert.match(bash.text, /END/);
  for (const v of ["ghp_VALUE0001", "AWSVALUE0002", "sk-ant-VALUE0003", "VALUE0004", "VALUE0005", "VALUE0006"]) {
    assert.doesNotMatch(bash.text, new RegExp(v), `${v} reached the command`);
  }
  assert.match(bash.text, /NPM_TOKEN=npm_KEPT0007/);
  assert.match(bash.text, /PLAIN_SETTING=KEPT0008/);
  assert.match(environ.text, /Blocked read of \/proc\/\d+\/environ/);
  assert.doesNotMatch(environ.text, /VALUE000/);

  // The same session as /sandbox shows it: names and reasons, never a value.
  const saved = { ...process.env };
  t.after(() => {
    for (const k of Object.keys(env)) delete process.env[k];
    Object.assign(process.env, saved);
  });
  Object.assign(process.env, env);
  writeFileSync(path.join(w.agentDir, "models.json"), JSON.stringify({ providers: { corp: { apiKey: "CORP_LLM" } } }));
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const dropped = Object.fromEntries(s.droppedEnv().map((d) => [d.name, d.why]));
  assert.match(dropped.GITHUB_TOKEN, /token/);
  assert.match(dropped.MY_PRIVATE_THING, /env\.deny/);
  assert.match(dropped.CORP_LLM, /models\.json/);
  assert.equal(dropped.NPM_TOKEN, undefined);
  assert.equal(dropped.PLAIN_SETTING, undefined);
  const shown = s.describe();
  assert.match(shown, /GITHUB_TOKEN/);
  assert.doesNotMatch(shown, /VALUE000/);
});

test("credential files of the usual tools, pi's models.json and other projects' transcripts are unreadable, in the file tools and in bash", async (t) => {
  const w = makeWorld("cred-files");
  t.after(w.cleanup);
  const files = {
    ".git-credentials": "https://u:CRED-GIT@github.com",
    ".config/gh/hosts.yml": "github.com:\n  oauth_token: CRED-GH\n",
    ".netrc": "machine x login u password CRED-NETRC",
    ".docker/config.json": '{"auths":{"x":{"auth":"CRED-DOCKER"}}}',
    ".kube/config": "token: CRED-KUBE",
    ".npmrc": "//registry.npmjs.org/:_authToken=CRED-NPM",
    ".pypirc": "password = CRED-PYPI",
    ".cargo/credentials.toml": 'token = "CRED-CARGO"',
  };
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(w.home, rel)), { recursive: true });
    writeFileSync(path.join(w.home, rel), content);
  }
  const other = path.join(w.agentDir, "sessions", "--some-other-project--");
  mkdirSync(other, { recursive: true });
  writeFileSync(path.join(other, "s.jsonl"), '{"text":"CRED-TRANSCRIPT"}\n');
  const targets = [...Object.keys(files).map((rel) => path.join(w.home, rel)), path.join(other, "s.jsonl")];
  const r = await runPi({
    world: w,
    script: [
      [
        ...targets.map((p) => call("read", { path: p })),
        call("read", { path: path.join(w.agentDir, "models.json") }),
        call("bash", { command: `cat ${targets.join(" ")} ${path.join(w.agentDir, "models.json")} 2>&1; echo END` }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const results = r.results;
  const bash = results.pop();
  for (const res of results) {
    assert.match(res.text, /Blocked read of/, res.text);
    assert.doesNotMatch(res.text, /CRED-|mock-1/, res.text);
  }
  // each says why its entry is there
  assert.match(results[0].text, /git's stored HTTPS passwords/);
  assert.match(results.at(-1).text, /custom providers/);
  assert.match(bash.text, /END/);
  assert.doesNotMatch(bash.text, /CRED-|127\.0\.0\.1/);
});

test("known secret values are hidden from the model in every tool's output, also when bash prints one in pieces", async (t) => {
  const w = makeWorld("redact");
  t.after(w.cleanup);
  const token = ["ghp_REDACT", "ME0123456789"];
  const authKey = "sk-ant-AUTHJSON-000111";
  const listed = "corp-internal-password-42";
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ redact: { values: [listed] } }));
  writeFileSync(path.join(w.agentDir, "auth.json"), JSON.stringify({ anthropic: { type: "api_key", key: authKey } }));
  writeFileSync(path.join(w.project, "src", "config.txt"), `token: ${token.join("")}\nkey: ${authKey}\npassword: ${listed}\nplain: visible\n`);
  // The halves are printed apart, with a pause between: two chunks of output.
  const pieces = `s=${token[0]}; t=${token[1]}; printf %s "$s"; sleep 0.3; printf '%s\\n' "$t"; echo END`;
  const r = await runPiRpc({
    world: w,
    env: { GITHUB_TOKEN: token.join("") },
    script: [
      [
        call("read", { path: "src/config.txt" }),
        call("grep", { pattern: "token|key|password|plain", path: "src" }),
        call("bash", { command: "cat src/config.txt" }),
        call("bash", { command: pieces }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [read, grep, cat, split] = r.results;
  for (const res of [read, grep, cat]) {
    assert.match(res.text, /\[redacted: GITHUB_TOKEN\]/, res.text);
    assert.match(res.text, /\[redacted: auth\.json anthropic\]/, res.text);
    assert.match(res.text, /\[redacted: redact\.values\]/, res.text);
    assert.match(res.text, /plain: visible/);
  }
  assert.match(split.text, /\[redacted: GITHUB_TOKEN\]\s*\nEND/, split.text);
  // Nowhere in what pi sent (tool results, streamed updates of bash's output) is a value.
  const everything = JSON.stringify(r.messages) + JSON.stringify(r.results);
  for (const v of [token.join(""), authKey, listed]) assert.ok(!everything.includes(v), `${v} was shown`);
  // Streamed updates did carry the output, redacted.
  assert.match(JSON.stringify(r.messages.filter((m) => m.type === "tool_execution_update")), /redacted: GITHUB_TOKEN/);

  // /sandbox lists the names, never the values.
  const saved = process.env.GITHUB_TOKEN;
  process.env.GITHUB_TOKEN = token.join("");
  t.after(() => (saved === undefined ? delete process.env.GITHUB_TOKEN : (process.env.GITHUB_TOKEN = saved)));
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const names = s.redactedNames();
  for (const n of ["GITHUB_TOKEN", "auth.json anthropic", "redact.values"]) assert.ok(names.includes(n), `${n} in ${names}`);
  const shown = s.describe();
  assert.match(shown, /Secrets hidden from the model[^]*GITHUB_TOKEN/);
  for (const v of [token.join(""), authKey, listed]) assert.ok(!shown.includes(v));
  // The stream API on its own: a value split anywhere comes out hidden.
  const full = Buffer.from(`a ${token.join("")} b`);
  for (let cut = 0; cut <= full.length; cut++) {
    const st = s.redactStream();
    const out = Buffer.concat([st.push(full.subarray(0, cut)), st.push(full.subarray(cut)), st.finish()]).toString();
    assert.equal(out, "a [redacted: GITHUB_TOKEN] b", `cut ${cut}`);
  }
});
