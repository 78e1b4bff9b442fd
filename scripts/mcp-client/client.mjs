// Smoke client for the Supplyplan MCP endpoints on the official TypeScript SDK.
// Usage: node client.mjs <url> <token|-> [callsJSON]
//   callsJSON: {"<tool>": {arguments...}, ...}; every listed tool is called (with {} when absent).
// Prints one JSON object on stdout: protocolVersion, serverInfo, toolPages, tools, results.
// Exit 1 with {"error":{message,code}} on failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, callsArg] = process.argv.slice(2);
if (!url) {
  console.error('usage: node client.mjs <url> <token|-> [callsJSON]');
  process.exit(2);
}
const calls = callsArg ? JSON.parse(callsArg) : {};
const headers = token && token !== '-' ? { Authorization: `Bearer ${token}` } : {};

try {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'supplyplan-ts-smoke', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const out = {
    protocolVersion: transport.protocolVersion,
    serverInfo: client.getServerVersion(),
    instructions: client.getInstructions(),
    toolPages: 0,
    tools: [],
    results: {},
  };
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    out.toolPages++;
    out.tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor && out.toolPages < 100);
  for (const name of out.tools) {
    const res = await client.callTool({ name, arguments: calls[name] ?? {} });
    out.results[name] = { isError: res.isError ?? false, structuredContent: res.structuredContent ?? null,
      text: res.content?.[0]?.text ?? '' };
  }
  await client.ping();
  await transport.terminateSession().catch(() => {});
  await client.close();
  console.log(JSON.stringify(out));
} catch (err) {
  console.log(JSON.stringify({ error: { message: String(err?.message ?? err), code: err?.code ?? null } }));
  process.exit(1);
}
