// Shared parts of the MCP-over-ACP interop peers (our own code, on the official SDKs:
// @agentclientprotocol/sdk 2.4.0, @modelcontextprotocol/server and /client 2.4.0).
//
//   loadAcp(version)       the SDK's entry point for ACP v1 (`/unstable`) or v2
//                          (`/experimental/v2/unstable`): both export the MCP-over-ACP classes
//   rawHandler(server)     a hand-written MCP server (an McpRequestHandler): tools echo (with
//                          progress), fail (an inner MCP error), hang (until cancelled)
//   sdkServer(server)      the same tools on an @modelcontextprotocol/server McpServer, served
//                          through the SDK's fromMcpServer adapter
//   spawnPeer(command)     a child process on pipes, with the ACP stream over its stdio
//   serveCallerAgent(...)  an ACP agent on stdio (v1 or v2) that advertises acp MCP servers,
//                          keeps each session's acp declarations, and answers each prompt with
//                          one text chunk (then end_turn)
//
// Every peer prints one JSON line per event on stdout (emit).

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";

export const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");

/** `--flag value` options before `--`, and the command after it. */
export function parseArgs(argv, defaults) {
  const split = argv.indexOf("--");
  const own = split < 0 ? argv : argv.slice(0, split);
  const opts = { ...defaults, command: split < 0 ? [] : argv.slice(split + 1) };
  for (let i = 0; i < own.length; i++) {
    const key = own[i].replace(/^--/, "");
    if (!(key in defaults)) {
      process.stderr.write(`unknown option ${own[i]}\n`);
      process.exit(2);
    }
    const value = own[++i];
    if (Array.isArray(defaults[key])) opts[key] = [...opts[key], value];
    else opts[key] = typeof defaults[key] === "number" ? Number(value) : value;
  }
  return opts;
}

export async function loadAcp(version) {
  if (version === 1) return import("@agentclientprotocol/sdk/unstable");
  if (version === 2) return import("@agentclientprotocol/sdk/experimental/v2/unstable");
  throw new Error(`unknown ACP version ${version}`);
}

const TOOLS = [
  { name: "echo", description: "Say the text back", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  { name: "fail", description: "Answer an inner MCP error", inputSchema: { type: "object" } },
  { name: "hang", description: "Run until cancelled", inputSchema: { type: "object" } },
];

/**
 * A hand-written MCP-over-ACP server for the SDK's McpOverAcpProvider. Each call is reported
 * ({"event": "call", ...} with the metadata the caller sent), and each cancelled one
 * ({"event": "cancelled"}).
 */
export function rawHandler(server, acp) {
  return async (cx) => {
    emit({
      event: "call", server, method: cx.method, requestIdType: typeof cx.requestId,
      protocolVersion: cx.protocolVersion, clientCapabilities: cx.clientCapabilities, clientInfo: cx.clientInfo ?? null,
      envelopeMeta: cx.envelopeMeta ?? null,
    });
    const token = cx.params?._meta?.progressToken;
    const progress = (progress, total) =>
      token === undefined ? Promise.resolve()
        : cx.notify("notifications/progress", { progressToken: token, progress, ...(total === undefined ? {} : { total }) });
    // (MCP 2026-07-28 results say they are complete; listings say how long they may be cached)
    const complete = (result) => ({ result: { resultType: "complete", ...result } });
    const listing = (result) => complete({ ttlMs: 0, cacheScope: "private", ...result });
    if (cx.method === "server/discover") {
      return listing({ supportedVersions: ["2026-07-28"], capabilities: { tools: {} }, serverInfo: { name: server, version: "1.0.0" } });
    }
    if (cx.method === "tools/list") return listing({ tools: TOOLS });
    if (cx.method !== "tools/call") throw new acp.McpProtocolError(-32601, `Method not found: ${cx.method}`);
    const args = cx.params?.arguments ?? {};
    switch (cx.params?.name) {
      case "echo":
        await progress(1, 2);
        await progress(2, 2);
        return complete({ content: [{ type: "text", text: `echo: ${args.text}` }] });
      case "fail":
        throw new acp.McpProtocolError(-32602, "bad arguments", { field: "text" });
      case "hang":
        await progress(0);
        await untilAborted(cx.signal, () => emit({ event: "cancelled", server }));
        throw cx.signal.reason;
      default:
        throw new acp.McpProtocolError(-32602, `unknown tool ${cx.params?.name}`);
    }
  };
}

/** Resolves once `signal` aborts (after calling `then`). */
export const untilAborted = (signal, then) =>
  new Promise((resolve) => {
    const done = () => {
      then?.();
      resolve();
    };
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });

/** The same tools on the MCP TypeScript SDK's McpServer, adapted with fromMcpServer. */
export async function sdkServer(server) {
  const { McpServer } = await import("@modelcontextprotocol/server");
  const { fromMcpServer } = await import("@agentclientprotocol/sdk/experimental/mcp-server");
  const z = await import("zod/v4");
  return fromMcpServer(() => {
    const mcp = new McpServer({ name: server, version: "1.0.0" });
    mcp.registerTool("echo", { description: "Say the text back", inputSchema: z.object({ text: z.string() }) },
      async ({ text }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (const step of [1, 2]) {
          if (token !== undefined) {
            await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: step, total: 2 } });
          }
        }
        return { content: [{ type: "text", text: `echo: ${text}` }] };
      });
    mcp.registerTool("hang", { description: "Run until cancelled", inputSchema: z.object({}) }, async (_args, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined) {
        await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: 0 } });
      }
      await untilAborted(ctx.mcpReq.signal, () => emit({ event: "cancelled", server }));
      return { content: [{ type: "text", text: "cancelled" }] };
    });
    return mcp;
  });
}

