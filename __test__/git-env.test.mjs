// git with env files, through a real pi (approval mode ask, print mode): whatever hides an env
// file from bash leaves git's view of the tree consistent. Templates (.env.example) are not
// secrets; a tracked env file whose content git held before the sandbox's first session hides
// nothing; one with a local secret added stays hidden, and a git command that trips on it gets
// a note naming it and the answer that shows it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, picking, runPi, runPiRpc } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });

/** A world whose project is a repository (set up before pi starts: the user's history). */
function repoWorld(name, files, more = () => {}) {
  const w = makeWorld(name);
  // Commits inside the sandbox need an identity: the home's gitconfig is readable there.
  writeFileSync(path.join(w.home, ".gitconfig"), "[user]\n\tname = t\n\temail = t@t\n[init]\n\tdefaultBranch = main\n");
  const git = (...args) =>
    execFileSync("git", args, { cwd: w.project, env: { ...process.env, HOME: w.home, GIT_CEILING_DIRECTORIES: w.root }, encoding: "utf8" });
  git("init", "-q");
  // No `.pi/` in the ignores: the sandbox's empty `.pi` placeholder must not trouble git.
  for (const [rel, content] of Object.entries({ "a.txt": "a\n", ...files })) writeFileSync(path.join(w.project, rel), content);
  git("add", "-A");
  git("commit", "-qm", "init");
  git("checkout", "-qb", "feat");
  writeFileSync(path.join(w.project, "f.txt"), "f\n");
  git("add", "f.txt");
  git("commit", "-qm", "feat");
  git("checkout", "-q", "main");
  writeFileSync(path.join(w.project, "m.txt"), "m\n");
  git("add", "m.txt");
  git("commit", "-qm", "main");
  more(git, w);
  return { w, git };
}

/** One bash call running each git flow: a line `OK <name>`, or `FAIL <name>` and its output. */
const FLOWS = {
  status: 'test -z "$(git status --porcelain)"',
  diff: 'echo more >> a.txt && d=$(git diff --stat) && case "$d" in *a.txt*) ;; *) false ;; esac',
  stash: "git stash -q && test -z \"$(git status --porcelain)\" && git stash pop -q",
  "stash-u": "echo u > u.txt && git stash -u -q && test ! -e u.txt && git stash pop -q && test -e u.txt",
  "add-commit": "git add -A && git commit -qm work && test -z \"$(git status --porcelain)\"",
  // The project's .pi placeholder is neither listed nor removed (before: "failed to remove .pi/").
  clean:
    'echo c > c.txt && mkdir d && echo d > d/x && test "$(git clean -fdn)" = "$(printf \'Would remove c.txt\\nWould remove d/\')" && git clean -fdq && test ! -e c.txt && test ! -e d && test -z "$(git status --porcelain --untracked-files=all)"',
  rebase: "git checkout -q feat && git rebase -q main && git checkout -q main",
  worktree: 'git worktree add -q -b wt-feat wt feat && test -z "$(git -C wt status --porcelain)"',
};
const flows = (extra = "") =>
  Object.entries(FLOWS)
    .map(([n, body]) => `f() { ${body}; }\nif out=$(f 2>&1); then echo "OK ${n}"; else echo "FAIL ${n}"; echo "$out"; fi`)
    .join("\n") + `\n${extra}\necho END`;

function assertFlows(text, names = Object.keys(FLOWS)) {
  assert.match(text, /END/, text);
  for (const n of names) assert.match(text, new RegExp(`^OK ${n}$`, "m"), `${n}:\n${text}`);
}

const ENV_SECRET = "LOCAL_SECRET=s3cr3t-4242\n";

