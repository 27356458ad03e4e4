// Differential test of the two enforcement layers: the path guard (`Sandbox.check`, what pi's
// file tools are held to) against the real bubblewrap sandbox (`prepareBash`, what bash is
// held to), on random file trees and random policies. Every query path is decided by the
// guard and then tried for real inside one sandboxed run per (tree, policy); where the two
// disagree, that is a finding:
//   HOLE   the guard denies, yet bash read the content or wrote and the write survived the
//          audit after the command;
//   DRIFT  the guard allows, yet bash could not read or write (or the audit undid the write);
//   PATH   both acted, but the guard judged another file than the kernel opened;
//   MISSED both let a write through and it survived, yet the file is on pi's control
//          surface by an independent model of protected.rs's table (`onControlSurface`);
//   AUDIT  the audit after the command moved aside a file the command never wrote;
//   SETUP  the sandbox could not be set up or did not run the probe.
import { execFileSync, spawnSync } from "node:child_process";
import { randomInt } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { makeWorld, repo } from "./pi-run.mjs";
import { runPreparedSync } from "./launch.mjs";

const { Sandbox } = await import(path.join(repo, "index.js"));

/** What the probe writes into files it creates: a git config that would run a hook. */
export const PAYLOAD = "[core]\n\thooksPath = /x\n";

/** Entries the audit accepts when git rewrites them (`protected::TABLE`, OnChange::Accept). */
const GIT_BACK_LINK = /^git worktree back-link /;
const ENV_FILE_RULE = "sensitive env file (.env, .env.*)";

// ---- random numbers ---------------------------------------------------------------------

/** A seed from `PI_SANDBOX_DIFF_SEED` (any string or number), or a random one. */
export function seedFrom(value) {
  if (value === undefined || value === "") return randomInt(2 ** 31);
  const n = Number(value);
  return Number.isInteger(n) ? n >>> 0 : hash32(String(value));
}

function hash32(text) {
  let h = 2166136261;
  for (const c of Buffer.from(text)) h = Math.imul(h ^ c, 16777619) >>> 0;
  return h;
}

/** sfc32: small, fast, and the same sequence for the same seed on every platform. */
export function makeRng(seed) {
  let a = 0x9e3779b9;
  let b = 0x243f6a88;
  let c = 0xb7e15162;
  let d = seed >>> 0;
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  const rng = {
    int: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    pick: (list) => list[Math.floor(next() * list.length)],
    /** Picks a key of `weights` ({ key: weight }) in proportion to its weight. */
    weighted: (weights) => {
      let r = next() * Object.values(weights).reduce((s, w) => s + w, 0);
      for (const [k, w] of Object.entries(weights)) if ((r -= w) < 0) return k;
      return Object.keys(weights)[0];
    },
    subset: (list, p) => list.filter(() => next() < p),
  };
  return rng;
}

// ---- the world: a home, pi's agent dir, a project, an outside dir -----------------------

/** The layout of `makeWorld`, rooted at `root` (for a world made by another user). */
export function worldAt(root) {
  const home = path.join(root, "home");
  return {
    root,
    home,
    agentDir: path.join(home, ".pi", "agent"),
    project: path.join(root, "project"),
    outside: path.join(root, "outside"),
    tmp: path.join(root, "tmp"),
    cleanup: () => fs.rmSync(root, { recursive: true, force: true }),
  };
}

/** Empties the world and lays it out again as `makeWorld` does, secret key included. */
function resetWorld(w) {
  for (const name of fs.readdirSync(w.root)) fs.rmSync(path.join(w.root, name), { recursive: true, force: true });
  for (const d of [path.join(w.home, ".ssh"), w.agentDir, path.join(w.project, "src"), w.tmp, w.outside]) {
    fs.mkdirSync(d, { recursive: true });
  }
  fs.writeFileSync(path.join(w.home, ".ssh", "id_rsa"), "SECRET-KEY-0451\n");
}

/**
 * Git without the host's configuration; identity and dates fixed, so a seed makes the same
 * objects. Never above the world: a random tree's broken repository must not lead git up to
 * the checkout this test runs in (a killed run once left a worktree branch there).
 */