/** Spawns `command` on pipes; its stderr is inherited. */
export function spawnPeer(command) {
  const proc = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const state = { proc, error: null };
  proc.on("error", (err) => (state.error = err));
  proc.stdin.on("error", () => {}); // EPIPE if it dies: the connection reports it
  state.exited = new Promise((resolve) => proc.on("close", resolve));
  state.streams = [Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout)];
  /** Closes its stdin, waits up to 2 s for it to exit, then kills it. */
  state.stop = async () => {
    proc.stdin.end();
    if (proc.exitCode === null && proc.signalCode === null && !state.error) {
      const timer = setTimeout(() => proc.kill("SIGKILL"), 2000);
      await state.exited;
      clearTimeout(timer);
    }
  };
  return state;
}

/** Rejects when `promise` takes longer than `seconds`. */
export function withTimeout(promise, seconds, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${seconds}s waiting for ${what}`)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Serves an ACP agent named `name` on stdio (stdout is the ACP channel) until the connection
 * closes, then exits. ACP `version` 1 answers each prompt in its response, 2 with state
 * updates. It advertises acp MCP servers (v1 mcpCapabilities.acp, v2 session.mcp.acp), routes
 * the provider's mcp/message notifications to `caller`, and answers each prompt with the text of
 * `await answer(client, sessionId, text, servers)` (servers: the session's acp declarations,
 * Map name -> declaration), sent as one agent_message_chunk.
 */
export async function serveCallerAgent(acp, version, caller, name, answer) {
  const sessions = new Map();
  const info = { name, version: "2.4.0" };
  const declare = (prefix, mcpServers) => {
    const sessionId = `${prefix}-${randomUUID()}`;
    sessions.set(sessionId, new Map((mcpServers ?? []).filter(acp.isMcpServerAcp).map((d) => [d.name, d])));
    return { sessionId };
  };
  const reply = (client, sessionId, prompt) =>
    answer(client, sessionId, prompt.find((b) => b.type === "text")?.text ?? "", sessions.get(sessionId) ?? new Map());
  const update = (client, sessionId, upd) => client.notify("session/update", { sessionId, update: upd });
  const say = (client, sessionId, text, messageId) =>
    update(client, sessionId, { sessionUpdate: "agent_message_chunk", ...(messageId ? { messageId } : {}), content: { type: "text", text } });
  const app = acp.agent({ name }).onNotification(acp.methods.agent.mcp.message, caller.handleNotification);
  if (version === 1) {
    app.onRequest("initialize", () => ({ protocolVersion: 1, agentCapabilities: { mcpCapabilities: { acp: true } }, agentInfo: info }))
      .onRequest("session/new", ({ params }) => declare("ts", params.mcpServers))
      .onRequest("session/prompt", async ({ params, client }) => {
        await say(client, params.sessionId, await reply(client, params.sessionId, params.prompt));
        return { stopReason: "end_turn" };
      });
  } else {
    app.onRequest("initialize", () => ({ protocolVersion: 2, info, capabilities: { session: { mcp: { acp: {} } } } }))
      .onRequest("session/new", ({ params }) => declare("ts2", params.mcpServers))
      .onRequest("session/prompt", ({ params, client }) => {
        const { sessionId, prompt } = params;
        const messageId = `u-${randomUUID()}`;
        setTimeout(async () => {
          await update(client, sessionId, { sessionUpdate: "user_message", messageId, content: prompt });
          await update(client, sessionId, { sessionUpdate: "state_update", state: "running" });
          await say(client, sessionId, await reply(client, sessionId, prompt), `a-${randomUUID()}`);
          await update(client, sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
        }, 0);
        return { messageId };
      });
  }
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await connection.closed;
  process.exit(0);
}
