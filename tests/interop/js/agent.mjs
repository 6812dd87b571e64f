#!/usr/bin/env node
// Interop peer: an ACP agent written on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, pinned in ./package.json).
//
//     node tests/interop/js/agent.mjs
//
// Same behaviour as tests/interop/peers/py_agent.py, driven by the text of the
// first text block of each session/prompt: hello | full | wait | fail | echo.

import { randomUUID } from "node:crypto";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { RequestError, agent, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const AGENT_NAME = "ts-sdk-agent";
const WAIT_LIMIT_MS = 30_000;

/** sessionId -> { cwd, cancel: AbortController of the current prompt turn } */
const sessions = new Map();

const say = (client, sessionId, text) =>
  client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });

const update = (client, sessionId, upd) =>
  client.notify(methods.client.session.update, { sessionId, update: upd });

/** Resolves on session/cancel for this turn, or after WAIT_LIMIT_MS. */
function cancelledOrTimeout(signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, WAIT_LIMIT_MS);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}

async function fullTurn(client, sessionId, session) {
  await say(client, sessionId, "start");
  await update(client, sessionId, {
    sessionUpdate: "agent_thought_chunk",
    content: { type: "text", text: "thinking" },
  });
  await update(client, sessionId, {
    sessionUpdate: "plan",
    entries: [
      { content: "step one", priority: "high", status: "pending" },
      { content: "step two", priority: "low", status: "pending" },
    ],
  });
  await update(client, sessionId, {
    sessionUpdate: "tool_call",
    toolCallId: "t1",
    title: "Write file",
    kind: "edit",
    status: "pending",
  });
  const answer = await client.request(methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "t1" },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  });
  const outcome = answer.outcome;
  if (!(outcome.outcome === "selected" && outcome.optionId === "allow")) {
    await say(client, sessionId, "denied");
    await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" });
    return;
  }

  const file = path.join(session.cwd, "interop.txt");
  await client.request(methods.client.fs.writeTextFile, { sessionId, path: file, content: "written by peer\n" });
  const read = await client.request(methods.client.fs.readTextFile, { sessionId, path: file });
  await say(client, sessionId, "read:" + read.content);

  // TerminalHandle wraps terminal/wait_for_exit, terminal/output, terminal/release.
  const term = await client.createTerminal({ sessionId, command: "echo", args: ["term-ok"], cwd: session.cwd });
  const status = await term.waitForExit();
  const output = await term.currentOutput();
  await say(client, sessionId, `term:${output.output.trim()}:${status.exitCode}`);
  await term.release();
  await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
}

const app = agent({ name: AGENT_NAME })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: AGENT_NAME, version: "2.4.0" },
  }))
  .onRequest(methods.agent.session.new, ({ params }) => {
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { cwd: params.cwd, cancel: new AbortController() });
    return { sessionId };
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancel.abort();
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    session.cancel = new AbortController();
    const text = params.prompt.find((block) => block.type === "text")?.text ?? "";

    switch (text) {
      case "hello":
        await say(client, sessionId, "Hello, ");
        await say(client, sessionId, "world");
        break;
      case "full":
        await fullTurn(client, sessionId, session);
        break;
      case "wait":
        await say(client, sessionId, "waiting");
        await cancelledOrTimeout(session.cancel.signal);
        return { stopReason: "cancelled" };
      case "fail":
        // A thrown RequestError becomes the JSON-RPC error object as is:
        // code -32603, message "Internal error: peer failure".
        throw RequestError.internalError(undefined, "peer failure");
      default:
        await say(client, sessionId, text);
    }
    return { stopReason: "end_turn" };
  });

const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
// The connection closes when stdin reaches EOF; exit even if a "wait" turn is pending.
await connection.closed;
process.exit(0);
