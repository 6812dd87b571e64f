#!/usr/bin/env node
// Interop peer: an ACP client written on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, pinned in ./package.json).
//
//     node tests/interop/js/client.mjs --cwd DIR [--prompt TEXT]... [--deny]
//          [--cancel-after S] [--timeout S] -- AGENT_CMD [ARGS...]
//
// Same CLI, events and exit status as tests/interop/peers/py_client.py: one JSON
// line per event on stdout; exit 0 when the run went through (a prompt error is
// an "error" event), 1 after a {"event":"fatal"} line when the agent could not be
// driven.

import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { RequestError, client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const emit = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));

function parseArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0 || split === argv.length - 1) {
    process.stderr.write(
      "usage: client.mjs --cwd DIR [--prompt TEXT]... [--deny] [--cancel-after S] -- AGENT_CMD [ARGS...]\n",
    );
    process.exit(2);
  }
  const opts = { cwd: null, prompts: [], deny: false, cancelAfter: null, timeout: 60, command: argv.slice(split + 1) };
  const own = argv.slice(0, split);
  for (let i = 0; i < own.length; i++) {
    const arg = own[i];
    if (arg === "--cwd") opts.cwd = own[++i];
    else if (arg === "--prompt") opts.prompts.push(own[++i]);
    else if (arg === "--deny") opts.deny = true;
    else if (arg === "--cancel-after") opts.cancelAfter = Number(own[++i]);
    else if (arg === "--timeout") opts.timeout = Number(own[++i]);
    else {
      process.stderr.write(`unknown option ${arg}\n`);
      process.exit(2);
    }
  }
  if (!opts.cwd) {
    process.stderr.write("--cwd is required\n");
    process.exit(2);
  }
  return opts;
}

