"""Schema checks of single trace messages: the JSON-RPC envelope, then the ACP schema of its
params or result (``strict_only`` marks what passes only thanks to the schema's leniency rules).
Used by the trace writer and the trace analyser; they never change what is forwarded."""

from __future__ import annotations

from typing import Any

from ..errors import SchemaValidationError
from ..protocol.base import Protocol
from ..protocol.initialize import agreed_version as agreed
from ..protocol.messages import message_kind, usable_id
from ..protocol.state import default_protocol, protocol_of_version
from ..schema._parse import parse

__all__ = ["agreed_version", "protocol_after", "validate_message"]


def _envelope_errors(msg: Any) -> list[dict[str, Any]]:
    if not isinstance(msg, dict):
        kind = "array (batch)" if isinstance(msg, list) else type(msg).__name__
        return [{"path": "$", "message": f"a message must be a JSON object, not {kind}"}]
    errs: list[dict[str, Any]] = []
    if msg.get("jsonrpc") != "2.0":
        errs.append({"path": "$.jsonrpc", "message": 'must be "2.0"'})
    kind = message_kind(msg)
    if kind == "request" and not usable_id(msg["id"]):
        errs.append({"path": "$.id", "message": "a request id must be a string or an integer"})
    elif kind == "response" or (kind == "invalid" and "id" in msg and msg.get("method") is None):
        if "id" not in msg:
            errs.append({"path": "$.id", "message": "a response needs the id of the request it answers"})
        if ("result" in msg) == ("error" in msg):
            errs.append({"path": "$", "message": "a response has exactly one of result and error"})
        err = msg.get("error")
        if "error" in msg and not (isinstance(err, dict) and type(err.get("code")) is int
                                   and isinstance(err.get("message"), str)):
            errs.append({"path": "$.error", "message": "an error needs an integer code and a string message"})
    elif kind == "invalid" and msg.get("method") is not None:
        errs.append({"path": "$.method", "message": "must be a string"})
    elif kind == "invalid":
        errs.append({"path": "$", "message": "neither a request, a notification nor a response"})
    return errs


def _schema_errors(tp: Any, data: Any, prefix: str, name: str) -> list[dict[str, Any]]:
    try:
        parse(tp, data, strict=True, name=name)
        return []
    except SchemaValidationError as strict_exc:
        strict_errors = strict_exc.errors
    try:
        parse(tp, data, strict=False, name=name)
        lenient_ok = True
    except SchemaValidationError as exc:
        strict_errors = exc.errors
        lenient_ok = False
    out = []
    for e in strict_errors[:10]:
        path = str(e.get("path", "$"))
        item: dict[str, Any] = {"path": prefix + path[1:], "message": f"{name}: {e.get('message')}"}
        if lenient_ok:
            item["strict_only"] = True
        out.append(item)
    return out


def agreed_version(msg: Any, answered: str | None, current: int | None = None) -> int:
    """The ACP version in effect from ``msg`` on: the ``protocolVersion`` of an ``initialize``
    result (``answered``: the method the message answers; the response itself already follows
    that version's schema), 1 for an agent that echoed a newer version with a v1 answer (see
    :mod:`acplink.protocol.initialize`), else ``current``."""
    first = default_protocol().version
    if answered == "initialize" and isinstance(msg, dict) and isinstance(msg.get("result"), dict):
        version = agreed(msg["result"])
        return first if version is None else version
    return first if current is None else current


def protocol_after(msg: Any, answered: str | None, current: Protocol) -> Protocol:
    """The protocol whose schema applies from ``msg`` on (see :func:`agreed_version`): the one
    an ``initialize`` result agrees on, the first version for one acplink does not know."""
    if answered == "initialize" and isinstance(msg, dict) and isinstance(msg.get("result"), dict):
        return protocol_of_version(agreed(msg["result"])) or default_protocol()
    return current


def validate_message(msg: Any, method: str | None = None,
                     version: int | Protocol | None = None) -> list[dict[str, Any]]:
    """Schema problems of one decoded message (``[]`` when it is valid).

    ``method`` is the method of the request a response answers (needed to check a result).
    ``version``: the protocol (or the version number) the connection agreed on, whose method
    table and models judge the payloads (None: the first version's).
    Extension (``_``) methods and unknown methods' payloads are not checked.
    """
    proto = version if isinstance(version, Protocol) else protocol_of_version(version) or default_protocol()
    method_info = proto.info
    errs = _envelope_errors(msg)
    if errs or not isinstance(msg, dict):
        return errs
    kind = message_kind(msg)
    if kind in ("request", "notification"):
        m = msg["method"]
        info = method_info(m, kind)
        if info is None:
            if not m.startswith(("_", "$/")) and method_info(m, "notification" if kind == "request" else "request"):
                errs.append({"path": "$.id", "message": f"{m} is a {'notification' if kind == 'request' else 'request'}"})
            elif not m.startswith(("_", "$/")):
                errs.append({"path": "$.method", "message": f"unknown method {m!r} (not in the ACP schema)"})
            return errs
        params = msg.get("params", {})
        return _schema_errors(info.params_type, params if params is not None else {}, "$.params", info.params_name)
    if "result" in msg and method is not None:
        info = method_info(method, "request")
        if info is not None and info.result_type is not None:
            result = msg["result"]
            return _schema_errors(info.result_type, result if result is not None else {}, "$.result",
                                  info.result_name or "result")
    return errs
