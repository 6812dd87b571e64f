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

from typing import Any, Literal

from .._record import Record
from ..errors import SchemaValidationError, UsageError
from .base import Protocol, get_protocol, known_versions

__all__ = ["Agreed", "Handshake", "ProtocolChoice", "Refused", "Retry", "agent_info", "agreed_version",
           "check_choice", "client_info", "echoed_v1"]


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


# -- the client's version choice (step 0 of a client connection) --------------------------------

#: what a client may ask for: a version number (1, the default; 2, the v2 draft; any registered
#: version) or "auto" (2 if the agent speaks it, else 1)
ProtocolChoice = int | Literal["auto"]

#: the version "auto" asks for first (with v1's fields too), and the one it falls back to
_AUTO_FIRST, _BASE = 2, 1


def _known(version: int) -> Protocol:
    if version == _AUTO_FIRST:
        from .v2 import protocol  # (built on first use: the v2 models are big)

        return protocol()
    return get_protocol(version)


def check_choice(choice: Any) -> ProtocolChoice:
    """``choice`` when a client may ask for it, else UsageError."""
    if choice == "auto":
        return "auto"
    if type(choice) is int:
        try:
            _known(choice)
            return choice
        except UsageError:
            pass
    listed = ", ".join(str(v) for v in sorted({*known_versions(), _BASE, _AUTO_FIRST}))
    raise UsageError(f'protocol must be one of {listed} or "auto", not {choice!r}')


class Agreed(Record):
    """Go on with ``protocol``: ``result`` is the typed ``InitializeResponse``, ``capabilities``
    what the client advertised, ``note`` a line for the debug log, ``version`` the version
    number the connection reports (the protocol's, unless a v1 answer said another one)."""

    __match_args__ = ("protocol", "result", "capabilities", "note", "version")
    __slots__ = ("capabilities", "note", "protocol", "result", "version")

    def __init__(self, protocol: Protocol, result: Any, capabilities: Any, note: str | None = None,
                 version: int | None = None) -> None:
        self.protocol = protocol
        self.result = result
        self.capabilities = capabilities
        self.note = note
        self.version = version


class Retry(Record):
    """Send another ``initialize`` request: ``body`` (``note``: why, for the debug log)."""

    __match_args__ = ("body", "note")
    __slots__ = ("body", "note")

    def __init__(self, body: dict[str, Any], note: str) -> None:
        self.body = body
        self.note = note


