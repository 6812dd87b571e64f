"""The connection an :class:`~acplink.AgentApp` is served on, in whichever version ``initialize`` picks.

The app is written once, against acplink's vocabulary (the v1 models, its hooks). Step 0, the
version, is :class:`~acplink.connection.agent_side.AgentSideConnection`'s; then everything that
differs is asked of the protocol object in use:

- a version whose models are the vocabulary (no ``agent_codec``) is served by the app's router
  as it is: no translation, v1's path unchanged;
- a version with an agent codec (:mod:`acplink.protocol.agent_codec`) is served through it: the
  codec routes each wire request to an app hook (its params in the app's shape) or to one of
  the services below, and rewrites what the app sends;
- a version whose prompt is answered with a receipt (``Protocol.turns``) gets the prompt
  lifecycle of :mod:`._turns`.

The per-version path is chosen once, when the version is: nothing on v1's path tests it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

import orjson

from ..connection.agent_side import AgentSideConnection
from ..connection.base import Router
from ..connection.peer import DONE
from ..errors import (
    CapabilityError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    ResourceNotFound,
    StoreError,
    UsageError,
)
from ..protocol import Protocol
from ..protocol.rules import session_refusal
from ..transports.batch import BatchingTransport
from .history import KEPT
from .mcp import McpCalls, check_declared
from .store import LOCAL_PRINCIPAL, HistoryStore, current_principal

if TYPE_CHECKING:
    from ..protocol.agent_codec import AgentCodec, Route
    from ._turns import Lifecycle
    from .app import AgentBase
    from .mcp_http import McpHttpBridge

__all__ = ["AppConnection", "DualAgentConnection"]

log = logging.getLogger("acplink.agent")


def _vocabulary(protocol: Protocol) -> Protocol:
    """The protocol the app's handlers are written against when ``protocol`` is on the wire."""
    codec = protocol.agent_codec
    return codec.app_protocol if codec is not None else protocol


