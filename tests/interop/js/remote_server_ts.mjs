#!/usr/bin/env node
// Interop peer: a remote ACP server on the official TypeScript SDK 2.4.0
// (experimental/server + experimental/node, WebSocket through the `ws` package),
// serving a small agent on one path (/acp) over streamable HTTP and WebSocket.
//
//     node tests/interop/js/remote_server_ts.mjs [--port 0] [--token T] [--cookie NAME=VALUE]
//                                                [--require-cookie]
//
// Prints "LISTENING <port>" on stdout once it accepts connections.
// --token: every request and upgrade needs "Authorization: Bearer T" (else 401).
// --cookie: every response (the 101 of an upgrade too) sets this cookie.
// --require-cookie: a request that carries an Acp-Connection-Id but not the cookie
//   is refused (400), as a load balancer without affinity would fail it.
//
// The agent's turns are driven by the prompt text: hello | perm | wait | fail |
// cookies (says the Cookie headers the server got) | big N (N characters) |
// anything else (echoed).
// Sessions live in the process, so session/load works from a fresh connection.

import http from "node:http";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { WebSocketServer } from "ws";
import { RequestError, agent, methods } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import {
  createNodeHttpHandler,
  createNodeWebSocketUpgradeHandler,
} from "@agentclientprotocol/sdk/experimental/node";

const AGENT_NAME = "ts-remote-agent";
const WAIT_LIMIT_MS = 30_000;

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

const port = Number(option("--port", "0"));
const token = option("--token", undefined);
const cookie = option("--cookie", undefined);
const requireCookie = process.argv.includes("--require-cookie");

/** Cookie headers seen on requests after initialize (what the client sent back). */
const cookiesSeen = new Set();
/** sessionId -> { history: [text], cancel: AbortController } (shared by all connections) */
const sessions = new Map();

const chunk = (sessionUpdate, text) => ({ sessionUpdate, content: { type: "text", text } });
const say = (client, sessionId, text) =>
  client.notify(methods.client.session.update, { sessionId, update: chunk("agent_message_chunk", text) });

/** Resolves on session/cancel of the turn (its signal), or after WAIT_LIMIT_MS. */
async function cancelledOrTimeout(signal) {
  const either = AbortSignal.any([signal, AbortSignal.timeout(WAIT_LIMIT_MS)]);
  if (!either.aborted) await once(either, "abort");
}

const app = agent({ name: AGENT_NAME })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentCapabilities: { loadSession: true },
    agentInfo: { name: AGENT_NAME, version: "2.4.0" },
  }))
  .onRequest(methods.agent.session.new, () => {
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { history: [], cancel: new AbortController() });
    return { sessionId };
  })
  .onRequest(methods.agent.session.load, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw RequestError.resourceNotFound(params.sessionId);
    for (const text of session.history) {
      await client.notify(methods.client.session.update, {
        sessionId: params.sessionId,
        update: chunk("user_message_chunk", text),
      });
    }
    return {};
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancel.abort();
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.resourceNotFound(sessionId);
    session.cancel = new AbortController();
    const text = params.prompt.find((block) => block.type === "text")?.text ?? "";
    session.history.push(text);
    switch (text) {
      case "hello":
        await say(client, sessionId, "Hello, ");
        await say(client, sessionId, "world");
        break;
      case "perm": {
        const answer = await client.request(methods.client.session.requestPermission, {
          sessionId,
          toolCall: { toolCallId: "t1", title: "Write file", kind: "edit", status: "pending" },
          options: [
            { optionId: "allow", name: "Allow", kind: "allow_once" },
            { optionId: "reject", name: "Reject", kind: "reject_once" },
          ],
        });
        const o = answer.outcome;
        await say(client, sessionId, o.outcome === "selected" ? `permission:${o.optionId}` : "permission:cancelled");
        break;
      }
      case "wait":
        await say(client, sessionId, "waiting");
        await cancelledOrTimeout(session.cancel.signal);
        return { stopReason: "cancelled" };
      case "fail":
        throw RequestError.internalError(undefined, "peer failure");
      case "cookies":
        await say(client, sessionId, `cookies:${[...cookiesSeen].sort().join("|")}`);
        break;
      default:
        // "big N": one update with N characters (a message over a client's size limit)
        await say(client, sessionId, text.startsWith("big ") ? "x".repeat(Number(text.slice(4))) : text);
    }
    return { stopReason: "end_turn" };
  });

const acp = new AcpServer({ agent: app });
const handleHttp = createNodeHttpHandler(acp);
const wss = new WebSocketServer({ noServer: true });
const handleUpgrade = createNodeWebSocketUpgradeHandler(acp, wss);
if (cookie) {
  wss.on("headers", (headers) => headers.push(`Set-Cookie: ${cookie}; Path=/; HttpOnly`));
}

/** Why the request is refused (status, text), or undefined. */
function refusal(req) {
  if (new URL(req.url, "http://x").pathname !== "/acp") return [404, "not found"];
  if (token && req.headers.authorization !== `Bearer ${token}`) return [401, "bad or missing token"];
  if (req.headers["acp-connection-id"] || req.headers.upgrade) {
    if (req.headers.cookie) cookiesSeen.add(req.headers.cookie);
    else if (requireCookie && !req.headers.upgrade) return [400, "no affinity cookie"];
  }
  return undefined;
}

const server = http.createServer((req, res) => {
  const refused = refusal(req);
  if (refused) {
    res.writeHead(refused[0], { "Content-Type": "text/plain", ...(refused[0] === 401 ? { "WWW-Authenticate": "Bearer" } : {}) });
    res.end(refused[1]);
    req.resume();
    return;
  }
  if (cookie) res.setHeader("Set-Cookie", `${cookie}; Path=/; HttpOnly`);
  handleHttp(req, res);
});
server.on("upgrade", (req, socket, head) => {
  const refused = refusal(req);
  if (refused) {
    socket.end(`HTTP/1.1 ${refused[0]} Refused\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${refused[1]}`);
    return;
  }
  handleUpgrade(req, socket, head);
});

const stop = async () => {
  await acp.close().catch(() => undefined);
  server.closeAllConnections?.();
  server.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop); // the test's end of our stdin: stop
process.stdin.resume();

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`LISTENING ${server.address().port}\n`);
});
