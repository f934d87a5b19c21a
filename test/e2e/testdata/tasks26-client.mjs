// A client of the TypeScript SDK 2.x (@modelcontextprotocol/client) with the
// tasks extension's requester (@modelcontextprotocol/ext-tasks) through the
// gateway: node tasks26-client.mjs NODE_MODULES URL TOKEN ERA CALLS.
// ERA is "modern" (2026-07-28, the io.modelcontextprotocol/tasks extension)
// or "legacy" (2025-11-25 tasks); CALLS a JSON array of
// {"tool", "args", "cancel"}. It prints one JSON line: what it saw.
const [modules, url, token, era, calls] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(`${modules}/@modelcontextprotocol/client/dist/index.mjs`);
const { createTaskSessionFromClient } = await import(`${modules}/@modelcontextprotocol/ext-tasks/dist/client/index.js`);

const capabilities = { elicitation: {} };
const clientInfo = { name: `ts-tasks-${era}`, version: "1" };
const client = new Client(clientInfo, {
  capabilities,
  ...(era === "modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));

let nextID = 1;
// The 2026-07-28 task requests, sent as the specification frames them
// (the SDK's own codecs do not carry the extension's shapes).
async function rawDispatch(request, options) {
  const body = { jsonrpc: "2.0", id: `raw-${nextID++}`, ...request };
  const p = body.params ?? {};
  const name = body.method === "tools/call" ? p.name : p.taskId;
  const headers = {
    Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": body.method,
  };
  if (name !== undefined) headers["Mcp-Name"] = name;
  const resp = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal: options?.signal });
  let text = await resp.text();
  if ((resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const data = text.split("\n").filter((l) => l.startsWith("data:"));
    text = data[data.length - 1].slice(5);
  }
  const msg = JSON.parse(text);
  return msg.error ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
}

const asked = [];
const session = createTaskSessionFromClient(client, {
  endpointId: "mcp-gateway",
  onInputRequest: async (request, context) => {
    asked.push({ kind: request.kind, message: request.params?.message, taskId: context.taskId, delivery: context.delivery });
    return { action: "accept", content: { confirm: true, name: "ts" } };
  },
  ...(era === "modern" ? { rawDispatch, v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities: capabilities } } : {}),
});

const seen = { era: client.getProtocolEra(), generation: session.capabilities, calls: [], asked };
for (const c of JSON.parse(calls)) {
  const out = { tool: c.tool, statuses: [] };
  try {
    const execution = await session.callTool(c.tool, c.args ?? {}, { task: { preference: "prefer" } });
    out.kind = execution.kind;
    out.taskId = execution.handle?.taskId;
    if (c.cancel) {
      await execution.cancel();
    }
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        if (event.type === "task" && out.statuses[out.statuses.length - 1] !== event.task.status) out.statuses.push(event.task.status);
      },
    });
    out.status = outcome.status;
    if (outcome.status === "completed") out.text = outcome.result?.content?.[0]?.text;
    if (outcome.status === "failed") out.error = outcome.error?.message;
  } catch (err) {
    out.thrown = String(err?.message ?? err);
  }
  seen.calls.push(out);
}
console.log(JSON.stringify(seen));
await session.close();
await client.close();
process.exit(0);