class AppConnection(AgentSideConnection):
    """Serves ``app`` in the ``versions`` it lists (see the module)."""

    def __init__(self, transport: Any, app: AgentBase, *, versions: Collection[int], **kw: Any) -> None:
        self.app = app
        #: whom this connection serves: the local principal, or (a remote connection) the
        #: principal of the server token it came with (``$ACPLINK_PRINCIPAL`` for an agent
        #: process a server starts per connection). Its sessions are its own: another
        #: principal's are answered as unknown ids (docs/sessions.md)
        self.principal: str = kw.pop("principal", None) or os.environ.get("ACPLINK_PRINCIPAL") or LOCAL_PRINCIPAL
        #: the receipt lifecycle (versions whose prompt is answered with a receipt)
        self.lifecycle: Lifecycle | None = None
        #: a prompt handler may return a ``_``-prefixed stop reason (versions whose turn ends by
        #: a state update, where stop reasons are open)
        self.custom_stop_reasons = False
        ref: list[AgentSideConnection] = [self]
        #: the store that journals what this connection's sessions send (an app with a
        #: HistoryStore), made durable before the transport writes (``before_write`` of a
        #: batching transport: stdio, pipes, in memory, an app served in process), or at once
        #: on a transport without that hook
        store = app.sessions
        self.journal: HistoryStore | None = store if isinstance(store, HistoryStore) else None
        self._journal_at_once = True
        self._store_failure_logged = False
        #: the sessions this connection opened: released from the history store when it closes
        #: (their records stay; another connection loads them again)
        self.opened: set[str] = set()
        if self.journal is not None:
            self.journal.attach()
        if self.journal is not None and isinstance(transport, BatchingTransport) and transport.before_write is None:
            transport.before_write = self._commit_journal
            self._journal_at_once = False
            group = self.journal.group_commit_bytes
            if group is not None and group > transport.flush_at:  # (fewer, larger commits)
                transport.flush_at = group
        #: the inner MCP requests this agent has in flight (``ctx.mcp``), by (serverId, requestId)
        self.mcp_calls = McpCalls()
        #: the loopback HTTP bridge to the sessions' ``acp`` servers (``ctx.mcp.http()``): one
        #: listener per connection, started on first use, closed with the connection
        self.mcp_http: McpHttpBridge | None = None
        self.mcp_http_lock = asyncio.Lock()
        super().__init__(transport, lambda p: app.router(ref, _vocabulary(p)), versions=versions, **kw)

    def vocabulary_of(self, protocol: Protocol) -> Protocol:
        return _vocabulary(protocol)

    # -- the principal's sessions ------------------------------------------------------------------

    async def handle_request(self, method: str, params: Any) -> bytes:
        sid = params.get("sessionId") if type(params) is dict else None
        if type(sid) is str and self._foreign(sid):  # (told what an unknown id is told)
            if method.endswith("/delete"):
                return b"{}"  # (deleting an unknown id succeeds, doing nothing)
            raise ResourceNotFound(session_refusal(sid, False) or f"Resource not found: session {sid}",
                                   {"sessionId": sid})
        token = current_principal.set(self.principal)
        try:
            return await super().handle_request(method, params)
        finally:
            current_principal.reset(token)

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        sid = params.get("sessionId") if type(params) is dict else getattr(params, "session_id", None)
        if type(sid) is str and self._foreign(sid):
            return DONE  # (another principal's session: as an unknown one, ignored)
        return super().handle_notification(method, params, typed)

    def _foreign(self, session_id: str) -> bool:
        """Whether ``session_id`` is a session of another principal than this connection's."""
        held = self.app.sessions.get(session_id)
        if held is not None:
            return held.principal != self.principal
        journal = self.journal
        if journal is None:
            return False
        try:
            owner = journal.principal_of(session_id)
        except StoreError as exc:  # (whose it is cannot be told: refused, as a prompt is)
            log.warning("%s", exc)
            raise InternalError(f"Internal error: the session store is unavailable "
                                f"({str(exc).rsplit(': ', 1)[-1]}); try again") from None
        return owner is not None and owner != self.principal

    def _mcp_notified(self, user: Callable[[Any], Awaitable[None]] | None) -> Callable[[Any], Awaitable[None]]:
        """The ``mcp/message`` notification handler: to the request it is for (``ctx.mcp``),
        then to the app's own handler, if it registered one."""
        calls = self.mcp_calls

        async def notified(params: Any) -> None:
            routed = calls.deliver(params)
            if routed is not None:
                await routed
            if user is not None:
                await user(params)

        return notified

    @property
    def codec(self) -> AgentCodec | None:
        return self.protocol.agent_codec  # type: ignore[no-any-return]

    def modes(self) -> list[dict[str, Any]]:
        return [m.to_wire() for m in self.app.modes]

    async def aclose(self) -> None:
        if self.mcp_http is not None:  # (first: what it has in flight needs the connection)
            bridge, self.mcp_http = self.mcp_http, None
            await bridge.aclose()
        if self.lifecycle is not None:
            await self.lifecycle.aclose()
        await super().aclose()
        journal = self.journal
        if journal is not None:
            self.journal = None  # (once: aclose may be called again)
            for sid in self.opened:
                journal.release(sid)
            self.opened.clear()
            journal.flush()
            journal.detach()

    # -- the version's path, chosen when the version is ------------------------------------------

    def _install(self, router: Router) -> Router:
        router = super()._install(router)
        protocol, vocab = self.protocol, self.vocabulary
        if vocab.has("mcp_message"):  # (the provider's notifications reach the request they are for)
            wire = vocab.wire("mcp_message")
            router.add_notification(wire, self._mcp_notified(router.notifications.get(wire)), replace=True)
        if self.journal is not None and protocol.agent_codec is None:
            self.notify_json = self._journal_notify_json  # type: ignore[method-assign]
            self._notify = self._journal_notify  # type: ignore[method-assign]
        if not protocol.turns.receipt:
            return router
        from ._turns import Lifecycle

        self.lifecycle = lifecycle = Lifecycle(self)
        self.custom_stop_reasons = True
        prompt = vocab.wire("prompt")
        handler = router.requests.get(prompt)
        if handler is not None:
            # the app's turn, tracked (and cancelled) as every turn
            self._run_turn = handler if not vocab.turns.receipt else self._wrap_prompt(handler)
            router.add_request(prompt, lifecycle.prompt_handler(self._run_turn), replace=True)
        cancel = vocab.wire("cancel")
        on_cancel = router.notifications.get(cancel)

        async def cancelled(params: Any) -> None:
            lifecycle.cancel(params.session_id)
            if on_cancel is not None:
                await on_cancel(params)

        router.add_notification(cancel, cancelled, replace=True)
        # (bound on this connection once: no test on the way of a version without them)
        if protocol.agent_codec is not None:
            self.notify_json = self._codec_notify_json  # type: ignore[method-assign]
            self._notify = self._codec_notify  # type: ignore[method-assign]
            self._call = self._codec_call  # type: ignore[method-assign]
            self.request_json = self._codec_request_json  # type: ignore[method-assign]
        else:
            self._call = self._waiting_call  # type: ignore[method-assign]
            self.request_json = self._waiting_request_json  # type: ignore[method-assign]
        return router

    # -- inbound through the codec ---------------------------------------------------------------

    async def serve_request(self, method: str, params: Any) -> bytes:
        codec = self.protocol.agent_codec
        if codec is None or method.startswith("_"):
            return await super().serve_request(method, params)
        p = params if isinstance(params, dict) else {}
        if self.protocol.is_(method, "initialize"):
            return orjson.dumps(self._initialize(codec, p))
        self._params(self.protocol.info(method, "request"), method, p)  # checked against the version's model
        route = codec.route(method, p)
        if route is None:
            raise MethodNotFound(f"Method not found: {method}", {"method": method})
        return orjson.dumps(await self._serve(codec, route, method, p))

    def serve_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        if self.protocol.agent_codec is None or method.startswith("_"):
            return super().serve_notification(method, params, typed)
        try:
            self._params(self.protocol.info(method, "notification"), method, params)
        except InvalidParams as exc:
            log.warning("ignored a %s notification: %s", method, exc.message)
            return DONE
        if self.protocol.is_(method, "mcp_message"):
            return self.mcp_calls.deliver(params) or DONE
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if self.protocol.is_(method, "cancel") and isinstance(sid, str) and self.lifecycle is not None:
            self.lifecycle.cancel(sid)
        return DONE

    def _initialize(self, codec: AgentCodec, params: dict[str, Any]) -> dict[str, Any]:
        app, models = self.app, self.vocabulary.models
        caps, info = codec.client_view(params)
        self.peer_capabilities = models.ClientCapabilities.model_validate(caps)
        self.client_info = models.Implementation.model_validate(info) if info is not None else None
        agent_info: dict[str, Any] = {"name": app.name, "version": app.version}
        if app.title is not None:
            agent_info["title"] = app.title
        auth = [m.to_wire() if hasattr(m, "to_wire") else m for m in app.auth_methods]
        body = codec.initialize_result(agent_info, app._capabilities_wire(self.vocabulary), app.hook_handlers(), auth)
        self.own_capabilities = codec.capabilities_of(body)
        self.protocol_version = self.protocol.version
        self.initialized = True
        return body

    async def _hook(self, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Call the app's handler of hook ``name`` (None when it has none) with ``params``
        checked against the vocabulary's model; its result as wire JSON."""
        vocab = self.vocabulary
        method = vocab.wire(name)
        handler = self.router.requests.get(method)
        if handler is None:
            return None
        info = vocab.info(method, "request")
        result = await handler(self._params(info, method, params))
        out = orjson.loads(self._result_json(info, method, result))
        return out if isinstance(out, dict) else {}

    def _setup(self, codec: AgentCodec, result: dict[str, Any], session_id: str) -> dict[str, Any]:
        sess = self.app.sessions.get(session_id)
        return codec.setup_result(result, self.modes(), sess.mode_id if sess else None)

    async def _serve(self, codec: AgentCodec, route: Route, method: str, wire: dict[str, Any]) -> Any:
        app, lifecycle = self.app, self.lifecycle
        action, params = route.action, route.params
        if action == "prompt":
            vocab = self.vocabulary
            run = getattr(self, "_run_turn", None)
            if lifecycle is None or run is None:
                raise MethodNotFound(f"Method not found: {method}", {"method": method})
            prompt = vocab.wire("prompt")
            return await lifecycle.prompt(self._params(vocab.info(prompt, "request"), prompt, params), run)
        if action == "hook":
            assert route.hook is not None
            res = await self._hook(route.hook, params)
            if route.result == "setup":
                if res is None:
                    raise MethodNotFound(f"Method not found: {method}", {"method": method})
                return {"sessionId": res["sessionId"], **self._setup(codec, res, res["sessionId"])}
            if route.result == "list":
                if res is None:  # the default: the sessions the app holds
                    cwd = params.get("cwd")
                    res = {"sessions": [{"sessionId": x.session_id, "cwd": x.cwd, "title": x.title,
                                         "updatedAt": x.updated_at}
                                        for x in app.sessions.values()
                                        if (cwd is None or x.cwd == cwd) and x.principal == self.principal]}
                return codec.list_result(res)
            if route.result == "same":
                if res is None:
                    raise MethodNotFound(f"Method not found: {method}", {"method": method})
                return res
            return {}
        if action == "resume":
            assert lifecycle is not None
            sid = params["sessionId"]
            check_declared(self, params.get("mcpServers"))
            res = await self._hook("resume_session", params)
            sess = app.get_session(sid)  # (the default: a session this process holds)
            sess.mcp_servers = list(params.get("mcpServers") or [])
            if codec.replay_requested(wire):
                await lifecycle.replay(sid, sess.messages)
            await lifecycle.snapshot(sid)
            return self._setup(codec, res or {}, sid)
        if action in ("close", "delete"):
            sid = params["sessionId"]
            if action == "delete" and "delete_session" not in app.hook_handlers():
                raise MethodNotFound(f"Method not found: {method}", {"method": method})
            if lifecycle is not None:
                await lifecycle.close(sid)
            if sid in app.sessions:
                await self._hook("close_session", {"sessionId": sid})
                app.sessions.pop(sid, None)
            if action == "delete":
                await self._hook("delete_session", {"sessionId": sid})
            return {}
        if action == "config":
            sess = app.get_session(params["sessionId"])
            hook, hook_params = codec.config_call(params, bool(app.modes))
            if await self._hook(hook, hook_params) is None:
                raise InvalidParams(f"unknown config option {params.get('configId')!r}")
            options = [o.to_wire() if hasattr(o, "to_wire") else o for o in app.current_config(sess)]
            return codec.config_result(options, self.modes(), sess.mode_id)
        if action == "login":
            if not app.auth_methods:
                raise MethodNotFound(f"Method not found: {method} (this agent offers no auth methods)",
                                     {"method": method})
            if await self._hook(route.hook or "authenticate", params) is None:
                raise MethodNotFound(f"Method not found: {method}", {"method": method})
            return {}
        if action == "cancel_entity":
            return await self._cancel_entity(params, route.key, route.label)
        raise UsageError(f"the agent codec of ACP v{self.protocol.version} routed {method} to an unknown "
                         f"action {action!r}")

    async def _cancel_entity(self, p: dict[str, Any], key: str, what: str) -> dict[str, Any]:
        """Cancel one entity of a session (a tool call, a terminal) by its cancel hook."""
        sid, eid = p.get("sessionId"), p.get(key)
        sess = self.app.sessions.get(sid) if isinstance(sid, str) else None
        hook: Callable[[], Any] | None = None
        if sess is not None and isinstance(eid, str):
            hook = sess.cancel_hooks.get(eid)
        if hook is None or sess is None or not isinstance(eid, str):
            raise InvalidParams(f"Invalid params: no cancellable {what} {eid!r} in this session", {key: eid})
        status = sess.tool_calls.get(eid)
        if status in ("completed", "failed", "cancelled"):
            raise InvalidParams(f"Invalid params: the {what} {eid!r} already ended ({status})", {key: eid})
        sess.cancel_hooks.pop(eid, None)
        result = hook()
        if asyncio.iscoroutine(result):
            await result
        return {}

    # -- outbound ------------------------------------------------------------------------------

    def opened_session(self, session_id: str) -> None:
        """This connection opened (created, loaded, resumed, forked) ``session_id``: it holds
        it in the store until it closes."""
        if self.journal is not None and session_id not in self.opened:
            self.opened.add(session_id)
            self.journal.retain(session_id)

    def journal_update(self, session_id: str, update: dict[str, Any], params_json: bytes | None = None) -> None:
        """Journal an update about to be sent (in the app's vocabulary), when it is history.
        A store that fails (its disk full, its file locked too long) does not stop the turn:
        the update is sent, and the failure logged (once per connection)."""
        journal = self.journal
        kind = update.get("sessionUpdate")
        if journal is None or kind not in KEPT:
            return
        try:
            if params_json is not None:
                journal.record_json(session_id, kind, params_json)
            else:
                journal.record(session_id, kind, update)
            if self._journal_at_once:
                journal.flush()
        except StoreError as exc:
            self._store_failed(exc)

    def _commit_journal(self) -> None:
        """Right before the transport writes: what was journaled is committed first."""
        journal = self.journal
        if journal is not None:
            try:
                journal.flush()
            except StoreError as exc:
                self._store_failed(exc)

    def _store_failed(self, exc: StoreError) -> None:
        if not self._store_failure_logged:
            self._store_failure_logged = True
            log.warning("%s (this connection's updates are sent, but not all are stored)", exc)

    async def _journal_notify_json(self, method: str, params_json: bytes) -> None:
        if self.vocabulary.is_(method, "session_update"):
            note = orjson.loads(params_json)
            self.journal_update(note["sessionId"], note["update"], params_json)
        await AgentSideConnection.notify_json(self, method, params_json)

    async def _journal_notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:
        if self.vocabulary.is_(method, "session_update"):
            info = self.vocabulary.info(method, "notification")
            await self._journal_notify_json(method, self._params_json(info, method, params, fields))
            return
        await AgentSideConnection._notify(self, method, params, fields)

    async def send_raw_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send a ``session/update`` already in the version's shape (e.g. display terminals)."""
        if self.lifecycle is None:
            raise CapabilityError(f"ACP v{self.protocol.version} updates are sent by the app as they are")
        await self.lifecycle.send(session_id, update)

    async def _codec_notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:
        info = self.vocabulary.info(method, "notification")
        await self._codec_notify_json(method, self._params_json(info, method, params, fields))

    async def _codec_notify_json(self, method: str, params_json: bytes) -> None:
        if not self.vocabulary.is_(method, "session_update") or self.lifecycle is None:
            raise CapabilityError(f"{method} does not exist in ACP v{self.protocol.version}")
        note = orjson.loads(params_json)
        await self.lifecycle.send_app_update(note["sessionId"], note["update"])

    async def _codec_call(self, method: str, params: Any, fields: dict[str, Any], *,
                          timeout: float | None = None) -> Any:
        info = self.vocabulary.info(method, "request")
        return await self._codec_request_json(method, self._params_json(info, method, params, fields), timeout=timeout)

    async def _codec_request_json(self, method: str, params_json: bytes, *, timeout: float | None = None) -> Any:
        codec, vocab = self.protocol.agent_codec, self.vocabulary
        why = codec.missing(method)
        if why is not None:
            raise CapabilityError(why)
        name = vocab.name_of(method, "request")
        params = codec.request_params(name, orjson.loads(params_json))
        wire = self.protocol.wire(name) if name is not None and self.protocol.has(name) else method
        assert self.lifecycle is not None
        async with self.lifecycle.awaiting_user(wire, params):
            raw = await self.peer.request(wire, orjson.dumps(params), timeout=timeout)
        return self._parse_result(vocab.info(method, "request"), raw)

    async def _waiting_call(self, method: str, params: Any, fields: dict[str, Any], *,
                            timeout: float | None = None) -> Any:
        assert self.lifecycle is not None
        async with self.lifecycle.awaiting_user(self.protocol.send_name(method), params if params is not None else fields):
            return await AgentSideConnection._call(self, method, params, fields, timeout=timeout)

    async def _waiting_request_json(self, method: str, params_json: bytes, *, timeout: float | None = None) -> Any:
        assert self.lifecycle is not None
        params = orjson.loads(params_json) if method in self.lifecycle.waiting else None
        async with self.lifecycle.awaiting_user(method, params):
            return await AgentSideConnection.request_json(self, method, params_json, timeout=timeout)


def DualAgentConnection(transport: Any, v1: Router | None, v2: Router | None, **kw: Any) -> AgentSideConnection:
    """Two implementations behind one connection (kept for compatibility): the same as
    ``AgentSideConnection(transport, {1: v1, 2: v2})``, each ``Router``'s handlers taking their
    version's typed params."""
    return AgentSideConnection(transport, {n: r for n, r in ((1, v1), (2, v2)) if r is not None}, **kw)
