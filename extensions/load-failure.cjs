// What to tell a user whose machine cannot load the native module: which platform this is,
// which ones the package ships for, and what they can do. Shared by the extension and the CLI.
"use strict";

const path = require("node:path");

/** `x86_64-unknown-linux-gnu` → `linux-x64-gnu`, as napi-rs names its packages. */
function platformOf(triple) {
  const [arch, , os, abi] = triple.split("-");
  const archName = { x86_64: "x64", aarch64: "arm64", i686: "ia32", armv7: "arm" }[arch] ?? arch;
  const osName = { darwin: "darwin", linux: "linux", windows: "win32" }[os] ?? os;
  return [osName, archName, abi === "msvc" ? "msvc" : abi].filter(Boolean).join("-");
}

/** This machine as napi-rs names platforms (`linux-x64-gnu`), and its glibc version. */
function thisPlatform() {
  if (process.platform !== "linux") return { name: `${process.platform}-${process.arch}`, glibc: null };
  const glibc = process.report?.getReport?.().header?.glibcVersionRuntime ?? null;
  return { name: `linux-${process.arch}-${glibc ? "gnu" : "musl"}`, glibc };
}

/** The first line of each error in the chain, without napi's generic npm advice. */
function causes(error) {
  const out = [];
  for (let e = error; e && out.length < 3; e = e.cause) {
    const line = String(e.message ?? e).split("\n")[0];
    // napi's generic npm advice, and its WebAssembly fallback, which this package does not ship.
    if (/npm has a bug|Cannot find native binding|wasi/.test(line)) continue;
    out.push(line);
  }
  return out.length ? out.join("; ") : String(error?.message ?? error);
}

/**
 * The message, from the facts: `here` (napi's name of this platform), `glibc` (its version,
 * or null), `supported` (the platforms the package ships for), `present` (those this
 * installation has), `cause` (why loading failed).
 */
function loadFailureText({ here, glibc, supported, present, cause }) {
  const shown = glibc ? `${here} (glibc ${glibc})` : here;
  let situation;
  if (!supported.includes(here)) {
    situation = `pi-sandbox-rs has no binary for ${here}; it ships them for ${supported.join(", ") || "no platform (a broken package)"}.`;
  } else if (!present.includes(here)) {
    situation =
      `Its package for this platform, pi-sandbox-rs-${here}, is not installed (npm leaves optional dependencies out ` +
      "with --omit=optional): reinstall with `pi install npm:pi-sandbox-rs`.";
  } else {
    situation = `This installation has the binary for ${here}, and it did not load.`;
  }
  return (
    `the native module of pi-sandbox-rs could not be loaded on ${shown} (${cause}). ${situation} ` +
    "Start pi with --no-sandbox to run this session unprotected, or build the module on this machine " +
    "(needs Rust and Node): in a clone of pi-sandbox-rs run `npm ci && npm run build`, then `pi install <that directory>`."
  );
}

function describeLoadFailure(error) {
  let targets = [];
  try {
    targets = require(path.join(__dirname, "..", "package.json")).napi?.targets ?? [];
  } catch {
    // an incomplete installation: the list is unknown
  }
  const supported = targets.map(platformOf);
  // What this installation really has: a binary beside index.js, or a platform package.
  const root = path.join(__dirname, "..");
  const present = supported.filter((p) => {
    if (require("node:fs").existsSync(path.join(root, `pi-sandbox.${p}.node`))) return true;
    try {
      require.resolve(`pi-sandbox-rs-${p}`);
      return true;
    } catch {
      return false;
    }
  });
  const { name, glibc } = thisPlatform();
  return loadFailureText({ here: name, glibc, supported, present, cause: causes(error) });
}

module.exports = { describeLoadFailure, loadFailureText, platformOf };
