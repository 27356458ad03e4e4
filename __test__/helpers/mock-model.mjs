// A scripted OpenAI-compatible model on 127.0.0.1: each turn is the list of tool calls the
// assistant makes; when the script is used up it answers with a text echoing every tool result
// it received. It records those tool results so tests can assert on what pi returned.
import http from "node:http";

/** @param {Array<Array<{name: string, arguments: object}>>} script */
export async function startMockModel(script) {
  const toolResults = new Map(); // tool_call_id -> { name, text }
  const callNames = new Map();
  // The system prompt and the tools of the last request, as the model saw them.
  let system = "";
  let tools = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body);
      const messages = request.messages ?? [];
      const first = messages.find((m) => m.role === "system" || m.role === "developer");
      system = typeof first?.content === "string" ? first.content : (first?.content ?? []).map((c) => c.text ?? "").join("");
      tools = request.tools ?? [];
      for (const m of messages) {
        if (m.role === "tool") {
          const text = typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join("");
          toolResults.set(m.tool_call_id, { name: callNames.get(m.tool_call_id), text });
        }
      }
      const turn = messages.filter((m) => m.role === "assistant").length;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const send = (delta, finish = null) =>
        res.write(
          `data: ${JSON.stringify({
            id: "mock",
            object: "chat.completion.chunk",
            created: 0,
            model: request.model,
            choices: [{ index: 0, delta, finish_reason: finish }],
          })}\n\n`,
        );
      // An empty turn ends the agent's turn with a text (the next prompt goes on with the script).
      if (turn < script.length && script[turn].length === 0) {
        send({ role: "assistant", content: "OK" });
        send({}, "stop");
      } else if (turn < script.length) {
        const calls = script[turn];
        send({ role: "assistant", content: null });
        calls.forEach((call, index) => {
          const id = `call_${turn}_${index}`;
          callNames.set(id, call.name);
          send({
            tool_calls: [
              { index, id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.arguments) } },
            ],
          });
        });
        send({}, "tool_calls");
      } else {
        const echo = [...toolResults.entries()].map(([id, r]) => `[${id} ${r.name}] ${r.text}`).join("\n");
        send({ role: "assistant", content: `DONE\n${echo}` });
        send({}, "stop");
      }
      res.write(
        `data: ${JSON.stringify({ id: "mock", object: "chat.completion.chunk", created: 0, model: request.model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`,
      );
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: server.address().port,
    /** Tool results in call order: [{ id, name, text }] */
    results: () =>
      [...toolResults.entries()]
        .map(([id, r]) => ({ id, ...r }))
        .sort((a, b) => a.id.localeCompare(b.id, undefined, { numeric: true })),
    /** The system prompt of the last request. */
    system: () => system,
    /** The tools of the last request: [{ type, function: { name, description, parameters } }] */
    tools: () => tools,
    close: () => new Promise((r) => server.close(r)),
  };
}
