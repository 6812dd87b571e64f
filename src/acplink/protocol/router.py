"""Choosing the protocol version of a connection (sans-I/O): the rules of the version router.

A :class:`VersionRouter` looks at the messages a client sends before the connection has a
version, and tells its caller what to do with each (:class:`Ignore`, :class:`Reply` with an
error and keep waiting, or :class:`Select` a version with the ``initialize`` request to hand to
that version's implementation). Once a version is chosen it also judges a repeated
``initialize`` (:meth:`VersionRouter.repeat`). The rules are those of the TypeScript SDK's
``AgentProtocolRouter`` (2.4.0), so one client sees the same agent behaviour from both:

- before ``initialize``: notifications and responses are ignored, any other request gets
  ``-32600``, a JSON array gets one ``-32600`` with ``id: null`` (unless ``batches=True``: then
  each element is routed in turn and the answers go back as one array), and a failed
  ``initialize`` may be retried;
- ``protocolVersion`` must be an integer in 0..65535 (else ``-32602``); ≥ 2 selects v2 where
  v2 is served, 1 selects v1, anything else ``-32022`` with ``{"requested", "supported"}``;
  an app serving only v1 takes every valid request as v1 (the legacy fallback);
- a request for a newer version than the one selected is parsed leniently (a missing or
  malformed ``info`` becomes ``{"name": "unknown", "version": "unknown"}``); one for exactly
  the selected version strictly (v2 without ``info`` → ``-32602``); a v2 ``initialize`` sent
  to a v1 implementation is rewritten into v1's shape;
- on v2 the ``initialize`` id must be a string or an integer (else ``-32600``, ``id: null``);
- the chosen version never changes: a repeated ``initialize`` before any other request must
  ask for the chosen version or newer (asking 1 on v2 → ``-32600``); after another request
  it is ``-32600``.

Nothing here does I/O: the caller decodes the messages and writes the replies.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from .base import get_protocol, known_versions
from .v2 import UNSUPPORTED_PROTOCOL_VERSION

__all__ = ["Decision", "Ignore", "Reply", "Select", "VersionRouter", "downgrade_initialize", "error_response", "for_v1_only"]

MAX_PROTOCOL_VERSION = 0xFFFF
_UNKNOWN_INFO = {"name": "unknown", "version": "unknown"}
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Ignore:
    """Drop the message (a notification or a response before ``initialize``)."""


@dataclass(frozen=True)
class Reply:
    """Send ``message`` (an error response, or with batches an array of them) and keep waiting."""

    message: Any


@dataclass(frozen=True)
class Select:
    """Serve the connection with ``version``: hand it ``initialize`` (params rewritten for that
    version) and then ``rest`` (what followed it in the same batch), then every later message."""

    version: int
    initialize: dict[str, Any]
    replies: list[dict[str, Any]] = field(default_factory=list)  # batch answers sent before it
    rest: list[Any] = field(default_factory=list)


Decision = Ignore | Reply | Select


def error_response(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response (``data`` omitted when None)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


class _Refused(Exception):
    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response


def _is_id(value: Any) -> bool:
    """A JSON-RPC id as the TS SDK reads one before routing (null, string or finite number)."""
    return value is None or type(value) in (str, int, float)


def _v2_id(value: Any) -> bool:
    return type(value) in (str, int)


def _version_of(value: Any) -> int | None:
    """``protocolVersion`` as an int, or None when it is not an integer in 0..65535."""
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is int and 0 <= value <= MAX_PROTOCOL_VERSION:
        return value
    return None


def _valid_info(info: Any) -> bool:
    return (isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
            and (info.get("title") is None or isinstance(info.get("title"), str)))


class VersionRouter:
    """The version choice of one connection. ``versions``: the protocol versions served (any
    registered ones; v1-shaped versions take ``clientInfo`` / ``clientCapabilities``, the
    others v2's ``info`` / ``capabilities`` and its stricter rules); ``batches``: route the elements of a JSON array one by one instead of
    answering the whole array ``-32600``."""

    def __init__(self, versions: Collection[int] = (1, 2), *, batches: bool = False) -> None:
        known = known_versions()
        self.versions = sorted({v for v in versions if v in known})
        if not self.versions:
            raise ValueError(f"a version router needs at least one known protocol version ({known})")
        self.batches = batches
        #: the version chosen (None until an ``initialize`` succeeds)
        self.selected: int | None = None
        self._other_request_seen = False

    # -- before a version is chosen ------------------------------------------------------------

    def route(self, message: Any) -> Decision:
        """What to do with one decoded message received before a version is chosen."""
        if isinstance(message, list):
            if not self.batches:
                return Reply(error_response(None, INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported"))
            return self._route_batch(message)
        try:
            return self._route_one(message)
        except _Refused as refused:
            return Reply(refused.response)

    def _route_batch(self, batch: list[Any]) -> Decision:
        if not batch:
            return Reply(error_response(None, INVALID_REQUEST, "Invalid request: an empty batch"))
        replies: list[dict[str, Any]] = []
        for i, message in enumerate(batch):
            if isinstance(message, list):
                replies.append(error_response(None, INVALID_REQUEST, "Invalid request: a nested batch"))
                continue
            try:
                decision = self._route_one(message)
            except _Refused as refused:
                replies.append(refused.response)
                continue
            if isinstance(decision, Select):
                return Select(decision.version, decision.initialize, replies, list(batch[i + 1:]))
        return Reply(replies) if replies else Ignore()

    def _route_one(self, message: Any) -> Decision:
        if not isinstance(message, dict):
            raise _Refused(error_response(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC message"))
        has_method = "method" in message
        if message.get("jsonrpc") == "2.0" and "id" not in message and isinstance(message.get("method"), str):
            return Ignore()  # a notification
        if not has_method and ("id" in message or "result" in message or "error" in message):
            return Ignore()  # a response (even a malformed one is never answered)
        rid = message.get("id")
        if not (message.get("jsonrpc") == "2.0" and "id" in message and isinstance(message.get("method"), str)
                and _is_id(rid)):
            raise _Refused(error_response(None, INVALID_REQUEST, "Invalid request: first ACP message must be an initialize request"))
        if message["method"] != "initialize":
            raise _Refused(error_response(rid, INVALID_REQUEST, "Invalid request: first ACP request must be initialize"))
        params = message.get("params")
        requested = _version_of(params.get("protocolVersion")) if isinstance(params, dict) else None
        if not isinstance(params, dict) or requested is None:
            raise _Refused(_bad_version(rid))
        version = self._choose(requested)
        if version is None:
            raise _Refused(error_response(rid, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                                          {"requested": requested, "supported": list(self.versions)}))
        if _info_shaped(version) and not _v2_id(rid):
            raise _Refused(error_response(None, INVALID_REQUEST, "Invalid request: ACP v2 request ids must be strings or integers"))
        rewritten = self._rewrite(rid, params, requested, version)
        self.selected = version
        return Select(version, {**message, "params": rewritten})

    def _choose(self, requested: int) -> int | None:
        """The newest version served that is not newer than the one requested (the TS SDK's
        rule: 2 or newer selects v2, 1 selects v1)."""
        if self.versions == [1]:
            return 1  # a v1-only app keeps the legacy fallback: every valid version is served as 1
        return max((v for v in self.versions if v <= requested), default=None)

    def _rewrite(self, rid: Any, params: dict[str, Any], requested: int, version: int) -> dict[str, Any]:
        plain = not _info_shaped(version)
        if plain and (requested < 2 or requested == version):
            return {**params, "protocolVersion": version}  # (the implementation checks its params)
        info = params.get("info")
        if not _valid_info(info):
            if requested == version:  # exactly v2: validated strictly
                raise _Refused(error_response(rid, INVALID_PARAMS, "Invalid params: initialize.info must be an object "
                                              "with string name and version"))
            info = None
        if plain:
            return {**_v2_to_v1(params, info), "protocolVersion": version}
        out = {k: v for k, v in params.items() if v is not None}
        out["protocolVersion"] = version
        out["info"] = info if info is not None else dict(_UNKNOWN_INFO)
        if not isinstance(out.get("capabilities", {}), dict):
            out.pop("capabilities")  # (newer requests: what does not parse is dropped)
        return out

    # -- after -------------------------------------------------------------------------------

    def request_seen(self, method: str) -> None:
        """A request reached the chosen implementation (after a repeated ``initialize`` no
        longer may come on v2 once another request was seen)."""
        if method != "initialize":
            self._other_request_seen = True

    def repeat(self, rid: Any, params: Any) -> dict[str, Any] | None:
        """Judge a repeated ``initialize`` on the chosen version: None when the chosen
        implementation may handle it, else the error response to send."""
        requested = _version_of(params.get("protocolVersion")) if isinstance(params, dict) else None
        if requested is None:
            return _bad_version(rid)
        if self.selected is not None and _info_shaped(self.selected):
            if self._other_request_seen:
                return error_response(rid, INVALID_REQUEST, "Invalid request: initialize may only be repeated "
                                      "before any other request")
            if requested < self.selected:
                return error_response(rid, INVALID_REQUEST, "Invalid request: a repeated initialize must use the "
                                      f"negotiated protocol version {self.selected}")
        return None

    def repeat_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The params of a repeated ``initialize`` (:meth:`repeat` let it through) for the chosen
        version: a v1-shaped version takes it in its shape (a repeat never changes the version)."""
        version = self.selected
        assert version is not None
        if _info_shaped(version) or params.get("protocolVersion") == version:
            return params
        if "info" in params:
            return {**downgrade_initialize(params), "protocolVersion": version}
        return {**params, "protocolVersion": version}


def _info_shaped(version: int) -> bool:
    """Whether ``version``'s ``initialize`` is v2-shaped (``info``, ``capabilities``: checked
    strictly, string or integer ids, the version kept on a repeat) rather than v1's."""
    return get_protocol(version).capabilities_field[1] != "clientCapabilities"


def _bad_version(rid: Any) -> dict[str, Any]:
    return error_response(rid, INVALID_PARAMS,
                          "Invalid params: initialize.protocolVersion must be an integer from 0 to 65535")


def downgrade_initialize(params: dict[str, Any]) -> dict[str, Any]:
    """A v2 ``initialize``'s params in v1's shape (what the router hands a v1 implementation)."""
    info = params.get("info")
    return _v2_to_v1(params, info if _valid_info(info) else None)


def for_v1_only(params: Any) -> Any:
    """The params of an ``initialize`` as a v1-only implementation takes them: a request for
    version 2 or newer downgraded into v1's shape (answered with version 1, as the TS router
    does, so an ``auto`` client goes on with v1); anything else unchanged. A request that also
    carries v1's own ``clientInfo`` / ``clientCapabilities`` (acplink's ``auto`` client) keeps
    them: that client goes on with v1, fs and terminals included."""
    if isinstance(params, dict) and (_version_of(params.get("protocolVersion")) or 0) >= 2:
        own = {k: params[k] for k in ("clientInfo", "clientCapabilities") if params.get(k) is not None}
        return {**downgrade_initialize(params), **own}
    return params


def _v2_to_v1(params: dict[str, Any], info: dict[str, Any] | None) -> dict[str, Any]:
    """A v2 ``initialize`` for a v1 implementation: v2 clients have no fs or terminal methods,
    take boolean config options and plans, and may know terminal auth and elicitation."""
    caps = params.get("capabilities")
    caps = caps if isinstance(caps, dict) else {}
    auth: dict[str, Any] = caps["auth"] if isinstance(caps.get("auth"), dict) else {}
    v1_auth: dict[str, Any] = {"terminal": auth.get("terminal") is not None}
    if auth.get("_meta") is not None:
        v1_auth["_meta"] = auth["_meta"]
    v1_caps: dict[str, Any] = {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "session": {"configOptions": {"boolean": {}}},
        "plan": {},
        "auth": v1_auth,
    }
    for key in ("elicitation", "_meta"):
        if caps.get(key) is not None:
            v1_caps[key] = caps[key]
    out: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": v1_caps}
    if info is not None:
        out["clientInfo"] = info
    if params.get("_meta") is not None:
        out["_meta"] = params["_meta"]
    return out
