#!/usr/bin/env node
// Benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0),
// following SCENARIOS.md (the benchmark wire contract).
//
//     node benchmarks/peers/official_ts/scenario_agent.mjs
//
// The SDK is the one installed by `npm ci` in tests/interop/js (imported by
// relative path: this folder has no package.json of its own).
//
// Answers initialize with _meta.maxrss_kb, session/new, and runs the scenario
// named by a prompt "SCENARIO N" (flood, rtt, concurrent, big, bigup, startup),
// returning end_turn with _meta {total_s, maxrss_kb, ...}.

import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import {
  RequestError,
  agent,
  methods,
  ndJsonStream,
} from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js";

const BIG_PATH = "/bench/big.txt";
const SMALL_PATH = "/bench/small.txt";
const LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n";

// process.resourceUsage().maxRSS is ru_maxrss: KiB on Linux.
const maxrssKb = () => process.resourceUsage().maxRSS;

/** Nearest-rank percentile of nanosecond samples, in microseconds. */
function percentileUs(samplesNs, p) {
  if (samplesNs.length === 0) return 0;
  const ordered = [...samplesNs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(p * ordered.length));
  return Math.round(ordered[rank - 1] / 100) / 10;
}

const nowNs = () => Number(process.hrtime.bigint());
const textUpdate = (sessionId, text) => ({
  sessionId,
  update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
});

let sessionCount = 0;

async function runScenario(scenario, n, sessionId, client) {
  const meta = {};
  const read = (path) => client.request(methods.client.fs.readTextFile, { sessionId, path });
  switch (scenario) {
    case "flood":
      for (let i = 0; i < n; i++) {
        const chunk = `flood chunk ${String(i).padStart(8, "0")} `.padEnd(40, ".");
        await client.notify(methods.client.session.update, textUpdate(sessionId, chunk));
      }
      meta.count = n;
      break;
    case "rtt": {
      const samples = [];
      for (let i = 0; i < n; i++) {
        const t0 = nowNs();
        await read(SMALL_PATH);
        samples.push(nowNs() - t0);
      }
      meta.p50_us = percentileUs(samples, 0.5);
      meta.p99_us = percentileUs(samples, 0.99);
      break;
    }
    case "concurrent": {
      const timedRead = async () => {
        const t0 = nowNs();
        await read(SMALL_PATH);
        return nowNs() - t0;
      };
      const samples = await Promise.all(Array.from({ length: n }, timedRead));
      meta.p50_us = percentileUs(samples, 0.5);
      meta.p99_us = percentileUs(samples, 0.99);
      break;
    }
    case "big": {
      const response = await read(BIG_PATH);
      meta.ok = response.content.length === n;
      meta.received = response.content.length;
      break;
    }
    case "bigup": {
      const payload = LINE.repeat(Math.floor(n / LINE.length) + 1).slice(0, n);
      await client.notify(methods.client.session.update, textUpdate(sessionId, payload));
      break;
    }
    case "startup":
      break;
    default:
      throw RequestError.invalidParams({ scenario });
  }
  return meta;
}

export const app = agent({ name: "official-ts-scenario-agent" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentInfo: { name: "official-ts-scenario-agent", version: "2.4.0" },
    _meta: { maxrss_kb: maxrssKb() },
  }))
  .onRequest(methods.agent.session.new, () => ({ sessionId: `bench-${++sessionCount}` }))
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.find((block) => block.type === "text")?.text ?? "";
    const parts = text.trim().split(/\s+/); // "SCENARIO N", e.g. "flood 20000"
    const n = Number(parts.at(-1));
    if (parts.length < 2 || !Number.isInteger(n)) {
      throw RequestError.invalidParams({ prompt: text, expected: "SCENARIO N" });
    }
    const start = performance.now();
    const meta = await runScenario(parts.at(-2), n, params.sessionId, client);
    meta.total_s = Math.round((performance.now() - start) * 1000) / 1e6; // ms -> s, 6 decimals
    meta.maxrss_kb = maxrssKb();
    return { stopReason: "end_turn", _meta: meta };
  });

// run as a program: serve stdio (remote_server.mjs imports `app` instead)
if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const connection = app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
  await connection.closed;
  process.exit(0);
}
