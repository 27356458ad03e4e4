// Secrets a sandboxed agent must not see, tried through a real pi: the environment pi passes
// to bash, pi's own process files, and the credential files of the usual tools, each through
// the file tools and through bash.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { makeWorld, piBin, repo, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

test("secrets in pi's environment never reach a sandboxed command; /sandbox names them, never their values", async (t) => {
  const w = makeWorld("env-secrets");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ env: { allow: ["NPM_TOKEN", "PLAIN_SETTING"], deny: ["MY_PRIVATE_*"] } }));
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
  assert.match(dropped.GITHUB_TOKEN, /not on the allow-list/);
  assert.match(dropped.MY_PRIVATE_THING, /env\.deny/);
  assert.match(dropped.CORP_LLM, /models\.json/);
  assert.equal(dropped.NPM_TOKEN, undefined);
  assert.equal(dropped.PLAIN_SETTING, undefined);
  const shown = s.describe();
  assert.match(shown, /GITHUB_TOKEN/);
  assert.doesNotMatch(shown, /VALUE000/);
});

test("bash gets the environment by allow-list: secrets under any name, and credential-shaped values under allowed names, never reach it; their values are redacted", async (t) => {
  const w = makeWorld("env-allow");
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ env: { allow: ["MY_APP_*"] } }));
  const ghp = `ghp_${"A1b2C3d4E5".repeat(3)}x1y2z3`;
  const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJlLXNlY3JldC0wMDEy";
  // Not on the allow-list: dropped by name, whatever the value.
  const unlisted = {
    MONGODB_URI: "mongodb://u:hunter2@db/x",
    REDIS_URL: "redis://:pw@h:6379",
    MYSQL_PWD: "mysql-pw-0009",
    AZURE_STORAGE_CONNECTION_STRING: "DefaultEndpointsProtocol=https;AccountName=acc;AccountKey=QVpTRUNSRVQwMDEw==;EndpointSuffix=core.windows.net",
    SOME_NEW_NAME: ghp,
    ANOTHER: jwt,
    FOO_CONFIG: "plain",
  };
  // On the allow-list (or env.allow), with a credential for a value: dropped by its value.
  const shaped = {
    GOPROXY: "https://u:goproxy-pw-0013@goproxy.corp,direct",
    EDITOR: `sk-ant-api03-${"k".repeat(30)}`,
    MY_APP_TOKEN: `glpat-${"g".repeat(24)}`,
  };
  const kept = {
    LANG: "C.UTF-8",
    CARGO_HOME: path.join(w.home, ".cargo"),
    RUSTUP_TOOLCHAIN: "stable",
    // A path through a folder named like a token's prefix is no token.
    GOPATH: path.join(w.home, "sk-abcdefghijklmnopqrstuvwxyz", "go"),
    MY_APP_SETTING: "kept-by-env-allow",
  };
  const names = [...Object.keys(unlisted), ...Object.keys(shaped)];
  // The values, in a file of the project, to see that the redactor hides them in output.
  writeFileSync(path.join(w.project, "src", "values.txt"), `${Object.values({ ...unlisted, ...shaped }).join("\n")}\n`);
  const lengths = names.map((n) => `${n}:\${#${n}}`).join(" ");
  const r = await runPi({
    world: w,
    env: { ...unlisted, ...shaped, ...kept },
    script: [[call("bash", { command: `env; echo "lengths ${lengths}"; echo END` }), call("bash", { command: "cat src/values.txt" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const [env, cat] = r.results;
  assert.match(env.text, /END/);
  // None of them reached the command: not by name, not by value (the lengths are the
  // command's own view: redaction cannot fake a 0).
  for (const n of names) {
    assert.doesNotMatch(env.text, new RegExp(`^${n}=`, "m"), `${n} reached the command`);
    assert.match(env.text, new RegExp(`[ ]${n}:0(?= |$)`, "m"), `${n} reached the command`);
  }
  for (const v of Object.values({ ...unlisted, ...shaped })) assert.ok(!env.text.includes(`=${v}`), `${v} reached the command`);
  // What a build needs is there, with env.allow's plain variable.
  for (const [n, v] of Object.entries(kept)) assert.match(env.text, new RegExp(`^${n}=${v.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"), n);
  for (const n of ["PATH", "HOME", "TMPDIR"]) assert.match(env.text, new RegExp(`^${n}=/`, "m"), n);
  assert.match(env.text, new RegExp(`^HOME=${w.home}$`, "m"));
  // pi's own variables for its bash (from 0.75 on) are on the list.
  const version = spawnSync(piBin, ["--version"], { encoding: "utf8" });
  const [major, minor] = `${version.stdout}${version.stderr}`.trim().split(".").map(Number);
  assert.ok(Number.isInteger(major) && Number.isInteger(minor), "pi --version");
  if (major > 0 || minor >= 75) for (const n of ["PI_SESSION_ID", "PI_PROVIDER", "PI_MODEL"]) assert.match(env.text, new RegExp(`^${n}=.`, "m"), n);
  // The values of what was dropped are hidden in output (long enough to be told from
  // ordinary text); a short plain one is left alone.
  for (const n of names.filter((n) => n !== "FOO_CONFIG")) assert.match(cat.text, new RegExp(`\\[redacted: ${n}\\]`), `${n}: ${cat.text}`);
  for (const v of Object.values({ ...unlisted, ...shaped }).filter((v) => v !== "plain")) assert.ok(!cat.text.includes(v), `${v} shown`);
  assert.match(cat.text, /^plain$/m);

  // /sandbox: a count and a few names on one line, credential-shaped values first; the full
  // view names each with why; never a value.
  const all = { ...unlisted, ...shaped, ...kept };
  const saved = { ...process.env };
  t.after(() => {
    for (const k of Object.keys(all)) delete process.env[k];
    Object.assign(process.env, saved);
  });
  Object.assign(process.env, all);
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const why = Object.fromEntries(s.droppedEnv().map((d) => [d.name, d.why]));
  for (const n of Object.keys(unlisted)) assert.match(why[n], /not on the allow-list/, n);
  assert.match(why.GOPROXY, /value looks like a URL with a password/);
  assert.match(why.EDITOR, /value looks like an API key/);
  assert.match(why.MY_APP_TOKEN, /value looks like a GitLab token/);
  for (const n of Object.keys(kept)) assert.equal(why[n], undefined, n);
  const summary = s.summary();
  const line = summary.split("\n").find((l) => l.startsWith("Environment: "));
  assert.match(line, /^Environment: the allow-list and env\.allow; \d+ variables held back \(EDITOR, GOPROXY, MY_APP_TOKEN, \+\d+ more\)$/);
  const full = s.describe();
  for (const n of names) assert.ok(full.includes(n), `${n} in /sandbox full`);
  for (const text of [summary, full]) for (const v of Object.values({ ...unlisted, ...shaped })) if (v !== "plain") assert.ok(!text.includes(v), v);
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
