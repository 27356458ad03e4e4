#!/usr/bin/env node
// Finishes the index.d.ts `napi build` just wrote, for what napi-rs cannot express: the
// classes are made by the addon only (a private constructor, as `new` throws at run time),
// and the loader's `__napiBindingTarget` is not part of this package's API. Then checks the
// result: the hand-written unions are in (src/napi/dts-header.d.ts), no `Js` name or `any` is
// left. Run by `npm run build` and `build:dist` right after napi build; any text it expects
// and does not find fails the build.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const file = fileURLToPath(new URL("../index.d.ts", import.meta.url));
/** The classes of src/lib.rs, none with a `#[napi(constructor)]`. */
const CLASSES = ["HostProxy", "PreparedCommand", "RedactStream", "Sandbox"];

function fail(message) {
	console.error(`finish-types: ${message} (index.d.ts must be napi build's fresh output: run npm run build)`);
	process.exit(1);
}

let dts = readFileSync(file, "utf8");

if (!dts.includes("export type SandboxErrorCode =")) fail("the unions of src/napi/dts-header.d.ts are missing (package.json napi.dtsHeaderFile)");

const bindingTarget = /\n\/\*\*(?:(?!\*\/)[\s\S])*\*\/\nexport declare const __napiBindingTarget: [^\n]*\n/g;
const found = dts.match(bindingTarget) ?? [];
if (found.length !== 1) fail(`expected one __napiBindingTarget declaration, found ${found.length}`);
dts = dts.replace(bindingTarget, "");

const classes = [...dts.matchAll(/^export declare class (\w+) \{$/gm)].map((m) => m[1]);
if (classes.join() !== CLASSES.join()) fail(`expected the classes ${CLASSES.join(", ")}, found ${classes.join(", ") || "none"}`);
if (/^\s*constructor\(/m.test(dts)) fail("a class declares a constructor: decide whether it stays constructible");
for (const name of CLASSES) {
	dts = dts.replace(`export declare class ${name} {\n`, `export declare class ${name} {\n  private constructor()\n`);
}

const code = dts.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
const jsName = code.match(/\bJs[A-Z]\w*/);
if (jsName) fail(`${jsName[0]} is still named after its Rust struct (js_name, or define it before its first use in src/lib.rs)`);
if (/\bany\b/.test(code)) fail("an `any` is left in the declarations");
if (/__napiBindingTarget/.test(code)) fail("__napiBindingTarget is still declared");

writeFileSync(file, dts);
