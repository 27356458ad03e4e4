/** Prompts, status line and /sandbox output. Formatting only: decisions come from Rust. */
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { Capability, Choice, NetworkMode, Sandbox } from "../index.js";

export type SandboxHandle = Sandbox;
export type SandboxAddon = typeof import("../index.js");
/** What pi's read, write and edit tools open files through (off Node's main thread). */
export type FileBackend = Pick<Sandbox, "readFileAsync" | "writeFileAsync" | "accessFileAsync" | "mkdirAsync">;

/**
 * Text for the user's eyes, escaped by the Rust core's one function (src/shown.rs): control,
 * bidi, tag and invisible characters become visible escapes. `text` makes one line; `lines`
 * keeps a message's own line breaks. Every dialog, notice and note goes through it, whatever
 * escaped its parts already (escaping twice changes nothing).
 */
export const show = {
	text: coarse(false),
	lines: coarse(true),
};

/** Without the core only this extension's own load-failure text is shown: a coarse guard. */
function coarse(keepNewlines: boolean): (text: string) => string {
	return (text) =>
		text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) =>
			keepNewlines && c === "\n" ? c : `\\u{${c.codePointAt(0)!.toString(16)}}`,
		);
}

/** Escapes with the core once it is loaded. */
export function escapeWith(addon: SandboxAddon | undefined): void {
	if (!addon) return;
	show.text = addon.shownText;
	show.lines = addon.shownLines;
}

/** A notice for the user, escaped. */
export function notify(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error"): void {
	ctx.ui.notify(show.lines(text), level);
}

/** Why every guarded tool is blocked: `cause` says which platform and what to do (load-failure.cjs). */
export function addonLoadFailure(cause: string | undefined): string {
	return `pi-sandbox-rs blocks every file tool and bash: ${cause ?? "the native module could not be loaded (unknown cause)"}`;
}

/**
 * Shows a permission prompt (its words come from Rust) and returns the chosen choice's id, of
 * the type the prompt's kind offers (what its grant call takes); undefined when there is no UI
 * or the dialog was dismissed, which callers treat as the first, blocking choice.
 */
export async function choose<C extends Choice>(
	ctx: ExtensionContext,
	prompt: { title: string; choices: C[] },
	opts?: { signal?: AbortSignal },
): Promise<C["id"] | undefined> {
	if (!ctx.hasUI) return undefined;
	const labels = prompt.choices.map((c) => show.lines(c.label));
	const label = await ctx.ui.select(show.lines(prompt.title), labels, opts);
	const at = label === undefined ? -1 : labels.indexOf(label);
	return at < 0 ? undefined : prompt.choices[at].id;
}

export function showStatus(ctx: ExtensionContext, s: Sandbox | undefined, bash: Capability, network: string): void {
	if (!s) return;
	let text: string;
	if (s.error) text = "sandbox: BROKEN config (file tools and bash blocked)";
	else if (!s.enabled) text = "sandbox: off (enabled: false)";
	else if (s.mode === "yolo") text = "sandbox: yolo (off)";
	else {
		const shell = bash.kind === "none" ? "bash blocked (no OS sandbox)" : `bash in ${bash.kind}, net ${network}`;
		// Only when bash does not run from a current index: each command walks the trees.
		const index = s.indexStatus.startsWith("full scan") ? " · full scans" : "";
		const project = s.projectTrust;
		const untrusted = project && project.trust !== "trusted" ? " · project rules not trusted" : "";
		text = `sandbox: ${s.mode} · ${shell}${index}${untrusted}`;
	}
	// The network mode is the --sandbox-network flag's value as given.
	ctx.ui.setStatus("sandbox", show.text(text));
}

/** `/sandbox` (one screen) or `/sandbox full` (every rule and the file it comes from). */
export function sandboxReport(disabledByFlag: boolean, addonError: string | undefined, s: Sandbox | undefined, network?: NetworkMode, full = false): string {
	if (disabledByFlag) return "pi-sandbox-rs is off for this session (--no-sandbox).";
	if (!s) return addonLoadFailure(addonError);
	const report = (n?: NetworkMode) => (full ? s.describe(n) : s.summary(n));
	try {
		return report(network);
	} catch (e) {
		return `${(e as Error).message}\n\n${report()}`;
	}
}

/** `/sandbox log`: the recent refusals and network decisions, newest last. */
export function violationReport(s: Sandbox): string {
	const entries = s.recentViolations(30);
	if (entries.length === 0) return `No refusals or network decisions recorded (${s.violationLogPath}).`;
	const lines = entries.map((v) => {
		const from = v.source ? ` (${v.source})` : "";
		const decision = v.decision ? `  ${v.decision}` : "";
		// A path the agent named must not drive the terminal or draw a line of its own.
		return show.text(`${v.time}  ${v.layer}  ${v.operation}  ${v.target}${decision}`) + `\n    ${show.text(`${v.rule}${from}`)}`;
	});
	return `The last ${entries.length} entries (${s.violationLogPath}):\n${lines.join("\n")}`;
}
