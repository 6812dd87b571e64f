"""The agent's end of a connection: handles agent methods, calls client methods.

Step 0 is the version: a connection told which ``versions`` it serves lets the version router
(:mod:`acplink.protocol.router`, sans-I/O) judge ``initialize`` and switches to the protocol
object of the version chosen; from then on it asks that object for everything that differs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequest, RequestError
from ..protocol import PROTOCOL_VERSION, ClientStubs, Protocol
from ..schema import _generated as s
from .base import Connection, RawJSON, Router, RouterFactory
from .peer import DONE
from .rules import PromptTurns, advertises

__all__ = ["PROTOCOL_VERSION", "AgentSideConnection", "Turn"]

log = logging.getLogger("acplink.agent")


@dataclass
class Turn:
    """One running prompt turn of a session."""

    session_id: str
    task: asyncio.Task[Any]
    cancel_event: asyncio.Event = field(default_factory=asyncio.Event)
    #: the cancel_grace timer a cancel started (cancelled when the turn ends)
    timer: asyncio.TimerHandle | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()


class AgentSideConnection(Connection, ClientStubs):
    """What an agent holds: typed calls of every client method, routing of agent methods.

    ``session/cancel`` cancels exactly the named session's running prompt turn: its
    :class:`Turn` is flagged at once (handlers can watch ``turn.cancel_event``), and after
    ``cancel_grace`` seconds a handler that has not returned is cancelled. Either way the
    prompt is answered with stopReason ``cancelled``.

    ``router`` may also be a mapping of protocol version → :class:`Router` (one implementation
    per version, each handler taking its version's typed params); ``versions``: the versions
    served (default: those of the mapping). Serving several, ``initialize`` chooses one by the
    version router's rules; serving only the version the connection starts with, an
    ``initialize`` asking for another is taken in that version's shape (the legacy fallback).
    """

    side = "agent"

    def __init__(self, transport: Any, router: Router | RouterFactory | Mapping[int, Router], *,
                 cancel_grace: float = 2.0, versions: Collection[int] | None = None, **kw: Any) -> None:
        if isinstance(router, Mapping):
            routers = dict(router)
            versions = tuple(routers) if versions is None else versions
            router = lambda protocol: routers.get(protocol.version) or Router()  # noqa: E731
        super().__init__(transport, router, **kw)
        self.cancel_grace = cancel_grace
        self.initialized = False
        self.client_info: s.Implementation | None = None
        self.protocol_version: int | None = None
        #: the versions served (None: whatever ``initialize`` says, nothing checked)
        self.versions = tuple(versions) if versions is not None else None
        #: the connection serves only the version it starts with: an ``initialize`` for another is
        #: taken in its shape (AgentApp's default)
        self.v1_only = self.versions == (self.protocol.version,)
        #: the version choice, when several versions are served (step 0; see the module)
        self.version_router: Any = None
        if self.versions is not None and not self.v1_only:
            from ..protocol.router import VersionRouter  # (not on a single-version agent's start-up)

            self.version_router = VersionRouter(self.versions)
        self.turns: PromptTurns[Turn] = PromptTurns()
        self.router = self._install(self.router)

    def _install(self, router: Router) -> Router:
        """This connection's wrappers (turns, cancel, initialize) around the router's handlers."""
        router = router.copy()  # the wrappers below are this connection's own
        self.turns.rules = self.protocol.turns  # (the version's busy rule: PromptTurns.start)
        #: the protocol the router's handlers are written against (see vocabulary_of)
        self.vocabulary = p = self.vocabulary_of(self.protocol)
        prompt, init, cancel = p.wire("prompt"), p.wire("initialize"), p.wire("cancel")
        user_prompt = router.requests.get(prompt)
        if user_prompt is not None and not p.turns.receipt:  # (a receipt version's turn is its handler's)
            router.add_request(prompt, self._wrap_prompt(user_prompt), replace=True)
        user_init = router.requests.get(init)
        if user_init is not None:
            router.add_request(init, self._wrap_initialize(user_init), replace=True)
        user_cancel = router.notifications.get(cancel)

        async def on_cancel(params: s.CancelNotification) -> None:
            self.cancel_turn(params.session_id)
            if user_cancel is not None:
                await user_cancel(params)

        router.add_notification(cancel, on_cancel, replace=True)
        if p.has("stop"):
            stop = p.wire("stop")
            if stop in router.requests or user_prompt is not None:
                router.requests.setdefault(stop, self._stop)
        return router

    def vocabulary_of(self, protocol: Protocol) -> Protocol:
        """Hook: the protocol the router's handlers are written against when ``protocol`` is
        on the wire (itself, unless a subclass translates)."""
        return protocol

    async def handle_request(self, method: str, params: Any) -> bytes:
        if self.version_router is not None:
            return await self.serve_request(method, self._version_step(method, params))
        if method == "initialize" and self.v1_only:
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            if version != self.protocol.version:  # (its own version: taken as it is)
                from ..protocol.router import for_v1_only  # (here: not on a v1 agent's start-up)

                params = for_v1_only(params)  # (a v2 client asking a v1-only agent: downgraded)
        return await super().handle_request(method, params)

    def _version_step(self, method: str, params: Any) -> Any:
        """Step 0: the version router's judgement of a request; ``initialize`` selects (or
        keeps) the version and comes back with its params rewritten for it."""
        vr = self.version_router
        if method != self.protocol.wire("initialize"):
            if vr.selected is None:
                raise InvalidRequest("Invalid request: first ACP request must be initialize")
            vr.request_seen(method)
            return params
        if vr.selected is None:
            decision = vr.route({"jsonrpc": "2.0", "id": 0, "method": method, "params": params})
            message = getattr(decision, "message", None)
            if message is not None:
                raise RequestError.from_wire(message["error"])
            self.select_protocol(decision.version)
            return decision.initialize["params"]
        refused = vr.repeat(0, params)
        if refused is not None:
            raise RequestError.from_wire(refused["error"])
        return vr.repeat_params(params)

    async def serve_request(self, method: str, params: Any) -> bytes:
        """Handle a request of the version in use (after step 0)."""
        return await Connection.handle_request(self, method, params)

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        vr = self.version_router
        if vr is not None:
            if vr.selected is None:
                return DONE  # before initialize, notifications are ignored
            return self.serve_notification(method, params, typed)
        return Connection.handle_notification(self, method, params, typed)

    def serve_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        """Handle a notification of the version in use (after step 0)."""
        return Connection.handle_notification(self, method, params, typed)

    async def gate(self, method: str) -> None:
        if not self.initialized and not self.protocol.may_precede_initialize(method):
            raise InvalidRequest(f"{method} before initialize: the client must call initialize first")

    def _wrap_initialize(self, handler: Any) -> Any:
        async def initialize(params: s.InitializeRequest) -> Any:
            caps_field, info_field = self.protocol.capabilities_field[1], self.protocol.info_field[1]
            self.peer_capabilities = _wire_field(params, caps_field)
            self.client_info = _wire_field(params, info_field)
            result = await handler(params)
            # (no isinstance against InitializeResponse: naming it would define its classes
            # while the first answer of a fresh agent waits)
            if isinstance(result, (RawJSON, dict)):
                wire = result.value() if isinstance(result, RawJSON) else result
                self.own_capabilities = wire.get(self.protocol.capabilities_field[0])
                self.protocol_version = wire.get("protocolVersion")
            elif result is not None:
                self.own_capabilities = getattr(result, "agent_capabilities", None)
                self.protocol_version = getattr(result, "protocol_version", None)
            self.select_protocol(self.protocol_version)
            self.initialized = True
            self.warm_up(self._hot_methods())
            return result

        return initialize

    def _hot_methods(self) -> list[tuple[str, str]]:
        """What a session is about to need: its own handlers first, then the client methods a
        prompt turn calls (those the client advertised)."""
        p = self.protocol
        hot: list[tuple[str, str]] = [(m, "request") for m in (p.wire("prompt"), p.wire("new_session"))
                                      if m in self.router.requests]
        hot.append((p.wire("cancel"), "notification"))
        for name, capability in p.client_calls:
            if capability is None or advertises(self.peer_capabilities, capability):
                hot.append((p.wire(name), p.kind(name)))
        return hot

    def _wrap_prompt(self, handler: Any) -> Any:
        async def prompt(params: s.PromptRequest) -> Any:
            sid = params.session_id
            task = asyncio.current_task()
            assert task is not None
            turn = Turn(sid, task)
            refused = self.turns.start(sid, turn)
            if refused is not None:
                raise InvalidRequest(refused)
            try:
                result = await handler(params)
            except asyncio.CancelledError:
                if turn.cancelled and not self.closed:
                    task.uncancel()
                    return s.PromptResponse(stop_reason="cancelled")
                raise
            finally:
                self.turns.end(sid, turn)
                if turn.timer is not None:
                    turn.timer.cancel()
            if turn.cancelled:
                # the spec: a cancelled turn is answered `cancelled`, whatever the handler said
                if isinstance(result, s.PromptResponse):
                    return result.model_copy(update={"stop_reason": "cancelled"})
                return s.PromptResponse(stop_reason="cancelled")
            return result

        return prompt

    def cancel_turn(self, session_id: str) -> bool:
        """Cancel the running prompt turn of ``session_id`` (as ``session/cancel`` does)."""
        turn = self.turns.get(session_id)
        if turn is None or turn.cancelled:
            return False
        turn.cancel_event.set()
        loop = asyncio.get_running_loop()

        def force() -> None:
            if not turn.task.done():
                log.info("prompt turn of %s did not stop within %.1fs of cancel; cancelling it",
                         session_id, self.cancel_grace)
                turn.task.cancel()

        turn.timer = loop.call_later(self.cancel_grace, force)
        return True

    async def _stop(self, params: s.StopSessionRequest) -> s.StopSessionResponse:
        """``session/stop`` (acplink extension): cancel the running turn, return its stop reason."""
        turn = self.turns.get(params.session_id)
        if turn is None:
            return s.StopSessionResponse()
        self.cancel_turn(params.session_id)
        await asyncio.wait({turn.task})
        return s.StopSessionResponse(stop_reason="cancelled")


def _wire_field(model: Any, wire: str) -> Any:
    """The field of a model that has the wire name ``wire`` (None when it has none)."""
    for name, info in type(model).model_fields.items():
        if (info.alias or name) == wire:
            return getattr(model, name)
    return None
