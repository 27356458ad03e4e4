// The house rules of src/ that a check can keep (docs/architecture.md): no import cycles
// between modules, no import up the flow (napi → session → platform → surface → policy → net
// → leaves), files under 800 lines and functions under 80, tests aside. Prints each breach and
// exits 1 if there is one. `--report` prints the module graph and the longest functions too.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const MAX_FILE = 800;
const MAX_FN = 80;
const src = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "src");
const report = process.argv.includes("--report");

/** Every .rs file below src/, with its module path (`policy::guard`). */
function modules(dir = src, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) modules(p, out);
    else if (e.name.endsWith(".rs") && !e.name.endsWith("_tests.rs") && e.name !== "tests.rs") {
      const rel = path.relative(src, p).replace(/\.rs$/, "").split(path.sep);
      if (rel.at(-1) === "mod" || rel.at(-1) === "lib") rel.pop();
      out.push({ file: p, module: rel.join("::") });
    }
  }
  return out;
}

/**
 * The code of a file without its test module, with comments, strings and char literals
 * blanked (newlines kept, so line numbers hold): one pass, as rustc's lexer reads them.
 */
function code(text) {
  // The first test module ends what counts: they sit at the end by custom.
  const cut = text.search(/^#\[cfg\((?:all\()?test\b[^\]]*\]\s*\n\s*(#\[path = "[^"]*"\]\s*\n\s*)?mod \w+/m);
  const s = cut >= 0 ? text.slice(0, cut) : text;
  let out = "";
  const blank = (t) => t.replace(/[^\n]/g, " ");
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    const rest = s.slice(i, i + 3);
    let end = -1;
    if (rest.startsWith("//")) {
      end = s.indexOf("\n", i);
      if (end < 0) end = s.length;
    } else if (rest.startsWith("/*")) {
      let depth = 0;
      let j = i;
      for (; j < s.length; j++) {
        if (s.startsWith("/*", j)) (depth++, j++);
        else if (s.startsWith("*/", j)) {
          depth--;
          j++;
          if (depth === 0) break;
        }
      }
      end = j + 1;
    } else if (/^b?r#*"/.test(s.slice(i, i + 260)) && !/\w/.test(s[i - 1] ?? "")) {
      const m = s.slice(i).match(/^b?r(#*)"/);
      const close = '"' + m[1];
      end = s.indexOf(close, i + m[0].length);
      end = end < 0 ? s.length : end + close.length;
    } else if (c === '"') {
      let j = i + 1;
      while (j < s.length && s[j] !== '"') j += s[j] === "\\" ? 2 : 1;
      end = j + 1;
    } else if (c === "'") {
      // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a, 'static).
      const m = s.slice(i).match(/^'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'/);
      if (m) end = i + m[0].length;
    }
    if (end > i) {
      out += blank(s.slice(i, end));
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Functions over MAX_FN lines: [lines, name, line number]. */
function longFunctions(body) {
  const lines = body.split("\n");
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+(\w+)/);
    if (!m) continue;
    let depth = 0;
    let opened = false;
    let j = i;
    for (; j < lines.length; j++) {
      for (const ch of lines[j]) {
        if (ch === "{") (depth++, (opened = true));
        else if (ch === "}") depth--;
      }
      if (opened && depth <= 0) break;
      if (!opened && /;\s*$/.test(lines[j])) break;
    }
    if (opened) found.push([j - i + 1, m[1], i + 1]);
  }
  return found;
}

const all = modules();
const names = new Set(all.map((m) => m.module));
/** The module a `crate::a::b::c` path names: its longest prefix that is a module. */
function target(pathText) {
  const parts = pathText.split("::");
  for (let n = parts.length; n > 0; n--) {
    const candidate = parts.slice(0, n).join("::");
    if (names.has(candidate)) return candidate;
  }
  return undefined;
}

// The flow of one tool call, top down (docs/architecture.md): the N-API skin hands it to the
// session, which runs the platform's sandbox over what the surface (the writable trees) holds,
// all of it decided by the policy; the network filter and the leaves serve everyone.
const RANK = { napi: 6, session: 5, platform: 4, surface: 3, policy: 2, net: 1 };
const rank = (module) => RANK[module.split("::")[0]] ?? 0;

const breaches = [];
const edges = new Map();
const longest = [];
for (const { file, module } of all) {
  const text = readFileSync(file, "utf8");
  const body = code(text);
  const rel = path.relative(path.join(src, ".."), file);
  const lines = body.split("\n").length;
  if (lines > MAX_FILE) breaches.push(`${rel}: ${lines} lines (tests aside); split it along a seam it has`);
  for (const [n, name, line] of longFunctions(body)) {
    longest.push([n, `${rel}:${line} ${name}`]);
    if (n > MAX_FN) breaches.push(`${rel}:${line}: fn ${name} is ${n} lines; split it`);
  }
  const uses = new Set();
  const here = module.split("::");
  for (const m of body.matchAll(/\bcrate::((?:\w+::)*\w+)/g)) uses.add(target(m[1]));
  // `super::x` from a file module means a sibling in its folder.
  for (const m of body.matchAll(/\bsuper::((?:\w+::)*\w+)/g)) {
    const parent = path.basename(file) === "mod.rs" ? here.slice(0, -2) : here.slice(0, -1);
    uses.add(target([...parent, ...m[1].split("::")].join("::")));
  }
  uses.delete(undefined);
  uses.delete(module);
  // A folder's mod.rs declaring its children is not an import.
  for (const u of uses) if (u.startsWith(module + "::") && path.basename(file) === "mod.rs") uses.delete(u);
  edges.set(module, uses);
  for (const u of uses) {
    if (rank(u) > rank(module)) breaches.push(`${module} imports ${u}, up the flow`);
  }
}

// Cycles: strongly connected components of more than one module (Tarjan).
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const on = new Set();
function strong(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of edges.get(v) ?? []) {
    if (!idx.has(w)) {
      strong(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) breaches.push(`import cycle: ${component.sort().join(" ⇄ ")}`);
  }
}
for (const v of edges.keys()) if (!idx.has(v)) strong(v);

if (report) {
  for (const [m, us] of [...edges].sort()) console.log(`${m} → ${[...us].sort().join(", ")}`);
  console.log("\nlongest functions:");
  for (const [n, where] of longest.sort((a, b) => b[0] - a[0]).slice(0, 15)) console.log(`  ${n} ${where}`);
  console.log("");
}
for (const b of breaches) console.log(b);
if (breaches.length > 0) {
  console.log(`\nhouse rules: ${breaches.length} breach(es) (scripts/house-rules.mjs)`);
  process.exit(1);
}
console.log("house rules: kept (no import cycle or upward import; files ≤ 800 lines, functions ≤ 80, tests aside)");
