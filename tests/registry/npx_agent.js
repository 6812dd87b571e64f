#!/usr/bin/env node
// A minimal ACP agent with no dependencies, packed by tests/registry/test_npx.py into an npm
// tarball that `npx` installs from a loopback URL: it answers initialize, session/new and
// session/prompt (one text chunk naming its arguments and an environment variable).
"use strict";
const readline = require("readline");

const write = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
const lines = readline.createInterface({ input: process.stdin });

lines.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = msg;
  if (method === "initialize") {
    write({ id, result: { protocolVersion: 1, agentCapabilities: {}, authMethods: [],
                          agentInfo: { name: "npx-loopback-agent", version: "1.0.0" } } });
  } else if (method === "session/new") {
    write({ id, result: { sessionId: "npx-session" } });
  } else if (method === "session/prompt") {
    const said = params.prompt.filter((block) => block.type === "text").map((block) => block.text).join(" ");
    const text = `npx agent got ${JSON.stringify(said)}; args ${process.argv.slice(2).join(" ")}; ` +
                 `NPX_AGENT_MODE=${process.env.NPX_AGENT_MODE || "-"}`;
    write({ method: "session/update", params: { sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } } });
    write({ id, result: { stopReason: "end_turn" } });
  } else if (id !== undefined && method !== undefined) {
    write({ id, error: { code: -32601, message: `Method not found: ${method}` } });
  }
});
lines.on("close", () => process.exit(0));
