#!/usr/bin/env node
// Interop peer: an ACP client on the official TypeScript SDK 2.4.0, v1 (the default import) or v2
// (`/experimental/v2`), that runs a script of steps against an agent command (for the proxy
// chain tests: the command is `acplink conduct ...`).
//
//     node tests/interop/js/chain_client.mjs --protocol 1|2 --cwd DIR [--timeout S]
//          --script JSON -- AGENT_CMD [ARGS...]
//
// After initialize and session/new, each step of the JSON list, in order:
//   {"prompt": TEXT}                    a turn: {"event":"turn","chunks":[...],"stopReason"}
//   {"prompt": TEXT, "cancel": true}    session/cancel once the first chunk arrived
//   {"ext": METHOD, "params": P}        an extension request: {"event":"ext","result"} or
//                                       {"event":"ext","error":{code,message}}
//   {"ext": METHOD, "params": P, "abortAfter": S}   the same, aborted after S seconds with the
//                                       SDK's cancellationSignal ($/cancel_request)
// Permission requests are answered with the first allow option: {"event":"permission",...}.
// A v1 turn ends with the session/prompt response; a v2 turn with the idle state_update (the
// response is the receipt). One JSON line per event; exit 0 when the script ran to its end,
// 1 after {"event":"fatal"} otherwise.

import path from "node:path";
import { emit, parseArgs, spawnPeer, withTimeout } from "./mcp_common.mjs";

const opts = parseArgs(process.argv.slice(2), { protocol: 1, cwd: "", timeout: 30, script: "[]" });
if (!opts.cwd || opts.command.length === 0) {
  process.stderr.write("usage: chain_client.mjs --protocol 1|2 --cwd DIR --script JSON -- AGENT_CMD [ARGS...]\n");
  process.exit(2);
}
const script = JSON.parse(opts.script);
const v2 = opts.protocol === 2;
const sdk = await import(v2 ? "@agentclientprotocol/sdk/experimental/v2" : "@agentclientprotocol/sdk");
const { RequestError, client, ndJsonStream } = sdk;
const cwd = path.resolve(opts.cwd);

/** the turn in progress: its chunks and the waiters of its first chunk and of its end (v2) */
let turn = null;

const app = client({ name: "ts-chain-client" })
  .onNotification("session/update", ({ params }) => {
    const u = params.update;
    if (!turn) return;
    if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") {
      turn.chunks.push(u.content.text);
      turn.firstChunk();
    } else if (v2 && u.sessionUpdate === "state_update" && u.state === "idle") {
      turn.idle(u.stopReason);
    }
  })
  .onRequest("session/request_permission", ({ params }) => {
    const allow = params.options.find((o) => o.kind.startsWith("allow"));
    emit({ event: "permission", title: params.title ?? params.toolCall?.title ?? null, options: params.options.map((o) => o.optionId) });
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

const agent = spawnPeer(opts.command);
const T = opts.timeout;

async function runTurn(ctx, sessionId, step) {
  let firstChunk, idle;
  const gotChunk = new Promise((resolve) => (firstChunk = resolve));
  const ended = new Promise((resolve) => (idle = resolve));
  turn = { chunks: [], firstChunk, idle };
  const answer = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: step.prompt }] });
  if (step.cancel) {
    await withTimeout(gotChunk, T, "the first chunk");
    await ctx.notify("session/cancel", { sessionId });
  }
  const response = await withTimeout(answer, T, "session/prompt");
  const stopReason = v2 ? await withTimeout(ended, T, "the idle state_update") : response.stopReason;
  await new Promise((resolve) => setImmediate(resolve));
  emit({ event: "turn", chunks: turn.chunks, stopReason });
  turn = null;
}

async function runExt(ctx, step) {
  const abort = new AbortController();
  const timer = step.abortAfter != null ? setTimeout(() => abort.abort(), step.abortAfter * 1000) : null;
  try {
    const result = await withTimeout(ctx.request(step.ext, step.params, { cancellationSignal: abort.signal }), T, step.ext);
    emit({ event: "ext", method: step.ext, result });
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    emit({ event: "ext", method: step.ext, error: { code: err.code, message: err.message } });
  } finally {
    clearTimeout(timer);
  }
}

let code = 0;
try {
  const stream = ndJsonStream(...agent.streams);
  await app.connectWith(stream, async (ctx) => {
    const init = await withTimeout(ctx.request("initialize", v2
      ? { protocolVersion: 2, info: { name: "ts-chain-client", version: "2.4.0" }, capabilities: {} }
      : { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "ts-chain-client", version: "2.4.0" } }),
    T, "initialize");
    emit({ event: "initialize", result: init });
    const session = await withTimeout(ctx.request("session/new", { cwd, mcpServers: [] }), T, "session/new");
    emit({ event: "session", sessionId: session.sessionId });
    for (const step of script) {
      if ("prompt" in step) await runTurn(ctx, session.sessionId, step);
      else if ("ext" in step) await runExt(ctx, step);
    }
  });
} catch (err) {
  const why = agent.error ?? err;
  emit({ event: "fatal", message: `${why?.name ?? "Error"}: ${why?.message ?? why}` });
  code = 1;
}

await agent.stop();
process.exit(code);
