"""When a client offers its built-in workspace server (its files and terminals as MCP tools,
:mod:`acplink.client.workspace`) to the agent, and under which name.

``Client(workspace=...)`` / ``connect(..., workspace=...)``:

``None`` (the default)
    offered in every session (new, load, resume, fork) when the protocol in use has no
    ``fs/*`` requests (ACP v2), the agent advertised ``acp`` MCP servers and the client serves
    files or terminals;
``True``
    the same on ACP v1 too (where the agent could also use ``fs/*`` and ``terminal/*``);
``False``
    never.

It is registered once, on the first session opened with it, as a per-session server (each
session's server serves that session's folders), declared as ``{"type": "acp", "name":
"workspace", ...}`` with ``_meta {"acplink.dev/workspace": {"tools": [...]}}`` so that an
acplink agent recognises it (other agents see an ``acp`` server named ``workspace``). When the
user registered a server named ``workspace`` first, it takes the first free name of
``workspace-2``, ``workspace-3``, ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..mcp import binding as b
from .workspace import WORKSPACE_SERVER_NAME, workspace_server

if TYPE_CHECKING:
    from .client import Client

__all__ = ["offer_workspace", "wants_workspace"]


def wants_workspace(client: Client) -> bool:
    """Whether ``client`` offers its workspace server in the sessions it opens now (the agent's
    ``acp`` advertisement is checked by the caller)."""
    if client.workspace is False or not (client.fs_enabled or client.terminals is not None):
        return False
    return client.workspace is True or not client.connection.protocol.has("read_text_file")


def offer_workspace(client: Client) -> None:
    """Register the workspace server on ``client.mcp`` if it is to be offered and is not yet."""
    if client.workspace_registration is not None or client.closed or not wants_workspace(client):
        return  # (a closed client: the opening call fails as any call does)
    taken = {reg.name for reg in client.mcp.registrations}
    name, n = WORKSPACE_SERVER_NAME, 2
    while name in taken:
        name, n = f"{WORKSPACE_SERVER_NAME}-{n}", n + 1
    server = workspace_server(client, name=name)
    meta = {b.WORKSPACE_META_KEY: {"tools": [str(tool["name"]) for tool in server.tools]}}
    client.workspace_registration = client.mcp.register(name, server, per_session=True, meta=meta)