function git(w, ...args) {
  const date = "2020-01-01T00:00:00Z";
  return execFileSync("git", ["-c", "user.email=a@b", "-c", "user.name=n", "-c", "init.defaultBranch=main", ...args], {
    env: { ...process.env, HOME: w.home, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date, GIT_CEILING_DIRECTORIES: path.dirname(w.root) },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

function gitInitWithCommit(w, dir) {
  git(w, "init", "-q", dir);
  fs.writeFileSync(path.join(dir, "README.md"), "readme\n");
  git(w, "-C", dir, "add", "-A");
  git(w, "-C", dir, "commit", "-qm", "init");
}

/** Writes `file`, unless an earlier random step made a directory of that name (or its parent
 *  a file): the tree keeps what is there. */
function write(file, text = "content\n") {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  } catch (e) {
    if (!["EISDIR", "ENOTDIR", "EEXIST"].includes(e.code)) throw e;
  }
}

// ---- random trees ------------------------------------------------------------------------

const DIR_NAMES = [
  "src", "lib", "a", "b", "c", "deep", "pkg", "docs", "build", "secrets", "config", "node_modules",
  "target", ".venv", ".hidden", ".cache", "vendor", "x y", "ünï", "[br]", "keys.pem", ".env.d", "modules",
  "hooks", "worktrees", "info", "sub",
];
const FILE_NAMES = [
  "main.rs", "index.js", "README.md", "notes.txt", ".env", ".env.local", ".env.production", "server.pem",
  "id.key", "a.json", "settings.json", "config", "config.worktree", "commondir", "gitdir", "alternates",
  "pre-commit", ".envrc", "env", "x.pem.bak", ".bashrc", "ünï.txt",
];
/** Names the probe creates: the table's file names, denyWrite matches, ordinary files. */
const NEW_NAMES = [
  "new.txt", ".env", ".env.new", "fresh.pem", "fresh.key", "config", "config.worktree", "commondir", "gitdir",
  "alternates", "pre-commit", "post-checkout", "settings.json", "extension.ts", "x.json", ".bashrc", "id_rsa",
  "authorized_keys", "ünï.txt", "sp ace",
];
const LINK_NAMES = ["link", "l", "ln", "up", "sec", "dangling", "chain", "out", ".pi", "hooks", ".env", "k.pem", "cfg"];
/** A directory name that is not valid UTF-8 (reachable by the guard only through links). */
const NON_UTF8_DIR = Buffer.from([0x6e, 0x75, 0xff, 0xfe]);

/**
 * A tree under construction: every directory made so far (bases for the next step) and the
 * git dirs, so later steps can plant things in them.
 */
class TreeBuilder {
  constructor(w, rng) {
    this.w = w;
    this.rng = rng;
    this.dirs = [w.project, path.join(w.project, "src"), w.outside, w.home];
    this.files = [path.join(w.home, ".ssh", "id_rsa")];
    this.repos = []; // work trees whose .git is a directory
    this.committed = []; // those with a commit (worktree add needs one)
    this.gitDirs = [];
    this.worktrees = 0;
  }

  /** Whether `p` really lies in the world (a link may lead anywhere). */
  inWorld(p) {
    const real = realpathOrNull(p);
    return real !== null && real.startsWith(this.w.root + "/");
  }

  /** A base directory, mostly in the project. */
  base() {
    const inProject = this.dirs.filter((d) => d.startsWith(this.w.project));
    return this.rng.chance(0.8) ? this.rng.pick(inProject) : this.rng.pick(this.dirs);
  }

  /** A chain of `depth` directories below `base`; stops at a name taken by anything else. */
  mkdirs(base, depth) {
    let d = base;
    for (let i = 0; i < depth; i++) {
      d = path.join(d, this.rng.pick(DIR_NAMES));
      if (!lexists(d)) fs.mkdirSync(d);
      else if (!(isDir(d) && this.inWorld(d))) return;
      this.dirs.push(d);
    }
    return d;
  }

  file(dir, name = this.rng.pick(FILE_NAMES)) {
    const f = path.join(dir, name);
    if (lexists(f)) return;
    write(f, `${name} ${this.rng.int(1e6)}\n`);
    this.files.push(f);
    return f;
  }

  symlink(dir, name, target) {
    const l = path.join(dir, name);
    if (lexists(l)) return;
    fs.symlinkSync(target, l);
    return l;
  }

  /** A target spelled absolute or relative to the link's directory. */
  spell(fromDir, target) {
    return this.rng.chance(0.5) ? target : path.relative(fromDir, target) || ".";
  }

  randomLink() {
    const r = this.rng;
    const dir = this.base();
    const name = r.chance(0.7) ? r.pick(LINK_NAMES) : `${r.pick(LINK_NAMES)}${r.int(100)}`;
    const kind = r.weighted({ file: 3, dir: 4, ssh: 2, sshKey: 1, outside: 2, dangling: 3, chain: 2, dotdot: 3, agent: 1, loop: 0.5, procCwd: 0.5 });
    const w = this.w;
    let target;
    switch (kind) {
      case "file": target = this.spell(dir, r.pick(this.files)); break;
      case "dir": target = this.spell(dir, r.pick(this.dirs)); break;
      case "ssh": target = this.spell(dir, path.join(w.home, ".ssh")); break;
      case "sshKey": target = this.spell(dir, path.join(w.home, ".ssh", "id_rsa")); break;
      case "outside": target = this.spell(dir, r.pick(this.dirs.filter((d) => d.startsWith(w.outside)))); break;
      case "dangling": target = this.spell(dir, path.join(r.pick(this.dirs), r.chance(0.8) ? `missing-${r.int(100)}` : "no/such/dir/file")); break;
      case "agent": target = this.spell(dir, r.chance(0.5) ? w.agentDir : path.join(w.agentDir, "auth.json")); break;
      case "loop": target = name; break;
      case "procCwd": target = `/proc/self/cwd/${r.pick(["src", ".git", "..", "a"])}`; break;
      case "chain": {
        const links = this.links();
        target = links.length ? this.spell(dir, r.pick(links)) : this.spell(dir, r.pick(this.dirs));
        break;
      }
      case "dotdot": {
        // `..` inside the target: through a directory, or through another link (the kernel
        // applies `..` to the link's target's parent).
        const via = r.chance(0.5) && this.links().length ? r.pick(this.links()) : r.pick(this.dirs);
        const up = "../".repeat(1 + r.int(2));
        target = `${this.spell(dir, via)}/${up}${r.pick([...DIR_NAMES, ...FILE_NAMES])}`;
        break;
      }
    }
    const l = this.symlink(dir, name, target);
    if (l && isDir(l) && this.inWorld(l)) this.dirs.push(l);
  }

  /** The links in the project the guard can be asked about (UTF-8 paths). */
  links() {
    return walk(this.w.project).filter((e) => e.type === "link" && e.abs).map((e) => e.abs);
  }

  hardLink() {
    const r = this.rng;
    const w = this.w;
    const protectedFiles = [
      ...this.gitDirs.map((g) => path.join(g, "config")),
      ...this.gitDirs.map((g) => path.join(g, "hooks", "pre-commit")),
      path.join(w.home, ".bashrc"),
      path.join(w.home, ".ssh", "id_rsa"),
      path.join(w.agentDir, "auth.json"),
      path.join(w.agentDir, "settings.json"),
    ].filter((f) => fs.existsSync(f) && fs.lstatSync(f).isFile());
    const from = r.chance(0.6) && protectedFiles.length ? r.pick(protectedFiles) : r.pick(this.files);
    const to = path.join(this.base(), r.pick(["hl", "copy.txt", "innocent.txt", "config", "hl.pem"]) + (r.chance(0.5) ? r.int(100) : ""));
    if (!fs.existsSync(from) || lexists(to)) return;
    fs.linkSync(from, to);
    this.files.push(to);
  }

  repo() {
    const r = this.rng;
    const dir = path.join(this.base(), r.pick(["repo", "vendor", "sub", "mod", "r"]) + r.int(100));
    if (lexists(dir)) return;
    if (r.chance(0.4)) gitInitWithCommit(this.w, dir);
    else git(this.w, "init", "-q", dir);
    this.addRepo(dir);
  }

  addRepo(dir) {
    const r = this.rng;
    const g = path.join(dir, ".git");
    this.repos.push(dir);
    if (fs.existsSync(path.join(dir, "README.md"))) this.committed.push(dir);
    this.gitDirs.push(g);
    this.dirs.push(dir, g, path.join(g, "info"));
    if (r.chance(0.3)) write(path.join(g, "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n");
    if (r.chance(0.25)) {
      git(this.w, "-C", dir, "config", "extensions.worktreeConfig", "true");
      if (r.chance(0.5)) write(path.join(g, "config.worktree"), "[core]\n\tsparseCheckout = false\n");
    }
    if (r.chance(0.15)) fs.rmSync(path.join(g, "hooks"), { recursive: true }); // a placeholder's case
    if (r.chance(0.1)) {
      // hooks as a link into the work tree: git runs what the work tree holds
      fs.rmSync(path.join(g, "hooks"), { recursive: true, force: true });
      write(path.join(dir, "myhooks", "pre-commit"), "#!/bin/sh\n");
      fs.symlinkSync(r.chance(0.5) ? "../myhooks" : path.join(dir, "myhooks"), path.join(g, "hooks"));
      this.dirs.push(path.join(dir, "myhooks"));
    }
    if (r.chance(0.2)) write(path.join(g, "objects", "info", "alternates"), "/elsewhere/objects\n");
    for (const f of ["config", "HEAD", "description"]) this.files.push(path.join(g, f));
  }

  bare() {
    const dir = path.join(this.base(), `srv${this.rng.int(100)}.git`);
    if (lexists(dir)) return;
    git(this.w, "init", "-q", "--bare", dir);
    if (this.rng.chance(0.6)) write(path.join(dir, "hooks", "post-receive"), "#!/bin/sh\n");
    this.gitDirs.push(dir);
    this.dirs.push(dir, path.join(dir, "hooks"), path.join(dir, "refs"));
    this.files.push(path.join(dir, "config"), path.join(dir, "HEAD"));
  }

  /** A submodule's git dir, `.git/modules/<name>`: a real one or an empty directory. */
  moduleGitDir() {
    if (!this.repos.length) return;
    const g = path.join(this.rng.pick(this.repos), ".git", "modules", this.rng.pick(["sub", "lib", "x"]));
    if (lexists(g)) return;
    if (this.rng.chance(0.6)) git(this.w, "init", "-q", "--bare", g);
    else fs.mkdirSync(g, { recursive: true });
    this.gitDirs.push(g);
    this.dirs.push(g);
  }

  worktree() {
    if (!this.committed.length) return;
    const main = this.rng.pick(this.committed);
    const at = path.join(this.rng.chance(0.6) ? this.base() : this.w.outside, `wt${this.rng.int(100)}`);
    if (lexists(at)) return;
    git(this.w, "-C", main, "worktree", "add", "-q", "-b", `wt-branch-${this.worktrees++}`, at);
    this.dirs.push(at);
    const admin = fs.readFileSync(path.join(at, ".git"), "utf8").replace(/^gitdir:\s*/, "").trim();
    this.dirs.push(admin);
  }

  piDir() {
    const r = this.rng;
    const base = this.base();
    const pi = path.join(base, ".pi");
    if (lexists(pi)) return;
    if (r.chance(0.7)) {
      fs.mkdirSync(pi);
      if (r.chance(0.6)) write(path.join(pi, "extensions", "ext.ts"), "export default () => {};\n");
      if (r.chance(0.4)) write(path.join(pi, "settings.json"), "{}\n");
      this.dirs.push(pi);
    } else {
      // a `.pi` that is a link: pi loads what it points to
      const target = this.mkdirs(base, 1) ?? base;
      this.symlink(base, ".pi", this.spell(base, target));
    }
  }

  nonUtf8() {
    const base = this.base();
    const dir = Buffer.concat([Buffer.from(base + "/"), NON_UTF8_DIR]);
    if (lexists(dir)) return;
    fs.mkdirSync(dir);
    for (const name of [".env", "k.pem", "plain.txt"]) fs.writeFileSync(Buffer.concat([dir, Buffer.from("/" + name)]), "x\n");
    // The guard takes strings: an ASCII link leads into the directory.
    const link = path.join(base, `nu${this.rng.int(100)}`);
    if (lexists(link)) return;
    fs.symlinkSync(NON_UTF8_DIR, link);
    if (this.rng.chance(0.5)) {
      git(this.w, "init", "-q", path.join(link, "repo"));
      this.gitDirs.push(path.join(link, "repo", ".git"));
    }
    this.dirs.push(link);
  }

  dependencyTrees() {
    const base = this.base();
    write(path.join(base, "node_modules", "pkg", ".env"), "NODE=1\n");
    write(path.join(base, "node_modules", ".bin", "tool"), "#!/bin/sh\n");
    write(path.join(base, "target", "debug", "build", "x.pem"), "PEM\n");
    write(path.join(base, ".venv", "lib", "certifi", "cacert.pem"), "PEM\n");
    write(path.join(base, ".venv", ".env"), "V=1\n");
    for (const d of ["node_modules/pkg", "target/debug", ".venv/lib"]) this.dirs.push(path.join(base, d));
  }

  deepEnv() {
    const d = this.mkdirs(this.base(), 9 + this.rng.int(4));
    if (d) this.file(d, this.rng.pick([".env", ".env.local", "deep.pem"]));
  }

  home() {
    const w = this.w;
    const r = this.rng;
    const files = {
      ".bashrc": "alias x=y\n",
      ".profile": "PATH=$PATH\n",
      ".gitconfig": "[user]\n\tname = n\n",
      ".config/git/config": "[core]\n",
      ".local/bin/tool": "#!/bin/sh\n",
      ".ssh/config": "Host *\n",
      ".aws/credentials": "[default]\n",
      ".gnupg/pubring.kbx": "gpg\n",
      ".pi/agent/auth.json": '{"key":"API-KEY-999"}\n',
      ".pi/agent/settings.json": "{}\n",
      ".pi/agent/extensions/ext.ts": "export default () => {};\n",
      ".pi/agent/sessions/s.jsonl": "{}\n",
      "work/notes.txt": "notes\n",
    };
    for (const [rel, text] of Object.entries(files)) {
      if (r.chance(0.75)) {
        write(path.join(w.home, rel), text);
        this.files.push(path.join(w.home, rel));
        this.dirs.push(path.dirname(path.join(w.home, rel)));
      }
    }
  }

  outside() {
    const w = this.w;
    write(path.join(w.outside, "data", "secret.txt"), "outside secret\n");
    write(path.join(w.outside, "deep", "inner", "file.txt"), "inner\n");
    write(path.join(w.outside, "deep", "sibling.txt"), "sibling\n");
    this.dirs.push(path.join(w.outside, "data"), path.join(w.outside, "deep"), path.join(w.outside, "deep", "inner"));
    this.files.push(path.join(w.outside, "data", "secret.txt"), path.join(w.outside, "deep", "sibling.txt"));
  }
}

/**
 * A random tree in `w`: directories to depth 20, files, symlinks of every kind, hard links
 * (some to protected files), git repositories of every kind, `.pi` dirs, dependency trees,
 * deep `.env` files and a directory with a non-UTF-8 name.
 */
export function buildRandomTree(w, rng) {
  return inWorldCwd(w, () => buildRandomTreeHere(w, rng));
}

/**
 * Runs `build` with this process's cwd at the world's root: the tree's links to
 * /proc/self/cwd/... then resolve inside the world, never into the repository.
 */
function inWorldCwd(w, build) {
  const cwd = process.cwd();
  resetWorld(w);
  process.chdir(w.root);
  try {
    return build();
  } finally {
    process.chdir(cwd);
  }
}

function buildRandomTreeHere(w, rng) {
  const t = new TreeBuilder(w, rng);
  t.home();
  t.outside();
  const shape = rng.weighted({ repo: 6, plain: 3, worktree: 1.5 });
  if (shape === "worktree") {
    // The project is a linked worktree of a repository outside it: git must write that
    // repository's git dir, and the sandbox trusts it through git's back-link.
    const main = path.join(w.outside, "main");
    gitInitWithCommit(w, main);
    fs.rmSync(w.project, { recursive: true });
    git(w, "-C", main, "worktree", "add", "-q", "-b", "wt", w.project);
    fs.mkdirSync(path.join(w.project, "src"));
    t.addRepo(main);
    t.dirs.push(path.join(main, ".git", "worktrees", "project"));
  } else if (shape === "repo") {
    gitInitWithCommit(w, w.project);
    t.addRepo(w.project);
  }
  for (let i = 0, n = 4 + rng.int(6); i < n; i++) t.mkdirs(t.base(), 1 + rng.int(rng.chance(0.2) ? 20 : 5));
  for (let i = 0, n = 15 + rng.int(25); i < n; i++) t.file(t.base());
  const steps = { repo: 2, bare: 1, module: 1, worktree: 1, pi: 1.5, nonUtf8: 0.5, deps: 1, deepEnv: 1, link: 10, hardLink: 3, dirs: 2, file: 4 };
  for (let i = 0, n = 25 + rng.int(30); i < n; i++) {
    try {
      randomStep(t, rng.weighted(steps));
    } catch (e) {
      // git refusing a step of this random tree (a worktree where one cannot be) is no finding
      if (e.status === undefined || !String(e.cmd ?? e.message).includes("git")) throw e;
    }
  }
  return { kind: `random (${shape})`, fixed: [] };
}

/** One step of a random tree: what `buildRandomTree` plants next. */
function randomStep(t, step) {
  switch (step) {
    case "repo": return t.repo();
    case "bare": return t.bare();
    case "module": return t.moduleGitDir();
    case "worktree": return t.worktree();
    case "pi": return t.piDir();
    case "nonUtf8": return t.nonUtf8();
    case "deps": return t.dependencyTrees();
    case "deepEnv": return t.deepEnv();
    case "link": return t.randomLink();
    case "hardLink": return t.hardLink();
    case "dirs": return t.mkdirs(t.base(), 1 + t.rng.int(4));
    case "file": return t.file(t.base());
  }
}

// ---- the issue's cases, as fixed entries --------------------------------------------------

/**
 * Fixed cases, built the same way every time, each with the query (and op) that must be
 * compared: "repo" and "worktree" hold the cases of the issue this test was written for,
 * "found" the disagreements it found itself.
 */
export function buildFixedTree(w, variant) {
  return inWorldCwd(w, () => buildFixedTreeHere(w, variant));
}

function buildFixedTreeHere(w, variant) {
  const P = (rel) => path.join(w.project, rel);
  const fixed = [];
  const expect = (label, op, query) => fixed.push({ label, op, query });
  write(path.join(w.home, ".bashrc"), "alias x=y\n");
  write(path.join(w.agentDir, "auth.json"), '{"key":"API-KEY-999"}\n');
  if (variant === "found") {
    // Cases this test found, kept so that they stay fixed once they are. In a tree of their
    // own: the first one unmasks every secret for the whole run.
    gitInitWithCommit(w, w.project);
    // a relative link matching denyWrite, deeper than the masks, pointing at the home dir:
    // bash binds it read-only after the masks, which puts the real ~/.ssh back
    fs.mkdirSync(P("a"));
    fs.symlinkSync("../../home", P("a/keys.pem"));
    expect("denyWrite-matching link to the home dir: ~/.ssh/id_rsa (read)", "read", "~/.ssh/id_rsa");
    // two names of one file inside a protected directory (the second name gets its own mount)
    write(P(".pi/extensions/a.ts"), "export default () => {};\n");
    fs.linkSync(P(".pi/extensions/a.ts"), P(".pi/extensions/b.ts"));
    expect("hard-linked pair inside .pi/extensions: new extension", "write", ".pi/extensions/evil.ts");
    // a dependency tree inside a directory that matches denyWrite
    write(P("certs.pem/node_modules/pkg/index.js"), "module.exports = 1;\n");
    expect("node_modules inside a directory matching denyWrite", "write", "certs.pem/node_modules/pkg/index.js");
    // a link inside a denyRead directory that leads back into the project
    write(P("src/lib.rs"), "// code\n");
    fs.symlinkSync(P("src"), path.join(w.home, ".ssh", "proj"));
    expect("link inside ~/.ssh into the project (read)", "read", "~/.ssh/proj/lib.rs");
    // a file named commondir makes its directory a git dir for the audit
    write(P("config/app.json"), "{}\n");
    expect("new commondir next to a config/ directory", "write", "commondir");
    // a dangling link whose target has `..` after components, in a folder matching
    // denyWrite `*.pem`: the guard refuses the target it leads to, a new env file in a
    // dependency tree (written directly, it is allowed and kept); the audit must move it
    // although the scan also finds it as an env file, and lists that first (seed 1944865462)
    fs.mkdirSync(P("deps/node_modules/pkg"), { recursive: true });
    fs.mkdirSync(P("zz.pem"));
    fs.symlinkSync("../deps/node_modules/pkg/../.env.local", P("zz.pem/up"));
    expect("dangling link in a *.pem folder to a new .env.local in node_modules", "write", "zz.pem/up");
    // a dangling link named `.env` (denyWrite) to a file of any name (seed 756863337)
    fs.mkdirSync(P("pkg/modules/.env.d"), { recursive: true });
    fs.symlinkSync("modules/.env.d/../../deep", P("pkg/.env"));
    expect("dangling .env link to a new file named otherwise", "write", "pkg/.env");
    return { kind: "fixed (found)", fixed };
  }
  if (variant === "worktree") {
    // The session starts at the root of a linked worktree: its admin dir and the common
    // git dir are writable, their control files are not.
    const main = path.join(w.outside, "main");
    gitInitWithCommit(w, main);
    git(w, "-C", main, "config", "extensions.worktreeConfig", "true");
    fs.rmSync(w.project, { recursive: true });
    git(w, "-C", main, "worktree", "add", "-q", "-b", "wt", w.project);
    const admin = path.join(main, ".git", "worktrees", "project");
    write(path.join(admin, "config.worktree"), "[core]\n\tsparseCheckout = false\n");
    expect("worktree admin dir: existing config.worktree", "write", path.join(admin, "config.worktree"));
    expect("worktree admin dir: commondir", "write", path.join(admin, "commondir"));
    expect("worktree admin dir: gitdir back-link", "write", path.join(admin, "gitdir"));
    expect("worktree admin dir: git data (index)", "write", path.join(admin, "index"));
    expect("common git dir: config", "write", path.join(main, ".git", "config"));
    expect("common git dir: new hook", "write", path.join(main, ".git", "hooks", "pre-commit"));
    expect("common git dir: new commondir", "write", path.join(main, ".git", "commondir"));
    expect("worktree .git file", "write", ".git");
    return { kind: "fixed (worktree)", fixed };
  }
  gitInitWithCommit(w, w.project);
  // `.env` nine directories deep, existing and new
  write(P("a/b/c/d/e/f/g/h/i/.env"), "DEEP=1\n");
  expect(".env 9 dirs deep (existing)", "write", "a/b/c/d/e/f/g/h/i/.env");
  expect(".env 9 dirs deep (new)", "write", "a/b/c/d/e/f/g/h/.env");
  expect(".env 9 dirs deep (read)", "read", "a/b/c/d/e/f/g/h/i/.env");
  // `.env` in dependency trees: exempt from denyWrite in both layers
  write(P("node_modules/pkg/.env"), "N=1\n");
  write(P("target/debug/.env"), "T=1\n");
  expect(".env in node_modules", "write", "node_modules/pkg/.env");
  expect(".env in target", "write", "target/debug/.env");
  expect("new .env in node_modules", "write", "node_modules/.env");
  // a repository with extensions.worktreeConfig: config.worktree is git config too
  gitInitWithCommit(w, P("wtc"));
  git(w, "-C", P("wtc"), "config", "extensions.worktreeConfig", "true");
  write(P("wtc/.git/config.worktree"), "[core]\n\tsparseCheckout = false\n");
  expect(".git/config.worktree (existing, extensions.worktreeConfig)", "write", "wtc/.git/config.worktree");
  expect(".git/config.worktree (new, extensions.worktreeConfig)", "write", ".git/config.worktree");
  // a hard link to .git/config is .git/config
  fs.linkSync(P(".git/config"), P("innocent-config"));
  expect("hard link to .git/config", "write", "innocent-config");
  // `..` after a planted link: the kernel climbs from the link's target
  write(path.join(w.outside, "deep", "inner", "file.txt"), "inner\n");
  write(path.join(w.outside, "deep", "sibling.txt"), "sibling\n");
  fs.symlinkSync(path.join(w.outside, "deep", "inner"), P("planted"));
  expect("`..` after a planted link (existing outside)", "write", "planted/../sibling.txt");
  expect("`..` after a planted link (new outside)", "write", "planted/../new.txt");
  expect("`..` after a planted link (read)", "read", "planted/../sibling.txt");
  // /proc/self/cwd/.. reaches the home's secret key
  expect("/proc/self/cwd/.. to ~/.ssh/id_rsa (read)", "read", "/proc/self/cwd/../home/.ssh/id_rsa");
  expect("/proc/self/cwd/.. to ~/.ssh/id_rsa (write)", "write", "/proc/self/cwd/../home/.ssh/id_rsa");
  // .git/hooks as a link into the work tree: git runs what the work tree holds
  gitInitWithCommit(w, P("lh"));
  fs.rmSync(P("lh/.git/hooks"), { recursive: true });
  write(P("lh/myhooks/pre-commit"), "#!/bin/sh\n");
  fs.symlinkSync("../myhooks", P("lh/.git/hooks"));
  expect(".git/hooks link into the worktree: existing hook via .git/hooks", "write", "lh/.git/hooks/pre-commit");
  expect(".git/hooks link into the worktree: new hook via .git/hooks", "write", "lh/.git/hooks/post-checkout");
  expect(".git/hooks link into the worktree: existing hook via its real path", "write", "lh/myhooks/pre-commit");
  expect(".git/hooks link into the worktree: new hook via its real path", "write", "lh/myhooks/post-checkout");
  // .pi as a link: pi loads what it points to
  write(P("pl/real/extensions/ext.ts"), "export default () => {};\n");
  fs.symlinkSync("real", P("pl/.pi"));
  expect(".pi link: new extension via .pi", "write", "pl/.pi/extensions/evil.ts");
  expect(".pi link: new extension via its real path", "write", "pl/real/extensions/evil.ts");
  // a new .git/commondir redirects git to another repository's config and hooks
  expect("new .git/commondir", "write", ".git/commondir");
  expect("new commondir in a nested repository", "write", "wtc/.git/commondir");
  // a bare repository's hooks run when the user pushes to it
  git(w, "init", "-q", "--bare", P("srv.git"));
  write(P("srv.git/hooks/post-receive"), "#!/bin/sh\n");
  expect("bare repo: existing hook", "write", "srv.git/hooks/post-receive");
  expect("bare repo: new hook", "write", "srv.git/hooks/update");
  expect("bare repo: config", "write", "srv.git/config");
  // a submodule's git dir
  git(w, "init", "-q", "--bare", P(".git/modules/sub"));
  expect("submodule git dir: config", "write", ".git/modules/sub/config");
  expect("submodule git dir: new hook", "write", ".git/modules/sub/hooks/pre-commit");
  return { kind: "fixed", fixed };
}

// ---- random policies ----------------------------------------------------------------------

/**
 * A random policy for the tree in `w`, as `{ project, global }` config objects (a layer
 * replaces each array it sets, so each key is set in one layer only).
 */
export function randomPolicy(w, rng) {
  const inventory = walk(w.project).filter((e) => e.abs && (e.type === "dir" || e.type === "file"));
  const rel = (e) => path.relative(w.project, e.abs);
  const projectDirs = inventory.filter((e) => e.type === "dir").map(rel).filter((r) => r && !r.startsWith(".."));
  const projectFiles = inventory.filter((e) => e.type === "file").map(rel);
  const homeDirs = walk(w.home).filter((e) => e.abs && e.type === "dir").map((e) => e.abs);
  const outsideDirs = walk(w.outside).filter((e) => e.abs && e.type === "dir").map((e) => e.abs);
  const filesystem = {};
  if (rng.chance(0.75)) {
    const allow = [];
    if (rng.chance(0.7)) allow.push(".");
    for (let i = rng.int(3); i > 0; i--) allow.push(rng.pick(projectDirs) ?? "src");
    if (rng.chance(0.3)) allow.push(rng.pick(outsideDirs));
    if (rng.chance(0.15)) allow.push(rng.chance(0.5) ? "~" : rng.pick(homeDirs));
    if (rng.chance(0.1)) allow.push(path.join(w.outside, "not-made-yet"));
    filesystem.allowWrite = allow;
  }
  if (rng.chance(0.75)) {
    const pool = [".env", ".env.*", "*.pem", "*.key", "**/secrets/**", "config/*.json", "secrets", "*.json", ".envrc"];
    const deny = rng.subset(pool, 0.4);
    for (let i = rng.int(3); i > 0; i--) {
      const r = rng.pick(rng.chance(0.6) ? projectFiles : projectDirs);
      if (r && r.includes("/") && !/[*?[{]/.test(r)) deny.push(r);
    }
    filesystem.denyWrite = deny;
  }
  if (rng.chance(0.6)) {
    const deny = [];
    if (rng.chance(0.8)) deny.push("~/.ssh");
    if (rng.chance(0.5)) deny.push("~/.aws");
    if (rng.chance(0.5)) deny.push(path.join(w.agentDir, "auth.json"));
    for (let i = rng.int(3); i > 0; i--) deny.push(rng.pick([...projectDirs, ...projectFiles]) ?? "src");
    if (rng.chance(0.3)) deny.push(rng.pick(outsideDirs));
    filesystem.denyRead = deny.filter((d) => !/[*?]/.test(d));
  }
  const policy = { project: { filesystem: {} }, global: null };
  for (const [key, value] of Object.entries(filesystem)) {
    if (rng.chance(0.2)) (policy.global ??= { filesystem: {} }).filesystem[key] = value;
    else policy.project.filesystem[key] = value;
  }
  if (rng.chance(0.05)) policy.project.mode = "read-only";
  return policy;
}

/** Writes the policy's layers (before the Sandbox is loaded: `.pi` is protected after). */
function writePolicy(w, policy) {
  const pi = path.join(w.project, ".pi");
  if (lexists(pi) && !isDir(pi)) fs.rmSync(pi);
  const project = path.join(pi, "sandbox.json");
  const global = path.join(w.agentDir, "extensions", "sandbox.json");
  write(project, JSON.stringify(policy.project));
  if (policy.global) write(global, JSON.stringify(policy.global));
  else fs.rmSync(global, { force: true });
}

// ---- walking the disk ---------------------------------------------------------------------

/**
 * Every entry below `root` (not following links), names as bytes. `abs` is set only for
 * UTF-8 paths (the guard takes strings); `key` identifies any path.
 */
export function walk(root, { skip = () => false } = {}) {
  const out = [];
  const rootBuf = Buffer.from(root);
  const stack = [rootBuf];
  while (stack.length) {
    const dir = stack.pop();
    let names;
    try {
      // Sorted: a seed must pick the same paths whatever order the file system lists them in.
      names = fs.readdirSync(dir, { encoding: "buffer" }).sort(Buffer.compare);
    } catch {
      continue;
    }
    for (const name of names) {
      const p = Buffer.concat([dir, Buffer.from("/"), name]);
      const key = p.toString("latin1");
      if (skip(key)) continue;
      let st;
      try {
        st = fs.lstatSync(p);
      } catch {
        continue;
      }
      const type = st.isSymbolicLink() ? "link" : st.isDirectory() ? "dir" : st.isFile() ? "file" : "other";
      const text = p.toString("utf8");
      out.push({ key, buf: p, abs: Buffer.from(text).equals(p) ? text : null, type, ino: st.ino, size: st.size, mode: st.mode });
      if (type === "dir") stack.push(p);
    }
  }
  return out;
}

// ---- queries ----------------------------------------------------------------------------

/** The paths pi's control surface names inside a git dir (`protected::TABLE`'s Git entries). */
const GIT_SURFACE = ["config", "config.worktree", "hooks/pre-commit", "hooks/post-checkout", "commondir", "objects/info/alternates", "hooks"];
const WORKTREE_SURFACE = ["commondir", "gitdir", "config.worktree", "HEAD", "index"];
const HOME_SURFACE = [".bashrc", ".profile", ".zshrc", ".gitconfig", ".config/git/config", ".config/fish/config.fish", ".local/bin/tool", ".ssh/authorized_keys", ".ssh/id_rsa", ".config/systemd/user/x.service", ".aws/credentials", ".pi/agent/auth.json", ".pi/agent/settings.json", ".pi/agent/sessions/s.jsonl", ".pi/agent/extensions/evil.ts"];

/**
 * `n` query paths for the tree in `w`, each as the guard gets it (`guard`) and as the probe
 * opens it (`probe`, cwd = project): existing files, directories and links, new names, paths
 * through links, `..` after links, pi's control surface, in absolute, project-relative,
 * `~/` and `/proc/self/cwd/` spellings.
 */
export function pickQueries(w, rng, n) {
  const entries = walkWorld(w).filter((e) => e.abs);
  const by = (type) => entries.filter((e) => e.type === type);
  const files = by("file");
  const dirs = [{ abs: w.project }, ...by("dir")];
  const links = by("link");
  const dirLinks = links.filter((l) => isDir(l.abs));
  const gitDirs = dirs.filter((d) => looksLikeGitDir(d.abs));
  const out = new Map();
  const add = (abs, form) => {
    if (!abs || isUnderTmp(abs)) return;
    const q = spell(w, rng, abs, form);
    if (!out.has(q.guard)) out.set(q.guard, q);
  };
  const newName = () => rng.pick(NEW_NAMES);
  for (let tries = 0; out.size < n && tries < n * 20; tries++) {
    switch (rng.weighted({ file: 20, dir: 6, link: 14, fresh: 18, throughLink: 14, dotdotAfterLink: 10, git: 8, home: 5, noise: 4, system: 1 })) {
      case "file": add(rng.pick(files)?.abs); break;
      case "dir": add(rng.pick(dirs).abs); break;
      case "link": add(rng.pick(links)?.abs); break;
      case "fresh": add(path.join(rng.pick(dirs).abs, newName())); break;
      case "throughLink": {
        const l = rng.pick(dirLinks);
        if (!l) break;
        const target = realpathOrNull(l.abs);
        const below = target && entries.filter((e) => e.abs.startsWith(target + "/"));
        const rest = below?.length && rng.chance(0.7) ? rng.pick(below).abs.slice(target.length + 1) : newName();
        add(`${l.abs}/${rest}`);
        break;
      }
      case "dotdotAfterLink": {
        // `link/../name`: the kernel takes `..` from the link's target, not from the link
        const l = rng.pick(dirLinks);
        if (!l) break;
        const target = realpathOrNull(l.abs);
        const siblings = target ? listNames(path.dirname(target)) : [];
        const name = siblings.length && rng.chance(0.6) ? rng.pick(siblings) : newName();
        add(`${l.abs}/${rng.chance(0.2) ? "./" : ""}../${name}`);
        break;
      }
      case "git": {
        const g = rng.pick(gitDirs);
        if (!g) break;
        const worktrees = listNames(path.join(g.abs, "worktrees"));
        if (worktrees.length && rng.chance(0.3)) add(path.join(g.abs, "worktrees", rng.pick(worktrees), rng.pick(WORKTREE_SURFACE)));
        else add(path.join(g.abs, rng.pick(GIT_SURFACE)));
        break;
      }
      case "home": add(path.join(w.home, rng.pick(HOME_SURFACE))); break;
      case "noise": {
        // `./`, `//` and `missing/..` spellings of real paths
        const f = rng.pick([...files, ...dirs]);
        if (!f || !f.abs.startsWith(w.project + "/")) break;
        const rel = path.relative(w.project, f.abs).split("/");
        const at = rng.int(rel.length);
        const extra = rng.pick(["./", "/", "missing/../"]);
        rel[at] = extra + rel[at];
        add(`${w.project}/${rel.join("/")}`, "absolute");
        break;
      }
      case "system": add(rng.pick(["/etc/passwd", "/usr/bin/env", "/etc"]), "absolute"); break;
    }
  }
  return [...out.values()];
}

/** One spelling of `abs` for the guard and for the probe. */
function spell(w, rng, abs, form) {
  const inProject = abs === w.project || abs.startsWith(w.project + "/");
  form ??= rng.weighted({ absolute: 35, relative: inProject ? 35 : 10, proc: 15, home: abs.startsWith(w.home + "/") ? 15 : 0 });
  // By string, not path.relative: that would fold a `..` after a link lexically, and the
  // point of `link/../x` is that the kernel does not.
  const rel =
    abs === w.project ? "." : abs.startsWith(w.project + "/") ? abs.slice(w.project.length + 1) : abs.startsWith(w.root + "/") ? `../${abs.slice(w.root.length + 1)}` : path.relative(w.project, abs);
  switch (form) {
    case "absolute":
      return { guard: abs, probe: abs };
    case "relative":
      return { guard: rel, probe: rel };
    case "proc":
      return { guard: `/proc/self/cwd/${rel}`, probe: `/proc/self/cwd/${rel}` };
    case "home":
      return { guard: `~/${abs.slice(w.home.length + 1)}`, probe: abs };
  }
}

function isUnderTmp(p) {
  const real = realpathOrNull(p) ?? p;
  return real === "/tmp" || real.startsWith("/tmp/");
}

function lexists(p) {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isDir(p) {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function realpathOrNull(p) {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return null;
  }
}

function listNames(dir) {
  try {
    return fs.readdirSync(dir).filter((n) => !n.includes("\ufffd")).sort();
  } catch {
    return [];
  }
}

/** Loosely, for picking queries in git dirs (the control-surface model is `isGitDirByLayout`). */
function looksLikeGitDir(dir) {
  const base = path.basename(dir);
  const has = (n) => fs.existsSync(path.join(dir, n));
  return base === ".git" || (has("HEAD") && has("objects") && has("refs")) || path.basename(path.dirname(dir)) === "modules";
}

// ---- what the host sees before the run -----------------------------------------------------

/**
 * What the probe should do with `p` (relative paths from the project: this process has
 * chdir'd there, as bash has): which read and which write are meaningful. Decided from the
 * host's disk, independently of the guard:
 *   read  "file" (non-empty regular file), "dir" (non-empty directory), or null
 *   write "append" (existing writable regular file), "create" (missing, its directory
 *         exists), "follow" (a dangling link whose target's directory exists), or null
 * Nothing outside the world is ever created, and an existing file there is only opened
 * (`inWorld` false): should a layer fail, the probe must not change the host.
 */
export function hostPlan(w, p) {
  const inWorld = (q) => {
    const real = realpathOrNull(q);
    return real !== null && real.startsWith(w.root + "/");
  };
  let st = null;
  let err = null;
  try {
    st = fs.statSync(p);
  } catch (e) {
    err = e.code;
  }
  if (st) {
    if (st.isFile()) {
      // Owner write permission off (git's objects): the kernel's permission check, not a
      // sandbox layer, would refuse the write.
      return { read: st.size > 0 ? "file" : null, write: st.mode & 0o200 ? "append" : null, inWorld: inWorld(p), kind: "file" };
    }
    if (st.isDirectory()) return { read: fs.readdirSync(p).length ? "dir" : null, write: null, kind: "dir" };
    return { read: null, write: null, kind: "other" };
  }
  if (err !== "ENOENT") return { read: null, write: null, kind: `unreachable (${err})` };
  let link = false;
  try {
    link = fs.lstatSync(p).isSymbolicLink();
  } catch {}
  const creatable = (file) => isDir(path.dirname(file)) && inWorld(path.dirname(file));
  if (!link) return { read: null, write: creatable(p) ? "create" : null, inWorld: true, kind: "missing" };
  // A dangling link: O_CREAT follows it, so a write creates the final target.
  let cur = p;
  for (let hops = 0; hops < 40; hops++) {
    let target;
    try {
      target = fs.readlinkSync(cur);
    } catch {
      return { read: null, write: creatable(cur) ? "follow" : null, inWorld: true, kind: "dangling link" };
    }
    cur = path.isAbsolute(target) ? target : `${path.dirname(cur)}/${target}`;
  }
  return { read: null, write: null, kind: "link loop" };
}

// ---- an independent model of pi's control surface ------------------------------------------

/** protected.rs's fixed places below the home directory. */
const HOME_TABLE = [".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".config/fish", ".gitconfig", ".config/git", ".ssh", ".local/bin", ".config/systemd", ".config/autostart"];
/**
 * protected.rs's git entries, relative to a git dir (`*`: one component). Not
 * `worktrees/*\/gitdir`: git rewrites it and the audit accepts it.
 */
const GIT_TABLE = ["config", "config.worktree", "hooks", "commondir", "objects/info/alternates", "worktrees/*/config.worktree", "worktrees/*/commondir", "modules/*/config"].map((p) => p.split("/"));

/**
 * What of pi's control surface the real path `key` (bytes as latin1) lies on, or null: an
 * independent reading of README's table (agent dir, shell rc files and the other home places,
 * any `.pi` directory, git's files in any git dir), written without looking at the guard.
 */
function onControlSurface(w, key) {
  const under = (base) => key === base || key.startsWith(base + "/");
  const agentDir = fs.realpathSync.native(w.agentDir);
  if (under(agentDir)) return "pi agent dir";
  for (const rel of HOME_TABLE) if (under(path.join(w.home, rel))) return `~/${rel}`;
  const parts = key.split("/").filter(Boolean);
  if (parts.includes(".pi")) return ".pi directory";
  for (let i = 1; i < parts.length; i++) {
    const dir = "/" + parts.slice(0, i).join("/");
    if (!isGitDirByLayout(dir)) continue;
    const rel = parts.slice(i);
    const hit = GIT_TABLE.find((pattern) => pattern.length <= rel.length && pattern.every((p, j) => p === "*" || p === rel[j]));
    if (hit) return `git ${hit.join("/")} in ${Buffer.from(dir, "latin1").toString("utf8")}`;
  }
  return null;
}

/** gitrepository-layout(5): a `.git` directory, HEAD + objects/ + refs/, or `<git dir>/modules/<name>`. */
function isGitDirByLayout(dir) {
  const st = (p) => {
    try {
      return fs.lstatSync(Buffer.from(p, "latin1"));
    } catch {
      return null;
    }
  };
  const self = st(dir);
  if (!self?.isDirectory()) return false;
  if (path.basename(dir) === ".git") return true;
  const head = st(`${dir}/HEAD`);
  if ((head?.isFile() || head?.isSymbolicLink()) && st(`${dir}/objects`)?.isDirectory() && st(`${dir}/refs`)?.isDirectory()) return true;
  return path.basename(path.dirname(dir)) === "modules" && isGitDirByLayout(path.dirname(path.dirname(dir)));
}

// ---- the probe that runs inside the sandbox ---------------------------------------------

/**
 * Runs inside bash's sandbox (cwd = project): reads, then writes to existing files, then
 * creations, so nothing it creates changes what an earlier query saw. Reports for each
 * query whether it got content or wrote, and which file the kernel opened
 * (/proc/self/fd, base64 bytes); and the sandbox's mount table.
 */
const PROBE_SOURCE = String.raw`"use strict";
const fs = require("fs");
const C = fs.constants;
const { payload, items } = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const opened = (fd) => {
  try { return fs.readlinkSync("/proc/self/fd/" + fd, "buffer").toString("base64"); } catch { return null; }
};
const results = items.map(() => ({}));
items.forEach((it, i) => {
  if (!it.read) return;
  let fd;
  try {
    fd = fs.openSync(it.p, it.read === "dir" ? C.O_RDONLY | C.O_DIRECTORY : C.O_RDONLY);
    const real = opened(fd);
    const got = it.read === "dir" ? fs.readdirSync(it.p).length : fs.readSync(fd, Buffer.alloc(1), 0, 1, null);
    results[i].read = { got, real };
  } catch (e) {
    results[i].read = { err: e.code || String(e) };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
});
const created = new Map();
const order = (w) => (w === "append" ? 0 : 1);
const writes = items.map((it, i) => [it, i]).filter(([it]) => it.write).sort((a, b) => order(a[0].write) - order(b[0].write));
for (const [it, i] of writes) {
  let fd;
  try {
    if (it.write === "append") {
      // Opening for writing is the write the sandbox must refuse; nothing is written unless
      // the guard denied it (then the audit's answer decides).
      fd = fs.openSync(it.p, C.O_WRONLY | C.O_APPEND);
      if (it.confirm) fs.writeSync(fd, payload);
      results[i].write = { wrote: true, real: opened(fd) };
    } else {
      const flags = C.O_WRONLY | C.O_CREAT | (it.write === "create" ? C.O_EXCL : 0);
      fd = fs.openSync(it.p, flags, 0o644);
      const real = opened(fd);
      if (created.has(real)) {
        results[i].write = { dupOf: created.get(real), real };
      } else {
        fs.writeSync(fd, payload);
        created.set(real, i);
        results[i].write = { created: true, real };
      }
    }
  } catch (e) {
    let dupOf;
    if (e.code === "EEXIST") {
      // Another spelling of this path created it earlier in this run.
      try { dupOf = created.get(fs.realpathSync.native(it.p, { encoding: "buffer" }).toString("base64")); } catch {}
    }
    results[i].write = dupOf === undefined ? { err: e.code || String(e) } : { dupOf };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
// The sandbox's mounts, to say which one decided (mountinfo escapes space, tab, \n, \\).
const unescape = (s) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
const mounts = fs.readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter(Boolean).map((line) => {
  const f = line.split(" ");
  return { point: unescape(f[4]), ro: f[5].split(",").includes("ro"), fstype: f[f.indexOf("-") + 1] };
});
process.stdout.write("\n@@probe-results@@" + JSON.stringify({ results, mounts }) + "\n");
`;

function shQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

// ---- one (tree, policy) run ---------------------------------------------------------------

/** Every path in the world the run could touch: all of it but tmp and the probe's files. */
function walkWorld(w) {
  const ours = path.join(w.root, "diff-");
  return walk(w.root, { skip: (k) => k.startsWith(w.tmp + "/") || k.startsWith(ours) });
}

function snapshot(w) {
  return new Map(walkWorld(w).map((e) => [e.key, e]));
}

/** What the audit moved aside this run: [folder, moved path, original path] (see src/quarantine.rs). */
function quarantined(w, before) {
  const root = path.join(w.agentDir, "sandbox-quarantine");
  const out = [];
  for (const project of fs.existsSync(root) ? fs.readdirSync(root) : []) {
    for (const dir of fs.readdirSync(path.join(root, project))) {
      const folder = path.join(root, project, dir);
      if (before.has(Buffer.from(folder).toString("latin1"))) continue;
      const origin = fs.readFileSync(path.join(folder, "origin")).subarray(0, -1);
      const moved = fs.readdirSync(folder, { encoding: "buffer" }).find((n) => n.toString("latin1") !== "origin");
      out.push([folder, moved && Buffer.concat([Buffer.from(folder + "/"), moved]), origin]);
    }
  }
  return out;
}

/**
 * Puts the world back as `before` was: what the audit moved aside goes back (recognised by
 * inode), what the probe created goes, files it appended to get their bytes back (`backups`).
 * Returns the paths the audit moved although the probe wrote nothing at or below them
 * (`written`: keys of the files it wrote).
 */
function restore(w, before, backups, written) {
  const movedUntouched = [];
  // One moved path can have been inside another moved later: put back each whose parent is
  // there again, until none is left.
  let pending = quarantined(w, before);
  while (pending.length) {
    const ready = pending.filter(([, , origin]) => fs.existsSync(origin.subarray(0, origin.lastIndexOf(0x2f))));
    if (!ready.length) break;
    for (const [folder, moved, originBuf] of ready) {
      const original = originBuf.toString("latin1");
      const was = before.get(original);
      if (moved && was && was.ino === fs.lstatSync(moved).ino) {
        fs.rmSync(originBuf, { recursive: true, force: true });
        fs.renameSync(moved, originBuf);
        if (![...written].some((k) => k === original || k.startsWith(original + "/"))) {
          movedUntouched.push(originBuf.toString("utf8"));
        }
      }
      fs.rmSync(folder, { recursive: true, force: true });
    }
    pending = pending.filter((p) => !ready.includes(p));
  }
  for (const e of walkWorld(w)) {
    const was = before.get(e.key);
    if (!was || was.ino !== e.ino || was.type !== e.type) fs.rmSync(e.buf, { recursive: true, force: true });
  }
  for (const [key, bytes] of backups) {
    const file = Buffer.from(key, "latin1");
    if (!key.startsWith(w.root + "/")) throw new Error(`differential harness: refusing to restore ${key} outside the world`);
    if (!fs.readFileSync(file).equals(bytes)) fs.writeFileSync(file, bytes);
  }
  const after = snapshot(w);
  for (const [key, e] of before) {
    const a = after.get(key);
    if (!a || a.ino !== e.ino || (e.type === "file" && a.size !== e.size)) {
      throw new Error(`differential harness: could not restore ${Buffer.from(key, "latin1").toString("utf8")} after the run`);
    }
  }
  if (after.size !== before.size) throw new Error("differential harness: the run left paths behind");
  return movedUntouched;
}

function decoded(base64) {
  return base64 == null ? null : Buffer.from(base64, "base64");
}

/**
 * Decides every query with the guard, runs the probe once in bash's sandbox, audits, and
 * compares. Returns the comparisons made and the disagreements found.
 */
export function runOnce({ w, policy, queries, context }) {
  writePolicy(w, policy);
  const s = Sandbox.load({ cwd: w.project, home: w.home, agentDir: w.agentDir, approvalMode: "ask" });
  const findings = [];
  const setup = (what) => findings.push({ kind: "SETUP", ...context, policy, what });
  if (s.error) {
    setup(`config refused: ${s.error.code}: ${s.error.message}`);
    return { compared: { read: 0, write: 0 }, paths: 0, findings, whitelisted: {} };
  }
  const listFile = path.join(w.root, "diff-queries.json");
  const probeFile = path.join(w.root, "diff-probe.cjs");
  fs.writeFileSync(probeFile, PROBE_SOURCE);
  // Prepared first: the placeholders it creates are part of what both layers then see.
  // The audit leaves alone what changed before the command, by inode change time: let a
  // clock tick pass after the tree was made, as it does between a user's edits and a command.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  const prepared = s.prepareBash(`${shQuote(process.execPath)} ${shQuote(probeFile)} ${shQuote(listFile)}`, "off");
  if (prepared.verdict !== "sandboxed") {
    setup(`prepareBash: ${prepared.verdict}: ${prepared.reason}`);
    return { compared: { read: 0, write: 0 }, paths: 0, findings, whitelisted: {} };
  }
  // The guard runs in this process; /proc/self/cwd must be the project, as bash's cwd is.
  const cwd = process.cwd();
  process.chdir(w.project);
  let items;
  const backups = new Map();
  try {
    items = queries.map((q) => {
      const plan = hostPlan(w, q.probe);
      const guard = { read: s.check("read", q.guard), write: s.check("write", q.guard) };
      // A denied write to an existing file of the world is really made: only the audit can
      // tell whether it would have survived. (Elsewhere, opening it is the finding.)
      const confirm = plan.write === "append" && plan.inWorld && guard.write.verdict !== "allow";
      if (confirm) {
        const real = fs.realpathSync.native(q.probe, { encoding: "buffer" });
        backups.set(real.toString("latin1"), fs.readFileSync(real));
      }
      return { q, plan, guard, confirm };
    });
  } finally {
    process.chdir(cwd);
  }
  fs.writeFileSync(
    listFile,
    JSON.stringify({ payload: PAYLOAD, items: items.map((it) => ({ p: it.q.probe, read: it.plan.read, write: it.plan.write, confirm: it.confirm })) }),
  );
  const before = snapshot(w);
  const r = runPreparedSync(prepared, { cwd: w.project, env: { ...process.env, TMPDIR: w.tmp }, maxBuffer: 1 << 28 });
  const audit = r.findings;
  const marker = r.stdout?.lastIndexOf("@@probe-results@@") ?? -1;
  if (marker < 0) {
    restore(w, before, backups, new Set());
    setup(`the probe did not report (exit ${r.status}, signal ${r.signal}): ${(r.stderr ?? "").slice(-2000)}`);
    return { compared: { read: 0, write: 0 }, paths: 0, findings, whitelisted: {} };
  }
  const { results, mounts } = JSON.parse(r.stdout.slice(marker + "@@probe-results@@".length));
  // A write made under another spelling of the same file earlier in the run counts as that one.
  const writes = results.map((res) => (res.write?.dupOf !== undefined ? { ...results[res.write.dupOf].write, dup: true } : res.write ?? {}));
  // Whether what bash wrote is still there after the audit, before the world is restored.
  const survived = writes.map((wr, i) => {
    if (!(wr.created || wr.wrote)) return false;
    if (wr.wrote && !items[i].confirm) return true;
    try {
      return fs.readFileSync(decoded(wr.real), "utf8").endsWith(PAYLOAD);
    } catch {
      return false;
    }
  });
  // Judged before the world is put back: the model looks at the disk the write landed on.
  const surface = writes.map((wr, i) =>
    survived[i] && items[i].guard.write.verdict === "allow" && wr.real ? onControlSurface(w, decoded(wr.real).toString("latin1")) : null,
  );
  // A `commondir` makes its directory a git dir for the audit: what else this run wrote below
  // one is judged differently than alone. Findings say so, and group apart.
  const newGitDirs = writes.filter((wr) => wr.created && !wr.dup && wr.real).map((wr) => decoded(wr.real).toString("utf8")).filter((p) => path.basename(p) === "commondir").map((p) => path.dirname(p));
  const besideNewGitDir = (wr) => {
    const real = wr.real && decoded(wr.real).toString("utf8");
    return real && path.basename(real) !== "commondir" ? newGitDirs.find((d) => real.startsWith(d + "/")) : undefined;
  };
  const written = new Set();
  writes.forEach((wr, i) => {
    if (wr.real && (wr.created || (wr.wrote && items[i].confirm))) written.add(decoded(wr.real).toString("latin1"));
  });
  const movedUntouched = restore(w, before, backups, written);
  for (const p of movedUntouched) {
    findings.push({ kind: "AUDIT", ...context, policy, what: `the audit moved ${p}, which the command did not write`, audit });
  }
  const compared = { read: 0, write: 0 };
  const whitelisted = {};
  let paths = 0;
  items.forEach((it, i) => {
    const res = results[i];
    let any = false;
    const envOutsideIndex = (item) => {
      const m = decidingMount(mounts, item.guard.read.path, item.q.probe, anatomy(item.q.probe, w.project), w.project, (p) => s.check("write", p), false);
      return m.shape === "read-only root" || m.shape.startsWith("read-only bind on an ancestor");
    };
    const report = (kind, op, bash) => {
      const g = it.guard[op];
      const links = anatomy(it.q.probe, w.project);
      findings.push({
        kind, op, ...context, policy, query: it.q.guard, probePath: it.q.probe, label: it.q.label,
        guard: { verdict: g.verdict, rule: g.rule, path: g.path }, bash, host: it.plan.kind,
        mount: decidingMount(mounts, g.path, it.q.probe, links, w.project, (p) => s.check("write", p), /failed/.test(bash)),
        anatomy: links,
        audit: audit.filter((a) => a.includes(g.path)),
      });
    };
    if (it.plan.read) {
      any = true;
      compared.read++;
      it.q.compared?.add("read");
      const gotContent = res.read?.got > 0;
      // "prompt" (an env file): refused until the user allows it, and bash hides it meanwhile.
      const guardAllows = it.guard.read.verdict === "allow";
      const bash = res.read?.err ? `read failed: ${res.read.err}` : gotContent ? "read content" : "read nothing (masked)";
      const inHome = it.guard.read.path.startsWith(w.home + "/");
      if (!guardAllows && gotContent && it.guard.read.rule === ENV_FILE_RULE && !inHome && envOutsideIndex(it)) {
        // Known limit (README): bash hides the env files of the trees it indexes and of the
        // home directory; one elsewhere only the read tool asks about.
        whitelisted.envOutsideIndex = (whitelisted.envOutsideIndex ?? 0) + 1;
      } else if (!guardAllows && gotContent) report("HOLE", "read", bash);
      else if (guardAllows && !gotContent) report("DRIFT", "read", bash);
      else if (gotContent) checkPath("read", decoded(res.read.real), bash);
    }
    if (it.plan.write) {
      any = true;
      compared.write++;
      it.q.compared?.add("write");
      const wr = writes[i];
      const acted = Boolean(wr.created || wr.wrote);
      const gitDir = besideNewGitDir(wr);
      const bash = wr.err
        ? `write failed: ${wr.err}`
        : `${wr.created ? "created" : "opened for writing"}${it.confirm ? " and wrote" : ""}${survived[i] ? "; survived the audit" : "; undone by the audit"}` +
          (gitDir ? `, as the same command created ${gitDir}/commondir` : "");
      // A write the guard would ask about ("prompt": outside allowWrite) is refused until the
      // user grants it, and bash has no grant here: both must refuse it.
      const g = it.guard.write;
      if (g.verdict !== "allow" && survived[i]) {
        // git rewrites a worktree's back-link itself and nothing runs from it: the audit
        // accepts it by design (protected::TABLE, OnChange::Accept), the guard keeps the
        // agent from writing it.
        if (GIT_BACK_LINK.test(g.rule)) whitelisted.gitBackLink = (whitelisted.gitBackLink ?? 0) + 1;
        else report("HOLE", "write", bash);
      } else if (g.verdict === "allow" && !(acted && survived[i])) {
        report("DRIFT", "write", bash);
      } else if (acted && g.verdict === "allow") {
        if (surface[i]) report("MISSED", "write", `${bash}; on pi's control surface: ${surface[i]}`);
        else checkPath("write", decoded(wr.real), bash);
      }
    }
    if (any) paths++;

    function checkPath(op, real, bash) {
      const judged = it.guard[op].path;
      if (real && real.toString("utf8") !== judged) report("PATH", op, `${bash}; the kernel opened ${real.toString("utf8")}`);
    }
  });
  return { compared, paths, findings, whitelisted };
}

/**
 * Which of the sandbox's mounts explains bash's outcome: for a failure, a mask on the way (a
 * link or `..` leading through a denyRead directory, which the guard resolves on the host); else the
 * deepest mount holding the path the guard judged. `{ text, shape }`: shape without paths,
 * for grouping.
 */
function decidingMount(mounts, judged, typed, links, cwd, guardWrite, failed) {
  // The deepest mount point holding `p`; of several on the same point, the last (on top).
  const holding = (p) =>
    mounts
      .map((m, order) => ({ ...m, order }))
      .filter((m) => p === m.point || p.startsWith(m.point === "/" ? "/" : m.point + "/"))
      .sort((a, b) => b.point.length - a.point.length || b.order - a.order)[0];
  const describe = (m) => `${m.ro ? "read-only" : "writable"} ${m.fstype === "tmpfs" ? "tmpfs" : "bind"}`;
  const lexical = path.resolve(cwd, typed.startsWith("/proc/self/cwd/") ? typed.slice(15) : typed);
  const via = [lexical, ...links.flatMap((l) => [l.real, path.resolve(path.dirname(l.real), l.target)])];
  // A mask on the way explains a failure only: a `..` after a link into one leads out again.
  for (const p of failed ? via : []) {
    const m = holding(p);
    if (m && m.fstype === "tmpfs" && m.point !== "/tmp" && !holding(judged)?.point.startsWith(m.point)) {
      return { text: `the typed path passes through ${describe(m)} at ${m.point}`, shape: `through a ${describe(m)}` };
    }
  }
  const m = holding(judged);
  if (!m) return { text: "no mount holds it", shape: "no mount" };
  if (m.point === "/") return { text: "the read-only root (outside every bind)", shape: "read-only root" };
  if (m.point === judged) return { text: `${describe(m)} at ${m.point}`, shape: `${describe(m)} on the path itself` };
  // A directory on the way is the mount point: what does the guard say of that directory?
  const d = guardWrite(m.point);
  return {
    text: `${describe(m)} at ${m.point}; the guard says of that directory: ${d.verdict} by ${d.rule}`,
    shape: `${describe(m)} on an ancestor the guard says ${d.verdict} to (${ruleKind(d.rule)})`,
  };
}

/** Each component of `p` that is a link, with its target: the shape of a reproduction. */
function anatomy(p, cwd) {
  const abs = p.startsWith("/proc/self/cwd/") ? `${cwd}/${p.slice(15)}` : path.isAbsolute(p) ? p : `${cwd}/${p}`;
  const parts = abs.split("/").filter(Boolean);
  const out = [];
  let cur = "";
  for (const part of parts) {
    cur += `/${part}`;
    try {
      if (!fs.lstatSync(cur).isSymbolicLink()) continue;
      // Where the link really is: an earlier link may have led somewhere else.
      const real = path.join(fs.realpathSync.native(path.dirname(cur)), path.basename(cur));
      out.push({ at: cur, real, target: fs.readlinkSync(cur) });
    } catch {
      break;
    }
  }
  return out;
}

function showLink(l) {
  return `${l.at} -> ${l.target}${l.real !== l.at ? ` (the link is ${l.real})` : ""}`;
}

// ---- a whole differential run -------------------------------------------------------------

/**
 * Runs trees until `paths` query paths were compared: first the fixed trees (the issue's
 * cases), then random trees from `seed`, each under several random policies. `root` is an
 * existing directory to build in (default: a new world under __test__/.work).
 */
export function runDifferential({ seed, paths, root, log = () => {}, queriesPerRun = 800, policiesPerTree = 3 }) {
  const started = Date.now();
  const own = root ? null : makeWorld("diff");
  const w = worldAt(root ?? own.root);
  const summary = { seed, requested: paths, paths: 0, runs: 0, trees: 0, compared: { read: 0, write: 0 }, findings: [], whitelisted: {}, fixed: [] };
  const add = (res) => {
    summary.paths += res.paths;
    summary.runs++;
    summary.compared.read += res.compared.read;
    summary.compared.write += res.compared.write;
    summary.findings.push(...res.findings);
    for (const [k, v] of Object.entries(res.whitelisted)) summary.whitelisted[k] = (summary.whitelisted[k] ?? 0) + v;
  };
  try {
    for (const variant of ["repo", "worktree", "found"]) {
      const tree = buildFixedTree(w, variant);
      summary.trees++;
      const rng = makeRng(seed ^ 0x5eed);
      const policies = [{ project: { filesystem: {} }, global: null }, { project: { filesystem: { allowWrite: [".", w.outside], denyWrite: [".env", "*.pem", "**/secrets/**"] } }, global: null }];
      for (const [pi, policy] of policies.entries()) {
        const fixedQueries = tree.fixed.map((f) => ({ ...f, ...spellFixed(w, f.query), compared: new Set() }));
        const queries = [...fixedQueries, ...pickQueries(w, rng, 200)];
        add(runOnce({ w, policy, queries, context: { seed, tree: tree.kind, policyIndex: pi } }));
        for (const f of fixedQueries) summary.fixed.push({ label: f.label, op: f.op, policy: pi, compared: f.compared.has(f.op) });
      }
    }
    // Trees that yield nothing (the sandbox never ran) end the run rather than loop forever.
    for (let t = 0, barren = 0; summary.paths < paths && barren < 5; t++) {
      const before = summary.paths;
      const treeSeed = (seed + Math.imul(t + 1, 0x9e3779b1)) >>> 0;
      const rng = makeRng(treeSeed);
      const tree = buildRandomTree(w, rng);
      summary.trees++;
      for (let p = 0; p < policiesPerTree && summary.paths < paths; p++) {
        const policy = randomPolicy(w, rng);
        const queries = pickQueries(w, rng, Math.min(queriesPerRun, Math.max(50, paths - summary.paths)));
        add(runOnce({ w, policy, queries, context: { seed, tree: `${tree.kind} #${t}`, treeSeed, policyIndex: p } }));
      }
      barren = summary.paths === before ? barren + 1 : 0;
      log(`seed ${seed}: tree ${t} (${tree.kind}) done, ${summary.paths} paths, ${summary.findings.length} findings, ${((Date.now() - started) / 1000).toFixed(1)}s`);
    }
  } finally {
    own?.cleanup();
  }
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}

function spellFixed(w, query) {
  return { guard: query, probe: query.startsWith("~/") ? path.join(w.home, query.slice(2)) : query };
}

// ---- reporting ----------------------------------------------------------------------------

/**
 * Findings grouped by what went wrong (kind, op, the guard's rule and bash's outcome without
 * paths, the mount that decided), largest group first, each with its first `examples`
 * (from different trees where there are some: they show what the cases share).
 */
export function groupFindings(findings, examples = 2) {
  const groups = new Map();
  for (const f of findings) {
    const signature = [f.kind, f.op ?? "", withoutPaths(f.guard?.rule ?? f.what), withoutPaths(f.bash), f.mount?.shape ?? ""].join(" | ");
    if (!groups.has(signature)) groups.set(signature, []);
    groups.get(signature).push(f);
  }
  return [...groups]
    .map(([signature, list]) => {
      const byTree = [...new Map(list.map((f) => [`${f.seed}/${f.tree}/${f.policyIndex}`, f])).values()];
      return { signature, count: list.length, examples: [...new Set([...byTree, ...list])].slice(0, examples) };
    })
    .sort((a, b) => b.count - a.count);
}

/** The kind of a guard rule, for grouping: which layer of the policy decided. */
function ruleKind(rule) {
  if (rule.startsWith("allowWrite entry")) return "allowWrite";
  if (rule === "outside allowWrite") return "outside allowWrite";
  if (rule.startsWith("denyWrite pattern")) return "denyWrite";
  if (/^(target of protected link|hard link to protected) /.test(rule)) return "second name";
  if (rule.startsWith("mode ")) return rule;
  return "control surface";
}

/**
 * `text` with the paths taken out, so that findings of one kind group together: a rule's
 * trailing path (`git hooks /w/p/.git/hooks`), quoted entries holding a `/`, and paths in
 * bwrap's messages (up to the next `:`).
 */
function withoutPaths(text) {
  return String(text ?? "")
    .replace(/'[^']*\/[^']*'/g, "'<path>'")
    .replace(/ \/[^:;]*/g, " <path>")
    .replace(/\s+/g, " ")
    .trim();
}

/** Merges `more` groups into `into` (same signature: counts add, examples are kept). */
export function mergeGroups(into, more, examples = 2) {
  const at = new Map(into.map((g) => [g.signature, g]));
  for (const g of more) {
    const have = at.get(g.signature);
    if (have) {
      have.count += g.count;
      have.examples = [...have.examples, ...g.examples].slice(0, examples);
    } else {
      const copy = { ...g };
      into.push(copy);
      at.set(g.signature, copy);
    }
  }
  return into.sort((a, b) => b.count - a.count);
}

/** Groups as text: what disagreed, each example with its tree, policy, path and both outcomes. */
export function formatGroups(groups, header) {
  const world = /\/[^\s"',]*?\/__test__\/\.work\/[^/\s"',]+/g;
  const short = (s) => String(s).replace(world, "<world>");
  const lines = [header];
  for (const g of groups) {
    lines.push("", `${g.count} × ${g.signature}`);
    for (const f of g.examples) {
      lines.push(`  - seed ${f.seed}, tree ${f.tree}${f.treeSeed !== undefined ? ` (tree seed ${f.treeSeed})` : ""}, policy ${f.policyIndex}: ${short(JSON.stringify(f.policy))}`);
      if (f.what) {
        lines.push(`    ${short(f.what)}`);
        continue;
      }
      lines.push(`    ${f.op} ${short(f.query)}${f.label ? `  [${f.label}]` : ""}  (on the host: ${f.host})`);
      lines.push(`    guard: ${f.guard.verdict} by ${short(f.guard.rule)}; judged ${short(f.guard.path)}`);
      lines.push(`    bash:  ${short(f.bash)}; ${short(f.mount.text)}`);
      for (const l of f.anatomy) lines.push(`    link:  ${short(showLink(l))}`);
      for (const a of f.audit ?? []) lines.push(`    audit: ${short(a)}`);
    }
  }
  return lines.join("\n");
}

/** A run's findings as text, headed by the seed that reproduces them. */
export function formatFindings(summary, examples = 2) {
  const groups = groupFindings(summary.findings, examples);
  return formatGroups(
    groups,
    `seed ${summary.seed} (rerun with PI_SANDBOX_DIFF_SEED=${summary.seed} PI_SANDBOX_DIFF_PATHS=${summary.requested}): ${summary.findings.length} disagreements in ${groups.length} groups`,
  );
}
