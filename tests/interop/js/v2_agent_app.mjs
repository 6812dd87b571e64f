// The ACP v2 (draft) agent app of the interop peers, on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, `experimental/v2`). Imported by v2_agent.mjs (v2 only) and
// v2_router_agent.mjs (v1 + v2 behind AgentProtocolRouter); our own code.
//
// The TS v2 app leaves the turn lifecycle to the agent: this one answers session/prompt with
// the receipt ({messageId}) and then, in the background, echoes the user message, reports
// `running`, streams the reply and ends with an idle `state_update` carrying the stop reason.
// The text of the first text block picks the behaviour:
//   hello  -> "Hello, " + "world", end_turn
//   wait   -> "waiting", then runs until session/cancel (idle cancelled) or 30 s
//   fail   -> idle with stopReason "error" and an error object
//   custom -> idle with the stop reason "_acme_paused" (an open-enum extension)
//   tools  -> a tool call as upserts + a content chunk, a plan, usage, then end_turn
//   anything else -> echoed back, end_turn

import { randomUUID } from "node:crypto";
import { agent, methods } from "@agentclientprotocol/sdk/experimental/v2";

export const V2_AGENT_NAME = "ts-sdk-v2-agent";
const WAIT_LIMIT_MS = 30_000;

const sessions = new Map();

const update = (client, sessionId, upd) => client.notify(methods.client.session.update, { sessionId, update: upd });

/** Resolves once the turn is cancelled (session/cancel or /close) or WAIT_LIMIT_MS passed. */
const untilCancelled = (signal) =>
  new Promise((resolve) => {
    const either = AbortSignal.any([signal, AbortSignal.timeout(WAIT_LIMIT_MS)]);
    if (either.aborted) resolve();
    else either.addEventListener("abort", () => resolve(), { once: true });
  });

async function runTurn(client, session, sessionId, userMessageId, prompt) {
  session.history.push({ sessionUpdate: "user_message", messageId: userMessageId, content: prompt });
  await update(client, sessionId, { sessionUpdate: "user_message", messageId: userMessageId, content: prompt });
  await update(client, sessionId, { sessionUpdate: "state_update", state: "running" });
  const replyId = `a-${randomUUID()}`;
  const say = (text) =>
    update(client, sessionId, { sessionUpdate: "agent_message_chunk", messageId: replyId, content: { type: "text", text } });
  const idle = (stopReason, extra = {}) =>
    update(client, sessionId, { sessionUpdate: "state_update", state: "idle", stopReason, ...extra });
  const text = prompt.find((block) => block.type === "text")?.text ?? "";
  switch (text) {
    case "hello":
      await say("Hello, ");
      await say("world");
      return idle("end_turn");
    case "wait":
      await say("waiting");
      await untilCancelled(session.cancel.signal);
      return idle("cancelled");
    case "fail":
      return idle("error", { error: { code: -32603, message: "peer failure" } });
    case "custom":
      await say("paused");
      return idle("_acme_paused");
    case "tools":
      await update(client, sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "t1", title: "Read file", kind: "read", status: "in_progress",
      });
      await update(client, sessionId, {
        sessionUpdate: "tool_call_content_chunk", toolCallId: "t1", content: { type: "content", content: { type: "text", text: "file body" } },
      });
      await update(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
      await update(client, sessionId, {
        sessionUpdate: "plan_update",
        plan: { type: "items", planId: "p1", entries: [{ content: "step one", priority: "high", status: "completed" }] },
      });
      await update(client, sessionId, { sessionUpdate: "usage_update", used: 10, size: 100 });
      await say("done");
      return idle("end_turn");
    default:
      await say(text);
      return idle("end_turn");
  }
}

export function v2App() {
  return agent({ name: V2_AGENT_NAME })
    .onRequest(methods.agent.initialize, () => ({
      protocolVersion: 2,
      info: { name: V2_AGENT_NAME, version: "2.4.0" },
      capabilities: {},
    }))
    .onRequest(methods.agent.session.new, ({ params }) => {
      const sessionId = `ts2-${randomUUID()}`;
      sessions.set(sessionId, { cwd: params.cwd, cancel: new AbortController(), busy: Promise.resolve(), history: [] });
      return { sessionId };
    })
    .onRequest(methods.agent.session.list, ({ params }) => ({
      sessions: [...sessions.entries()].filter(([, s]) => !params?.cwd || s.cwd === params.cwd)
        .map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
    }))
    .onRequest(methods.agent.session.resume, async ({ params, client }) => {
      const session = sessions.get(params.sessionId);
      if (!session) throw new Error(`unknown session ${params.sessionId}`);
      if (params.replayFrom) {
        for (const upd of session.history) await update(client, params.sessionId, upd);
      }
      await update(client, params.sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: null });
      return {};
    })
    .onRequest(methods.agent.session.close, ({ params }) => {
      sessions.get(params.sessionId)?.cancel.abort();
      sessions.delete(params.sessionId);
      return {};
    })
    .onNotification(methods.agent.session.cancel, ({ params }) => {
      sessions.get(params.sessionId)?.cancel.abort();
    })
    .onRequest(methods.agent.session.prompt, ({ params, client }) => {
      const { sessionId } = params;
      const session = sessions.get(sessionId);
      if (!session) throw new Error(`unknown session ${sessionId}`);
      const messageId = `u-${randomUUID()}`;
      // one turn at a time, in order; the receipt goes out at insertion
      session.busy = session.busy.then(() => {
        session.cancel = new AbortController();
        return new Promise((resolve) => setTimeout(resolve, 0)).then(() =>
          runTurn(client, session, sessionId, messageId, params.prompt));
      });
      return { messageId };
    });
}
