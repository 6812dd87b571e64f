#!/usr/bin/env node
// Interop peer: a REMOTE ACP client on the official TypeScript SDK 2.4.0's experimental
// transports (experimental/ws-client with the `ws` package, experimental/http-client).
//
//     node remote_client.mjs --url URL --transport ws|http [--token T] [--cwd DIR]
//          [--prompt TEXT]... [--deny] [--cancel-after S] [--load SESSION_ID]
//          [--bad-session] [--timeout S]
//
// One JSON line per event on stdout: initialize, session, update, permission, fs_read,
// fs_write, stop, error; exit 0 when the run went through, 1 after {"event":"fatal"}.
// --load SESSION_ID loads that session (on this fresh connection) instead of creating one;
// --bad-session sends one prompt to a session that does not exist (an error).

import { promises as fs } from "node:fs";
import path from "node:path";
import WebSocket from "ws";
import { RequestError, client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

function parseArgs(argv) {
  const opts = { url: null, transport: "ws", token: null, cwd: process.cwd(), prompts: [], deny: false,
    cancelAfter: null, load: null, badSession: false, timeout: 30 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--url") opts.url = argv[++i];
    else if (arg === "--transport") opts.transport = argv[++i];
    else if (arg === "--token") opts.token = argv[++i];
    else if (arg === "--cwd") opts.cwd = argv[++i];
    else if (arg === "--prompt") opts.prompts.push(argv[++i]);
    else if (arg === "--deny") opts.deny = true;
    else if (arg === "--cancel-after") opts.cancelAfter = Number(argv[++i]);
    else if (arg === "--load") opts.load = argv[++i];
    else if (arg === "--bad-session") opts.badSession = true;
    else if (arg === "--timeout") opts.timeout = Number(argv[++i]);
    else {
      process.stderr.write(`unknown option ${arg}\n`);
      process.exit(2);
    }
  }
  if (!opts.url || !["ws", "http"].includes(opts.transport)) {
    process.stderr.write("usage: remote_client.mjs --url URL --transport ws|http ...\n");
    process.exit(2);
  }
  return opts;
}

function withTimeout(promise, seconds, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${seconds}s waiting for ${what}`)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function makeApp(opts, root) {
  const inside = (p) => {
    const real = path.resolve(p);
    if (!(real === root || real.startsWith(root + path.sep))) {
      throw new RequestError(-32602, `Invalid params: path outside the session cwd: ${p}`);
    }
    return real;
  };
  return client({ name: "ts-sdk-remote-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      emit({ event: "update", sessionId: params.sessionId, update: params.update });
    })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      const want = opts.deny ? "reject" : "allow";
      const chosen = params.options.find((o) => o.kind.startsWith(want));
      emit({ event: "permission", optionId: chosen ? chosen.optionId : null });
      return chosen
        ? { outcome: { outcome: "selected", optionId: chosen.optionId } }
        : { outcome: { outcome: "cancelled" } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      emit({ event: "fs_read", path: params.path });
      try {
        return { content: await fs.readFile(inside(params.path), "utf8") };
      } catch (err) {
        if (err.code === "ENOENT") throw RequestError.resourceNotFound(params.path);
        throw err;
      }
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      emit({ event: "fs_write", path: params.path });
      await fs.writeFile(inside(params.path), params.content, "utf8");
      return {};
    });
}

async function prompt(ctx, opts, sessionId, text) {
  let canceller = null;
  if (opts.cancelAfter !== null) {
    canceller = setTimeout(() => {
      ctx.notify(methods.agent.session.cancel, { sessionId }).catch(() => {});
    }, opts.cancelAfter * 1000);
  }
  try {
    const response = await withTimeout(
      ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
      opts.timeout, "session/prompt");
    await nextMacrotask();
    emit({ event: "stop", stopReason: response.stopReason });
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    await nextMacrotask();
    emit({ event: "error", code: err.code, message: err.message });
  } finally {
    clearTimeout(canceller);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const root = await fs.realpath(path.resolve(opts.cwd));
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
  const stream = opts.transport === "ws"
    ? createWebSocketStream(opts.url, { WebSocket, headers })
    : createHttpStream(opts.url, { headers });
  let code = 0;
  try {
    await makeApp(opts, root).connectWith(stream, async (ctx) => {
      const init = await withTimeout(ctx.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
        clientInfo: { name: "ts-sdk-remote-client", version: "2.4.0" },
      }), opts.timeout, "initialize");
      emit({ event: "initialize", result: init });
      let sessionId = opts.load;
      if (sessionId) {
        await withTimeout(ctx.request(methods.agent.session.load, { sessionId, cwd: root, mcpServers: [] }),
          opts.timeout, "session/load");
        await nextMacrotask();
        emit({ event: "loaded", sessionId });
      } else {
        const session = await withTimeout(ctx.request(methods.agent.session.new, { cwd: root, mcpServers: [] }),
          opts.timeout, "session/new");
        sessionId = session.sessionId;
        emit({ event: "session", sessionId });
      }
      if (opts.badSession) await prompt(ctx, opts, "no-such-session", "hello");
      for (const text of opts.prompts) await prompt(ctx, opts, sessionId, text);
    });
  } catch (err) {
    emit({ event: "fatal", message: `${err?.name ?? "Error"}: ${err?.message ?? err}` });
    code = 1;
  }
  emit({ event: "closed" });
  process.exit(code);
}

await main();
