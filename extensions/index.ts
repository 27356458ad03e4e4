/**
 * pi-sandbox-rs — pi extension. Thin: forwards tool calls to the Rust core and applies its
 * answers. No policy lives here; see src/guard.rs and src/tools.rs.
 */
import { createRequire } from "node:module";
import {
	createBashToolDefinition,
	createEditToolDefinition,
	createFindToolDefinition,
	createGrepToolDefinition,
	createLsToolDefinition,
	createReadToolDefinition,
	createLocalBashOperations,
	createWriteToolDefinition,
	getAgentDir,
	SettingsManager,
} from "@mariozechner/pi-coding-agent";
import { constants as fsConstants, promises as fs } from "node:fs";
import path from "node:path";
import type {
	BashOperations,
	EditOperations,
	ExtensionAPI,
	ExtensionContext,
	ReadOperations,
	ToolDefinition,
	WriteOperations,
} from "@mariozechner/pi-coding-agent";
import type { CommandPrompt, Decision, GuardPrompt, NetworkAnswer, NetworkMode, NetworkQuestion, PreparedCommand } from "../index.js";
import { piLoadsOf } from "./pi-loads.ts";
import { narrowHostPath, runPrepared } from "./exec.ts";
import { addonLoadFailure, choose, escapeWith, notify, show, showStatus, sandboxReport, violationReport } from "./ui.ts";
import type { FileBackend, SandboxAddon, SandboxHandle } from "./ui.ts";

/** Added to the bash tool's description; the details come with the system prompt. */
const BASH_SANDBOXED =
	"Commands run inside pi-sandbox: only the project and /tmp are writable, secrets (env files, credentials) are hidden, and the network may be off or filtered. The system prompt's pi-sandbox section says what holds in this session; a line starting with [pi-sandbox] after the output explains a failure the sandbox caused.";

function loadAddon(): { addon?: SandboxAddon; error?: string } {
	const require = createRequire(import.meta.url);
	try {
		return { addon: require("../index.js") as SandboxAddon };
	} catch (e) {
		// Which platform this is, which ones the package has, what the user can do.
		const { describeLoadFailure } = require("./load-failure.cjs") as { describeLoadFailure: (e: unknown) => string };
		return { error: describeLoadFailure(e) };
	}
}

/**
 * pi's own file tools, with two changes. They run sequentially: pi checks a parallel batch
 * (tool_call) before running any of it, so `[bash "ln -s ~/.ssh/id_rsa x", read "x"]` would be
 * checked while x did not exist yet; a batch holding a sequential tool runs call by call, each
 * checked right before it runs. And read, write and edit open files through the Rust core
 * (`backend`): each operation is judged again and opens exactly the file judged, refusing a
 * symlink swapped in since (by a bash command running at the same moment).
 */
function registerGuardedFileTools(pi: ExtensionAPI, cwd: string, backend: () => Promise<FileBackend | undefined>): string[] {
	let autoResizeImages = true;
	try {
		autoResizeImages = SettingsManager.create(cwd, getAgentDir()).getImageAutoResize();
	} catch {
		// pi reports unreadable settings itself; keep its default.
	}
	/** The Rust backend, or pi's own fs when protection is off. */
	const via = async <T>(guarded: (b: FileBackend) => T | Promise<T>, plain: () => Promise<T>): Promise<T> => {
		const b = await backend();
		return b ? guarded(b) : plain();
	};
	const readOperations: ReadOperations = {
		readFile: (p) => via<Buffer>((b) => b.readFileAsync(p), () => fs.readFile(p)),
		access: (p) => via((b) => b.accessFileAsync(p, false), () => fs.access(p, fsConstants.R_OK)),
		detectImageMimeType: async (p) => imageMimeType(await readOperations.readFile(p)),
	};
	const writeOperations: WriteOperations = {
		writeFile: (p, content) => via((b) => b.writeFileAsync(p, content), () => fs.writeFile(p, content, "utf-8")),
		mkdir: (dir) => via((b) => b.mkdirAsync(dir), () => fs.mkdir(dir, { recursive: true }).then(() => undefined)),
	};
	const editOperations: EditOperations = {
		readFile: readOperations.readFile,
		writeFile: writeOperations.writeFile,
		access: (p) => via((b) => b.accessFileAsync(p, true), () => fs.access(p, fsConstants.R_OK | fsConstants.W_OK)),
	};
	const definitions: ToolDefinition<any, any, any>[] = [
		createReadToolDefinition(cwd, { autoResizeImages, operations: readOperations }),
		createWriteToolDefinition(cwd, { operations: writeOperations }),
		createEditToolDefinition(cwd, { operations: editOperations }),
		createGrepToolDefinition(cwd),
		createFindToolDefinition(cwd),
		createLsToolDefinition(cwd),
	];
	for (const definition of definitions) {
		pi.registerTool({ ...definition, executionMode: "sequential" });
	}
	return definitions.map((d) => d.name);
}

