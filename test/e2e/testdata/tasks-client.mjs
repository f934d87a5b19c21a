// A client of the TypeScript SDK using its experimental tasks API through
// the gateway: node tasks-client.mjs SDK_DIR URL TOKEN.
// It prints one JSON line: what it saw.
const [sdk, url, token] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);
const { InMemoryTaskStore } = await import(`${sdk}/dist/esm/experimental/tasks/stores/in-memory.js`);
const { CreateMessageRequestSchema } = await import(`${sdk}/dist/esm/types.js`);

const taskStore = new InMemoryTaskStore();
const client = new Client({ name: "ts-tasks", version: "1" }, {
  capabilities: { sampling: {}, tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} } } } },
  taskStore,
});
const seen = { samplingTaskRequested: false };
// Sampling the server asks to run as a task: the SDK's task store answers
// the server's tasks/get and tasks/result.
client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
  if (!request.params.task) {
    return { role: "assistant", content: { type: "text", text: "sampled at once" }, model: "ts" };
  }
  seen.samplingTaskRequested = true;
  const task = await extra.taskStore.createTask({ ttl: 60000, pollInterval: 200 });
  setTimeout(() => {
    extra.taskStore.storeTaskResult(task.taskId, "completed",
      { role: "assistant", content: { type: "text", text: "sampled as a task by the TS client" }, model: "ts" });
  }, 300);
  return { task };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
seen.tasksCapability = client.getServerCapabilities().tasks ?? null;
await client.listTools(); // so the client knows which tools run as tasks

seen.stream = [];
for await (const msg of client.experimental.tasks.callToolStream({ name: "simulate-research-query", arguments: { topic: "sdk" } })) {
  if (msg.type === "result") seen.stream.push({ type: "result", text: msg.result.content[0].text, related: msg.result._meta?.["io.modelcontextprotocol/related-task"]?.taskId });
  else if (msg.type === "error") seen.stream.push({ type: "error", message: msg.error.message });
  else seen.stream.push({ type: msg.type, taskId: msg.task.taskId, status: msg.task.status });
}
seen.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => `${t.taskId}:${t.status}`);

const asked = await client.callTool({ name: "trigger-sampling-request-async", arguments: { prompt: "hi" } });
seen.sampling = asked.content[0].text;
console.log(JSON.stringify(seen));
await client.close();
taskStore.cleanup?.(); // its ttl timers would keep the process alive
process.exit(0);
