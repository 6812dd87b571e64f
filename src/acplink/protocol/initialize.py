"""What an ``initialize`` exchange says, in either version, for the client and for the tools
that read a recording (record, inspect, devtools, check): the version agreed on and the names
of the two peers.

The version is the answer's ``protocolVersion``, except for an agent that echoes the version it
was asked for: agents built on the official Python SDK 0.12.1 (its example echo agent answers
``InitializeResponse(protocol_version=protocol_version)``) and ``fast-agent-acp`` answer a
request for version 2 with ``protocolVersion: 2`` and a v1 body (``agentInfo``,
``agentCapabilities``; no ``info``). Such an answer is a valid v1 ``InitializeResponse`` and
not a valid v2 one: the agent speaks v1, and the connection goes on as v1.
"""

from __future__ import annotations

from typing import Any

from ..errors import SchemaValidationError

__all__ = ["agent_info", "agreed_version", "client_info", "echoed_v1"]


def _valid(model: Any, value: Any) -> bool:
    from ..schema import parse

    try:
        parse(model, value, name="InitializeResponse")
    except SchemaValidationError:
        return False
    return True


def echoed_v1(result: Any) -> bool:
    """Whether ``result`` (an ``initialize`` result as JSON) says version 2 or newer but is a
    valid v1 ``InitializeResponse`` and not a valid v2 one: a v1 agent that echoed the version
    it was asked for."""
    if not isinstance(result, dict):
        return False
    version = result.get("protocolVersion")
    if type(version) is not int or version < 2:
        return False
    from ..schema import _generated as v1
    from ..schema import v2

    return not _valid(v2.InitializeResponse, result) and _valid(v1.InitializeResponse, result)


def agreed_version(result: Any) -> int | None:
    """The version in effect after ``result`` (an ``initialize`` result as JSON): its integer
    ``protocolVersion``, 1 for a v1 agent that echoed a newer one (:func:`echoed_v1`), None
    without an integer version."""
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if type(version) is not int:
        return None
    return 1 if version >= 2 and echoed_v1(result) else version


def client_info(params: Any) -> dict[str, Any] | None:
    """The client's implementation (``name``, ``version``, ``title``) in ``initialize`` params:
    v2's ``info`` or v1's ``clientInfo`` (a client asking for either version may send both)."""
    return _implementation(params, "info", "clientInfo")


def agent_info(result: Any) -> dict[str, Any] | None:
    """The agent's implementation in an ``initialize`` result: v1's ``agentInfo`` or v2's
    ``info``."""
    return _implementation(result, "agentInfo", "info")


def _implementation(value: Any, *fields: str) -> dict[str, Any] | None:
    if isinstance(value, dict):
        for field in fields:
            info = value.get(field)
            if isinstance(info, dict):
                return info
    return None
