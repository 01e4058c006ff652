// Drive the gateway with the TypeScript MCP SDK 1.x client and report what that client made of
// every answer. The client is the judge: it checks tools/list against its own schemas, checks every
// structuredContent against the tool's outputSchema (errors included) and throws when an answer
// does not conform. This script only records, as one JSON object on stdout:
//   {"tools": [names], "calls": [{tool, isError, text, thrown}], "resources": [{uri, contents, thrown}]}
// Usage: node judge.mjs PLAN_JSON, where the plan is
//   {"transport": "stdio", "command": ..., "args": [...], "env": {...}}
//   or {"transport": "http", "url": ..., "token": ...},
//   plus "calls": [{"tool", "arguments"}] and "resources": [uri, ...].
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);

function transportFor(plan) {
  if (plan.transport === "stdio") {
    return new StdioClientTransport({ command: plan.command, args: plan.args, env: plan.env, stderr: "ignore" });
  }
  return new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
  });
}

function firstText(content) {
  const text = (content || []).find((part) => part.type === "text");
  return text ? text.text.slice(0, 400) : null;
}

const client = new Client({ name: "pdpp-gateway-ts-judge", version: "1.0.0" });
await client.connect(transportFor(plan));
const report = { tools: [], calls: [], resources: [] };
report.tools = (await client.listTools()).tools.map((tool) => tool.name);
for (const call of plan.calls) {
  try {
    const result = await client.callTool({ name: call.tool, arguments: call.arguments });
    report.calls.push({ tool: call.tool, isError: Boolean(result.isError), text: firstText(result.content), thrown: null });
  } catch (error) {
    report.calls.push({ tool: call.tool, isError: null, text: null, thrown: String(error && error.message) });
  }
}
for (const uri of plan.resources || []) {
  try {
    const result = await client.readResource({ uri });
    report.resources.push({ uri, contents: result.contents.length, thrown: null });
  } catch (error) {
    report.resources.push({ uri, contents: 0, thrown: String(error && error.message) });
  }
}
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