/** Rejects when `promise` takes longer than `seconds`. */
function withTimeout(promise, seconds, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${seconds}s waiting for ${what}`)), seconds * 1000);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A command run for terminal/create: output kept (tail-truncated to the limit). */
class Terminal {
  constructor(child, limit) {
    this.child = child;
    this.limit = limit ?? null;
    this.output = Buffer.alloc(0);
    this.truncated = false;
    this.status = null;
    const collect = (chunk) => {
      let out = Buffer.concat([this.output, chunk]);
      if (this.limit !== null && out.length > this.limit) {
        let cut = out.length - this.limit;
        while (cut < out.length && (out[cut] & 0xc0) === 0x80) cut++; // stay on a UTF-8 boundary
        out = out.subarray(cut);
        this.truncated = true;
      }
      this.output = out;
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    this.exited = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        this.status = { exitCode: code, signal: signal ?? null };
        resolve(this.status);
      });
    });
  }

  kill() {
    if (this.status === null) this.child.kill("SIGKILL");
  }
}

function makeClientApp(opts, root) {
  const terminals = new Map();
  let nextTerminal = 1;

  const checked = async (p) => {
    // Resolve symlinks of the existing part of the path, then require it under root.
    let real = path.resolve(p);
    try {
      real = await fs.realpath(p);
    } catch {
      try {
        real = path.join(await fs.realpath(path.dirname(p)), path.basename(p));
      } catch {
        /* keep the lexical path */
      }
    }
    if (!path.isAbsolute(p) || !(real === root || real.startsWith(root + path.sep))) {
      throw new RequestError(-32602, `Invalid params: path outside the session cwd: ${p}`, { path: p });
    }
    return real;
  };

  const terminal = (id) => {
    const term = terminals.get(id);
    if (!term) throw RequestError.resourceNotFound(id);
    return term;
  };

  const app = client({ name: "ts-sdk-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      emit({ event: "update", update: params.update });
    })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      const want = opts.deny ? "reject" : "allow";
      const chosen = params.options.find((o) => o.kind.startsWith(want));
      emit({
        event: "permission",
        options: params.options.map((o) => o.optionId),
        answer: chosen ? want : "cancelled",
        optionId: chosen ? chosen.optionId : null,
      });
      return chosen
        ? { outcome: { outcome: "selected", optionId: chosen.optionId } }
        : { outcome: { outcome: "cancelled" } };
    })
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
      emit({ event: "fs_read", path: params.path });
      const real = await checked(params.path);
      let content;
      try {
        content = await fs.readFile(real, "utf8");
      } catch (err) {
        if (err.code === "ENOENT") throw RequestError.resourceNotFound(params.path);
        throw err;
      }
      if (params.line != null || params.limit != null) {
        const lines = content.split(/(?<=\n)/);
        const start = Math.max((params.line ?? 1) - 1, 0);
        content = lines.slice(start, params.limit != null ? start + params.limit : undefined).join("");
      }
      return { content };
    })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
      emit({ event: "fs_write", path: params.path });
      const real = await checked(params.path);
      await fs.mkdir(path.dirname(real), { recursive: true });
      await fs.writeFile(real, params.content, "utf8");
      return {};
    })
    .onRequest(methods.client.terminal.create, async ({ params }) => {
      emit({ event: "terminal", command: params.command, args: params.args ?? [] });
      const env = { ...process.env };
      for (const v of params.env ?? []) env[v.name] = v.value;
      const child = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? root,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      const term = new Terminal(child, params.outputByteLimit);
      // spawn() reports a missing executable asynchronously.
      await new Promise((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", (err) =>
          reject(new RequestError(-32603, `Internal error: cannot run ${params.command}: ${err.message}`)),
        );
      });
      const terminalId = `term-${nextTerminal++}`;
      terminals.set(terminalId, term);
      return { terminalId };
    })
    .onRequest(methods.client.terminal.output, ({ params }) => {
      const term = terminal(params.terminalId);
      const result = { output: term.output.toString("utf8"), truncated: term.truncated };
      if (term.status) result.exitStatus = term.status;
      return result;
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params }) => terminal(params.terminalId).exited)
    .onRequest(methods.client.terminal.kill, ({ params }) => {
      terminal(params.terminalId).kill();
      return {};
    })
    .onRequest(methods.client.terminal.release, ({ params }) => {
      terminal(params.terminalId).kill();
      terminals.delete(params.terminalId);
      return {};
    });

  const shutdown = () => {
    for (const term of terminals.values()) term.kill();
  };
  return { app, shutdown };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const cwd = path.resolve(opts.cwd);
  const root = await fs.realpath(cwd).catch(() => cwd);
  const { app, shutdown } = makeClientApp(opts, root);

  const agentProc = spawn(opts.command[0], opts.command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  let spawnError = null;
  agentProc.on("error", (err) => (spawnError = err));
  agentProc.stdin.on("error", () => {}); // EPIPE if the agent dies; the connection reports it
  const agentExited = new Promise((resolve) => agentProc.on("close", resolve));

  let code = 0;
  try {
    const stream = ndJsonStream(Writable.toWeb(agentProc.stdin), Readable.toWeb(agentProc.stdout));
    await app.connectWith(stream, async (ctx) => {
      const init = await withTimeout(
        ctx.request(methods.agent.initialize, {
          protocolVersion: 1,
          clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
          clientInfo: { name: "ts-sdk-client", version: "2.4.0" },
        }),
        opts.timeout,
        "initialize",
      );
      emit({ event: "initialize", result: init });
      const session = await withTimeout(
        ctx.request(methods.agent.session.new, { cwd, mcpServers: [] }),
        opts.timeout,
        "session/new",
      );
      emit({ event: "session", sessionId: session.sessionId });

      for (const text of opts.prompts) {
        let canceller = null;
        if (opts.cancelAfter !== null) {
          canceller = setTimeout(() => {
            ctx.notify(methods.agent.session.cancel, { sessionId: session.sessionId }).catch(() => {});
          }, opts.cancelAfter * 1000);
        }
        try {
          const response = await withTimeout(
            ctx.request(methods.agent.session.prompt, {
              sessionId: session.sessionId,
              prompt: [{ type: "text", text }],
            }),
            opts.timeout,
            "session/prompt",
          );
          // Notification handlers are dispatched asynchronously: let the ones
          // that arrived before the response print first.
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
    });
  } catch (err) {
    const why = spawnError ?? err;
    emit({ event: "fatal", message: `${why?.name ?? "Error"}: ${why?.message ?? why}` });
    code = 1;
  } finally {
    shutdown();
  }

  // Close the agent's stdin and give it 2 s to exit, then kill it.
  agentProc.stdin.end();
  if (agentProc.exitCode === null && agentProc.signalCode === null && !spawnError) {
    const timer = setTimeout(() => agentProc.kill("SIGKILL"), 2000);
    await agentExited;
    clearTimeout(timer);
  }
  process.exit(code);
}

await main();
