/**
 * The code pi loads on the host at its next start, for the core to keep from the agent
 * (src/policy/pi_loads.rs). pi's own package manager says which extensions its settings load;
 * here that list is completed with what those extensions import (pi runs that too) and with
 * the caches pi's loader reads compiled code from.
 */
import { builtinModules } from "node:module";
import { existsSync, readFileSync, statSync } from "node:fs";
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

export type PiLoads = { loads: PiExtension[]; errors: string[] };

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
	await step("the extensions' imports", () => loads.push(...importsOf(loads)));
	return { loads, errors };
}

/** The names pi's loader maps to its own copies (its jiti aliases): never read from disk. */
const isPiAlias = (name: string) => /^@(mariozechner|earendil-works)\/pi-/.test(name) || name === "typebox" || name === "@sinclair/typebox";

const isBuiltin = (spec: string) => spec.startsWith("node:") || builtinModules.includes(spec.split("/")[0]);

/** Every string a module imports, requires or re-exports from (over-approximate: comments count). */
const SPECIFIER = /\b(?:from|import|require)\s*\(?\s*(["'`])([^"'`\n\\$]+)\1/g;

/** What jiti tries for a relative import: as written, with each extension, `.js` as `.ts`, as a folder's index. */
function candidates(p: string): string[] {
	const exts = [".ts", ".tsx", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"];
	return [p, ...exts.map((e) => p + e), p.replace(/\.(c|m)?js$/, ".$1ts"), ...exts.map((e) => path.join(p, "index" + e))];
}

const isFile = (p: string) => {
	try {
		return statSync(p).isFile();
	} catch {
		return false;
	}
};

/** The package folder `name` resolves to from `dir`, as node looks (each parent's node_modules). */
function packageRootFrom(dir: string, name: string): string | undefined {
	for (let d = dir; ; d = path.dirname(d)) {
		const root = path.join(d, "node_modules", name);
		if (existsSync(root)) return root;
		if (path.dirname(d) === d) return undefined;
	}
}

/** A package name's first one or two segments (`@scope/name`). */
const packageName = (spec: string) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

const MAX_FILES = 5000;
const MAX_PACKAGES = 5000;

/**
 * What the loaded extensions import, followed file by file without running anything: each
 * local file imported (kept alone: its own imports are followed in turn; one not there yet
 * is kept as each name jiti would try), and each package imported, kept whole with the
 * packages it depends on (package.json), found as node finds them. Imports computed at run
 * time cannot be seen.
 */
export function importsOf(loads: PiExtension[]): PiExtension[] {
	const out: PiExtension[] = [];
	const seenFiles = new Set<string>();
	const seenPackages = new Set<string>();
	const files = loads.filter((l) => l.packageRoot === undefined && isFile(l.path)).map((l) => l.path);
	const packages: string[] = loads.filter((l) => l.packageRoot && l.packageRoot !== l.path).map((l) => l.packageRoot!);
	const keepPackage = (root: string) => {
		if (seenPackages.has(root) || seenPackages.size >= MAX_PACKAGES) return;
		seenPackages.add(root);
		out.push({ path: root, packageRoot: root });
		packages.push(root);
	};
	while (files.length > 0 && seenFiles.size < MAX_FILES) {
		const file = files.pop()!;
		if (seenFiles.has(file)) continue;
		seenFiles.add(file);
		let source: string;
		try {
			source = readFileSync(file, "utf8");
		} catch {
			continue;
		}
		for (const m of source.matchAll(SPECIFIER)) {
			const spec = m[2];
			if (isBuiltin(spec)) continue;
			if (spec.startsWith(".") || spec.startsWith("/")) {
				const base = path.resolve(path.dirname(file), spec);
				const found = candidates(base).find(isFile);
				if (found) {
					out.push({ path: found, packageRoot: found });
					files.push(found);
				} else {
					out.push(...candidates(base).map((c) => ({ path: c, packageRoot: c })));
				}
				continue;
			}
			const name = packageName(spec);
			if (isPiAlias(name)) continue;
			const root = packageRootFrom(path.dirname(file), name);
			if (root) keepPackage(root);
		}
	}
	// A package imports what its package.json lists (what it imports unlisted is not followed).
	for (let i = 0; i < packages.length && seenPackages.size < MAX_PACKAGES; i++) {
		let manifest: { dependencies?: object; optionalDependencies?: object; peerDependencies?: object };
		try {
			manifest = JSON.parse(readFileSync(path.join(packages[i], "package.json"), "utf8"));
		} catch {
			continue;
		}
		const names = [manifest.dependencies, manifest.optionalDependencies, manifest.peerDependencies].flatMap((d) => (d && typeof d === "object" ? Object.keys(d) : []));
		for (const name of names) {
			if (isPiAlias(name)) continue;
			const root = packageRootFrom(packages[i], name);
			if (root) keepPackage(root);
		}
	}
	return out;
}
