"""An ACP proxy that adds a line of context before every prompt.

Run it in a chain: ``acplink conduct --proxy 'python examples/proxy_context.py' -- acplink demo-agent``
(for example as the agent command of ``acplink chat``). Everything else passes unchanged.
"""

from __future__ import annotations

from typing import Any

from acplink import ProxyApp, ProxyContext
from acplink.methods import SESSION_PROMPT

app = ProxyApp("context-example")


@app.from_client(SESSION_PROMPT)
async def add_context(ctx: ProxyContext, params: Any) -> Any:
    """Put a text block first in the prompt, then let the prompt go on to the agent."""
    params["prompt"].insert(0, {"type": "text", "text": "Context from examples/proxy_context.py."})
    return await ctx.forward(params)


if __name__ == "__main__":
    app.run()
