#!/usr/bin/env node
// Interop peer: the official TypeScript SDK's client (@agentclientprotocol/sdk 2.4.0) using an
// agent's stored sessions: session/list and session/load.
//
//     node tests/interop/js/store_client.mjs --cwd DIR [--load SESSION_ID] [--prompt TEXT]... -- AGENT_CMD [ARGS...]
//
// The same CLI and events as tests/interop/peers/py_store_client.py: initialize, session, list,
// update (with its phase: load or prompt), loaded, stop; fatal and exit 1 when the agent could
// not be driven.

import { spawn } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

function parseArgs(argv) {
  const split = argv.indexOf("--");
  const opts = { cwd: null, load: null, prompts: [], command: argv.slice(split + 1) };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    if (own[i] === "--cwd") opts.cwd = own[++i];
    else if (own[i] === "--load") opts.load = own[++i];
    else if (own[i] === "--prompt") opts.prompts.push(own[++i]);
    else throw new Error(`unknown option ${own[i]}`);
  }
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const cwd = path.resolve(opts.cwd);
  let phase = "load";
  const app = client({ name: "ts-sdk-store-client" }).onNotification(methods.client.session.update, ({ params }) => {
    emit({ event: "update", phase, update: params.update });
  });
  const agentProc = spawn(opts.command[0], opts.command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  agentProc.stdin.on("error", () => {});
  const agentExited = new Promise((resolve) => agentProc.on("close", resolve));
  let code = 0;
  try {
    const stream = ndJsonStream(Writable.toWeb(agentProc.stdin), Readable.toWeb(agentProc.stdout));
    await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, {
        protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "ts-sdk-store-client", version: "2.4.0" },
      });
      emit({ event: "initialize", result: init });
      let sid;
      if (opts.load) {
        const listed = [];
        let cursor = undefined;
        do {
          const page = await ctx.request(methods.agent.session.list, cursor ? { cwd, cursor } : { cwd });
          for (const s of page.sessions) listed.push({ sessionId: s.sessionId, title: s.title ?? null });
          cursor = page.nextCursor;
        } while (cursor);
        emit({ event: "list", sessions: listed });
        await ctx.request(methods.agent.session.load, { sessionId: opts.load, cwd, mcpServers: [] });
        await nextMacrotask();
        emit({ event: "loaded" });
        sid = opts.load;
      } else {
        sid = (await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
        emit({ event: "session", sessionId: sid });
      }
      phase = "prompt";
      for (const text of opts.prompts) {
        const response = await ctx.request(methods.agent.session.prompt, {
          sessionId: sid, prompt: [{ type: "text", text }],
        });
        await nextMacrotask();
        emit({ event: "stop", stopReason: response.stopReason });
      }
    });
  } catch (err) {
    emit({ event: "fatal", message: `${err?.name ?? "Error"}: ${err?.message ?? err}` });
    code = 1;
  }
  agentProc.stdin.end();
  if (agentProc.exitCode === null && agentProc.signalCode === null) {
    const timer = setTimeout(() => agentProc.kill("SIGKILL"), 2000);
    await agentExited;
    clearTimeout(timer);
  }
  process.exit(code);
}

main();
