// The message a user gets when the native module cannot load, for each reason it can fail on
// their machine (the e2e test shows it through pi on this one).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { loadFailureText, platformOf } = require("../extensions/load-failure.cjs");
const { napi } = require("../package.json");
const supported = napi.targets.map(platformOf);

test("the package's targets are named as napi-rs names its platform packages", () => {
  assert.deepEqual(supported, ["linux-x64-gnu", "linux-arm64-gnu", "darwin-x64", "darwin-arm64"]);
});

test("a platform without a binary: the message names it and the supported list", () => {
  const text = loadFailureText({ here: "linux-x64-musl", glibc: null, supported, present: [], cause: "Cannot find module" });
  assert.match(text, /could not be loaded on linux-x64-musl \(Cannot find module\)/);
  assert.match(text, /has no binary for linux-x64-musl; it ships them for linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64\./);
  assert.match(text, /--no-sandbox/);
  assert.match(text, /npm ci && npm run build/);
});

test("a supported platform whose package npm left out: reinstall", () => {
  const text = loadFailureText({ here: "linux-arm64-gnu", glibc: "2.31", supported, present: [], cause: "Cannot find module 'pi-sandbox-rs-linux-arm64-gnu'" });
  assert.match(text, /loaded on linux-arm64-gnu \(glibc 2\.31\)/);
  assert.match(text, /pi-sandbox-rs-linux-arm64-gnu, is not installed .*pi install npm:pi-sandbox-rs/);
});

test("a binary that is there but does not load: the cause is the loader's", () => {
  const text = loadFailureText({ here: "linux-x64-gnu", glibc: "2.12", supported, present: ["linux-x64-gnu"], cause: "version `GLIBC_2.14' not found" });
  assert.match(text, /\(version `GLIBC_2\.14' not found\)\. This installation has the binary for linux-x64-gnu, and it did not load\./);
});
