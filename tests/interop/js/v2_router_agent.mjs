#!/usr/bin/env node
// Interop peer: one agent serving ACP v1 and v2 (draft) behind the official TypeScript SDK's
// AgentProtocolRouter (2.4.0): a client asking for 2 gets the v2 app of v2_agent_app.mjs, one
// asking for 1 a small v1 app (replies "v1:" + the prompt's text, end_turn).
//
//     node tests/interop/js/v2_router_agent.mjs

import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { agent as v1Agent, methods as v1 } from "@agentclientprotocol/sdk";
import { agentProtocolRouter, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";
import { v2App } from "./v2_agent_app.mjs";

const NAME = "ts-sdk-router-agent";

const v1App = v1Agent({ name: NAME })
  .onRequest(v1.agent.initialize, () => ({
    protocolVersion: 1,
    agentCapabilities: {},
    agentInfo: { name: NAME, version: "2.4.0" },
  }))
  .onRequest(v1.agent.session.new, () => ({ sessionId: `ts1-${randomUUID()}` }))
  .onNotification(v1.agent.session.cancel, () => {})
  .onRequest(v1.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.find((block) => block.type === "text")?.text ?? "";
    await client.notify(v1.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "v1:" + text } },
    });
    return { stopReason: "end_turn" };
  });

const router = agentProtocolRouter().withV1(v1App).withV2(v2App());
const connection = router.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
