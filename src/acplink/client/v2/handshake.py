"""Protocol selection at ``initialize`` for ``Client(protocol=1 | 2 | "auto")``.

* ``2``: a v2 ``initialize`` (``protocolVersion: 2``, ``info``, ``capabilities``); an agent
  answering anything but 2 is an error.
* ``"auto"``: the same request, also carrying v1's ``clientInfo`` and ``clientCapabilities``
  (each version ignores the other's fields), so that an agent answering 1 has everything it
  needs and the connection simply continues on v1. So does an agent that answers 2 with a v1
  body (it echoed the version asked for: :func:`acplink.protocol.initialize.echoed_v1`). An agent
  refusing the request with an error (``-32022`` unsupported version, or any other, unless
  its ``supported`` versions leave 1 out) gets a second, v1 ``initialize``: a v1 client's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from ...errors import ProtocolError, RequestError, SchemaValidationError
from ...protocol.initialize import echoed_v1
from ...protocol.v2 import UNSUPPORTED_PROTOCOL_VERSION, Method
from ...schema import _generated as s
from ...schema import parse
from ...schema import v2 as m
from . import ProtocolChoice
from .link import V2Link

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["initialize"]

log = logging.getLogger("acplink.client")


async def initialize(client: Client, protocol: ProtocolChoice, *, timeout: float | None = None) -> Any:
    """Run ``initialize`` asking for version 2; on a v2 answer attach a :class:`V2Link` to the
    client. Returns the typed answer (a v2 or a v1 ``InitializeResponse``)."""
    conn = client.connection
    v1_caps = client.client_capabilities()
    info = client.client_info.to_wire()
    body: dict[str, Any] = {"protocolVersion": 2, "info": info, "capabilities": _v2_capabilities(client)}
    if protocol == "auto":
        body["clientInfo"] = info
        body["clientCapabilities"] = v1_caps.to_wire()
    try:
        raw = await conn.peer.request(Method.INITIALIZE, orjson.dumps(body), timeout=timeout)
    except RequestError as exc:
        supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
        if protocol != "auto" or (exc.code == UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list)
                                  and 1 not in supported):
            raise
        log.debug("the agent refused initialize for version 2 (%s): asking for version 1", exc)
        return await conn.initialize(protocol_version=1, client_capabilities=v1_caps,
                                     client_info=client.client_info)
    version = raw.get("protocolVersion") if isinstance(raw, dict) else None
    echoed = False  # a v1 body under a newer version: the agent echoed the version asked for
    if version == 2:
        try:
            init = parse(m.InitializeResponse, raw, name="InitializeResponse")
        except SchemaValidationError as exc:
            echoed = echoed_v1(raw)
            if not echoed:
                raise ProtocolError(f"invalid initialize response: {exc.message}") from None
        else:
            client.v2 = V2Link(client, conn.peer, init)
            return init
    elif version != 1:
        echoed = echoed_v1(raw)
    if protocol == 2 or (version != 1 and not echoed):
        raise ProtocolError(_refusal(version, echoed))
    if echoed:
        log.debug("the agent answered protocolVersion %r with a v1 initialize response (it echoes the version "
                  "asked for): continuing on v1", version)
    result = _parse(s.InitializeResponse, raw)
    # the bookkeeping of a v1 initialize made through the connection (see ClientSideConnection)
    conn.own_capabilities = v1_caps
    conn.initialize_response = result
    conn.peer_capabilities = result.agent_capabilities
    conn.agent_info = result.agent_info
    conn.auth_methods = list(result.auth_methods or [])
    conn.protocol_version = 1
    return result


def _refusal(version: Any, echoed: bool) -> str:
    """Why an answer to a request for version 2 cannot go on as asked."""
    if echoed:
        return (f"asked for ACP protocol version 2, the agent answered {version!r} with a v1 initialize response "
                '(it echoes the version asked for and speaks v1; protocol "auto" continues on v1)')
    hint = ' (protocol "auto" continues on v1)' if version == 1 else ""
    return f"asked for ACP protocol version 2, the agent answered {version!r}{hint}"


def _v2_capabilities(client: Client) -> dict[str, Any]:
    """What a v2 client advertises: elicitation when it has a handler (v2 has no fs or
    terminal client methods)."""
    return {"elicitation": {"form": {}}} if client.elicitation is not None else {}


def _parse(tp: Any, raw: Any) -> Any:
    try:
        return parse(tp, raw, name="InitializeResponse")
    except SchemaValidationError as exc:
        raise ProtocolError(f"invalid initialize response: {exc.message}") from None
