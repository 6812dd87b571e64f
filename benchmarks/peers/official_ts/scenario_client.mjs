#!/usr/bin/env node
// Benchmark client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0),
// following SCENARIOS.md (the benchmark wire contract).
//
//     node benchmarks/peers/official_ts/scenario_client.mjs SCENARIO [N] -- AGENT_CMD [ARGS...]
//     node benchmarks/peers/official_ts/scenario_client.mjs SCENARIO [N] -- ws://HOST:PORT/acp   (or http://)
//
// Prints exactly one JSON line: ok, error (on failure), wall_s, client_maxrss_kb,
// agent_maxrss_kb and the scenario's figures. Exit status 0 when ok, else 1.
// The SDK is the one installed by `npm ci` in tests/interop/js.

import { spawn } from "node:child_process";
import { WebSocket } from "../../../tests/interop/js/node_modules/ws/wrapper.mjs";
import { createHttpStream } from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/transports/http-stream.js";
import { createWebSocketStream } from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/transports/ws-stream.js";
import { Readable, Writable } from "node:stream";
import {
  client,
  methods,
  ndJsonStream,
} from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js";

const DEFAULT_N = { flood: 20000, rtt: 5000, concurrent: 5000, big: 20000000, bigup: 20000000, startup: 5 };
const BIG_PATH = "/bench/big.txt";
const LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n";
const SMALL_CONTENT = "small fixed file content\n";
const TIMEOUT_MS = 600_000;

const maxrssKb = () => process.resourceUsage().maxRSS; // KiB on Linux
const round6 = (x) => Math.round(x * 1e6) / 1e6;
const nextMacrotask = () => new Promise((resolve) => setImmediate(resolve));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Client app that answers fs/read_text_file and counts session/update notifications. */
function benchClient(bigN) {
  const stats = { updates: 0, chars: 0, reads: 0 };
  const big = bigN ? LINE.repeat(Math.floor(bigN / LINE.length) + 1).slice(0, bigN) : "";
  const app = client({ name: "official-ts-scenario-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      stats.updates++;
      const text = params.update.content?.text;
      if (typeof text === "string") stats.chars += text.length;
    })
    .onRequest(methods.client.fs.readTextFile, ({ params }) => {
      stats.reads++;
      return { content: params.path === BIG_PATH ? big : SMALL_CONTENT };
    });
  return { app, stats };
}

/** A remote agent (`-- URL`): the SDK's WebSocket or streamable-HTTP client stream. */
async function withRemoteAgent(url, app, op) {
  const stream = url.startsWith("ws")
    ? createWebSocketStream(url, { WebSocket })
    : createHttpStream(url);
  return await app.connectWith(stream, op);
}

/** Spawns the agent (stderr inherited) and runs `op(ctx)` on an SDK connection to it. */
async function withAgent(command, app, op) {
  if (/^(ws|http)s?:\/\//.test(command[0])) return await withRemoteAgent(command[0], app, op);
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  let spawnError = null;
  child.on("error", (err) => (spawnError = err));
  child.stdin.on("error", () => {});
  const exited = new Promise((resolve) => child.on("close", resolve));
  try {
    const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
    return await app.connectWith(stream, op);
  } catch (err) {
    throw spawnError ?? err;
  } finally {
    child.stdin.end();
    if (!spawnError) {
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      await exited;
      clearTimeout(timer);
    }
  }
}

const initialize = (ctx) =>
  ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true } },
    clientInfo: { name: "official-ts-scenario-client", version: "2.4.0" },
  });

async function runStartup(n, command) {
  const times = [];
  const idle = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    let t1 = null;
    // The clock stops at the initialize response, before the agent is shut down.
    const init = await withAgent(command, benchClient(0).app, async (ctx) => {
      const response = await initialize(ctx);
      t1 = performance.now();
      return response;
    });
    times.push((t1 - t0) / 1000);
    if (init?._meta?.maxrss_kb != null) idle.push(init._meta.maxrss_kb);
  }
  const idleKb = idle.length ? median(idle) : null;
  return {
    ok: true,
    wall_s: round6(median(times)),
    agent_idle_maxrss_kb: idleKb,
    agent_maxrss_kb: idleKb,
    runs_s: times.map(round6),
  };
}

async function runPrompt(scenario, n, command) {
  const { app, stats } = benchClient(scenario === "big" ? n : 0);
  return withAgent(command, app, async (ctx) => {
    await initialize(ctx);
    const session = await ctx.request(methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    const t0 = performance.now();
    const response = await ctx.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: `${scenario} ${n}` }],
    });
    const wall = (performance.now() - t0) / 1000;
    await nextMacrotask(); // let notification handlers dispatched before the response run
    const meta = response._meta ?? {};
    const out = {
      wall_s: round6(wall),
      agent_maxrss_kb: meta.maxrss_kb ?? null,
      agent_total_s: meta.total_s ?? null,
      stop_reason: response.stopReason,
    };
    if (scenario === "flood") {
      Object.assign(out, {
        ok: stats.updates === n,
        count: stats.updates,
        rate: Math.round((stats.updates / wall) * 10) / 10,
        chars: stats.chars,
      });
    } else if (scenario === "rtt" || scenario === "concurrent") {
      Object.assign(out, {
        ok: stats.reads === n,
        rate: Math.round((n / wall) * 10) / 10,
        p50_us: meta.p50_us ?? null,
        p99_us: meta.p99_us ?? null,
      });
    } else if (scenario === "big") {
      out.ok = meta.ok === true;
    } else if (scenario === "bigup") {
      Object.assign(out, { ok: stats.updates === 1 && stats.chars === n, chars: stats.chars });
    } else {
      out.ok = response.stopReason === "end_turn";
    }
    if (!out.ok) {
      out.error = `scenario check failed (updates=${stats.updates}, chars=${stats.chars}, reads=${stats.reads})`;
    }
    return out;
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const split = argv.indexOf("--");
  if ((split !== 1 && split !== 2) || split === argv.length - 1) {
    process.stderr.write("usage: scenario_client.mjs SCENARIO [N] -- AGENT_CMD [ARGS...]\n");
    process.exit(2);
  }
  const scenario = argv[0];
  const n = split === 2 ? Number(argv[1]) : (DEFAULT_N[scenario] ?? 0);
  const command = argv.slice(split + 1);
  const result = { scenario, n, impl: "official-ts" };
  let timer;
  try {
    if (!(scenario in DEFAULT_N)) throw new Error(`unknown scenario ${scenario}`);
    const run = scenario === "startup" ? runStartup(n, command) : runPrompt(scenario, n, command);
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timeout after ${TIMEOUT_MS / 1000}s`)), TIMEOUT_MS);
    });
    Object.assign(result, await Promise.race([run, timeout]));
  } catch (err) {
    Object.assign(result, { ok: false, error: `${err?.name ?? "Error"}: ${err?.message ?? err}` });
  } finally {
    clearTimeout(timer);
  }
  result.client_maxrss_kb = maxrssKb();
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(result.ok ? 0 : 1);
}

await main();
