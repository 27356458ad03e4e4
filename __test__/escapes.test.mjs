// Escapes found by attacking the sandbox through a real pi, each replayed through the
// extension's real bash and file tools, then checked the way it would have hurt: by the user's
// own git (and pi) running on the host afterwards. A hook or command that runs on the host
// leaves a marker file; every test asserts the marker is absent. And the reverse: real work
// (git, venvs, mktemp, odd file names) keeps working inside.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeWorld, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });
const byId = (results) => Object.fromEntries(results.map((r) => [r.id, r.text]));

/** The user's git, on the host, outside any sandbox. */
function hostGit(cwd, ...args) {
  return spawnSync("git", ["-c", "user.email=u@h", "-c", "user.name=user", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: cwd },
  });
}

/** A repository with one commit, made by the user before pi starts. */
function userRepo(dir) {
  mkdirSync(dir, { recursive: true });
  hostGit(dir, "init", "-q", "-b", "main");
  writeFileSync(path.join(dir, "a.txt"), "a\n");
  hostGit(dir, "add", "-A");
  hostGit(dir, "commit", "-qm", "init");
}

/** A hook body that leaves `marker` if it ever runs on the host. */
const evil = (marker) => `#!/bin/sh\necho ran >> ${marker}\n`;

test("git config reached through config.worktree, commondir, a hard link or a .git/hooks symlink never runs on the host", async (t) => {
  const w = makeWorld("esc-git");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  const p = (rel) => path.join(w.project, rel);
  userRepo(w.project);
  // sparse-checkout sets extensions.worktreeConfig; the user has a config.worktree
  hostGit(w.project, "config", "extensions.worktreeConfig", "true");
  hostGit(w.project, "config", "--worktree", "core.sparseCheckout", "false");
  // the user's hooks live in the worktree, .git/hooks links to them
  mkdirSync(p("githooks"));
  spawnSync("rm", ["-rf", p(".git/hooks")]);
  symlinkSync("../githooks", p(".git/hooks"));
  // a second name of .git/config in the workspace (made before the session)
  linkSync(p(".git/config"), p("cfg-link"));
  mkdirSync(p("evilhooks"));
  writeFileSync(p("evilhooks/pre-commit"), evil(marker));
  chmodSync(p("evilhooks/pre-commit"), 0o755);

  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: "git config --worktree core.hooksPath evilhooks; echo worktree=$?" })],
      [call("bash", { command: `printf '[core]\\n\\thooksPath = evilhooks\\n' >> cfg-link; echo link=$?` })],
      [
        call("write", { path: "cfg-link", content: "[core]\n\thooksPath = evilhooks\n" }),
        call("write", { path: "githooks/pre-commit", content: evil(marker) }),
      ],
      [call("bash", { command: `printf '${evil(marker).replace(/\n/g, "\\n")}' > githooks/pre-commit; echo target=$?` })],
      [call("bash", { command: "rm .git/hooks && ln -s ../evilhooks .git/hooks && echo swapped" })],
      [call("bash", { command: "mkdir -p x/.git && printf '[core]\\n\\thooksPath = /x\\n' > x/.git/config; echo ../../x/.git > .git/commondir; echo commondir=$?" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /worktree=(?!0)\d/, "config.worktree is read-only");
  assert.match(res.call_1_0, /link=1/);
  assert.match(res.call_1_0, /Read-only file system/);
  assert.match(res.call_2_0, /hard link to protected .*\.git\/config/);
  assert.match(res.call_2_1, /target of protected link .*\.git\/hooks/);
  assert.equal(existsSync(p("githooks/pre-commit")), false);
  assert.match(res.call_3_0, /target=1/, "the directory .git/hooks points to is protected");
  assert.match(res.call_4_0, /swapped/);
  assert.match(res.call_4_0, /\[pi-sandbox\] .*\.git\/hooks was created or changed by the command and moved to/);
  assert.match(res.call_5_0, /\[pi-sandbox\] .*\.git\/commondir was created or changed/);
  // the link the user made is back, pointing where it did
  assert.equal(spawnSync("readlink", [p(".git/hooks")], { encoding: "utf8" }).stdout.trim(), "../githooks");
  assert.equal(existsSync(p(".git/commondir")), false);
  assert.doesNotMatch(readFileSync(p(".git/config"), "utf8"), /hooksPath/);
  assert.doesNotMatch(readFileSync(p(".git/config.worktree"), "utf8"), /hooksPath/);

  // the user's git afterwards: status and a commit run no planted hook
  writeFileSync(p("b.txt"), "b\n");
  assert.equal(hostGit(w.project, "status", "--porcelain").status, 0);
  hostGit(w.project, "add", "b.txt");
  const c = hostGit(w.project, "commit", "-qm", "user commit");
  assert.equal(c.status, 0, c.stderr);
  assert.equal(existsSync(marker), false, `a planted hook ran on the host: ${c.stderr}`);
});

