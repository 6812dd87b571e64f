#!/usr/bin/env node
// Interop peer: an ACP v2 (draft) agent on the official TypeScript SDK 2.4.0
// (`experimental/v2`), v2 only. Behaviour: see v2_agent_app.mjs.
//
//     node tests/interop/js/v2_agent.mjs

import { Readable, Writable } from "node:stream";
import { ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";
import { v2App } from "./v2_agent_app.mjs";

const connection = v2App().connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
