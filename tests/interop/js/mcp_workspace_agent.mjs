#!/usr/bin/env node
// Interop peer: an ACP agent on the official TypeScript SDK 2.4.0 that does its file reads,
// writes and commands through the client's workspace server (the MCP server named "workspace"
// its client declared with {"type": "acp"}, or --server NAME), called with McpOverAcpCaller: what a v2 agent
// has instead of fs/* and terminal/*. ACP v2 (`/experimental/v2/unstable`) or v1 (`/unstable`).
//
//     node tests/interop/js/mcp_workspace_agent.mjs --protocol 2|1 [--server NAME]
//
// Each prompt's text is a command, answered with one text chunk (then end_turn) holding one JSON
// object:
//   read PATH            {"tools": [...], "isError": bool, "text": "..."}: tools/list, then
//                        tools/call read_text_file {path}
//   write PATH TEXT      {"isError": bool, "text": "..."}: tools/call write_text_file
//   run JSON             {"isError": bool, "text": "...", "structured": {...}}: tools/call run
//                        with JSON as the arguments ({"command", "args", ...})
// An inner MCP error answers {"mcpError": {code, message}}; an outer failure {"outer": CODE}.

import { loadAcp, parseArgs, serveCallerAgent } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { protocol: 2, server: "workspace" });
const acp = await loadAcp(opts.protocol);
const caller = new acp.McpOverAcpCaller({ clientInfo: { name: "ts-workspace-agent", version: "2.4.0" } });

async function callTool(client, serverId, name, args) {
  const out = await caller.request(client, serverId, "tools/call", { name, arguments: args });
  if ("error" in out) return { mcpError: { code: out.error.code, message: out.error.message } };
  const text = (out.result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
  return { isError: out.result.isError === true, text, ...(out.result.structuredContent ? { structured: out.result.structuredContent } : {}) };
}

async function run(client, workspace, text) {
  if (!workspace) return { outer: "no workspace server declared" };
  const at = text.indexOf(" ");
  const [cmd, rest] = at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
  if (cmd === "read") {
    const listed = await caller.request(client, workspace.serverId, "tools/list");
    const tools = "error" in listed ? null : listed.result.tools.map((t) => t.name);
    return { tools, ...(await callTool(client, workspace.serverId, "read_text_file", { path: rest })) };
  }
  if (cmd === "write") {
    const sep = rest.indexOf(" ");
    return callTool(client, workspace.serverId, "write_text_file", { path: rest.slice(0, sep), content: rest.slice(sep + 1) });
  }
  if (cmd === "run") return callTool(client, workspace.serverId, "run", JSON.parse(rest));
  return { outer: `unknown command ${cmd}` };
}

await serveCallerAgent(acp, opts.protocol, caller, "ts-workspace-agent", async (client, _sessionId, text, servers) => {
  try {
    return JSON.stringify(await run(client, servers.get(opts.server), text.trim()));
  } catch (err) {
    return JSON.stringify({ outer: err?.code ?? String(err) });
  }
});
