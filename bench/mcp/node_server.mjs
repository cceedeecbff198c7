// The same tool list served by the official TypeScript MCP SDK's low-level Server (benchmark reference).
// Usage: node bench/mcp/node_server.mjs TOOLS.json   (SDK from .tools/mcp, see scripts/install-mcp-inspector)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const require = createRequire(process.env.MCP_SDK_ROOT + "/");
const load = (p) => import(pathToFileURL(require.resolve(p)).href);
const { Server } = await load("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("@modelcontextprotocol/sdk/types.js");

const tools = JSON.parse(readFileSync(process.argv[2], "utf8"));
const server = new Server({ name: "node-sdk-reference", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: "text", text: JSON.stringify({ ok: true, tool: req.params.name }, null, 2) }],
}));
await server.connect(new StdioServerTransport());
