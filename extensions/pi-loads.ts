/**
 * The code pi loads on the host at its next start, for the core to keep from the agent
 * (src/policy/pi_loads.rs). pi's own package manager says which extensions its settings load;
 * here that list is completed with what those extensions import (pi runs that too) and with
 * the caches pi's loader reads compiled code from.
 */
import { builtinModules } from "node:module";
import { readFileSync, realpathSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DefaultPackageManager, getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";
import type { PiExtension } from "../index.js";

/** pi's package manager's own helpers, private in its types but the same in 0.73 and 0.87. */
type PackageManagerInternals = {
	parseSource?(source: string): { type: string; path?: string };
	resolvePathFromBase?(input: string, baseDir: string): string;
	getBaseDirForScope?(scope: "user" | "project"): string;
	getNpmInstallPath?(parsed: unknown, scope: "user" | "project"): string;
	getGitInstallPath?(parsed: unknown, scope: "user" | "project"): string;
};

/** A settings entry that filters what a listed path gives (pi's `isPattern`), not a path. */
const isPattern = (entry: string) => /^[!+-]/.test(entry) || entry.includes("*") || entry.includes("?");

/** pi's `resolvePath` where its helper is gone: `~` expanded, trimmed, against `baseDir`. */
function resolveFromBase(internals: PackageManagerInternals, entry: string, baseDir: string): string {
	if (internals.resolvePathFromBase) return internals.resolvePathFromBase(entry, baseDir);
	const trimmed = entry.trim();
	const expanded = trimmed === "~" ? os.homedir() : trimmed.startsWith("~/") ? path.join(os.homedir(), trimmed.slice(2)) : trimmed;
	return path.resolve(baseDir, expanded);
}

/**
 * The places pi's loader reads compiled code from, in the host's temp folder (which the file
 * tools may write): jiti's transpile cache (an entry is trusted by a hash of the source it was
 * made from, which the agent can compute), node's compile cache, and pi 0.73's folder for
 * `-e npm:` packages.
 */
function loaderCaches(): PiExtension[] {
	const dirs = new Set<string>();
	for (const tmp of [os.tmpdir(), "/tmp"]) {
		for (const name of ["jiti", "node-compile-cache", "pi-extensions"]) dirs.add(path.join(tmp, name));
	}
	return [...dirs].map((dir) => ({ path: dir, packageRoot: dir }));
}

/** What pi loads, what could not be learnt, and the packages kept because extensions import them. */
export type PiLoads = { loads: PiExtension[]; errors: string[]; importedPackages: string[] };

/**
 * The extensions pi loads at its next start, as pi's own package manager resolves its settings
 * (the agent dir's and the project's, trusted or not yet: a later start may load them), with
 * each package's root; what a settings entry names that is not there yet (a command could make
 * it); what they import; pi's loader caches. Never installs: a missing package is skipped.
 * `-e` extensions are the user's choice at each start, like any project code they run.
 * Each step that fails is named in `errors`; the others still count.
 */
export async function piLoadsOf(cwd: string): Promise<PiLoads> {
	const errors: string[] = [];
	const loads: PiExtension[] = loaderCaches();
	const importedPackages: string[] = [];
	const step = async (what: string, f: () => unknown) => {
		try {
			await f();
		} catch (e) {
			errors.push(`${what}: ${(e as Error)?.message ?? String(e)}`);
		}
	};
	const agentDir = getAgentDir();
	// 0.87 reads the project's settings only when told the project is trusted.
	const create = SettingsManager.create as (cwd: string, agentDir: string, options: object) => SettingsManager;
	const settingsManager = create(cwd, agentDir, { projectTrusted: true });
	const pm = new DefaultPackageManager({ cwd, agentDir, settingsManager });
	const internals = pm as unknown as PackageManagerInternals;
	const scopes = [
		["user", settingsManager.getGlobalSettings(), agentDir],
		["project", settingsManager.getProjectSettings(), path.join(cwd, ".pi")],
	] as const;
	// The entries as written first: they hold even if pi's resolution below fails.
	for (const [scope, settings, baseDir] of scopes) {
		for (const entry of settings.extensions ?? []) {
			if (typeof entry === "string" && !isPattern(entry)) {
				await step(`${scope} extension ${entry}`, () => loads.push({ path: resolveFromBase(internals, entry, baseDir) }));
			}
		}
		for (const pkg of settings.packages ?? []) {
			const source = typeof pkg === "string" ? pkg : pkg.source;
			await step(`${scope} package ${source}`, () => {
				const parsed = internals.parseSource!(source);
				if (parsed.type === "local" && parsed.path) {
					loads.push({ path: resolveFromBase(internals, parsed.path, internals.getBaseDirForScope!(scope)) });
				} else if (parsed.type === "npm" || parsed.type === "git") {
					const root = parsed.type === "npm" ? internals.getNpmInstallPath!(parsed, scope) : internals.getGitInstallPath!(parsed, scope);
					loads.push({ path: root, packageRoot: root });
				}
			});
		}
	}
	await step("pi's package manager", async () => {
		const resolved = await pm.resolve(async () => "skip");
		for (const r of resolved.extensions) {
			loads.push({ path: r.path, packageRoot: r.metadata.origin === "package" ? r.metadata.baseDir : undefined });
		}
	});
	await step("the extensions' imports", () => {
		const imports = importsOf(loads);
		loads.push(...imports.loads);
		importedPackages.push(...imports.packages);
		errors.push(...imports.errors);
	});
	return { loads, errors, importedPackages };
}

/** The names pi's loader maps to its own copies (its jiti aliases): never read from disk. */
const isPiAlias = (name: string) => /^@(mariozechner|earendil-works)\/pi-/.test(name) || name === "typebox" || name === "@sinclair/typebox";

const isBuiltin = (spec: string) => spec.startsWith("node:") || builtinModules.includes(spec.split("/")[0]);

/**
 * Every string a module imports, requires or re-exports from, a comment between `(` and the
 * string allowed (`import(/* webpackIgnore: true *\/ "./x")`); over-approximate: comments
 * and `require.resolve` count too.
 */
const SPECIFIER = /\b(?:from|import|require(?:\.resolve)?)\s*\(?\s*(?:\/\*[\s\S]*?\*\/\s*)*(["'`])([^"'`\n\\$]+)\1/g;
/** Any string naming a script beside the file (`new URL("./worker.js", import.meta.url)`, a child process). */
const SCRIPT_STRING = /(["'`])(\.{1,2}\/[^"'`\n\\$]*\.[cm]?[jt]sx?)\1/g;

/** jiti's extensions, in the order it tries them (mlly's resolver). */
const EXTS = [".js", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".mtsx", ".ctsx", ".json"];

/** What jiti tries for a relative import, in its order: as written, each extension, a folder's index, `.js` as `.ts`. */
function candidates(p: string): string[] {
	return [p, ...EXTS.map((e) => p + e), ...EXTS.map((e) => path.join(p, "index" + e)), p.replace(/\.(c|m)?js(x?)$/, ".$1ts$2")];
}

const kind = (p: string): "file" | "dir" | undefined => {
	try {
		const s = statSync(p);
		return s.isFile() ? "file" : s.isDirectory() ? "dir" : undefined;
	} catch {
		return undefined;
	}
};

const realDir = (p: string) => {
	try {
		return realpathSync(p);
	} catch {
		return p;
	}
};

/** A package name's first one or two segments (`@scope/name`). */
const packageName = (spec: string) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

/** The folders node looks for `node_modules/<name>` in from `dir`: each parent's, then NODE_PATH's. */
function lookupDirs(dir: string): string[] {
	const out: string[] = [];
	for (let d = dir; ; d = path.dirname(d)) {
		if (path.basename(d) !== "node_modules") out.push(path.join(d, "node_modules"));
		if (path.dirname(d) === d) break;
	}
	for (const p of (process.env.NODE_PATH ?? "").split(path.delimiter)) if (p) out.push(p);
	return out;
}

/** Every string value of a package.json `imports`/`exports` entry (its conditions flattened). */
function targetsOf(entry: unknown): string[] {
	if (typeof entry === "string") return [entry];
	if (Array.isArray(entry)) return entry.flatMap(targetsOf);
	if (entry && typeof entry === "object") return Object.values(entry).flatMap(targetsOf);
	return [];
}

/** The nearest package.json above `dir`, and its parsed content. */
function nearestManifest(dir: string, kindOf = kind): { file: string; manifest: Record<string, unknown> } | undefined {
	for (let d = dir; ; d = path.dirname(d)) {
		const file = path.join(d, "package.json");
		if (kindOf(file) === "file") {
			try {
				return { file, manifest: JSON.parse(readFileSync(file, "utf8")) };
			} catch {
				return undefined;
			}
		}
		if (path.dirname(d) === d) return undefined;
	}
}

const MAX_FILES = 5000;
const MAX_PACKAGES = 5000;

export type Imports = { loads: PiExtension[]; packages: string[]; errors: string[] };

/**
 * What the loaded extensions import, followed file by file without running anything (every
 * file pi loads, packages' entries included):
 * - a local file: every name jiti would try for it, in its order (a `.js` made beside a kept
 *   `.ts` would win), the one found followed in turn;
 * - a package: found as node finds it (from the importer's real folder up, then NODE_PATH),
 *   kept whole with what its package.json depends on; and at each level below the one found
 *   whose `node_modules` exists, the name not made yet (a copy there would win);
 * - `#name` and the package's own name: the nearest package.json (it maps them) and its targets.
 * Imports computed at run time cannot be seen.
 */
export function importsOf(loads: PiExtension[]): Imports {
	const out: PiExtension[] = [];
	const errors: string[] = [];
	const seenFiles = new Set<string>();
	const seenPackages = new Set<string>();
	// One pass asks the disk once a path: imports name the same files and folders again and again.
	const kinds = new Map<string, ReturnType<typeof kind>>();
	const kindOf = (p: string) => {
		if (!kinds.has(p)) kinds.set(p, kind(p));
		return kinds.get(p);
	};
	const manifests = new Map<string, ReturnType<typeof nearestManifest>>();
	const manifestOf = (dir: string) => {
		if (!manifests.has(dir)) manifests.set(dir, nearestManifest(dir, kindOf));
		return manifests.get(dir);
	};
	const files = loads.filter((l) => kindOf(l.path) === "file").map((l) => l.path);
	const packages: string[] = [];
	const keepFile = (p: string) => out.push({ path: p, packageRoot: p });
	const keepPackage = (root: string) => {
		const real = realDir(root);
		if (seenPackages.has(real)) return;
		if (seenPackages.size >= MAX_PACKAGES) {
			if (seenPackages.size === MAX_PACKAGES) errors.push(`more than ${MAX_PACKAGES} packages imported: the rest are not kept`);
			seenPackages.add(real);
			return;
		}
		seenPackages.add(real);
		out.push({ path: root, packageRoot: root });
		packages.push(real);
	};
	const followRelative = (from: string, spec: string) => {
		const all = candidates(path.resolve(from, spec));
		// The names tried before the one found would win if made; those after never count. A
		// folder named as written is not kept whole: its index files are candidates.
		const found = all.findIndex((c) => kindOf(c) === "file");
		for (const c of found < 0 ? all : all.slice(0, found + 1)) if (kindOf(c) !== "dir") keepFile(c);
		if (found >= 0) files.push(all[found]);
	};
	const followBare = (fromDir: string, name: string) => {
		for (const dir of lookupDirs(fromDir)) {
			const root = path.join(dir, name);
			if (kindOf(root) === "dir") return keepPackage(root);
			if (kindOf(dir) === "dir") keepFile(root);
		}
	};
	const followMapped = (dir: string, spec: string) => {
		const near = manifestOf(dir);
		if (!near) return;
		keepFile(near.file);
		const map = spec.startsWith("#") ? (near.manifest.imports as Record<string, unknown> | undefined)?.[spec] : near.manifest.exports;
		for (const t of targetsOf(map)) if (t.startsWith("./")) followRelative(path.dirname(near.file), t);
	};
	while (files.length > 0) {
		const file = files.pop()!;
		if (seenFiles.has(file)) continue;
		if (seenFiles.size >= MAX_FILES) {
			errors.push(`more than ${MAX_FILES} files imported: the rest are not followed`);
			break;
		}
		seenFiles.add(file);
		let source: string;
		try {
			source = readFileSync(file, "utf8");
		} catch {
			continue;
		}
		const dir = realDir(path.dirname(file));
		for (const m of source.matchAll(SPECIFIER)) {
			const spec = m[2];
			if (isBuiltin(spec)) continue;
			if (spec.startsWith(".") || spec.startsWith("/")) {
				followRelative(path.dirname(file), spec);
				continue;
			}
			if (spec.startsWith("#")) {
				followMapped(dir, spec);
				continue;
			}
			const name = packageName(spec);
			if (isPiAlias(name)) continue;
			if (manifestOf(dir)?.manifest.name === name) followMapped(dir, spec);
			followBare(dir, name);
		}
		for (const m of source.matchAll(SCRIPT_STRING)) followRelative(path.dirname(file), m[2]);
	}
	// A package imports what its package.json lists, from its real folder (pnpm links it).
	for (let i = 0; i < packages.length; i++) {
		let manifest: { dependencies?: object; optionalDependencies?: object; peerDependencies?: object };
		try {
			manifest = JSON.parse(readFileSync(path.join(packages[i], "package.json"), "utf8"));
		} catch {
			continue;
		}
		const names = [manifest.dependencies, manifest.optionalDependencies, manifest.peerDependencies].flatMap((d) => (d && typeof d === "object" ? Object.keys(d) : []));
		for (const name of names) if (!isPiAlias(name)) followBare(packages[i], name);
	}
	return { loads: out, packages: [...seenPackages], errors };
}
