#!/usr/bin/env node
// Interop peer: an ACP client on the official TypeScript SDK 2.4.0 that provides MCP servers
// over ACP (McpOverAcpProvider), on ACP v1 (`/unstable`) or v2 (`/experimental/v2/unstable`).
//
//     node tests/interop/js/mcp_provider_client.mjs --protocol 1|2 --cwd DIR [--prompt TEXT]...
//          [--timeout S] -- AGENT_CMD [ARGS...]
//
// It registers two servers on the connection and declares both in session/new:
//   raw  a hand-written handler (mcp_common.mjs rawHandler): echo, fail, hang
//   sdk  an @modelcontextprotocol/server McpServer through fromMcpServer: echo, hang
// then sends each --prompt in turn and reads the session's updates until the turn stops.
// Events (one JSON line each): initialize {agentCapabilities}, session {sessionId, servers},
// call / cancelled (from the servers), tool {status, title} (the agent's ACP tool calls),
// reply {prompt, text, stopReason}; fatal {message} (then exit 1).

import path from "node:path";
import { emit, loadAcp, parseArgs, rawHandler, sdkServer, spawnPeer, withTimeout } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { protocol: 1, cwd: ".", prompt: [], timeout: 30 });
const acp = await loadAcp(opts.protocol);
const provider = new acp.McpOverAcpProvider();
const sdk = await sdkServer("sdk");

const app = acp.client({ name: "ts-mcp-provider" }).onRequest(acp.methods.client.mcp.message, provider.handleRequest);
const agent = spawnPeer(opts.command);

async function readTurn(session) {
  let text = "";
  for (;;) {
    const m = await session.nextUpdate();
    if (m.kind === "stop") return { text, stopReason: m.stopReason ?? m.response?.stopReason };
    const u = m.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") text += u.content.text;
    if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") {
      emit({ event: "tool", kind: u.sessionUpdate, status: u.status ?? null, title: u.title ?? null,
        rawInput: u.rawInput ?? null });
    }
  }
}

let code = 0;
try {
  const stream = acp.ndJsonStream(...agent.streams);
  await app.connectWith(stream, async (ctx) => {
    const init = opts.protocol === 1
      ? await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "ts-mcp-provider", version: "2.4.0" } })
      : await ctx.request("initialize", { protocolVersion: 2, info: { name: "ts-mcp-provider", version: "2.4.0" }, capabilities: {} });
    emit({ event: "initialize", protocolVersion: init.protocolVersion, agentCapabilities: init.agentCapabilities ?? init.capabilities });
    const raw = provider.registerServer(ctx, { name: "raw", handler: rawHandler("raw", acp) });
    const viaSdk = provider.registerServer(ctx, { name: "sdk", handler: sdk.handler });
    const session = await withTimeout(
      ctx.buildSession(path.resolve(opts.cwd)).withMcpServer(raw.declaration).withMcpServer(viaSdk.declaration).start(),
      opts.timeout, "session/new");
    emit({ event: "session", sessionId: session.sessionId, servers: { raw: raw.serverId, sdk: viaSdk.serverId } });
    for (const text of opts.prompt) {
      const [, turn] = await withTimeout(Promise.all([session.prompt(text), readTurn(session)]), opts.timeout, text);
      emit({ event: "reply", prompt: text, ...turn });
    }
    await raw.dispose();
    await viaSdk.dispose();
  });
} catch (err) {
  const why = agent.error ?? err;
  emit({ event: "fatal", message: `${why?.name ?? "Error"}: ${why?.message ?? why}${why?.code ? ` (${why.code})` : ""}` });
  code = 1;
}
await sdk.close();
await agent.stop();
process.exit(code);
