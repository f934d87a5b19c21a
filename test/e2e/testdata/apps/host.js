// A small MCP Apps host for the e2e test: it connects to the gateway (through
// the test's same-origin proxy at /mcp), lists the tools, and for each tool
// with a UI calls it as a model would, reads its ui:// resource and renders
// it in an iframe driven by ext-apps' AppBridge. Every tools/call and
// resources/read the app makes goes to the gateway with the app's resource
// URI in _meta["io.github.mcp-gateway/app"] (docs/apps.md).
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";

const APP_META = "io.github.mcp-gateway/app";
const query = new URLSearchParams(location.search);
const token = query.get("token");
const era = query.get("era") || "2025-11-25";
const clientInfo = { name: "e2e-apps-host", version: "1" };
const capabilities = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };

const state = (window.hostState = { era, apps: {}, errors: [], ready: false });
let sessionId = null;
let nextId = 1;

async function post(message, headers) {
  const h = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: "Bearer " + token,
    ...headers,
  };
  if (sessionId) h["Mcp-Session-Id"] = sessionId;
  const resp = await fetch("/mcp", { method: "POST", headers: h, body: JSON.stringify(message) });
  const sid = resp.headers.get("Mcp-Session-Id");
  if (sid) sessionId = sid;
  const body = await resp.text();
  if (message.id === undefined) return null;
  const type = resp.headers.get("Content-Type") || "";
  let reply = null;
  if (type.includes("text/event-stream")) {
    for (const line of body.split("\n")) {
      const data = line.startsWith("data:") ? line.slice(5).trim() : "";
      if (!data) continue; // other fields, and the empty priming event
      const m = JSON.parse(data);
      if (m.id === message.id && ("result" in m || "error" in m)) reply = m;
    }
  } else if (type.includes("json")) {
    reply = JSON.parse(body);
  }
  if (!reply) throw new Error(`${message.method}: HTTP ${resp.status} ${type}: ${body}`);
  if (reply.error) throw new Error(`${message.method}: ${reply.error.code} ${reply.error.message}`);
  return reply.result;
}

// rpc sends one request in the host's era.
async function rpc(method, params = {}) {
  const message = { jsonrpc: "2.0", id: nextId++, method, params };
  if (era === "2026-07-28") {
    message.params = {
      ...params,
      _meta: {
        ...(params._meta || {}),
        "io.modelcontextprotocol/protocolVersion": era,
        "io.modelcontextprotocol/clientInfo": clientInfo,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
      },
    };
    const h = { "MCP-Protocol-Version": era, "Mcp-Method": method };
    if (method === "tools/call") h["Mcp-Name"] = params.name;
    if (method === "resources/read") h["Mcp-Name"] = params.uri;
    return post(message, h);
  }
  return post(message, sessionId ? { "MCP-Protocol-Version": era } : {});
}

async function connect() {
  if (era === "2026-07-28") return;
  await rpc("initialize", { protocolVersion: era, capabilities, clientInfo });
  await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "MCP-Protocol-Version": era });
}

// asApp adds the app's resource URI to a request the app makes.
function asApp(uri, params) {
  return { ...params, _meta: { ...(params._meta || {}), [APP_META]: uri } };
}

async function render(tool) {
  const uri = getToolUiResourceUri(tool);
  const app = (state.apps[tool.name] = { tool: tool.name, uri, initialized: false, calls: [], reads: [] });
  // The model calls the tool; the host then shows its UI with the result.
  const toolResult = await rpc("tools/call", { name: tool.name, arguments: {} });
  app.toolResult = toolResult;
  const read = await rpc("resources/read", { uri });
  const content = read.contents[0];
  app.contentUri = content.uri;
  app.mimeType = content.mimeType;
  const html = content.text ?? atob(content.blob);

  const card = document.createElement("section");
  card.id = "card-" + tool.name;
  const title = document.createElement("h2");
  title.textContent = `${tool.name}: ${uri}`;
  const iframe = document.createElement("iframe");
  iframe.id = "app-" + tool.name;
  // The test reads the app's page, so the frame shares the host's origin;
  // a real host would give it an origin of its own.
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin");
  card.append(title, iframe);
  document.body.append(card);

  const bridge = new AppBridge(null, clientInfo, { serverTools: {}, serverResources: {}, logging: {} });
  bridge.oncalltool = async (params) => {
    const result = await rpc("tools/call", asApp(uri, params));
    app.calls.push({ request: params, result });
    return result;
  };
  bridge.onreadresource = async (params) => {
    const result = await rpc("resources/read", asApp(uri, params));
    app.reads.push({ request: params, result });
    return result;
  };
  bridge.oninitialized = () => {
    app.initialized = true;
    bridge.sendToolInput({ arguments: {} });
    bridge.sendToolResult(toolResult);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
}

async function main() {
  await connect();
  const { tools } = await rpc("tools/list");
  state.tools = tools.map((t) => ({ name: t.name, uri: getToolUiResourceUri(t) || null }));
  for (const tool of tools) {
    if (getToolUiResourceUri(tool)) await render(tool);
  }
  state.ready = true;
}

main().catch((err) => {
  state.errors.push(String(err && err.stack ? err.stack : err));
});
