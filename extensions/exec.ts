/**
 * Running a prepared sandbox launch the way pi runs a shell command: spawned directly (no
 * outer `bash -c`), output streamed as it comes, the whole process group killed on timeout or
 * abort, the exit code kept (128+N for a signal, as a shell reports it).
 */
import { spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { delimiter, join } from "node:path";
import type { PreparedCommand } from "../index.js";

export interface ExecOptions {
	onData: (data: Buffer) => void;
	signal?: AbortSignal;
	/** Seconds; none when undefined. */
	timeout?: number;
	env?: NodeJS.ProcessEnv;
}

/** After the child exits, output may still be arriving from its pipes: wait this long for quiet. */
const EXIT_STDIO_GRACE_MS = 100;
/**
 * ... and this long at most: what the command left running (the session's servers) holds the
 * pipes until it ends, and a chatty one would otherwise keep the command from ever returning.
 */
const EXIT_STDIO_MAX_MS = 1000;
/** setTimeout's limit. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * `PATH` as it was before pi's own was narrowed to what is safe to run on the host (see
 * `narrowHostPath`): sandboxed commands get every entry back (an activated virtualenv's
 * `bin` included), in front of the entries pi added.
 */
let fullPath: string | undefined;

/** Narrows pi's own `PATH` with `narrow` (the sandbox's `hostPath`), keeping the full one for sandboxed commands. */
export function narrowHostPath(narrow: (path: string) => string) {
	const key = pathKey(process.env);
	fullPath ??= process.env[key] ?? "";
	process.env[key] = narrow(fullPath);
}

function pathKey(env: NodeJS.ProcessEnv): string {
	return Object.keys(env).find((k) => k.toLowerCase() === "path") ?? "PATH";
}

/** `env`'s PATH with the entries narrowing took out put back (pi's additions stay first). */
function withFullPath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
	if (fullPath === undefined) return env;
	const key = pathKey(env);
	const full = fullPath.split(delimiter);
	const added = (env[key] ?? "").split(delimiter).filter((e) => e && !full.includes(e));
	return { ...env, [key]: [...added, ...full].filter(Boolean).join(delimiter) };
}

/** The environment pi gives a shell when the caller passes none: its bin dir on PATH. */
export function shellEnv(agentDir: string): NodeJS.ProcessEnv {
	const key = pathKey(process.env);
	const current = process.env[key] ?? "";
	const bin = join(agentDir, "bin");
	const path = current.split(delimiter).includes(bin) ? current : [bin, current].filter(Boolean).join(delimiter);
	return { ...process.env, [key]: path };
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
	return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string"));
}

function timeoutMs(timeout: number | undefined): number | undefined {
	if (timeout === undefined) return undefined;
	if (!Number.isFinite(timeout) || timeout <= 0) throw new Error("Invalid timeout: must be a finite number of seconds");
	const ms = timeout * 1000;
	if (ms > MAX_TIMEOUT_MS) throw new Error(`Invalid timeout: maximum is ${MAX_TIMEOUT_MS / 1000} seconds`);
	return ms;
}

/**
 * SIGKILL to everything the child started (the sandbox's first process leaves the child's
 * process group, and its end ends the command's namespace), then to the child's process group
 * (it leads one: spawned detached), else to the child.
 */
function killTree(pid: number, prepared: PreparedCommand) {
	prepared.stop(pid);
	try {
		process.kill(-pid, "SIGKILL");
	} catch {
		try {
			process.kill(pid, "SIGKILL");
		} catch {
			// already gone
		}
	}
}

/**
 * Runs `prepared` (verdict "sandboxed") in `cwd`. Resolves with the exit code; rejects with
 * "aborted", "timeout:N" or the spawn error, as pi's own exec does. Closes the launch's fds
 * once the child has its copies; the caller calls `prepared.finish()` afterwards.
 */
