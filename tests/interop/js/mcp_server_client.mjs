#!/usr/bin/env node
// Interop peer: the MCP TypeScript SDK's client (@modelcontextprotocol/client 2.4.0) against
// `acplink mcp-server` (an ACP agent as an MCP server), over stdio (it starts the command given
// after `--`) or streamable HTTP (--url).
//
//     node tests/interop/js/mcp_server_client.mjs [--url URL] [--text TEXT] -- acplink mcp-server ...
//
// It lists the tools, sends TEXT (default "hello") with `prompt` (collecting the progress
// messages), sends "again" in the same session, and lists the sessions. Prints one JSON line:
//   {"tools": [...], "reply": ..., "progress": [...], "toolCalls": [...], "same": true,
//    "sessions": N, "summary": TEXT} or {"fatal": MESSAGE} (exit 1).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { parseArgs } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { url: "", text: "hello" });
const client = new Client({ name: "ts-mcp-client", version: "2.4.0" });
const out = {};
try {
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url))
    : new StdioClientTransport({ command: opts.command[0], args: opts.command.slice(1), env: process.env,
                                 stderr: "inherit" });
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.progress = [];
  const first = await client.callTool({ name: "prompt", arguments: { text: opts.text } },
    { onprogress: (p) => out.progress.push(p.message ?? "") });
  if (first.isError) throw new Error(first.content.map((b) => b.text).join(" "));
  out.reply = first.structuredContent.reply;
  out.toolCalls = first.structuredContent.toolCalls;
  out.summary = first.content.map((b) => b.text).join("\n");
  const sessionId = first.structuredContent.sessionId;
  const again = await client.callTool({ name: "prompt", arguments: { text: "again", session_id: sessionId } });
  out.same = again.structuredContent.sessionId === sessionId;
  out.sessions = (await client.callTool({ name: "list_sessions", arguments: {} })).structuredContent.sessions.length;
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (err) {
  process.stdout.write(JSON.stringify({ ...out, fatal: `${err?.name}: ${err?.message}` }) + "\n");
  process.exit(1);
}
