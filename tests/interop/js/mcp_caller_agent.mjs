#!/usr/bin/env node
// Interop peer: an ACP agent on the official TypeScript SDK 2.4.0 that calls the MCP servers its
// client declared with {"type": "acp"} (McpOverAcpCaller), on ACP v1 (`/unstable`) or v2
// (`/experimental/v2/unstable`). It advertises acp MCP servers (v1 mcpCapabilities.acp, v2
// session.mcp.acp) and serves ACP on stdio (stdout is the ACP channel: nothing else goes there).
//
//     node tests/interop/js/mcp_caller_agent.mjs --protocol 1|2
//
// Each prompt's text is a command, answered with one text chunk (then end_turn):
//   servers                    the session's acp servers: name=serverId,...
//   tools NAME                 tools/list: the tool names
//   call NAME TOOL [JSON]      tools/call with a progressToken: "progress: 1,2; result: TEXT"
//                              or "mcp-error: CODE MESSAGE"
//   request NAME METHOD [JSON] one raw inner request: "result: JSON" / "mcp-error: CODE MESSAGE"
//   cancel NAME                tools/call of hang, aborted once it reported progress:
//                              "cancelled: CODE" (the outer error)
//   intid NAME                 tools/list sent with the integer requestId 5 (the schemas say a
//                              string): "result: ..." or "outer: CODE MESSAGE"
//   http NAME TOOL [JSON]      through McpOverAcpHttpBridge with the MCP TypeScript SDK's client
//                              (Streamable HTTP, 2026-07-28): "tools: a,b; progress: 1,2;
//                              result: TEXT" or "mcp-error: CODE MESSAGE"
// An outer failure answers "outer: CODE MESSAGE".

import { loadAcp, parseArgs, serveCallerAgent } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { protocol: 1 });
const acp = await loadAcp(opts.protocol);
const { McpOverAcpHttpBridge } = await import("@agentclientprotocol/sdk/experimental/mcp-http");
const caller = new acp.McpOverAcpCaller({ clientInfo: { name: "ts-mcp-caller", version: "2.4.0" } });
const bridge = new McpOverAcpHttpBridge(caller);

const textOf = (result) => (result?.content ?? []).map((b) => b.text ?? "").join(" ");
const innerError = (error) => `mcp-error: ${error.code} ${error.message}`;

async function viaHttp(client, decl, tool, args) {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const http = await bridge.toHttp(client, decl);
  const headers = Object.fromEntries(http.headers.map((h) => [h.name, h.value]));
  const mcp = new Client({ name: "ts-mcp-http-client", version: "2.4.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers } }));
  try {
    const tools = (await mcp.listTools()).tools.map((t) => t.name).join(",");
    const seen = [];
    try {
      const result = await mcp.callTool({ name: tool, arguments: args }, { onprogress: (p) => seen.push(p.progress) });
      return `tools: ${tools}; progress: ${seen.join(",")}; result: ${textOf(result)}`;
    } catch (err) {
      if (typeof err?.code === "number") return `tools: ${tools}; ${innerError(err)}`;
      throw err;
    }
  } finally {
    await mcp.close();
  }
}

/** `servers`: the session's acp declarations (name -> declaration) */
async function run(client, servers, text) {
  const [cmd, name, third, rest] = splitWords(text.trim());
  if (cmd === "servers") return [...servers.values()].map((d) => `${d.name}=${d.serverId}`).join(",");
  const decl = servers.get(name);
  const serverId = decl?.serverId ?? name;
  if (cmd === "tools") {
    const out = await caller.request(client, serverId, "tools/list");
    return "error" in out ? innerError(out.error) : out.result.tools.map((t) => t.name).join(",");
  }
  if (cmd === "call") {
    const seen = [];
    const out = await caller.request(client, serverId, "tools/call",
      { name: third, arguments: rest ? JSON.parse(rest) : {}, _meta: { progressToken: "tok" } },
      { onNotification: (n) => n.method === "notifications/progress" && seen.push(n.params.progress) });
    return "error" in out ? innerError(out.error) : `progress: ${seen.join(",")}; result: ${textOf(out.result)}`;
  }
  if (cmd === "request") {
    const out = await caller.request(client, serverId, third, rest ? JSON.parse(rest) : undefined);
    return "error" in out ? `${innerError(out.error)} ${JSON.stringify(out.error.data ?? null)}`
      : `result: ${JSON.stringify(out.result)}`;
  }
  if (cmd === "cancel") {
    const abort = new AbortController();
    try {
      await caller.request(client, serverId, "tools/call", { name: "hang", arguments: {}, _meta: { progressToken: "tok" } },
        { signal: abort.signal, onNotification: () => abort.abort() });
      return "answered";
    } catch (err) {
      return `cancelled: ${err.code}`;
    }
  }
  if (cmd === "intid") {
    const out = await caller.request(client, serverId, "tools/list", undefined, { requestId: 5 });
    return `result: ${JSON.stringify(out)}`;
  }
  if (cmd === "http") return viaHttp(client, decl, third, rest ? JSON.parse(rest) : {});
  return `unknown command ${cmd}`;
}

/** "call NAME TOOL {json with spaces}" -> [call, NAME, TOOL, {json...}] */
function splitWords(text) {
  const out = [];
  let rest = text;
  for (let i = 0; i < 3 && rest; i++) {
    const at = rest.indexOf(" ");
    out.push(at < 0 ? rest : rest.slice(0, at));
    rest = at < 0 ? "" : rest.slice(at + 1);
  }
  if (rest) out.push(rest);
  return out;
}

async function answer(client, servers, text) {
  try {
    return await run(client, servers, text);
  } catch (err) {
    return `outer: ${err?.code ?? err?.name} ${err?.message}`;
  }
}

await serveCallerAgent(acp, opts.protocol, caller, "ts-mcp-caller", (client, _sessionId, text, servers) =>
  answer(client, servers, text));
