#!/usr/bin/env node
// Benchmark server on the official TypeScript SDK 2.4.0: the scenario agent of
// scenario_agent.mjs served in-process, one connection each, over WebSocket and
// streamable HTTP on /acp (experimental/server + experimental/node + the `ws` package).
//
//     node benchmarks/peers/official_ts/remote_server.mjs
//
// Prints its two URLs (ws://..., http://...), one per line, as `acplink serve --port 0`
// does; stops on SIGTERM.

import http from "node:http";
import { WebSocketServer } from "../../../tests/interop/js/node_modules/ws/wrapper.mjs";
import { AcpServer } from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/transports/server.js";
import {
  createNodeHttpHandler,
  createNodeWebSocketUpgradeHandler,
} from "../../../tests/interop/js/node_modules/@agentclientprotocol/sdk/dist/transports/node-adapter.js";
import { app } from "./scenario_agent.mjs";

const acp = new AcpServer({ agent: app });
const handleHttp = createNodeHttpHandler(acp);
const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
const handleUpgrade = createNodeWebSocketUpgradeHandler(acp, wss);
const server = http.createServer(handleHttp);
server.on("upgrade", handleUpgrade);

// (a benchmark: no graceful shutdown needed)
for (const event of ["SIGTERM", "SIGINT"]) process.on(event, () => process.exit(0));

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(`ws://127.0.0.1:${port}/acp\nhttp://127.0.0.1:${port}/acp\n`);
});