export async function runPrepared(
	prepared: PreparedCommand,
	cwd: string,
	{ onData, signal, timeout, env }: ExecOptions,
	agentDir: string,
): Promise<{ exitCode: number | null }> {
	const ms = timeoutMs(timeout);
	if (signal?.aborted) throw new Error("aborted");
	try {
		await access(cwd);
	} catch {
		throw new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`);
	}
	const program = prepared.program;
	const args = prepared.args;
	if (!program || !args) throw new Error("Blocked: the sandbox launch is incomplete (no program).");
	// Only what a build needs reaches the command (the allow-list, env.allow), never a
	// credential-shaped value; with sandbox-exec's proxy variables (bwrap sets its own inside).
	const given = withFullPath({ ...(env ?? shellEnv(agentDir)) });
	const childEnv = prepared.childEnv(definedOnly(given));
	const child = spawn(program, args, {
		cwd,
		detached: true,
		env: childEnv,
		stdio: ["ignore", "pipe", "pipe", ...prepared.fds],
	});
	// The child holds its own copies now (or never will: spawn failed).
	prepared.release();
	let timedOut = false;
	let timer: NodeJS.Timeout | undefined;
	const onAbort = () => {
		if (child.pid) killTree(child.pid, prepared);
	};
	try {
		if (ms !== undefined) {
			timer = setTimeout(() => {
				timedOut = true;
				if (child.pid) killTree(child.pid, prepared);
			}, ms);
		}
		child.stdout?.on("data", onData);
		child.stderr?.on("data", onData);
		if (signal) {
			if (signal.aborted) onAbort();
			else signal.addEventListener("abort", onAbort, { once: true });
		}
		const code = await waitForExit(child);
		if (signal?.aborted) throw new Error("aborted");
		if (timedOut) throw new Error(`timeout:${timeout}`);
		const sig = child.signalCode;
		return { exitCode: code ?? (sig ? 128 + (osConstants.signals[sig] ?? 0) : 1) };
	} finally {
		if (timer) clearTimeout(timer);
		signal?.removeEventListener("abort", onAbort);
		// What a process left running writes later is not this command's output.
		child.stdout?.removeListener("data", onData);
		child.stderr?.removeListener("data", onData);
	}
}

/**
 * The child's exit code once it has exited and its output has ended, or gone quiet for
 * `EXIT_STDIO_GRACE_MS` (a descendant may hold the pipes open; output still arriving is kept).
 */
function waitForExit(child: ReturnType<typeof spawn>): Promise<number | null> {
	return new Promise((resolve, reject) => {
		let settled = false;
		let exited = false;
		let exitCode: number | null = null;
		let stdoutEnded = child.stdout === null;
		let stderrEnded = child.stderr === null;
		let idle: NodeJS.Timeout | undefined;
		let cap: NodeJS.Timeout | undefined;
		const cleanup = () => {
			if (idle) clearTimeout(idle);
			if (cap) clearTimeout(cap);
			child.removeListener("error", onError);
			child.removeListener("exit", onExit);
			child.removeListener("close", onClose);
			child.stdout?.removeListener("end", onStdoutEnd);
			child.stderr?.removeListener("end", onStderrEnd);
			child.stdout?.removeListener("data", onData);
			child.stderr?.removeListener("data", onData);
		};
		const finish = (code: number | null) => {
			if (settled) return;
			settled = true;
			cleanup();
			// A process the command left running (it lives on in the sandbox) may still write
			// here: read and dropped, so that it does not die of a closed pipe; not keeping pi
			// alive for it.
			for (const stream of [child.stdout, child.stderr]) {
				stream?.on("data", () => {});
				stream?.on("error", () => {});
				(stream as { unref?: () => void } | null)?.unref?.();
			}
			resolve(code);
		};
		const armIdle = () => {
			if (idle) clearTimeout(idle);
			idle = setTimeout(() => finish(exitCode), EXIT_STDIO_GRACE_MS);
		};
		const maybeFinish = () => {
			if (exited && !settled && stdoutEnded && stderrEnded) finish(exitCode);
		};
		const onStdoutEnd = () => {
			stdoutEnded = true;
			maybeFinish();
		};
		const onStderrEnd = () => {
			stderrEnded = true;
			maybeFinish();
		};
		const onData = () => {
			if (exited && !settled) armIdle();
		};
		const onError = (err: Error) => {
			if (settled) return;
			settled = true;
			cleanup();
			reject(err);
		};
		const onExit = (code: number | null) => {
			exited = true;
			exitCode = code;
			maybeFinish();
			if (!settled) {
				armIdle();
				cap = setTimeout(() => finish(exitCode), EXIT_STDIO_MAX_MS);
			}
		};
		const onClose = (code: number | null) => finish(code);
		child.stdout?.once("end", onStdoutEnd);
		child.stderr?.once("end", onStderrEnd);
		child.stdout?.on("data", onData);
		child.stderr?.on("data", onData);
		child.once("error", onError);
		child.once("exit", onExit);
		child.once("close", onClose);
	});
}