test("a repository that tracks .env.example and ignores .env: every git flow works, the template is readable, .env stays hidden", async (t) => {
  const { w } = repoWorld("git-template", { ".gitignore": ".env\n", ".env.example": "API_KEY=\n" }, (_, w) =>
    writeFileSync(path.join(w.project, ".env"), ENV_SECRET),
  );
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [
      [
        call("bash", { command: flows("cat .env.example; cat .env; cat wt/.env.example") }),
        call("read", { path: ".env.example" }),
        call("read", { path: ".env" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, template, env] = r.results.map((x) => x.text);
  assertFlows(bash);
  assert.doesNotMatch(bash, /s3cr3t-4242/);
  assert.match(bash, /API_KEY=/);
  assert.doesNotMatch(bash, /moved to/);
  assert.match(template, /API_KEY=/, template);
  assert.match(env, /Blocked read of/, env);
  assert.ok(existsSync(path.join(w.project, "wt", ".env.example")), "the worktree's template stays");
});

test("a repository that tracks .env: every git flow works while its content is what git holds; checking out a branch that tracks it keeps it", async (t) => {
  const { w } = repoWorld("git-tracked", { ".env": "APP_ENV=dev\n" }, (git, w) => {
    git("checkout", "-qb", "otherenv");
    writeFileSync(path.join(w.project, ".env"), "APP_ENV=prod\n");
    git("commit", "-qam", "other env");
    git("checkout", "-q", "main");
  });
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [
      [
        call("bash", { command: flows("git checkout -q feat && test -z \"$(git status --porcelain --untracked-files=no)\" && echo OK checkout; cat .env; cat wt/.env") }),
        // A checkout that must rewrite .env: denyWrite keeps it read-only, and the note says so.
        call("bash", { command: "git checkout -q otherenv; echo END" }),
        // The read tool agrees with bash: what git held is read without asking.
        call("read", { path: ".env" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, otherenv, read] = r.results.map((x) => x.text);
  assert.match(read, /^APP_ENV=dev/, read);
  assert.match(otherenv, /\.env is read-only in the sandbox: it matches denyWrite pattern '\.env'/, otherenv);
  assertFlows(bash, [...Object.keys(FLOWS), "checkout"]);
  assert.match(bash, /APP_ENV=dev\nAPP_ENV=dev/, bash);
  assert.doesNotMatch(bash, /moved to/);
  assert.equal(readFileSync(path.join(w.project, "wt", ".env"), "utf8"), "APP_ENV=dev\n");
});

test("a repository that ignores .env: checking out a branch that tracks it, and a worktree of it, keep the .env git wrote", async (t) => {
  const { w } = repoWorld("git-ignored", { ".gitignore": ".env\n" }, (git, w) => {
    git("checkout", "-qb", "withenv");
    writeFileSync(path.join(w.project, ".env"), "FROM_GIT=1\n");
    git("add", "-f", ".env");
    git("commit", "-qm", "env");
    git("checkout", "-q", "main");
  });
  t.after(w.cleanup);
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [
      [
        call("bash", { command: flows() }),
        call("bash", { command: "git worktree add -q -b wtb wt2 withenv && git checkout -q withenv && echo checked-out" }),
        call("bash", { command: "git status --porcelain; cat .env wt2/.env; git -C wt2 status --porcelain; echo END" }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, checkout, after] = r.results.map((x) => x.text);
  assertFlows(bash);
  assert.match(checkout, /checked-out/, checkout);
  assert.doesNotMatch(checkout, /moved to/, checkout);
  assert.match(after, /^FROM_GIT=1\nFROM_GIT=1\nEND/m, after);
  assert.equal(readFileSync(path.join(w.project, ".env"), "utf8"), "FROM_GIT=1\n");
});

test("a tracked .env with a local secret added stays hidden: git's failures name it and the answer, and a guessed blob written during the session does not show it", async (t) => {
  const { w } = repoWorld("git-secret", { ".env": "APP_ENV=dev\n" }, (_, w) =>
    writeFileSync(path.join(w.project, ".env"), `APP_ENV=dev\n${ENV_SECRET}`),
  );
  t.after(w.cleanup);
  const guess = `APP_ENV=dev\\n${ENV_SECRET.trim()}\\n`;
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [
      [
        call("bash", { command: "cat .env; git stash; echo END" }),
        // The attacker's right guess, written into git's objects (loose, then packed) and
        // the index, for this session or the next to take as proof.
        call("bash", {
          command: `id=$(printf '${guess}' | git hash-object -w --stdin) && git update-index --cacheinfo 100644,$id,.env && echo planted $id && git repack -adq`,
        }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [first, planted] = r.results.map((x) => x.text);
  assert.match(first, /\.env is hidden from commands in the sandbox[^\n]*Allow for this session/, first);
  assert.match(planted, /planted [0-9a-f]{40}/, planted);
  // The next session: the planted objects are older than it, not older than the sandbox.
  const next = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [[call("bash", { command: "cat .env; git diff --quiet; echo END" }), call("read", { path: ".env" })]],
  });
  assert.equal(next.code, 0, next.stderr);
  const [second, read] = next.results.map((x) => x.text);
  assert.match(second, /END/, second);
  assert.match(read, /Blocked read of/, read);
  assert.doesNotMatch(first + planted + second + read, /s3cr3t-4242/);
});

test("templates marked secret by filesystem.envTemplatesSecret are hidden again, and the note says which key did it", async (t) => {
  // Not committed: content git holds would hide nothing, secret or not.
  const { w } = repoWorld("git-template-secret", {}, (_, w) => writeFileSync(path.join(w.project, ".env.example"), "API_KEY=\n"));
  t.after(w.cleanup);
  mkdirSync(path.join(w.agentDir, "extensions"), { recursive: true });
  writeFileSync(path.join(w.agentDir, "extensions", "sandbox.json"), JSON.stringify({ filesystem: { envTemplatesSecret: true } }));
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [[call("bash", { command: "cat .env.example; git add -A; echo END" }), call("read", { path: ".env.example" })]],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash, read] = r.results.map((x) => x.text);
  assert.doesNotMatch(bash, /API_KEY/, bash);
  assert.match(bash, /\.env\.example is hidden from commands[^\n]*envTemplatesSecret is true in [^\n]*sandbox\.json/, bash);
  assert.match(read, /Blocked read of/, read);
});

test("the answer the note names unblocks git: after \"Allow for this session\" in the read dialog, git diff reads the hidden .env", async (t) => {
  const { w } = repoWorld("git-answer", { ".env": "APP_ENV=dev\n" }, (_, w) =>
    writeFileSync(path.join(w.project, ".env"), `APP_ENV=dev\n${ENV_SECRET}`),
  );
  t.after(w.cleanup);
  const diff = call("bash", { command: "git diff --stat; echo END" });
  const r = await runPiRpc({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    answer: picking(/for this session/),
    script: [[diff], [call("read", { path: ".env" })], [diff]],
  });
  assert.equal(r.code, 0, r.stderr);
  const [before, read, after] = r.results.map((x) => x.text);
  assert.match(before, /cannot hash \.env/, before);
  assert.match(before, /\.env is hidden from commands in the sandbox[^\n]*Allow for this session/, before);
  assert.equal(r.dialogs.length, 1, JSON.stringify(r.dialogs));
  assert.match(read, /s3cr3t-4242/, "the user allowed it");
  assert.match(after, /\.env \| 1 \+\n/, after);
  assert.doesNotMatch(after, /hidden from commands/, after);
});

test("the project's missing .pi stays empty for pi: a command cannot fill it, rename it or check it out from git, and git inside leaves it alone", async (t) => {
  const { w, git } = repoWorld("git-pi-placeholder", {});
  t.after(w.cleanup);
  const marker = path.join(w.root, "extension-loaded");
  const ext = `import { writeFileSync } from "node:fs"; writeFileSync(${JSON.stringify(marker)}, "1"); export default function () {}`;
  const b64 = Buffer.from(ext).toString("base64");
  const r = await runPi({
    world: w,
    env: { GIT_CEILING_DIRECTORIES: w.root },
    script: [
      [
        call("bash", {
          command: [
            "echo u > u.txt; git stash -u -q; echo stash=$?; git stash pop -q; echo pop=$?; git clean -fdq; echo clean=$?",
            "git status --porcelain --untracked-files=all; echo status-done",
            "mkdir -p .pi/extensions; echo '{}' > .pi/settings.json; rm .pi/.gitignore; mv .pi .pi-old",
            // The same file through git: committed with plumbing, then checked out.
            `id=$(echo ${b64} | base64 -d | git hash-object -w --stdin) && git update-index --add --cacheinfo 100644,$id,.pi/extensions/x.ts && git commit -qm ext && echo committed`,
            "git checkout -f HEAD -- .pi; git reset -q --hard; echo END",
          ].join("\n"),
        }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [bash] = r.results.map((x) => x.text);
  assert.match(bash, /END/, bash);
  // Refused while the command runs (the audit after it would be too late for a pi that starts
  // meanwhile): read-only, and a mount point cannot be renamed.
  assert.match(bash, /mkdir: cannot create directory .\.pi\/extensions.: Read-only file system/, bash);
  assert.match(bash, /\.pi\/settings\.json: Read-only file system/, bash);
  assert.match(bash, /mv: cannot move .\.pi. to .\.pi-old.: Device or resource busy/, bash);
  assert.match(bash, /committed\n[^\n]*cannot create directory at '\.pi\/extensions': Read-only file system/, bash);
  // git leaves the placeholder alone (before: "failed to remove .pi/", exit 1), and does not
  // list it.
  assert.match(bash, /^stash=0\n(?:Already up to date\.\n)?pop=0\nclean=0\nstatus-done$/m, bash);
  assert.doesNotMatch(bash, /failed to remove/, bash);
  assert.doesNotMatch(bash, /moved to/, bash);
  assert.deepEqual(readdirSync(path.join(w.project, ".pi")), [], "the host's .pi stays empty");
  assert.ok(!existsSync(path.join(w.project, ".pi-old")));
  // The user's next pi in the project loads nothing from it, and its commands' git leaves
  // the placeholder kept from this session alone too (the user first drops the commit that
  // tracks .pi/extensions/x.ts, which git inside could not check out).
  git("reset", "-q", "--hard", "HEAD~1");
  const again = "echo u > u.txt && git stash -u -q && test ! -e u.txt && git stash pop -q && git clean -fdq && test ! -e u.txt && echo AGAIN-OK";
  const next = await runPi({ world: w, env: { GIT_CEILING_DIRECTORIES: w.root }, script: [[call("bash", { command: again })]] });
  assert.equal(next.code, 0, next.stderr);
  assert.ok(!existsSync(marker), "pi loaded an extension a command left in .pi");
  assert.match(next.results[0].text, /AGAIN-OK/, next.results[0].text);
});
