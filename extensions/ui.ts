/** Prompts, status line and /sandbox output. Formatting only: decisions come from Rust. */
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { Capability, Choice, NetworkMode, Sandbox } from "../index.js";

export type SandboxHandle = Sandbox;
export type SandboxAddon = typeof import("../index.js");
/** What pi's read, write and edit tools open files through (off Node's main thread). */
export type FileBackend = Pick<Sandbox, "readFileAsync" | "writeFileAsync" | "accessFileAsync" | "mkdirAsync">;

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
	const label = await ctx.ui.select(
		prompt.title,
		prompt.choices.map((c) => c.label),
		opts,
	);
	return prompt.choices.find((c) => c.label === label)?.id;
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
	ctx.ui.setStatus("sandbox", text);
}

export function sandboxReport(disabledByFlag: boolean, addonError: string | undefined, s: Sandbox | undefined, network?: NetworkMode): string {
	if (disabledByFlag) return "pi-sandbox-rs is off for this session (--no-sandbox).";
	if (!s) return addonLoadFailure(addonError);
	try {
		return s.describe(network);
	} catch (e) {
		return `${(e as Error).message}\n\n${s.describe()}`;
	}
}

/** Control characters shown as escapes: a path the agent named must not drive the terminal. */
function printable(text: string): string {
	return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** `/sandbox log`: the recent refusals and network decisions, newest last. */
export function violationReport(s: Sandbox): string {
	const entries = s.recentViolations(30);
	if (entries.length === 0) return `No refusals or network decisions recorded (${s.violationLogPath}).`;
	const lines = entries.map((v) => {
		const from = v.source ? ` (${v.source})` : "";
		const decision = v.decision ? `  ${v.decision}` : "";
		return printable(`${v.time}  ${v.layer}  ${v.operation}  ${v.target}${decision}`) + `\n    ${printable(`${v.rule}${from}`)}`;
	});
	return `The last ${entries.length} entries (${s.violationLogPath}):\n${lines.join("\n")}`;
}
