#!/usr/bin/env node
// Interop peer: the MCP TypeScript SDK's client (@modelcontextprotocol/client 2.4.0) over
// Streamable HTTP, against one MCP endpoint (an MCP-over-ACP bridge's).
//
//     node tests/interop/js/mcp_http_client.mjs --url URL --token TOKEN [--era modern|legacy]
//
// modern (the default) pins MCP 2026-07-28 (server/discover, metadata in every request's _meta);
// legacy opens with the handshake-era `initialize`. It then runs: tools/list; tools/call echo
// {"text": "via http"} with progress; tools/call fail (an inner error); tools/call hang, aborted
// (the HTTP response dropped) at its first progress report. Prints one JSON line:
//   {"tools": [...], "progress": [...], "result": TEXT, "fail": {code, message}, "hang": "aborted"}
// or {"fatal": MESSAGE} (exit 1).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { parseArgs } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { url: "", token: "", era: "modern" });
const negotiation = opts.era === "legacy" ? {} : { versionNegotiation: { mode: { pin: "2026-07-28" } } };
const client = new Client({ name: "ts-mcp-http-client", version: "2.4.0" }, negotiation);
const out = {};
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url),
    { requestInit: { headers: { Authorization: `Bearer ${opts.token}` } } }));
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.progress = [];
  const echo = await client.callTool({ name: "echo", arguments: { text: "via http" } },
    { onprogress: (p) => out.progress.push(p.progress) });
  out.result = echo.content.map((b) => b.text).join(" ");
  try {
    const failed = await client.callTool({ name: "fail", arguments: {} });
    out.fail = { isError: failed.isError ?? false };
  } catch (err) {
    out.fail = { code: err.code, message: err.message };
  }
  const abort = new AbortController();
  try {
    await client.callTool({ name: "hang", arguments: {} }, { signal: abort.signal, onprogress: () => abort.abort() });
    out.hang = "answered";
  } catch (err) {
    out.hang = abort.signal.aborted ? "aborted" : `${err.name}: ${err.message}`;
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (err) {
  process.stdout.write(JSON.stringify({ ...out, fatal: `${err?.name}: ${err?.message} (${err?.code})` }) + "\n");
  process.exit(1);
}