/** The image types pi's read tool shows as images, by their first bytes. */
function imageMimeType(bytes: Buffer): string | null {
	if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
	if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
	if (bytes.subarray(0, 4).toString("latin1") === "GIF8") return "image/gif";
	if (bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP") return "image/webp";
	return null;
}

/** Where pi keeps this session's transcript, as pi's own session manager names it. */
type PiSession = { sessionDir?: string; sessionFile?: string };

/**
 * pi's answer, not a re-reading of its flags, environment and settings. pi opens these
 * paths as given, a relative one (a relative `sessionDir`) from its own cwd. Empty when pi
 * keeps no transcript (`--no-session`): the core then resolves the folder as pi would.
 */
function piSessionOf(ctx: ExtensionContext): PiSession {
	try {
		const dir = ctx.sessionManager.getSessionDir();
		const file = ctx.sessionManager.getSessionFile();
		return { sessionDir: dir ? path.resolve(dir) : undefined, sessionFile: file ? path.resolve(file) : undefined };
	} catch {
		return {};
	}
}

export default function sandboxExtension(pi: ExtensionAPI) {
	const { addon, error: addonError } = loadAddon();
	escapeWith(addon);
	const startCwd = process.cwd();
	/** The session's sandbox for `cwd` and pi's session files, loaded off the main thread on first use. */
	let loaded: { key: string; sandbox: Promise<SandboxHandle> } | undefined;
	/** pi's session id: grants "for this session" belong to it. */
	let sessionId: string | undefined;
	/** Where pi keeps the session's transcript: protected, and what else is there hidden. */
	let piSession: PiSession = {};
	/** What could not be learnt about the code pi loads at start (see pi-loads.ts). */
	let piLoadsErrors: string[] = [];
	/** The packages kept from commands because an extension pi loads imports them. */
	let piImportedPackages: string[] = [];
	/** The context of the last event, to ask the user from bash's exec (which has none). */
	let uiCtx: ExtensionContext | undefined;
	const sandboxFor = (cwd: string, ctx?: ExtensionContext): Promise<SandboxHandle> => {
		if (!addon) return Promise.reject(new Error(addonLoadFailure(addonError)));
		if (ctx) piSession = piSessionOf(ctx);
		const key = JSON.stringify([cwd, piSession.sessionDir, piSession.sessionFile]);
		if (!loaded || loaded.key !== key) {
			const session = piSession;
			loaded = {
				key,
				sandbox: piLoadsOf(cwd)
					.catch((e) => ({ loads: [], errors: [(e as Error)?.message ?? String(e)], importedPackages: [] }))
					.then(({ loads, errors, importedPackages }) => {
						piLoadsErrors = errors;
						piImportedPackages = importedPackages;
						return addon.Sandbox.loadAsync({ cwd, sessionId, ...session, piExtensions: loads });
					})
					.then((s) => withNetworkPrompts(withFlagMode(addon, s, ctx))),
			};
		}
		return loaded.sandbox;
	};
	/** Applies --sandbox-mode to a freshly loaded sandbox. */
	const withFlagMode = (a: SandboxAddon, s: SandboxHandle, ctx?: ExtensionContext): SandboxHandle => {
		const flagMode = pi.getFlag("sandbox-mode");
		if (typeof flagMode === "string" && flagMode !== "") {
			// A bad --sandbox-mode value must not fall back to something weaker: read-only.
			try {
				s.setMode(a.parseMode(flagMode), "--sandbox-mode flag");
			} catch (e) {
				s.setMode("read-only", "--sandbox-mode flag (invalid value, read-only used)");
				if (ctx) notify(ctx, `${(e as Error).message}. Using read-only.`, "error");
			}
		}
		return s;
	};
	/**
	 * Hosts no network list names, asked about while a filtered command runs (the proxy's
	 * threads ask; the answer goes back by id). "For this project / all projects" writes the
	 * host into that config file first. Without a UI the host is refused with how to allow it.
	 */
	const withNetworkPrompts = (s: SandboxHandle): SandboxHandle => {
		s.onNetworkPrompt((question) => {
			void answerNetworkQuestion(s, question);
		});
		return s;
	};
	async function answerNetworkQuestion(s: SandboxHandle, q: NetworkQuestion): Promise<void> {
		const ctx = uiCtx;
		if (!ctx?.hasUI) {
			s.answerNetworkPrompt(q.id, "noUi");
			return;
		}
		// The dialog closes by itself once the question is withdrawn (its command ended).
		const closer = new AbortController();
		const watch = setInterval(() => {
			if (!s.networkPromptPending(q.id)) closer.abort();
		}, 250);
		let answer: NetworkAnswer | undefined;
		try {
			answer = await choose(ctx, q.prompt, { signal: closer.signal });
		} finally {
			clearInterval(watch);
		}
		// Stored only if the question still waits: an answer to a withdrawn one changes nothing.
		const said = s.answerNetworkPrompt(q.id, answer ?? "abort");
		if (said) {
			notify(ctx, `pi-sandbox-rs: ${said}`, "info");
			status(ctx, s);
		}
	}
	/** The sandbox loaded last, or pi's start directory's (tools and bash outside a ctx). */
	const sessionSandbox = (): Promise<SandboxHandle> => (loaded ? loaded.sandbox : sandboxFor(startCwd));
	/** The sandbox loaded last, if any (for notes after a command). */
	let current: SandboxHandle | undefined;
	const fileTools = registerGuardedFileTools(pi, startCwd, async () => (disabledByFlag() ? undefined : sessionSandbox()));
	// The tools the path guard covers, as the core lists them; without the core, the file
	// tools registered here are blocked.
	const guarded = new Set(addon ? addon.guardedTools() : fileTools);

	pi.registerFlag("no-sandbox", {
		description: "Turn the pi-sandbox-rs path guard off for this session",
		type: "boolean",
		default: false,
	});
	pi.registerFlag("sandbox-network", {
		description:
			"Network inside sandboxed bash: filtered (the default when the config lists domains: only allowedDomains, through the sandbox's proxy; others are asked about), off (the default otherwise), or on (unfiltered)",
		type: "string",
	});
	pi.registerFlag("sandbox-mode", {
		description: "Sandbox mode: read-only (ro), read-write (rw) or yolo",
		type: "string",
	});

	// pi 0.73 gives an unknown flag the next bare word as its value (`--no-sandbox "fix it"`):
	// the flag's presence is the user's choice, unless it is explicitly falsy.
	const disabledByFlag = () => {
		const v = pi.getFlag("no-sandbox");
		if (typeof v === "string") return !["", "false", "0", "no", "off"].includes(v.toLowerCase());
		return v === true;
	};

	/** The session's sandbox for ctx.cwd. */
	async function session(ctx: ExtensionContext): Promise<SandboxHandle | undefined> {
		if (!addon) return undefined;
		current = await sandboxFor(ctx.cwd, ctx);
		return current;
	}

	/**
	 * --sandbox-network, if given; else the Rust core decides (filtered when domains are listed).
	 * Passed on unchecked: the core refuses an unknown value (E_BAD_NETWORK) with the modes it takes.
	 */
	const network = (): NetworkMode | undefined => {
		const v = pi.getFlag("sandbox-network");
		return typeof v === "string" && v !== "" ? (v as NetworkMode) : undefined;
	};

	/**
	 * How a shell command runs: prepared for the sandbox, as is ("unsandboxed": protection
	 * turned off by the user), or an Error whose message says why it may not run.
	 */
	async function prepareCommand(command: string): Promise<PreparedCommand | "unsandboxed" | Error> {
		if (disabledByFlag()) return "unsandboxed";
		if (!addon) return new Error(addonLoadFailure(addonError));
		let prepared: PreparedCommand;
		let s: SandboxHandle | undefined;
		try {
			s = await sessionSandbox();
			current ??= s;
			prepared = await s.prepareBashAsync(command, network());
		} catch (e) {
			return e as Error;
		} finally {
			// Preparing re-read changed config files: the footer shows what holds now.
			if (s && uiCtx) status(uiCtx, s);
		}
		if (prepared.verdict === "sandboxed") return prepared;
		if (prepared.verdict === "unsandboxed") return "unsandboxed";
		if (prepared.verdict === "ask" && prepared.prompt) return askToRunUnsandboxed(s, command, prepared.prompt);
		return new Error(prepared.reason ?? "Blocked by the sandbox.");
	}

	/**
	 * No OS sandbox works and approval mode is ask: the user decides whether this command
	 * runs unsandboxed (once, for the session, always); a lasting grant is keyed as they
	 * choose (the exact command or a prefix of its words) and stored by the Rust core.
	 */
	async function askToRunUnsandboxed(s: SandboxHandle, command: string, prompt: CommandPrompt): Promise<"unsandboxed" | Error> {
		const ctx = uiCtx;
		if (!ctx?.hasUI) return new Error(prompt.noUi);
		const scope = await choose(ctx, prompt);
		if (scope === "once") return "unsandboxed";
		if (scope !== "session" && scope !== "always") return new Error(prompt.declined);
		const keyPrompt = s.commandKeyPrompt(command);
		const key = await choose(ctx, keyPrompt);
		if (!key || key === "abort") return new Error(keyPrompt.declined);
		try {
			s.grantCommand(command, scope, key);
		} catch (e) {
			notify(ctx, `pi-sandbox-rs: ${(e as Error).message}`, "error");
			return new Error(`Blocked: the grant could not be stored (${(e as Error).message}).`);
		}
		return "unsandboxed";
	}

	/**
	 * A guard decision that asks: the user's answer, applied in the Rust core (a grant it
	 * stores or remembers). Returns the reason to block with, or undefined when allowed.
	 */
	async function askAboutDecision(ctx: ExtensionContext, s: SandboxHandle, decision: Decision, prompt: GuardPrompt): Promise<string | undefined> {
		if (!ctx.hasUI) return prompt.noUi;
		// Asked per kind: each kind's answers are the scopes of its own grant call.
		let grant: (() => void) | undefined;
		if (prompt.kind === "write") {
			const scope = await choose(ctx, prompt);
			if (scope && scope !== "abort") grant = () => notify(ctx, `pi-sandbox-rs: ${s.grantWrite(decision.path, scope)}`, "info");
		} else {
			const scope = await choose(ctx, prompt);
			if (scope && scope !== "abort") grant = () => s.grantEnvFile(decision.path, scope, prompt.kind === "envWrite");
		}
		if (!grant) return prompt.declined;
		try {
			grant();
		} catch (e) {
			notify(ctx, `pi-sandbox-rs: ${(e as Error).message}`, "error");
			return `Blocked: the user allowed it, but the grant could not be recorded: ${(e as Error).message}`;
		}
		return undefined;
	}

	/**
	 * A project `.pi/sandbox.json` that would loosen the sandbox applies only what tightens
	 * until the user trusts its exact content. Asked when it is first seen or has changed; a
	 * dismissed dialog asks again next time, a "no" not until the file changes.
	 */
	async function askProjectTrust(ctx: ExtensionContext, s: SandboxHandle, again = false): Promise<void> {
		if (!ctx.hasUI) return;
		const prompt = s.trustPrompt(again);
		if (!prompt?.sha256) return;
		const answer = await choose(ctx, prompt);
		if (answer === undefined) return;
		try {
			s.answerTrust(prompt.sha256, answer === "trust");
		} catch (e) {
			notify(ctx, `pi-sandbox-rs: ${(e as Error).message}`, "error");
		}
	}

	/**
	 * Sandboxed commands of a session run one at a time: each is prepared (scan, mounts),
	 * run and audited before the next one is prepared. Two bash calls of one turn would
	 * otherwise interleave, and one could swap a directory for a symlink while bwrap sets up
	 * the other's mounts, or have its new files audited (and moved) as the other's.
	 */
	let queue: Promise<unknown> = Promise.resolve();
	function serialized<T>(run: () => Promise<T>): Promise<T> {
		const next = queue.then(run, run);
		queue = next.catch(() => undefined);
		return next;
	}

	/** Why the paths the command's errors name are read-only or missing; "" if none is the sandbox's doing. */
	function explainNote(output: string): string {
		if (disabledByFlag() || !current || !/Read-only file system|Device or resource busy|No such file or directory|Permission denied|refused|connect|in use|EADDRINUSE|\.env/i.test(output)) return "";
		return current
			.explainWriteFailures(output, network())
			.map((n) => `\n[pi-sandbox] ${show.text(n)}`)
			.join("");
	}

	/**
	 * The session's secrets hidden in a command's output as it streams: what the user sees,
	 * and what the model gets of a `!cmd` (the bash tool's result is redacted once more in
	 * tool_result). A secret split across chunks is held back until it can be hidden whole;
	 * `flush` passes on the rest when the command is over. Off with --no-sandbox or yolo.
	 */
	function redacting(onData: (data: Buffer) => void): { onData: (data: Buffer) => void; flush: () => void } {
		const stream = disabledByFlag() || !current || current.mode === "yolo" ? null : current.redactStream();
		if (!stream) return { onData, flush: () => {} };
		return {
			onData: (data) => {
				const shown = stream.push(data);
				if (shown.length > 0) onData(shown);
			},
			flush: () => {
				const rest = stream.finish();
				if (rest.length > 0) onData(rest);
			},
		};
	}

	/**
	 * pi's bash, behind the sandbox: prepare, run, audit, as one step of the queue. The
	 * sandbox is spawned directly (extensions/exec.ts), with its mount sources as open fds. A
	 * refused command throws for the bash tool (pi reports the reason as the tool's error)
	 * and is printed with exit code 126 for the user's `!cmd`, as a shell would. Unsandboxed
	 * (the user turned protection off) it is pi's own exec, unchanged.
	 */
	const local = createLocalBashOperations();
	const sandboxed = (refusal: "throw" | "print"): BashOperations => ({
		exec: (command, cwd, options) =>
			serialized(async () => {
				const prepared = await prepareCommand(command);
				if (prepared === "unsandboxed") {
					const redacted = redacting(options.onData);
					try {
						return await local.exec(command, cwd, { ...options, onData: redacted.onData });
					} finally {
						redacted.flush();
					}
				}
				if (prepared instanceof Error) {
					// A reason can name what the command or a config file chose.
					prepared.message = show.lines(prepared.message);
					if (refusal === "throw") throw prepared;
					options.onData(Buffer.from(`${prepared.message}\n`));
					return { exitCode: 126 };
				}
				// The tail of the output, to say which read-only paths its errors are about.
				let tail = "";
				const redacted = redacting((data: Buffer) => {
					tail = (tail + data.toString("utf8")).slice(-65536);
					options.onData(data);
				});
				try {
					return await runPrepared(prepared, cwd, { ...options, onData: redacted.onData }, getAgentDir());
				} finally {
					redacted.flush();
					// The audit: what the command left on pi's control surface, moved aside.
					const findings = await prepared.finishAsync();
					const note = explainNote(tail) + findings.map((f) => `\n[pi-sandbox] ${show.text(f)}`).join("");
					if (note) options.onData(Buffer.from(`${note}\n`));
				}
			}),
	});

	const bash = createBashToolDefinition(startCwd, { operations: sandboxed("throw") });
	pi.registerTool({
		...bash,
		label: "bash (sandboxed)",
		description: `${bash.description}\n\n${BASH_SANDBOXED}`,
	});

	// The model learns how bash differs before it runs anything, not from an obscure error.
	pi.on("before_agent_start", async (event, ctx) => {
		if (disabledByFlag() || !addon) return undefined;
		let brief: string | null | undefined;
		try {
			brief = (await session(ctx))?.modelBrief(network());
		} catch {
			brief = undefined; // a broken config is said elsewhere; the prompt stays as it was
		}
		return brief ? { systemPrompt: `${event.systemPrompt}\n\n${brief}` } : undefined;
	});

	// The user's own `!cmd` / `!!cmd` goes through the same pipeline and the same queue.
	pi.on("user_bash", (_event, ctx) => {
		uiCtx = ctx;
		return { operations: sandboxed("print") };
	});

	/** The approvals store's trouble (corrupt, newer version) last told to the user. */
	let toldNotice: string | null = null;
	const status = (ctx: ExtensionContext, s: SandboxHandle | undefined) => {
		if (!addon) return;
		// The store can break (or be mended) mid-session: each new notice is told once.
		const notice = s?.approvalsNotice ?? null;
		if (notice && notice !== toldNotice) notify(ctx, `pi-sandbox-rs: ${notice}`, "warning");
		toldNotice = notice;
		showStatus(ctx, s, addon.sandboxCapability(), network() ?? s?.defaultNetwork ?? "off");
	};

	pi.on("session_start", async (_event, ctx) => {
		uiCtx = ctx;
		try {
			sessionId = ctx.sessionManager.getSessionId();
		} catch {
			// Without one, grants for this session last as long as this process.
		}
		if (disabledByFlag()) {
			notify(ctx, "pi-sandbox-rs: disabled by --no-sandbox", "warning");
			ctx.ui.setStatus("sandbox", "sandbox: off (--no-sandbox)");
			return;
		}
		if (!addon) {
			notify(ctx, addonLoadFailure(addonError), "error");
			ctx.ui.setStatus("sandbox", "sandbox: BROKEN");
			return;
		}
		const s = await session(ctx);
		if (s?.error) notify(ctx, `pi-sandbox-rs: ${s.error.message}`, "error");
		if (piLoadsErrors.length > 0) {
			notify(ctx, `pi-sandbox-rs: could not learn all the code pi loads at start (${show.text(piLoadsErrors.join("; "))}): what was learnt is kept from the agent, the rest is not.`, "warning");
		}
		const inWritable = piImportedPackages.filter((p) => p.startsWith(path.join(ctx.cwd, path.sep)));
		if (inWritable.length > 0) {
			const names = inWritable.slice(0, 5).map((p) => path.relative(ctx.cwd, p));
			const more = inWritable.length > 5 ? ` and ${inWritable.length - 5} more` : "";
			notify(ctx, `pi-sandbox-rs: read-only to commands, because an extension pi loads at start imports them: ${show.text(names.join(", "))}${more}. Reinstalling them (npm ci, rm -rf node_modules) fails inside the sandbox; do it yourself outside pi.`, "info");
		}
		// Not awaited: it may wait for the index of a large tree, and pi's start need not.
		void s
			?.keptNoticeAsync()
			.then((kept) => kept && notify(ctx, `pi-sandbox-rs: ${kept}`, "warning"))
			.catch((e) => notify(ctx, `pi-sandbox-rs: ${show.text((e as Error).message)}`, "warning"));
		// pi runs rg, fd and others on the host from PATH: none from where the agent writes.
		if (s) narrowHostPath((p) => s.hostPath(p));
		const bash = await addon.probeCapability();
		if (bash.kind === "none") notify(ctx, `pi-sandbox-rs: bash is blocked. ${bash.reason}`, "warning");
		status(ctx, s);
	});

	// The session's background work (the index, the search for env files) ends with it.
	pi.on("session_shutdown", async () => {
		const ending = loaded;
		loaded = undefined;
		current = undefined;
		if (ending) (await ending.sandbox.catch(() => undefined))?.dispose();
	});

	// A project file that would loosen the sandbox is shown before the agent runs (dialogs
	// during session_start cannot be answered yet in every mode); it stays untrusted until then.
	pi.on("before_agent_start", async (_event, ctx) => {
		uiCtx = ctx;
		if (disabledByFlag() || !addon) return undefined;
		const s = await session(ctx);
		if (s) {
			await askProjectTrust(ctx, s);
			status(ctx, s);
		}
		return undefined;
	});

	pi.on("tool_call", async (event, ctx) => {
		uiCtx = ctx;
		if (!guarded.has(event.toolName) || disabledByFlag()) return undefined;
		if (!addon) return { block: true, reason: addonLoadFailure(addonError) };
		const s = await session(ctx);
		if (!s) return { block: true, reason: addonLoadFailure(addonError) };
		const answer = await s.checkToolAsync(event.toolName, event.input);
		// The check re-read changed config files: the footer shows what holds now.
		status(ctx, s);
		if (!answer) return undefined;
		const { decision } = answer;
		if (decision.verdict === "prompt" && answer.prompt) {
			const blocked = await askAboutDecision(ctx, s, decision, answer.prompt);
			status(ctx, s);
			if (blocked) return { block: true, reason: show.lines(blocked) };
		} else if (decision.verdict !== "allow") {
			return { block: true, reason: show.lines(decision.reason) };
		}
		if (answer.patch) {
			Object.assign(event.input as Record<string, unknown>, answer.patch);
		}
		return undefined;
	});

	// What every tool returns to the model, with the session's secrets hidden: the read and
	// grep tools' text, bash's final output, anything else a tool says.
	pi.on("tool_result", async (event, ctx) => {
		if (disabledByFlag() || !addon) return undefined;
		const s = await session(ctx);
		if (!s || s.mode === "yolo") return undefined;
		let changed = false;
		const content = event.content.map((part) => {
			if (part.type !== "text") return part;
			const text = s.redact(part.text);
			if (text === part.text) return part;
			changed = true;
			return { ...part, text };
		});
		return changed ? { content } : undefined;
	});

	pi.registerCommand("sandbox", {
		description: "What the sandbox does now, on one screen; `/sandbox full` every rule and where it comes from; `/sandbox log` the recent refusals and network decisions; `/sandbox stop` ends what commands left running; `/sandbox trust` asks again about this project's sandbox.json",
		handler: async (args, ctx) => {
			const s = await session(ctx);
			if (args.trim() === "log" && s) notify(ctx, violationReport(s), "info");
			else if (args.trim() === "full") notify(ctx, sandboxReport(disabledByFlag(), addonError, s, network(), true), "info");
			else if (args.trim() === "stop" && s) {
				const stopped = s.stopBackground();
				notify(ctx, stopped ? `Stopped ${stopped} background process${stopped === 1 ? "" : "es"} left by this session's commands.` : "No process left by this session's commands is running.", "info");
			}
			else if (args.trim() === "trust" && s) {
				await askProjectTrust(ctx, s, true);
				if (!s.projectTrust?.widenings.length) notify(ctx, "This project's sandbox.json loosens nothing: nothing to trust.", "info");
				status(ctx, s);
			} else notify(ctx, sandboxReport(disabledByFlag(), addonError, s, network()), "info");
		},
	});

	pi.registerCommand("sandbox-mode", {
		description: "Show or set the sandbox mode: read-only (ro), read-write (rw), yolo",
		handler: async (args, ctx) => {
			const s = await session(ctx);
			if (!addon || !s) {
				notify(ctx, addonLoadFailure(addonError), "error");
				return;
			}
			const wanted = args.trim();
			if (wanted) {
				try {
					s.setMode(addon.parseMode(wanted), "/sandbox-mode");
				} catch (e) {
					notify(ctx, (e as Error).message, "error");
					return;
				}
			}
			notify(ctx, `Sandbox mode: ${s.mode}`, "info");
			status(ctx, s);
		},
	});

	// Alt+S: bound by neither pi 0.73 nor 0.87 (Ctrl+X is pi's own in both).
	pi.registerShortcut("alt+s", {
		description: "Cycle sandbox mode: read-only → read-write → yolo",
		handler: async (ctx) => {
			const s = await session(ctx);
			if (!s) return;
			// The next step turns every protection off: a key pressed once too often must not.
			if (s.mode === "read-write") {
				const off = await ctx.ui.confirm(
					"Turn the sandbox off?",
					"yolo: bash runs without a sandbox and the file tools are not guarded, for this session. Alt+S again goes back to read-only.",
				);
				if (!off) {
					notify(ctx, "Sandbox mode stays read-write", "info");
					return;
				}
			}
			const mode = s.cycleMode("Alt+S");
			notify(ctx, `Sandbox mode: ${mode}`, mode === "yolo" ? "warning" : "info");
			status(ctx, s);
		},
	});
}
