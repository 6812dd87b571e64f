"""A proxy that misbehaves in one way (argv[1]), for the conductor's checks."""

import asyncio
import os
import sys

from acplink import ProxyApp, ProxyContext
from acplink.methods import INITIALIZE

mode = sys.argv[1]
app = ProxyApp(f"bad-{mode}")


@app.from_client(INITIALIZE)
async def initialize(ctx: ProxyContext, params: dict) -> object:
    if mode == "skip-init":  # answers without initializing its successor
        return {"protocolVersion": params["protocolVersion"], "agentCapabilities": {}}
    if mode == "proxy-init":  # forwards proxy/initialize instead of initialize
        return await ctx.request_successor("proxy/initialize", params)
    if mode == "early":  # talks to its successor before initializing it (the refusal is answered)
        await ctx.request_successor("_probe/echo", {})
    result = await ctx.forward(params)
    if mode == "version":
        result["protocolVersion"] = result["protocolVersion"] + 1
    return result


@app.from_client("_probe/hang")
async def hang(ctx: ProxyContext, params: object) -> object:
    if mode == "silent":  # never answers, never forwards
        await asyncio.Event().wait()
    return await ctx.forward(params)


@app.from_client("_probe/echo")
async def echo(ctx: ProxyContext, params: object) -> object:
    if mode == "die":  # exits mid-request
        os._exit(4)
    return await ctx.forward(params)


if __name__ == "__main__":
    app.run()
