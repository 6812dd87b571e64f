#!/usr/bin/env node
// Interop peer: an ACP v2 (draft) client on the official TypeScript SDK's
// experimental v2 API (@agentclientprotocol/sdk 2.4.0, "experimental/v2").
//
//     node tests/interop/js/v2_client.mjs --cwd DIR [--timeout S] -- AGENT_CMD [ARGS...]
//
// Runs one fixed scenario against a v2 agent that behaves like `acplink demo-agent`
// (the commands "slow N", "wait N", "write FILE TEXT" and plain echo):
//   initialize (protocol 2), session/new, a prompt read with readTextUntilIdle,
//   "slow 50" cancelled with session/cancel, a held prompt, a permission request,
//   tool_call/cancel, session/resume with replay, session/close.
// One JSON line per event on stdout; exit 0 when the scenario ran to its end,
// 1 after a {"event":"fatal"} line otherwise.

import { spawn } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { RequestError, client, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");

function parseArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0 || split === argv.length - 1) {
    process.stderr.write("usage: v2_client.mjs --cwd DIR [--timeout S] -- AGENT_CMD [ARGS...]\n");
    process.exit(2);
  }
  const opts = { cwd: null, timeout: 30, command: argv.slice(split + 1) };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    if (own[i] === "--cwd") opts.cwd = own[++i];
    else if (own[i] === "--timeout") opts.timeout = Number(own[++i]);
    else {
      process.stderr.write(`unknown option ${own[i]}\n`);
      process.exit(2);
    }
  }
  if (!opts.cwd) {
    process.stderr.write("--cwd is required\n");
    process.exit(2);
  }
  return opts;
}

/** Reads session messages until `pred` holds for one (returned), or the deadline. */
async function readUntil(session, pred, seconds, what) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`timeout waiting for ${what}`)), seconds * 1000);
  try {
    const seen = [];
    for (;;) {
      const message = await session.nextUpdate(abort.signal);
      seen.push(message);
      if (pred(message)) return seen;
    }
  } finally {
    clearTimeout(timer);
  }
}

const isStop = (m) => m.kind === "stop";
const kindOf = (m) => (m.kind === "stop" ? "stop" : m.update.sessionUpdate);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const cwd = path.resolve(opts.cwd);
  // updates of sessions with no ActiveSession reader (the resumed one), by session
  const loose = [];

  const app = client({ name: "ts-sdk-v2-client" })
    .onNotification("session/update", ({ params }) => {
      loose.push(params.update);
    })
    .onRequest("session/request_permission", ({ params }) => {
      const allow = params.options.find((o) => o.kind.startsWith("allow"));
      emit({
        event: "permission",
        title: params.title,
        subject: params.subject?.type ?? null,
        toolCallId: params.subject?.toolCall?.toolCallId ?? null,
        options: params.options.map((o) => o.optionId),
      });
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });

  const agentProc = spawn(opts.command[0], opts.command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  let spawnError = null;
  agentProc.on("error", (err) => (spawnError = err));
  agentProc.stdin.on("error", () => {});
  const agentExited = new Promise((resolve) => agentProc.on("close", resolve));
  const T = opts.timeout;

  let code = 0;
  try {
    const stream = ndJsonStream(Writable.toWeb(agentProc.stdin), Readable.toWeb(agentProc.stdout));
    await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request("initialize", {
        protocolVersion: 2,
        info: { name: "ts-sdk-v2-client", version: "2.4.0" },
        capabilities: {},
      });
      emit({ event: "initialize", result: init });

      const session = await ctx.buildSession(cwd).start();
      emit({ event: "session", sessionId: session.sessionId });

      // a prompt: its receipt, then the streamed text until idle
      const receipt = await session.prompt("hello v2");
      emit({ event: "receipt", messageId: receipt.messageId });
      emit({ event: "text", text: await session.readTextUntilIdle() });

      // slow 50, cancelled
      const slow = await session.prompt("slow 50");
      emit({ event: "receipt", messageId: slow.messageId });
      await readUntil(session, (m) => m.kind === "session_update" && m.update.sessionUpdate === "agent_message_chunk", T,
        "the first chunk of slow 50");
      await ctx.notify("session/cancel", { sessionId: session.sessionId });
      const cancelled = await readUntil(session, isStop, T, "idle after cancel");
      emit({ event: "stop", stopReason: cancelled.at(-1).stopReason });

      // a held prompt: sent while "slow 3" runs, inserted after it
      const first = session.prompt("slow 3");
      const second = session.prompt("held one");
      const receipts = await Promise.all([first, second]);
      emit({ event: "held", distinct: receipts[0].messageId !== receipts[1].messageId });
      const twoTurns = [
        ...(await readUntil(session, isStop, T, "idle of the first turn")),
        ...(await readUntil(session, isStop, T, "idle of the held turn")),
      ];
      const echoes = twoTurns
        .filter((m) => m.kind === "session_update" && m.update.sessionUpdate === "user_message")
        .map((m) => m.update.content.map((b) => b.text).join(""));
      emit({ event: "echoes", texts: echoes, stops: twoTurns.filter(isStop).map((m) => m.stopReason) });

      // permission (the demo asks before writing in its default "ask" mode)
      await session.prompt("write v2.txt hello");
      const permissionTurn = await readUntil(session, isStop, T, "idle after the permission turn");
      emit({
        event: "states",
        states: permissionTurn
          .filter((m) => m.kind !== "stop" && m.update.sessionUpdate === "state_update")
          .map((m) => m.update.state),
      });

      // tool_call/cancel: only the tool call stops, the turn goes on
      await session.prompt("wait 30");
      const upToTool = await readUntil(
        session,
        (m) => m.kind === "session_update" && m.update.sessionUpdate === "tool_call_update",
        T,
        "the wait tool call",
      );
      const toolCallId = upToTool.at(-1).update.toolCallId;
      emit({ event: "tool", toolCallId, cancellable: session.canCancelToolCall(toolCallId) });
      await session.cancelToolCall(toolCallId);
      const afterTool = await readUntil(session, isStop, T, "idle after tool_call/cancel");
      const finalTool = afterTool
        .filter((m) => m.kind !== "stop" && m.update.sessionUpdate === "tool_call_update")
        .map((m) => m.update.status);
      emit({ event: "tool_cancelled", statuses: finalTool, stopReason: afterTool.at(-1).stopReason });

      // resume with replay from the start: history, then a state snapshot, then the answer
      session.dispose();
      loose.length = 0;
      await ctx.request("session/resume", {
        sessionId: session.sessionId,
        cwd,
        replayFrom: { type: "start" },
      });
      await new Promise((resolve) => setImmediate(resolve));
      emit({ event: "resumed", kinds: loose.map((u) => (u.sessionUpdate === "state_update" ? `state:${u.state}` : u.sessionUpdate)) });

      // close
      const closed = await ctx.request("session/close", { sessionId: session.sessionId });
      emit({ event: "closed", result: closed });
    });
  } catch (err) {
    const why = spawnError ?? err;
    const extra = why instanceof RequestError ? ` (${why.code})` : "";
    emit({ event: "fatal", message: `${why?.name ?? "Error"}: ${why?.message ?? why}${extra}` });
    code = 1;
  }

  agentProc.stdin.end();
  if (agentProc.exitCode === null && agentProc.signalCode === null && !spawnError) {
    const timer = setTimeout(() => agentProc.kill("SIGKILL"), 2000);
    await agentExited;
    clearTimeout(timer);
  }
  process.exit(code);
}

main();
