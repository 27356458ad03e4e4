// A home laid out like a developer's, for benchmarks and tests that must not hide what a real
// home costs: login and interactive profiles that start a version manager (and print a banner),
// toolchains, package caches, other projects with their env files and dependency trees; about
// `entries` files and folders in all.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/** What the profiles print: a command's output must never hold it. */
export const PROFILE_BANNER = "DEVHOME-PROFILE-RAN";

/** Files per folder in the generated trees. */
const PER_DIR = 500;

/** `count` empty files in folders of PER_DIR below `dir`, made by one shell. */
function fill(dir, count, ext) {
  const dirs = Math.max(1, Math.ceil(count / PER_DIR));
  const per = Math.min(PER_DIR, count);
  execFileSync("bash", [
    "-c",
    `cd "$1" && for d in $(seq 1 ${dirs}); do mkdir -p d$d && (cd d$d && seq -f 'f%g.${ext}' 1 ${per} | xargs touch); done`,
    "_",
    dir,
  ]);
  return dirs * per + dirs;
}

function file(p, text, mode) {
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, text);
  if (mode) chmodSync(p, mode);
}

/**
 * Lays out a developer's home in `home` (which must exist) with about `entries` entries; returns
 * how many were made. The version manager is a stand-in with a real manager's start-up cost
 * (it forks a few programs and reads its versions, as `pyenv init` and nvm do).
 */
export function makeDeveloperHome(home, entries = 200_000) {
  const manager = path.join(home, ".pyenv");
  file(
    path.join(manager, "bin", "pyenv"),
    `#!/bin/bash
# init: what a version manager's start-up does, forks and reads included
for v in "$PYENV_ROOT"/versions/*; do basename "$v" >/dev/null; done
for i in 1 2 3 4 5 6 7 8; do command -v python3 >/dev/null; date +%s >/dev/null; done
echo 'export PATH="$PYENV_ROOT/shims:$PATH"'
echo 'pyenv() { command pyenv "$@"; }'
`,
    0o755,
  );
  for (const v of ["3.9.19", "3.10.14", "3.11.9", "3.12.4"]) mkdirSync(path.join(manager, "versions", v, "bin"), { recursive: true });
  mkdirSync(path.join(manager, "shims"), { recursive: true });
  file(path.join(home, ".nvm", "nvm.sh"), `# nvm stand-in: a large script sourced at start\n${"nvm_fn_x() { :; }\n".repeat(3000)}`);
  file(
    path.join(home, ".bashrc"),
    `export PYENV_ROOT="$HOME/.pyenv"
export PATH="$PYENV_ROOT/bin:$HOME/.cargo/bin:$PATH"
eval "$(pyenv init -)"
. "$HOME/.nvm/nvm.sh"
echo "${PROFILE_BANNER}"
`,
  );
  file(path.join(home, ".profile"), `[ -n "$BASH_VERSION" ] && [ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n`);
  file(path.join(home, ".bash_profile"), `. "$HOME/.profile"\n`);
  file(path.join(home, ".gitconfig"), "[user]\n\tname = Dev\n\temail = dev@example.com\n");
  file(path.join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nbench\n");
  file(path.join(home, ".cargo", "env"), 'export PATH="$HOME/.cargo/bin:$PATH"\n');

  // Toolchains and caches take most of a real home; other projects the rest.
  const share = (f) => Math.floor(entries * f);
  let made = 0;
  const tree = (rel, f, ext) => {
    const dir = path.join(home, rel);
    mkdirSync(dir, { recursive: true });
    made += fill(dir, share(f), ext);
  };
  tree(".cargo/registry/src/index.crates.io-6f17d22bba15001f", 0.25, "rs");
  tree(".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc", 0.15, "html");
  tree(".nvm/versions/node/v20.15.0/lib/node_modules", 0.1, "js");
  tree(".cache/pip/http", 0.1, "bin");
  tree(".npm/_cacache/content-v2", 0.1, "bin");
  for (let p = 1; p <= 6; p++) {
    const proj = path.join(home, "src", `project-${p}`);
    tree(`src/project-${p}/node_modules`, 0.04, "js");
    tree(`src/project-${p}/src`, 0.01, "ts");
    file(path.join(proj, ".env"), `DATABASE_URL=postgres://u:secret${p}@db/app\n`);
    file(path.join(proj, ".env.example"), "DATABASE_URL=\n");
    execFileSync("git", ["init", "-q", proj]);
  }
  return made;
}
