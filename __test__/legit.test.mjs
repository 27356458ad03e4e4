// Legitimate work keeps working inside the sandbox, end to end through a real pi: a virtualenv
// and pip install of a local wheel, npm install from a registry on 127.0.0.1 (network on),
// cargo build of a small crate, make -j, mktemp. The tools' caches in your home are read-only
// inside; they are moved into the command's private /tmp (XDG_CACHE_HOME, npm_config_cache).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { makeWorld, runPi } from "./helpers/pi-run.mjs";

const call = (name, args) => ({ name, arguments: args });

/** A wheel built by hand (a zip with its dist-info), so no build tool is needed. */
function makeWheel(dir) {
  const wheel = path.join(dir, "tinywheel-0.1-py3-none-any.whl");
  execFileSync("python3", [
    "-c",
    `import zipfile, sys
z = zipfile.ZipFile(sys.argv[1], "w")
z.writestr("tinywheel/__init__.py", "X = 42\\n")
z.writestr("tinywheel-0.1.dist-info/METADATA", "Metadata-Version: 2.1\\nName: tinywheel\\nVersion: 0.1\\n")
z.writestr("tinywheel-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
z.writestr("tinywheel-0.1.dist-info/RECORD", "tinywheel/__init__.py,,\\ntinywheel-0.1.dist-info/METADATA,,\\ntinywheel-0.1.dist-info/WHEEL,,\\ntinywheel-0.1.dist-info/RECORD,,\\n")
z.close()`,
    wheel,
  ]);
  return wheel;
}

/** A registry with one package, on 127.0.0.1. */
async function startRegistry(root) {
  const src = path.join(root, "tinypkg-src");
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, "package.json"), JSON.stringify({ name: "tinypkg", version: "1.0.0", main: "index.js" }));
  writeFileSync(path.join(src, "index.js"), "module.exports = 'tiny-from-registry';\n");
  const tgzName = execFileSync("npm", ["pack", "--silent", "--pack-destination", root], { cwd: src, encoding: "utf8" }).trim().split("\n").pop();
  const tgz = readFileSync(path.join(root, tgzName));
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${server.address().port}`;
    if (req.url === "/tinypkg") {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          name: "tinypkg",
          "dist-tags": { latest: "1.0.0" },
          versions: {
            "1.0.0": {
              name: "tinypkg",
              version: "1.0.0",
              main: "index.js",
              dist: {
                tarball: `${base}/tinypkg/-/${tgzName}`,
                shasum: createHash("sha1").update(tgz).digest("hex"),
                integrity: `sha512-${createHash("sha512").update(tgz).digest("base64")}`,
              },
            },
          },
        }),
      );
    } else if (req.url === `/tinypkg/-/${tgzName}`) {
      res.end(tgz);
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

test("real work keeps working end to end: venv + pip install of a local wheel, npm install from a local registry, cargo build, make -j, mktemp, multiprocessing's Manager and socketpair", async (t) => {
  const w = makeWorld("legit");
  t.after(w.cleanup);
  makeWheel(w.project);
  const registry = await startRegistry(w.root);
  t.after(() => registry.close());
  const url = `http://127.0.0.1:${registry.address().port}/`;
  // rustup's cargo needs its homes (your real ones, read-only inside).
  const cargo = execFileSync("bash", ["-c", "command -v cargo"], { encoding: "utf8" }).trim();
  const rustEnv = {
    RUSTUP_HOME: process.env.RUSTUP_HOME ?? path.join(process.env.HOME, ".rustup"),
    CARGO_HOME: process.env.CARGO_HOME ?? path.join(process.env.HOME, ".cargo"),
  };
  writeFileSync(path.join(w.project, "package.json"), JSON.stringify({ name: "proj", version: "1.0.0", private: true }));
  writeFileSync(path.join(w.project, "Makefile"), "all: a b c d\n\t@cat a.out b.out c.out d.out | tr -d '\\n'; echo\na b c d:\n\t@echo $@ > $@.out\n");
  const r = await runPi({
    world: w,
    args: ["--sandbox-network", "on"],
    env: rustEnv,
    script: [
      [
        call("bash", {
          command:
            "python3 -m venv .venv && .venv/bin/pip install -q --no-index ./tinywheel-0.1-py3-none-any.whl 2>&1 | grep -v pyenv; .venv/bin/python -c 'import tinywheel; print(\"WHEEL\", tinywheel.X)'",
        }),
        call("bash", { command: `npm install --registry ${url} tinypkg --no-audit --no-fund 2>&1 | tail -3; node -e 'console.log("NPM", require("tinypkg"))'` }),
        call("bash", { command: `${cargo} new -q --vcs none hello && cd hello && ${cargo} build -q --offline 2>&1 | tail -3; ./target/debug/hello` }),
        call("bash", { command: "make -j4 -s" }),
        call("bash", { command: "f=$(mktemp) && echo MKTEMP-ok > \"$f\" && cat \"$f\" && echo \"$f\"" }),
        call("bash", {
          command:
            "python3 -c 'import multiprocessing as mp, socket\nif __name__ == \"__main__\":\n    with mp.Manager() as m:\n        d = m.dict(); d[\"k\"] = 7\n        a, b = socket.socketpair(); a.sendall(b\"pair\"); print(\"IPC\", d[\"k\"], b.recv(4).decode())'",
        }),
      ],
    ],
  });
  assert.equal(r.code, 0, r.stderr);
  const [pip, npm, built, make, mktemp, ipc] = r.results.map((x) => x.text);
  assert.match(pip, /WHEEL 42/, pip);
  assert.match(npm, /NPM tiny-from-registry/, npm);
  assert.match(built, /Hello, world!/, built);
  assert.match(make, /abcd/, make);
  assert.match(mktemp, /MKTEMP-ok\n\/tmp\//, mktemp);
  assert.match(ipc, /IPC 7 pair/, ipc);
  // The host's caches were not written.
  assert.throws(() => readFileSync(path.join(w.home, ".npm", "_cacache", "index-v5")), /ENOENT/);
});
