"""The v2 traffic of a client connection, once ``initialize`` agreed on protocol 2.

The connection starts as a v1 client connection (it owns the transport and the peer, and
closes them); when the agent answers ``initialize`` with version 2, the connection hands the
peer's inbound traffic to a :class:`V2Link`: it routes the agent's v2 calls (``session/request_permission``,
``elicitation/create``) and ``session/update`` notifications, and makes typed calls of the v2
agent methods from the v2 method table (``acplink.schema.v2``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ...connection.peer import DONE, Peer
from ...errors import InvalidParams, MethodNotFound, SchemaValidationError, UsageError
from ...protocol.v2 import V1_ONLY_METHODS, Method
from ...schema import _generated as s
from ...schema import dump_json, parse
from ...schema import v2 as m
from .._questions import elicitation_cancelled
from ..permissions import cancelled_answer
from .session import V2PromptTurn, V2Session

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["V2Link"]

log = logging.getLogger("acplink.client")


class V2Link:
    """Typed v2 calls and v2 routing over a client connection's peer."""

    def __init__(self, client: Client, peer: Peer, init: Any) -> None:
        self.client = client
        self.peer = peer
        #: the agent's ``initialize`` answer (an ``acplink.schema.v2.InitializeResponse``)
        self.init = init
        self._requests: dict[str, Callable[[Any], Awaitable[Any]]] = {Method.REQUEST_PERMISSION: self._on_permission}
        if client.elicitation is not None:
            self._requests[Method.ELICITATION_CREATE] = self._on_elicitation
        # (the client's connection hands the agent's traffic to this link from now on)
        # session/update decoded straight from its bytes into the v2 model (replaces v1's)
        validate = m.UpdateSessionNotification.__pydantic_validator__.validate_json
        peer.engine.add_fast_notification(Method.SESSION_UPDATE, validate)

    # -- outbound ----------------------------------------------------------------------------

    async def call(self, params: Any, *, timeout: float | None = None,
                   on_result: Callable[[Any], Any] | None = None) -> Any:
        """Send the v2 request whose params model is ``params``; the typed result.
        ``on_result``: called with it in arrival order, before any later message is handled."""
        info = _info_of(params, "request")

        def typed(raw: Any) -> Any:
            result = parse(info.result_type, raw if raw is not None else {}, name=info.result_name)
            return on_result(result) if on_result is not None else result

        return await self.peer.request(info.method, dump_json(params), timeout=timeout, on_result=typed)

    async def notify(self, params: Any) -> None:
        info = _info_of(params, "notification")
        await self.peer.notify(info.method, dump_json(params))

    # -- sessions ----------------------------------------------------------------------------

    def _register(self, session_id: str, cwd: str, additional: Sequence[str]) -> V2Session:
        sess = V2Session(self.client, self, session_id, cwd, additional_directories=additional)
        self.client.sessions[session_id] = sess
        return sess

    async def new_session(self, cwd: str, *, mcp_servers: Sequence[Any] = (),
                          additional_directories: Sequence[str] = ()) -> V2Session:
        fields: dict[str, Any] = {"cwd": cwd, "mcpServers": [_wire(x) for x in mcp_servers]}
        if additional_directories:
            fields["additionalDirectories"] = list(additional_directories)
        request = m.NewSessionRequest.model_validate(fields)
        opened: list[V2Session] = []

        def register(resp: Any) -> Any:  # before any update that follows the response
            sess = self._register(resp.session_id, cwd, list(additional_directories))
            sess.v2_state.apply_session_setup(resp)
            opened.append(sess)
            return resp

        await self.call(request, on_result=register)
        return opened[0]

    async def resume_session(self, session_id: str, cwd: str, *, replay: bool = False) -> V2Session:
        """``session/resume``; with ``replay``, the agent first replays the conversation
        (``replayFrom: start``) into the session's state."""
        fields: dict[str, Any] = {"sessionId": session_id, "cwd": cwd}
        if replay:
            fields["replayFrom"] = {"type": "start"}
        sess = self._register(session_id, cwd, [])  # the replay comes before the response
        try:
            resp = await self.call(m.ResumeSessionRequest.model_validate(fields))
        except BaseException:
            if self.client.sessions.get(session_id) is sess:
                del self.client.sessions[session_id]
            raise
        sess.v2_state.apply_session_setup(resp)
        return sess

    async def list_sessions(self, cwd: str | None = None) -> list[Any]:
        """Every session the agent lists (follows ``nextCursor``)."""
        out: list[Any] = []
        cursor: str | None = None
        while True:
            fields: dict[str, Any] = {}
            if cwd is not None:
                fields["cwd"] = cwd
            if cursor:
                fields["cursor"] = cursor
            resp = await self.call(m.ListSessionsRequest.model_validate(fields))
            out.extend(resp.sessions)
            cursor = resp.next_cursor
            if not cursor:
                return out

    async def delete_session(self, session_id: str) -> None:
        """``session/delete`` (where the agent advertises ``session.delete``)."""
        self.client.sessions.pop(session_id, None)
        await self.call(m.DeleteSessionRequest(session_id=session_id))

    async def login(self, method_id: str) -> Any:
        """``auth/login`` with one of the agent's ``authMethods``."""
        return await self.call(m.LoginAuthRequest(method_id=method_id))

    # -- inbound (the peer's dispatcher) -----------------------------------------------------

    async def handle_request(self, method: str, params: Any) -> bytes:
        handler = self._requests.get(method)
        info = m.method_info(method, "request")
        if handler is None or info is None:
            hint = " (ACP v2 has no fs/terminal client methods: use MCP-over-ACP)" \
                if method in V1_ONLY_METHODS else ""
            raise MethodNotFound(f"Method not found: {method}{hint}", {"method": method})
        try:
            typed = parse(info.params_type, params if params is not None else {}, name=info.params_name)
        except SchemaValidationError as exc:
            raise InvalidParams(f"Invalid params for {method}: {exc.message}", exc.data) from None
        result = await handler(typed)
        return orjson.dumps(result) if isinstance(result, dict) else dump_json(result)

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        if method != Method.SESSION_UPDATE:
            return DONE
        if not typed:
            try:
                params = parse(m.UpdateSessionNotification, params, name="UpdateSessionNotification")
            except SchemaValidationError as exc:
                self._bad_update(params, exc)
                return DONE
        sess = self.client.sessions.get(params.session_id)
        if sess is None:
            self.peer.warn_bad_input(f"session/update for unknown session {params.session_id!r} ignored")
            return DONE
        sess._deliver(params.update)
        for observer in self.client.observers:
            observer(sess, params.update)
        return DONE

    def _bad_update(self, params: Any, exc: SchemaValidationError) -> None:
        """A ``session/update`` that does not match the v2 schema: the running turn of its
        session fails with the error (naming the path); otherwise it is logged and dropped."""
        sid = params.get("sessionId") if isinstance(params, dict) else None
        sess = self.client.sessions.get(sid) if isinstance(sid, str) else None
        turn = sess._turn if sess is not None else None
        if isinstance(turn, V2PromptTurn):
            turn._fail(exc)
        else:
            self.peer.warn_bad_input(f"invalid session/update ignored: {exc}")

    async def _on_permission(self, p: Any) -> Any:
        """A v2 permission request, decided by the client's :class:`PermissionPolicy` (which
        reads a v1-shaped request: the subject's tool call, or the title)."""
        subject = p.subject
        call: dict[str, Any] = {"toolCallId": "", "title": p.title}
        tool = getattr(subject, "tool_call", None)
        if tool is not None:
            call = {"toolCallId": tool.tool_call_id, "title": tool.title or p.title, "kind": tool.kind}
        elif getattr(subject, "command", None) is not None:
            call = {"toolCallId": subject.tool_call_id or "", "title": p.title, "kind": "execute"}
        known = self.client.sessions.get(p.session_id)
        if isinstance(known, V2Session) and call["toolCallId"] in known.v2_state.tool_calls and "kind" not in call:
            call["kind"] = known.v2_state.tool_calls[call["toolCallId"]].kind
        v1 = s.RequestPermissionRequest.model_validate({
            "sessionId": p.session_id, "toolCall": {k: v for k, v in call.items() if v is not None},
            "options": [o.to_wire() for o in p.options], "_meta": p.meta})
        answer = await self.client._questions.ask(p.session_id, Method.REQUEST_PERMISSION, p,
                                                  lambda: self.client.permission.decide(v1), cancelled_answer())
        outcome = answer.to_wire().get("outcome", {})
        if outcome.get("outcome") not in ("selected", "cancelled"):  # (v1-only outcomes, e.g. timeout)
            outcome = {"outcome": "cancelled"}
        return {"outcome": outcome}

    async def _on_elicitation(self, p: Any) -> Any:
        elicitor = self.client.elicitation
        assert elicitor is not None
        return await self.client._questions.ask(getattr(p, "session_id", None), Method.ELICITATION_CREATE, p,
                                                lambda: elicitor(p), elicitation_cancelled())


def _wire(value: Any) -> Any:
    return value.to_wire() if hasattr(value, "to_wire") else value


def _info_of(params: Any, kind: str) -> Any:
    name = type(params).__name__
    for info in m.METHODS:
        if info.params_name == name and info.kind == kind and info.side in ("agent", "protocol"):
            return info
    raise UsageError(f"{name} is not the params of a v2 agent {kind}")