test("a submodule's config and a worktree's config.worktree, which git rewrites itself, are checked after each command", async (t) => {
  const w = makeWorld("esc-sub");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  const lib = path.join(w.root, "outside", "lib");
  userRepo(lib);
  userRepo(w.project);
  assert.equal(hostGit(w.project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib").status, 0);
  hostGit(w.project, "commit", "-qm", "add lib");
  hostGit(w.project, "config", "extensions.worktreeConfig", "true");
  assert.equal(hostGit(w.project, "worktree", "add", "-q", "wt").status, 0);
  const fsmonitor = `echo ran >> ${marker}; false`;
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `git -C lib config core.fsmonitor '${fsmonitor}'; echo sub=$?` })],
      [call("bash", { command: `git -C wt config --worktree core.fsmonitor '${fsmonitor}'; echo wt=$?` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /\.git\/modules\/lib\/config was created or changed by the command and moved to .*core\.fsmonitor.*previous content was put back/);
  assert.match(res.call_1_0, /\.git\/worktrees\/wt\/config\.worktree was created or changed by the command and moved to .*core\.fsmonitor/);
  // the user's git in both places afterwards: no fsmonitor runs
  hostGit(path.join(w.project, "lib"), "status");
  hostGit(path.join(w.project, "wt"), "status");
  assert.equal(existsSync(marker), false, "a planted fsmonitor ran on the host");
  // git still knows both: the previous content was put back, nothing else lost
  assert.equal(hostGit(path.join(w.project, "lib"), "rev-parse", "--is-inside-work-tree").stdout.trim(), "true");
  assert.equal(hostGit(path.join(w.project, "wt"), "rev-parse", "--is-inside-work-tree").stdout.trim(), "true");
});

test("a bare repository the agent makes runs no hook when the user pushes to it", async (t) => {
  const w = makeWorld("esc-bare");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  userRepo(w.project);
  const hook = evil(marker).replace(/\n/g, "\\n");
  const r = await runPi({
    world: w,
    script: [
      [
        call("bash", {
          command: `git init -q --bare evil.git && printf '${hook}' > evil.git/hooks/pre-receive && chmod +x evil.git/hooks/pre-receive && git remote add evil ./evil.git; echo remote=$?`,
        }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /remote=(?!0)\d/, "adding a remote writes .git/config: refused");
  assert.match(res.call_0_0, /evil\.git\/hooks was created or changed by the command and moved to/);
  const push = hostGit(w.project, "push", "-q", "./evil.git", "main");
  assert.equal(push.status, 0, push.stderr);
  assert.equal(existsSync(marker), false, "the bare repository's hook ran on the host");
});

test("a .git file the agent writes does not make another repository writable", async (t) => {
  const w = makeWorld("esc-gitfile");
  t.after(w.cleanup);
  const other = path.join(w.root, "outside", "other");
  userRepo(other);
  // the project is not a repository: the agent plants a .git file pointing at another one
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `echo 'gitdir: ${other}/.git' > .git && echo planted` })],
      [call("bash", { command: `echo x > ${other}/.git/hooks/post-checkout; echo hook=$?; echo x > ${other}/.git/HEAD-evil; echo data=$?` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /planted/);
  assert.match(res.call_1_0, /hook=1/);
  assert.match(res.call_1_0, /data=1/, "the other repository stays read-only: no back-link names this .git file");
  assert.equal(existsSync(path.join(other, ".git", "hooks", "post-checkout")), false);
});

test("a gitfile pointing at a git dir the agent assembled runs nothing when the user runs git there", async (t) => {
  const w = makeWorld("esc-gitdir");
  t.after(w.cleanup);
  const marker = path.join(w.root, "outside", "HOST-RAN");
  userRepo(w.project);
  // git takes `evil` as a repository: HEAD and a commondir naming `store`, which has objects
  // and refs (and no HEAD) and a config whose fsmonitor git runs on every status
  const assemble = [
    "mkdir -p store/objects store/refs evil sub",
    `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "echo ran >> ${marker}; false"\\n' > store/config`,
    "echo 'ref: refs/heads/main' > evil/HEAD",
    "echo ../store > evil/commondir",
    "echo 'gitdir: ../evil' > sub/.git",
    "echo assembled",
  ].join(" && ");
  const r = await runPi({
    world: w,
    script: [[call("bash", { command: assemble })], [call("write", { path: "sub2/.git", content: "gitdir: ../evil\n" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /assembled/);
  assert.match(res.call_0_0, /store\/config was created or changed by the command and moved to/);
  assert.match(res.call_0_0, /sub\/\.git was created or changed by the command and moved to/);
  assert.match(res.call_1_0, /gitfile/);
  assert.equal(existsSync(path.join(w.project, "sub2", ".git")), false);
  // the user runs git where the agent pointed: nothing of the agent's runs
  const st = hostGit(path.join(w.project, "sub"), "status");
  assert.equal(existsSync(marker), false, `fsmonitor ran on the host: ${st.stderr}`);
});

test("reads and writes through /proc/self/cwd and `..` after a planted link reach the file the kernel opens", async (t) => {
  const w = makeWorld("esc-proc");
  t.after(w.cleanup);
  mkdirSync(path.join(w.root, "outside", "deep"), { recursive: true });
  symlinkSync(path.join(w.root, "outside", "deep"), path.join(w.project, "l"));
  const viaProc = "/proc/self/cwd/../home/.ssh/id_rsa";
  const viaLink = `${w.project}/l/../escaped.sh`;
  const r = await runPi({
    world: w,
    script: [[call("read", { path: viaProc }), call("write", { path: viaLink, content: "echo pwned" }), call("read", { path: `${w.project}/l/../../home/.ssh/id_rsa` })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0, /SECRET-KEY-0451/);
  assert.match(res.call_0_0, /denyRead entry '~\/\.ssh'/);
  assert.match(res.call_0_1, /outside every allowWrite directory/);
  assert.equal(existsSync(path.join(w.root, "outside", "escaped.sh")), false);
  assert.doesNotMatch(res.call_0_2, /SECRET-KEY-0451/);
});

test("an env file reached through a link named .env is an env file to every tool: read, grep and bash", async (t) => {
  const w = makeWorld("esc-envlink");
  t.after(w.cleanup);
  mkdirSync(path.join(w.home, "secrets"), { recursive: true });
  writeFileSync(path.join(w.home, "secrets", "api.env"), "TOKEN=LINKED-SECRET-77\n");
  symlinkSync(path.join(w.home, "secrets", "api.env"), path.join(w.project, ".env"));
  // another member: a relative chain whose first name is the env file's
  writeFileSync(path.join(w.project, "settings.ini"), "TOKEN=CHAINED-SECRET-78\n");
  symlinkSync("settings-link", path.join(w.project, ".env.local"));
  symlinkSync("settings.ini", path.join(w.project, "settings-link"));
  const r = await runPi({
    world: w,
    args: ["--tools", "read,bash,grep"],
    script: [
      [call("read", { path: ".env" }), call("read", { path: ".env.local" }), call("read", { path: "settings.ini" })],
      [call("bash", { command: "cat .env .env.local; cat ~/secrets/api.env; echo done" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0, /LINKED-SECRET-77/);
  assert.match(res.call_0_0, /env file/);
  assert.doesNotMatch(res.call_0_1, /CHAINED-SECRET-78/);
  // under its own name too: bash hides it, so the read tool asks (refused without a UI)
  assert.doesNotMatch(res.call_0_2, /CHAINED-SECRET-78/);
  assert.match(res.call_1_0, /done/);
  assert.doesNotMatch(res.call_1_0, /LINKED-SECRET-77|CHAINED-SECRET-78/);
});

test("a link inside .pi makes what it leads to protected: an extension or sandbox.json linked into the worktree cannot be rewritten, and a missing target cannot be created", async (t) => {
  const w = makeWorld("esc-pilink");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  mkdirSync(p(".pi/extensions"), { recursive: true });
  mkdirSync(p("tools"));
  writeFileSync(p("tools/ext.ts"), "export default function () {}\n");
  writeFileSync(p("tools/sandbox.json"), "{}\n");
  symlinkSync("../../tools/ext.ts", p(".pi/extensions/ext.ts"));
  symlinkSync("../tools/sandbox.json", p(".pi/sandbox.json"));
  symlinkSync("../../tools/later.ts", p(".pi/extensions/later.ts"));
  const r = await runPi({
    world: w,
    script: [
      [call("write", { path: "tools/ext.ts", content: "PWNED-1" }), call("edit", { path: "tools/sandbox.json", edits: [{ oldText: "{}", newText: '{"enabled":false}' }] })],
      [call("write", { path: "tools/later.ts", content: "PWNED-2" })],
      [call("bash", { command: "echo PWNED-3 >> tools/ext.ts; echo PWNED-4 > tools/sandbox.json; echo PWNED-5 > tools/later.ts; echo done" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /target of protected link/);
  assert.match(res.call_0_1, /target of protected link/);
  assert.match(res.call_1_0, /target of protected link/);
  assert.match(res.call_2_0, /done/);
  assert.match(res.call_2_0, /later\.ts was created or changed by the command and moved to/);
  assert.equal(readFileSync(p("tools/ext.ts"), "utf8"), "export default function () {}\n");
  assert.equal(readFileSync(p("tools/sandbox.json"), "utf8"), "{}\n");
  assert.equal(existsSync(p("tools/later.ts")), false);
});

test("extensions pi's settings load are protected with the folder they import from: a listed file, a project package and its dependencies, a listed file not made yet, the package's folder moved away", async (t) => {
  const w = makeWorld("esc-pisettings");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  const ext = "export default function () {}\n";
  mkdirSync(p("tools"));
  writeFileSync(p("tools/ext.ts"), ext);
  writeFileSync(p("tools/helper.ts"), "export const x = 1;\n");
  mkdirSync(p("vendor/pkg/node_modules/dep"), { recursive: true });
  writeFileSync(p("vendor/pkg/package.json"), JSON.stringify({ name: "pkg", pi: { extensions: ["./index.ts"] } }));
  writeFileSync(p("vendor/pkg/index.ts"), ext);
  writeFileSync(p("vendor/pkg/node_modules/dep/index.js"), "module.exports = 1;\n");
  mkdirSync(p(".pi"));
  writeFileSync(p(".pi/settings.json"), JSON.stringify({ packages: ["../vendor/pkg"] }));
  const r = await runPi({
    world: w,
    settings: { extensions: [p("tools/ext.ts"), p("later/ext.ts")] },
    script: [
      [call("write", { path: "tools/ext.ts", content: "PWNED-1" }), call("write", { path: "tools/helper.ts", content: "PWNED-2" })],
      [call("edit", { path: "vendor/pkg/node_modules/dep/index.js", edits: [{ oldText: "1", newText: "'PWNED-3'" }] })],
      [call("bash", { command: "echo PWNED >> tools/helper.ts; echo h=$?; echo PWNED > vendor/pkg/node_modules/dep/index.js; echo d=$?; mkdir -p later && echo PWNED > later/ext.ts; echo done" })],
      // Not named by the settings: the package's folder moved away and a new one made in its place.
      [call("bash", { command: "mv vendor vendor-old && mkdir -p vendor/pkg && cp vendor-old/pkg/package.json vendor/pkg/ && echo 'PWNED-4' > vendor/pkg/index.ts; echo moved=$?" })],
      [call("bash", { command: "echo still > notes.txt && cat notes.txt" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /pi extension/);
  assert.match(res.call_0_1, /pi extension/);
  assert.match(res.call_1_0, /pi extension/);
  assert.match(res.call_2_0, /h=1/);
  assert.match(res.call_2_0, /d=1/);
  assert.match(res.call_2_0, /later was created or changed by the command and moved to/);
  assert.match(res.call_4_0, /still/, "the rest of the project stays writable");
  assert.equal(readFileSync(p("tools/ext.ts"), "utf8"), ext);
  assert.equal(readFileSync(p("tools/helper.ts"), "utf8"), "export const x = 1;\n");
  assert.equal(readFileSync(p("vendor/pkg/node_modules/dep/index.js"), "utf8"), "module.exports = 1;\n");
  assert.equal(existsSync(p("later/ext.ts")), false);
  const loaded = existsSync(p("vendor/pkg/index.ts")) ? readFileSync(p("vendor/pkg/index.ts"), "utf8") : ext;
  assert.equal(loaded, ext, "pi would load a package the command put in place of the listed one");
});

test("what a loaded extension imports is protected too: a package in the project's node_modules and what it depends on, a file outside its folder, one not made yet; and pi's loader caches in the host's /tmp", async (t) => {
  const w = makeWorld("esc-piimports");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  mkdirSync(p(".pi/extensions"), { recursive: true });
  mkdirSync(p("lib"));
  mkdirSync(p("node_modules/leftpad"), { recursive: true });
  mkdirSync(p("node_modules/dep-of-leftpad"), { recursive: true });
  mkdirSync(p("node_modules/unrelated"), { recursive: true });
  writeFileSync(p("node_modules/leftpad/package.json"), JSON.stringify({ name: "leftpad", dependencies: { "dep-of-leftpad": "1" } }));
  writeFileSync(p("node_modules/leftpad/index.js"), "module.exports = 1;\n");
  writeFileSync(p("node_modules/dep-of-leftpad/index.js"), "module.exports = 2;\n");
  writeFileSync(p("node_modules/unrelated/index.js"), "module.exports = 3;\n");
  writeFileSync(p("lib/util.ts"), "export const u = 1;\n");
  writeFileSync(p("lib/shared.ts"), "export const s = 1;\n");
  writeFileSync(p("lib/dyn.ts"), "export const d = 1;\n");
  writeFileSync(p("package.json"), JSON.stringify({ name: "proj", imports: { "#shared": "./lib/shared.ts" } }));
  // A pnpm layout: the package is a link, its dependency sits beside its real folder.
  mkdirSync(p("node_modules/.pnpm/fmt@1/node_modules/fmt"), { recursive: true });
  mkdirSync(p("node_modules/.pnpm/colors@1/node_modules/colors"), { recursive: true });
  writeFileSync(p("node_modules/.pnpm/fmt@1/node_modules/fmt/package.json"), JSON.stringify({ name: "fmt", dependencies: { colors: "1" } }));
  writeFileSync(p("node_modules/.pnpm/fmt@1/node_modules/fmt/index.js"), "module.exports = 5;\n");
  writeFileSync(p("node_modules/.pnpm/colors@1/node_modules/colors/index.js"), "module.exports = 4;\n");
  symlinkSync("../../colors@1/node_modules/colors", p("node_modules/.pnpm/fmt@1/node_modules/colors"));
  symlinkSync(".pnpm/fmt@1/node_modules/fmt", p("node_modules/fmt"));
  // Imports as users write them: a bare package, a relative file with its .js spelling, one not made yet (guarded by a catch),
  // a package mapping (#shared), a pnpm-linked package, an optional package not installed, a comment before a dynamic import's name.
  writeFileSync(
    p(".pi/extensions/tool.ts"),
    [
      'import pad from "leftpad";',
      'import { u } from "../../lib/util.js";',
      'import { s } from "#shared";',
      'import fmt from "fmt";',
      "export default async function () {",
      "  void pad; void u; void s; void fmt;",
      '  try { require("../../lib/later"); } catch {}',
      '  await import("fancy-optional").catch(() => null);',
      '  await import(/* webpackIgnore: true */ "../../lib/dyn.ts");',
      "}",
      "",
    ].join("\n"),
  );
  const jiti = path.join(os.tmpdir(), "jiti", "extensions-tool.0123abcd.mjs");
  const r = await runPi({
    world: w,
    script: [
      [call("write", { path: "node_modules/leftpad/index.js", content: "PWNED" }), call("edit", { path: "lib/util.ts", edits: [{ oldText: "1", newText: "2" }] })],
      [call("write", { path: jiti, content: "PWNED" }), call("write", { path: "lib/later.ts", content: "PWNED" })],
      [call("bash", { command: "echo PWNED > node_modules/dep-of-leftpad/index.js; echo d=$?; echo ok > node_modules/unrelated/index.js; echo u=$?; echo x > lib/other.ts; echo o=$?" })],
      [
        call("bash", {
          command: [
            "echo PWNED > lib/util.js; echo js=$?",
            "echo PWNED > lib/shared.ts; echo sh=$?",
            "echo PWNED > node_modules/.pnpm/colors@1/node_modules/colors/index.js; echo pn=$?",
            "mkdir -p node_modules/fancy-optional && echo PWNED > node_modules/fancy-optional/index.js; echo opt=$?",
            "echo PWNED > lib/dyn.ts; echo dyn=$?",
          ].join("; "),
        }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  for (const id of ["call_0_0", "call_0_1", "call_1_1"]) assert.match(res[id], /pi extension/, id);
  // /tmp is the session's own: the write lands there, not in the host's jiti cache.
  assert.match(res.call_1_0, /Successfully wrote/);
  assert.match(res.call_2_0, /d=1/);
  assert.match(res.call_2_0, /u=0/, "a package no extension imports stays writable");
  assert.match(res.call_2_0, /o=0/, "files beside an imported one stay writable");
  assert.equal(readFileSync(p("node_modules/leftpad/index.js"), "utf8"), "module.exports = 1;\n");
  assert.equal(readFileSync(p("lib/util.ts"), "utf8"), "export const u = 1;\n");
  assert.equal(existsSync(jiti), false);
  assert.equal(existsSync(p("lib/later.ts")), false);
  for (const k of ["sh", "pn", "dyn"]) assert.match(res.call_3_0, new RegExp(`${k}=1`), k);
  // Names not made yet can be made; the audit moves them aside after the command.
  assert.match(res.call_3_0, /lib\/util\.js was created or changed by the command and moved to/);
  assert.match(res.call_3_0, /node_modules\/fancy-optional was created or changed by the command and moved to/);
  assert.equal(existsSync(p("lib/util.js")), false, "a .js beside the imported .ts would win");
  assert.equal(existsSync(p("node_modules/fancy-optional/index.js")), false, "an optional package made later would load");
  assert.equal(readFileSync(p("node_modules/.pnpm/colors@1/node_modules/colors/index.js"), "utf8"), "module.exports = 4;\n");
});

test("a listed folder that holds the project: what pi would look for in the project's folder is protected", async (t) => {
  const w = makeWorld("esc-pilisted");
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    settings: { extensions: [w.root] },
    script: [[call("write", { path: "package.json", content: JSON.stringify({ pi: { extensions: ["./evil.ts"] } }) }), call("write", { path: "index.ts", content: "PWNED" }), call("write", { path: "src/ok.ts", content: "fine" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /pi extension/);
  assert.match(res.call_0_1, /pi extension/);
  assert.doesNotMatch(res.call_0_2, /pi extension|Blocked/);
  assert.equal(existsSync(path.join(w.project, "package.json")), false);
});

test("a project that is itself an extension pi's settings load is kept read-only, and the session says so at its start", async (t) => {
  const w = makeWorld("esc-pisettings-ro");
  t.after(w.cleanup);
  const p = (rel) => path.join(w.project, rel);
  writeFileSync(p("index.ts"), "export default function () {}\n");
  const r = await runPiRpc({
    world: w,
    settings: { extensions: [p("index.ts")] },
    script: [[call("bash", { command: "echo x > src/new.ts; echo w=$?" }), call("write", { path: "src/a.ts", content: "x" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /w=1/);
  assert.match(res.call_0_1, /pi extension/);
  const notice = r.uiEvents.find((e) => e.method === "notify" && /keeps this project read-only/.test(e.message));
  assert.ok(notice, JSON.stringify(r.uiEvents.map((e) => e.message)));
  assert.match(notice.message, /pi extension/);

  // A link inside .pi that leads to the project makes it read-only the same way.
  const w2 = makeWorld("esc-pilink-ro");
  t.after(w2.cleanup);
  mkdirSync(path.join(w2.project, ".pi/extensions"), { recursive: true });
  symlinkSync("../..", path.join(w2.project, ".pi/extensions/all"));
  const r2 = await runPiRpc({ world: w2, script: [[call("bash", { command: "echo x > src/new.ts; echo w=$?" })]] });
  assert.equal(r2.code, 0, r2.stderr);
  assert.match(byId(r2.results).call_0_0, /w=1/);
  assert.ok(r2.uiEvents.some((e) => e.method === "notify" && /keeps this project read-only.*target of protected link/.test(e.message)));
});

test("pi's own transcripts are not writable from bash: a planted link cannot redirect pi's next append", async (t) => {
  const w = makeWorld("esc-session");
  t.after(w.cleanup);
  const bashrc = path.join(w.home, ".bashrc");
  writeFileSync(bashrc, "# user rc\n");
  const sessions = path.join(w.agentDir, "sessions");
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `for f in $(find ${sessions} -name '*.jsonl'); do ln -sf ${bashrc} "$f" && echo replaced; done; touch ${sessions}/x; echo touch=$?` })],
      [call("bash", { command: "echo second turn" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.doesNotMatch(res.call_0_0, /replaced/);
  assert.match(res.call_0_0, /touch=1/);
  assert.equal(readFileSync(bashrc, "utf8"), "# user rc\n", "pi's transcript landed in ~/.bashrc");
});

test("two bash calls of one turn run one after the other", async (t) => {
  const w = makeWorld("esc-race");
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    script: [
      [
        call("bash", { command: "date +%s%N > a-start; sleep 1; date +%s%N > a-end" }),
        call("bash", { command: "date +%s%N > b-start" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const n = (f) => BigInt(readFileSync(path.join(w.project, f), "utf8").trim());
  const [aStart, aEnd, bStart] = [n("a-start"), n("a-end"), n("b-start")];
  const ordered = bStart >= aEnd || aStart >= bStart; // either order, never interleaved
  assert.ok(ordered, `interleaved: a ${aStart}..${aEnd}, b started ${bStart}`);
});

test("real work keeps working: git commit, rebase -i, merge, stash, submodule update, worktree add and remove", async (t) => {
  const w = makeWorld("work-git");
  t.after(w.cleanup);
  const lib = path.join(w.root, "outside", "lib");
  userRepo(lib);
  userRepo(w.project);
  const sub = hostGit(w.project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib");
  assert.equal(sub.status, 0, sub.stderr);
  hostGit(w.project, "commit", "-qm", "add lib");
  // the submodule's checkout is removed; `submodule update` must bring it back inside
  spawnSync("rm", ["-rf", path.join(w.project, "lib")]);
  mkdirSync(path.join(w.project, "lib"));
  const g = "git -c user.email=a@b -c user.name=agent";
  const script = [
    `${g} checkout -q -b feature && echo f > f.txt && ${g} add f.txt && ${g} commit -qm f1 && echo g > g.txt && ${g} add g.txt && ${g} commit -qm f2 && echo commit=ok`,
    `GIT_SEQUENCE_EDITOR="sed -i 1s/^pick/reword/" GIT_EDITOR="sed -i 1s/f1/first/" ${g} rebase -q -i main && ${g} log --format=%s | head -2 | tr '\\n' ' ' && echo rebase=ok`,
    `${g} checkout -q main && ${g} merge -q --no-edit --no-ff feature && echo merge=ok`,
    `echo wip >> a.txt && ${g} stash -q && ${g} stash pop -q && echo stash=ok`,
    `${g} -c protocol.file.allow=always submodule update -q && test -f lib/a.txt && echo submodule=ok`,
    `${g} worktree add -q wt feature 2>&1; test -f wt/g.txt && echo wtadd=ok`,
    `${g} worktree remove wt && echo wtremove=ok`,
    `mktemp >/dev/null && echo mktemp=ok`,
    `git config user.name agent; echo config=$?`,
  ];
  const r = await runPi({ world: w, script: script.map((command) => [call("bash", { command })]) });
  assert.equal(r.code, 0, r.stderr);
  const out = r.results.map((x) => x.text).join("\n");
  for (const step of ["commit", "rebase", "merge", "stash", "submodule", "wtadd", "wtremove", "mktemp"]) {
    assert.match(out, new RegExp(`${step}=ok`), `${step} failed inside the sandbox:\n${out}`);
  }
  assert.match(out, /first f2|f2 first/, "rebase -i reworded the commit");
  // changing git's config is refused, and the reason says which file
  assert.match(out, /config=(?!0)\d/);
  assert.match(out, /\[pi-sandbox\] .*\.git\/config is read-only in the sandbox: it is part of pi's control surface/);
  assert.doesNotMatch(out, /moved to|could not be neutralised/, "git's own work was taken for an attack");
  // only the stash popped back: nothing else changed in the tree
  assert.equal(hostGit(w.project, "status", "--porcelain", "--ignore-submodules").stdout.trim(), "M a.txt");
});

test("real work keeps working: recreating a virtualenv, and file names that are not UTF-8", async (t) => {
  const w = makeWorld("work-venv");
  t.after(w.cleanup);
  // a name that is not valid UTF-8 anywhere in the workspace, also on a protected file
  writeFileSync(Buffer.concat([Buffer.from(`${w.project}/`), Buffer.from([0xff, 0xfe]), Buffer.from(".txt")]), "x");
  writeFileSync(Buffer.concat([Buffer.from(`${w.project}/`), Buffer.from([0xff]), Buffer.from(".pem")]), "PEM");
  const py = "/usr/bin/python3";
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `${py} -m venv .venv && test -f .venv/lib/python3*/site-packages/pip/_vendor/certifi/cacert.pem && echo venv=ok` })],
      [call("bash", { command: `rm -rf .venv && ${py} -m venv .venv && echo again=ok; ${py} -m venv --clear .venv && echo clear=ok` })],
      [call("bash", { command: `printf x >> $(printf '\\377').pem; echo pem=$?; echo ok > plain.txt && echo plain=ok` })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const out = r.results.map((x) => x.text).join("\n");
  assert.match(out, /venv=ok/, out);
  assert.match(out, /again=ok/, out);
  assert.match(out, /clear=ok/, out);
  assert.match(out, /pem=1/, "a denyWrite file with a non-UTF-8 name stays read-only");
  assert.match(out, /plain=ok/);
  assert.equal(readFileSync(Buffer.concat([Buffer.from(`${w.project}/`), Buffer.from([0xff]), Buffer.from(".pem")]), "utf8"), "PEM");
});

test("hooks wherever git looks for them: a husky-style core.hooksPath is protected like .git/hooks, and its hook still runs inside", async (t) => {
  const w = makeWorld("esc-husky");
  t.after(w.cleanup);
  userRepo(w.project);
  const marker = path.join(w.root, "host-ran");
  const inside = path.join(w.project, "hook-ran-inside");
  // husky 9's layout: git runs .husky/_/<hook>, a wrapper that runs .husky/<hook>.
  mkdirSync(path.join(w.project, ".husky", "_"), { recursive: true });
  writeFileSync(path.join(w.project, ".husky", "_", "pre-commit"), '#!/bin/sh\n. "$(dirname "$0")/../pre-commit"\n');
  chmodSync(path.join(w.project, ".husky", "_", "pre-commit"), 0o755);
  writeFileSync(path.join(w.project, ".husky", "pre-commit"), `#!/bin/sh\ntouch ${inside}\n`);
  hostGit(w.project, "config", "core.hooksPath", ".husky/_");
  const r = await runPi({
    world: w,
    script: [
      [
        call("write", { path: ".husky/pre-commit", content: evil(marker) }),
        call("edit", { path: ".husky/_/pre-commit", edits: [{ oldText: "pre-commit", newText: "x" }] }),
        call("write", { path: ".husky/_/post-commit", content: evil(marker) }),
        call("bash", { command: `echo 'echo ran >> ${marker}' >> .husky/pre-commit; echo rc1=$?; printf '#!/bin/sh\\necho ran >> ${marker}\\n' > .husky/_/post-checkout; echo rc2=$?` }),
        // the real work: a commit inside the sandbox runs the user's hook there
        call("bash", { command: "echo b > b.txt && git add b.txt && git -c user.email=a@b -c user.name=agent commit -qm b && echo committed" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  for (const id of ["call_0_0", "call_0_1", "call_0_2"]) assert.match(res[id], /git hooks directory/, res[id]);
  assert.match(res.call_0_3, /rc1=1/);
  assert.match(res.call_0_3, /rc2=1/);
  assert.match(res.call_0_4, /committed/);
  assert.ok(existsSync(inside), "the husky hook did not run inside the sandbox");
  // The user's own git on the host afterwards runs nothing the agent wrote.
  rmSync(inside);
  writeFileSync(path.join(w.project, "c.txt"), "c\n");
  hostGit(w.project, "add", "-A");
  hostGit(w.project, "commit", "-qm", "user");
  hostGit(w.project, "checkout", "-q", "HEAD~1");
  assert.equal(existsSync(marker), false, "an agent-written hook ran on the host");
  assert.ok(existsSync(inside), "the user's own hook stopped running");
});

test("hooks of nested repositories: a vendored repository's core.hooksPath is protected in the file tools and in bash, whichever comes first", async (t) => {
  const w = makeWorld("esc-nested-hooks");
  t.after(w.cleanup);
  userRepo(w.project);
  const marker = path.join(w.root, "host-ran");
  // Two repositories inside the project, each with its hooks in its worktree: one the file
  // tools meet first (two levels down, reached by an edit: no directory is made on the way),
  // one bash meets first.
  const hooksOf = { "first-file": "tools/githooks", "first-bash": "githooks" };
  for (const [name, hooks] of Object.entries(hooksOf)) {
    const lib = path.join(w.project, "vendor", name);
    userRepo(lib);
    mkdirSync(path.join(lib, hooks), { recursive: true });
    writeFileSync(path.join(lib, hooks, "pre-commit"), "#!/bin/sh\nexit 0\n");
    chmodSync(path.join(lib, hooks, "pre-commit"), 0o755);
    hostGit(lib, "config", "core.hooksPath", hooks);
  }
  const r = await runPi({
    world: w,
    script: [
      [
        call("edit", { path: "vendor/first-file/tools/githooks/pre-commit", edits: [{ oldText: "exit 0", newText: `echo ran >> ${marker}` }] }),
        call("write", { path: "vendor/first-file/tools/githooks/post-commit", content: evil(marker) }),
      ],
      [call("bash", { command: `echo 'echo ran >> ${marker}' >> vendor/first-bash/githooks/pre-commit; echo rc1=$?` })],
      [
        call("bash", { command: `echo 'echo ran >> ${marker}' >> vendor/first-file/tools/githooks/pre-commit; echo rc2=$?; printf '#!/bin/sh\\necho ran >> ${marker}\\n' > vendor/first-file/tools/githooks/post-commit; echo rc3=$?` }),
        call("edit", { path: "vendor/first-bash/githooks/pre-commit", edits: [{ oldText: "exit 0", newText: `echo ran >> ${marker}` }] }),
        // the real work around them goes on
        call("bash", { command: "echo ok > vendor/first-bash/notes.txt && cat vendor/first-bash/notes.txt" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /git hooks directory .*first-file\/tools\/githooks \(core\.hooksPath = tools\/githooks, for /, res.call_0_0);
  assert.match(res.call_0_1, /git hooks directory .*first-file\/tools\/githooks/, res.call_0_1);
  assert.match(res.call_1_0, /rc1=1/, res.call_1_0);
  assert.match(res.call_2_0, /rc2=1/);
  assert.match(res.call_2_0, /rc3=1/);
  assert.match(res.call_2_1, /git hooks directory .*first-bash\/githooks/, res.call_2_1);
  assert.match(res.call_2_2, /^ok$/m);
  // The user's own commits in both repositories afterwards run nothing the agent wrote.
  for (const [name, hooks] of Object.entries(hooksOf)) {
    const lib = path.join(w.project, "vendor", name);
    assert.equal(readFileSync(path.join(lib, hooks, "pre-commit"), "utf8"), "#!/bin/sh\nexit 0\n");
    writeFileSync(path.join(lib, "c.txt"), "c\n");
    hostGit(lib, "add", "-A");
    assert.equal(hostGit(lib, "commit", "-qm", "user").status, 0);
  }
  assert.equal(existsSync(marker), false, "an agent-written hook ran on the host");
});

test("a hard link made earlier to a nested repository's hook or included config is no way around their protection", async (t) => {
  const w = makeWorld("esc-nested-links");
  t.after(w.cleanup);
  userRepo(w.project);
  const marker = path.join(w.root, "host-ran");
  const lib = path.join(w.project, "vendor", "lib");
  userRepo(lib);
  mkdirSync(path.join(lib, "githooks"));
  writeFileSync(path.join(lib, "githooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
  chmodSync(path.join(lib, "githooks", "pre-commit"), 0o755);
  hostGit(lib, "config", "core.hooksPath", "githooks");
  writeFileSync(path.join(lib, "lib.cfg"), "[user]\n\tname = lib\n");
  hostGit(lib, "config", "include.path", "../lib.cfg");
  // Second names the user made before pi started, elsewhere in the project.
  mkdirSync(path.join(w.project, "scripts"));
  linkSync(path.join(lib, "githooks", "pre-commit"), path.join(w.project, "scripts", "pre-commit"));
  linkSync(path.join(lib, "lib.cfg"), path.join(w.project, "scripts", "lib.cfg"));
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `echo 'echo ran >> ${marker}' >> scripts/pre-commit; echo rc1=$?; printf '[core]\\n\\tfsmonitor = "echo ran >> ${marker}; false"\\n' >> scripts/lib.cfg; echo rc2=$?` })],
      [
        call("write", { path: "scripts/pre-commit", content: evil(marker) }),
        call("edit", { path: "scripts/lib.cfg", edits: [{ oldText: "name = lib", newText: `name = lib\n\tfsmonitor = "echo ran >> ${marker}; false"` }] }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /rc1=1/, res.call_0_0);
  assert.match(res.call_0_0, /rc2=1/, res.call_0_0);
  assert.match(res.call_1_0, /hard link|git hooks directory/, res.call_1_0);
  assert.match(res.call_1_1, /hard link|git config file/, res.call_1_1);
  assert.equal(readFileSync(path.join(lib, "githooks", "pre-commit"), "utf8"), "#!/bin/sh\nexit 0\n");
  writeFileSync(path.join(lib, "c.txt"), "c\n");
  hostGit(lib, "add", "-A");
  assert.equal(hostGit(lib, "commit", "-qm", "user").status, 0);
  assert.equal(existsSync(marker), false, "an agent-written hook or config ran on the host");
});

test("config files a repository includes are protected like .git/config: a shared .gitconfig, a conditional include, a nested repository's", async (t) => {
  const w = makeWorld("esc-git-includes");
  t.after(w.cleanup);
  userRepo(w.project);
  const marker = path.join(w.root, "host-ran");
  // What the agent would plant: git runs core.fsmonitor at the user's next `git status`.
  const payload = `[core]\n\tfsmonitor = "echo ran >> ${marker}; false"\n`;
  // The payload is live: included by a repository outside the test's world, it runs.
  const control = path.join(w.root, "control");
  userRepo(control);
  writeFileSync(path.join(w.root, "control.cfg"), payload.replace(marker, `${marker}-control`));
  hostGit(control, "config", "include.path", "../../control.cfg");
  hostGit(control, "status");
  assert.ok(existsSync(`${marker}-control`), "the payload does not run: the test proves nothing");
  // The project shares its config in the worktree, and includes another on a release branch
  // (in a directory that does not exist yet).
  writeFileSync(path.join(w.project, ".gitconfig"), "[user]\n\tname = team\n");
  hostGit(w.project, "config", "include.path", "../.gitconfig");
  hostGit(w.project, "config", "includeIf.onbranch:release.path", "../conf/release.cfg");
  // A vendored repository including its own, which bash meets first.
  const lib = path.join(w.project, "vendor", "lib");
  userRepo(lib);
  writeFileSync(path.join(lib, "lib.cfg"), "[user]\n\tname = lib\n");
  hostGit(lib, "config", "include.path", "../lib.cfg");
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `printf '${payload.replace(/\n/g, "\\n").replace(/\t/g, "\\t")}' >> vendor/lib/lib.cfg; echo rc1=$?` })],
      [
        call("write", { path: ".gitconfig", content: payload }),
        call("bash", { command: `printf '${payload.replace(/\n/g, "\\n").replace(/\t/g, "\\t")}' >> .gitconfig; echo rc2=$?` }),
        call("bash", { command: `mkdir -p conf && printf '${payload.replace(/\n/g, "\\n").replace(/\t/g, "\\t")}' > conf/release.cfg && echo made` }),
        call("edit", { path: "vendor/lib/lib.cfg", edits: [{ oldText: "name = lib", newText: "name = lib\n\tfsmonitor = x" }] }),
        // the real work around them goes on
        call("bash", { command: "git status --short >/dev/null && echo ok > notes.txt && cat notes.txt" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /rc1=1/, res.call_0_0);
  assert.match(res.call_1_0, /\/\.gitconfig is a git config file of the repository .*, included by .*\.git\/config \(include\.path = \.\.\/\.gitconfig\)/, res.call_1_0);
  assert.match(res.call_1_1, /rc2=1/, res.call_1_1);
  assert.match(res.call_1_2, /conf was created or changed by the command and moved to /, res.call_1_2);
  assert.match(res.call_1_3, /vendor\/lib\/lib\.cfg is a git config file/, res.call_1_3);
  assert.match(res.call_1_4, /^ok$/m);
  assert.equal(existsSync(path.join(w.project, "conf")), false);
  // The user's own git afterwards, on the release branch too, runs nothing the agent wrote.
  for (const dir of [w.project, lib]) assert.equal(hostGit(dir, "status").status, 0);
  assert.equal(hostGit(w.project, "checkout", "-q", "-b", "release").status, 0);
  hostGit(w.project, "status");
  assert.equal(existsSync(marker), false, "an agent-written git config ran a command on the host");
});

test("an included git config reached through a link, or not there yet, cannot be swapped: the link, the directories on the way", async (t) => {
  const w = makeWorld("esc-git-include-links");
  t.after(w.cleanup);
  userRepo(w.project);
  const marker = path.join(w.root, "host-ran");
  const payload = `[core]\\n\\tfsmonitor = "echo ran >> ${marker}; false"\\n`;
  // The shared config is a link into conf/; an optional local one is not there yet.
  mkdirSync(path.join(w.project, "conf"));
  mkdirSync(path.join(w.project, "local"));
  writeFileSync(path.join(w.project, "conf", "shared.cfg"), "[user]\n\tname = team\n");
  symlinkSync("conf/shared.cfg", path.join(w.project, ".gitconfig"));
  hostGit(w.project, "config", "include.path", "../.gitconfig");
  hostGit(w.project, "config", "--add", "include.path", "../local/x.cfg");
  const r = await runPi({
    world: w,
    script: [
      [call("bash", { command: `rm .gitconfig && printf '${payload}' > .gitconfig; echo made1` })],
      [call("bash", { command: `mv local local.old; echo rc2=$?; rm -rf local; echo rc3=$?; printf '${payload}' > local/x.cfg; echo made4` })],
      [call("bash", { command: "git status --short >/dev/null && echo ok" })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /\.gitconfig was created or changed by the command and moved to /, res.call_0_0);
  assert.match(res.call_1_0, /rc2=1/, res.call_1_0);
  assert.match(res.call_1_0, /rc3=1/, res.call_1_0);
  assert.match(res.call_1_0, /x\.cfg was created or changed by the command and moved to /, res.call_1_0);
  assert.match(res.call_2_0, /^ok$/m);
  assert.equal(hostGit(w.project, "status").status, 0);
  assert.equal(existsSync(marker), false, "an agent-written git config ran a command on the host");
});

test("a program planted in a PATH directory the agent can write never runs on the host: pi's rg is the system's", async (t) => {
  const w = makeWorld("esc-path");
  t.after(w.cleanup);
  const marker = path.join(w.root, "host-ran");
  const venvBin = path.join(w.project, ".venv", "bin");
  mkdirSync(venvBin, { recursive: true });
  writeFileSync(path.join(w.project, "notes.txt"), "needle here\n");
  const r = await runPi({
    world: w,
    // An activated virtualenv: its bin first on pi's PATH.
    env: { PATH: [venvBin, process.env.PATH].join(":") },
    script: [
      // The agent plants rg where pi would look first, then asks pi to grep.
      [call("bash", { command: `printf '#!/bin/sh\\necho ran >> ${marker}\\nexec /usr/bin/rg "$@"\\n' > .venv/bin/rg && chmod +x .venv/bin/rg && echo planted` })],
      [call("grep", { pattern: "needle", path: "." })],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const res = byId(r.results);
  assert.match(res.call_0_0, /planted/);
  assert.match(res.call_1_0, /needle here/);
  assert.equal(existsSync(marker), false, "pi ran the planted rg on the host");
});
