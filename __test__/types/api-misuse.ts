// Type-level test of index.d.ts, checked by `tsc -p __test__/types` (npm run typecheck, npm
// test) and never run. The calls under `@ts-expect-error` compile today and fail at run time
// (or reach internals); if a declaration widens again, the directive is unused and tsc fails.
import * as addon from "../../index.js";
import { HostProxy, PreparedCommand, RedactStream, Sandbox, parseMode } from "../../index.js";
import type {
	FileOnlyScope,
	CommandVerdict,
	Decision,
	Mode,
	NetworkAnswer,
	SandboxError,
	SandboxErrorCode,
	ToolDecision,
	WriteScope,
} from "../../index.js";

declare const s: Sandbox;
declare const path: string;
declare const typed: string;

// What a TypeScript user writes, compiling.
const decision: Decision = s.check("read", path);
s.explain("write", path);
s.setMode("read-only", "test");
s.setMode("rw", "test");
const mode: Mode = s.setMode(parseMode(typed), "test");
s.prepareBash("make", "off");
s.prepareBash("make");
s.prepareRun(["make", "test"], "filtered");
s.describe("on");
s.grantWrite(path, "project");
s.grantDomain("pypi.org", "session");
s.grantEnvFile(path, "once", true);
s.grantCommand("git log", "always", "prefix:2");
s.grantCommand("make", "session", "exact");
s.checkTool("grep", { pattern: "TODO" });

// Verdicts are closed unions: a switch over them can be exhaustive.
function label(v: CommandVerdict): string {
	switch (v) {
		case "sandboxed":
		case "unsandboxed":
		case "ask":
		case "denied":
			return v;
		default: {
			const none: never = v;
			return none;
		}
	}
}
label(s.prepareBash("make").verdict);
const blockedWrite: boolean = decision.verdict !== "allow" && decision.op === "write";

// A prompt's choice ids are what its grant call takes, once the blocking one is left out.
const answered = (t: ToolDecision | null) => {
	const prompt = t?.prompt;
	if (prompt?.kind !== "write") return;
	const id = prompt.choices[1].id;
	if (id !== "abort") s.grantWrite(t!.decision.path, id satisfies WriteScope | FileOnlyScope);
};
answered(s.checkTool("write", { path, content: "" }));
s.onNetworkPrompt((q) => {
	const answer: NetworkAnswer = q.prompt.choices[0].id;
	s.answerNetworkPrompt(q.id, answer);
});
const trust = s.trustPrompt();
if (trust) s.answerTrust(trust.sha256, trust.choices[1].id === "trust");

try {
	s.readFile(path);
} catch (e) {
	const code: SandboxErrorCode = (e as SandboxError).code;
	if (code !== "E_BLOCKED" && code !== "ENOENT") throw e;
	// @ts-expect-error: not a code the addon throws
	if (code === "E_NOPE") throw e;
}

// @ts-expect-error: "delete" is not an Op
s.check("delete", path);
// @ts-expect-error: no such mode
s.setMode("turbo", "test");
// @ts-expect-error: text a user typed goes through parseMode first
s.setMode(typed, "test");
// @ts-expect-error: no such network mode
s.prepareBash("make", "everything");
// @ts-expect-error: no such network mode
s.prepareRun(["make"], "open");
// @ts-expect-error: grantWrite's scopes are session, project, global
s.grantWrite(path, "always");
// @ts-expect-error: grantDomain's scopes are session, project, global
s.grantDomain("pypi.org", "once");
// @ts-expect-error: grantEnvFile's scopes are once, session, always
s.grantEnvFile(path, "project");
// @ts-expect-error: grantCommand's scopes are session, always
s.grantCommand("make", "once", "exact");
// @ts-expect-error: a prefix key has its length
s.grantCommand("make", "session", "prefix");
// @ts-expect-error: not an answer to a network question
s.answerNetworkPrompt(1, "always");
// @ts-expect-error: a tool's input is an object
s.checkTool("read", path);
// @ts-expect-error: made by Sandbox.load / loadAsync only
new Sandbox();
// @ts-expect-error: made by prepareBash / prepareRun only
new PreparedCommand();
// @ts-expect-error: made by startHostProxy only
new HostProxy();
// @ts-expect-error: made by redactStream only
new RedactStream();
// @ts-expect-error: the generated loader's internal, not this package's API
addon.__napiBindingTarget;
// @ts-expect-error: the Rust struct names are not exported
type Old = addon.JsDecision;
// @ts-expect-error: a patch's values are strings, not any
const patched: number | undefined = s.checkTool("grep", { pattern: "x" })?.patch?.glob;