class Refused(Record):
    """The connection cannot go on as asked: ``message`` says why (a ``ProtocolError``)."""

    __match_args__ = ("message",)
    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class Handshake:
    """The version choice of a client at ``initialize``, sans-I/O: :meth:`request` is the first
    request's params; each answer goes to :meth:`on_result` (→ :class:`Agreed` or
    :class:`Refused`), each error answer to :meth:`on_error` (→ :class:`Retry`, or None: the
    error stands). The caller sends and receives.

    * a version ``N`` other than 1: a request in N's shape (``info``, ``capabilities`` for v2);
      an answer other than N with a valid N body is refused (an echoing v1 agent, see
      :func:`echoed_v1`, is named as such);
    * ``1`` (the default): v1's request, whose ``protocolVersion`` may be another number
      (``protocol_version``); the answer is read as v1's and its version selects the protocol
      (when acplink knows it, and it is not an echo), as a v1 client always did;
    * ``"auto"``: v2's request also carrying v1's ``clientInfo`` and ``clientCapabilities``
      (each version ignores the other's fields): a v2 answer goes on as v2, a v1 answer (or an
      echo) as v1; an error answer gets a second, v1 request, unless its ``supported``
      versions leave 1 out.

    ``info``: the client's implementation, ``capabilities``: what it offers, in acplink's
    vocabulary (v1's ``clientCapabilities``), both wire dicts.
    """

    def __init__(self, choice: ProtocolChoice, *, info: dict[str, Any], capabilities: dict[str, Any],
                 protocol_version: int | None = None) -> None:
        self.choice = check_choice(choice)
        self.info = info
        self.capabilities = capabilities
        self._asked = protocol_version if choice == _BASE and protocol_version is not None else None
        self._retried = False

    def _body(self, version: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request for ``version`` and the capabilities it advertises."""
        proto = _known(version)
        codec = proto.client_codec
        caps = codec.capabilities(self.capabilities) if codec is not None else self.capabilities
        return {"protocolVersion": version, proto.capabilities_field[1]: caps, proto.info_field[1]: self.info}, caps

    def request(self) -> dict[str, Any]:
        if self.choice == _BASE:
            body, _ = self._body(_BASE)
            if self._asked is not None:
                body["protocolVersion"] = self._asked
            return body
        body, _ = self._body(_AUTO_FIRST if self.choice == "auto" else self.choice)
        if self.choice == "auto":
            v1, _ = self._body(_BASE)
            body.update((k, v) for k, v in v1.items() if k != "protocolVersion")
        return body

    def on_error(self, code: int, data: Any) -> Retry | None:
        if self.choice != "auto" or self._retried:
            return None
        from .v2 import UNSUPPORTED_PROTOCOL_VERSION  # (a v1-only process does not load v2's names)

        supported = data.get("supported") if isinstance(data, dict) else None
        if code == UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list) and _BASE not in supported:
            return None
        self._retried = True
        body, _ = self._body(_BASE)
        return Retry(body, f"the agent refused initialize for version {_AUTO_FIRST} (error {code}): "
                           f"asking for version {_BASE}")

    def on_result(self, raw: Any) -> Agreed | Refused:
        version = raw.get("protocolVersion") if isinstance(raw, dict) else None
        if self.choice == _BASE or self._retried:
            return self._lenient(raw, version)
        asked = _AUTO_FIRST if self.choice == "auto" else self.choice
        proto = _known(asked)
        echoed = False
        if version == asked:
            try:
                result = _parse(proto, raw)
            except SchemaValidationError as exc:
                echoed = echoed_v1(raw)
                if not echoed:
                    return Refused(f"invalid initialize response: {exc.message}")
            else:
                return Agreed(proto, result, self._body(asked)[1])
        elif version != _BASE:
            echoed = echoed_v1(raw)
        if self.choice != "auto" or (version != _BASE and not echoed):
            return Refused(_refusal(asked, version, echoed))
        note = None
        if echoed:
            note = (f"the agent answered protocolVersion {version!r} with a v1 initialize response (it echoes the "
                    "version asked for): continuing on v1")
        base = _known(_BASE)
        try:
            return Agreed(base, _parse(base, raw), self.capabilities, note)
        except SchemaValidationError as exc:
            return Refused(f"invalid initialize response: {exc.message}")

    def _lenient(self, raw: Any, version: Any) -> Agreed | Refused:
        """A v1 request's answer: its version selects the protocol when acplink knows it and the
        answer is that version's (a v1 agent echoing a newer version stays on v1), else it is read
        as v1's."""
        base = _known(_BASE)
        if type(version) is int and version != _BASE and version in known_versions():
            proto = get_protocol(version)
            try:
                return Agreed(proto, _parse(proto, raw), self.capabilities, version=version)
            except SchemaValidationError:
                pass
        try:
            result = _parse(base, raw)
        except SchemaValidationError as exc:
            return Refused(f"invalid initialize response: {exc.message}")
        return Agreed(base, result, self.capabilities,
                      version=version if type(version) is int and not echoed_v1(raw) else base.version)


def _parse(proto: Protocol, raw: Any) -> Any:
    from ..schema import parse

    info = proto.info(proto.wire("initialize"), "request")
    if info is None or info.result_type is None:  # (a table without initialize: the answer as is)
        return raw
    return parse(info.result_type, raw if raw is not None else {}, name=info.result_name)


def _refusal(asked: int, version: Any, echoed: bool) -> str:
    """Why an answer to a request for version ``asked`` cannot go on as asked."""
    if echoed:
        return (f"asked for ACP protocol version {asked}, the agent answered {version!r} with a v1 initialize "
                'response (it echoes the version asked for and speaks v1; protocol "auto" continues on v1)')
    hint = ' (protocol "auto" continues on v1)' if version == _BASE else ""
    return f"asked for ACP protocol version {asked}, the agent answered {version!r}{hint}"
