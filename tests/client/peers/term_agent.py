"""A scripted agent for the terminal tests, served on stdio (``python term_agent.py``).

Each prompt is a JSON object:

    {"create": {...},          # terminal/create params (wire names; sessionId defaults to the session's)
     "then": ["wait", "output", "release"]}   # optional, in order

The reply (one agent_message_chunk) is a JSON object: ``{"terminalId": ..., "exit": {...},
"output": {...}}`` with the answers (``output.output`` replaced by its length and its last
64 characters unless ``"full": true``), or ``{"error": {"code", "message", "data"}}`` when
``terminal/create`` failed. Terminals are not released unless asked: they outlive the turn.
"""

from __future__ import annotations

import json
from typing import Any

from acplink import AgentApp, PromptContext, run_agent
from acplink.errors import RequestError
from acplink.schema import dump

app = AgentApp("term-agent", "0")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    spec = json.loads(ctx.text)
    conn = ctx.connection
    params = {"sessionId": ctx.session_id, **spec["create"]}
    try:
        created = await conn.call("terminal/create", params)
    except RequestError as exc:
        await ctx.send_text(json.dumps({"error": {"code": exc.code, "message": exc.message, "data": exc.data}}))
        return
    ids = {"sessionId": params["sessionId"], "terminalId": created.terminal_id}
    result: dict[str, Any] = {"terminalId": created.terminal_id}
    for step in spec.get("then", []):
        if step == "wait":
            result["exit"] = dump(await conn.call("terminal/wait_for_exit", ids))
        elif step == "output":
            out = dump(await conn.call("terminal/output", ids))
            if not spec.get("full"):
                text = out.pop("output")
                out["length"], out["tail"] = len(text), text[-64:]
            result["output"] = out
        elif step == "release":
            await conn.call("terminal/release", ids)
    await ctx.send_text(json.dumps(result))


if __name__ == "__main__":
    run_agent(app)
