"""The app's dispatcher for one protocol: its handler table, built once, bound per connection.

:class:`Dispatcher` turns what an app registered (hooks, methods of the table, extensions) into
one table per protocol version: wire method → a handler taking the connection and the typed
params. The built-in behaviour (the ``initialize`` answer, session creation, modes, config
options, models, the prompt's answer) is written once here, as methods. A connection gets a
:class:`~acplink.connection.base.Router` by binding the table to it (:meth:`Dispatcher.bind`:
one ``partial`` per method, no closures rebuilt); the app keeps the dispatcher until a handler
is registered (``AgentBase.router``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import orjson

from ..connection.base import RawJSON, Router
from ..errors import InternalError, InvalidParams, StoreError, UsageError
from ..protocol import Protocol, negotiate
from ..schema import _generated as s
from .context import AgentSession, Context, PromptContext
from .mcp import check_declared
from .store import HistoryStore

if TYPE_CHECKING:
    from ..connection.agent_side import AgentSideConnection
    from .app import AgentBase

__all__ = ["Dispatcher"]

log = logging.getLogger("acplink.agent")

#: a connection, filled in once it exists (the router is built before the connection is)
Ref = list["AgentSideConnection"]
Bound = Callable[[Ref, Any], Awaitable[Any]]


class Dispatcher:
    """The handler table of ``app`` for ``protocol`` (see the module)."""

    def __init__(self, app: AgentBase, protocol: Protocol, generation: int) -> None:
        self.app = app
        self.protocol = protocol
        #: the app's registrations this table was built from (``AgentBase._generation``)
        self.generation = generation
        self.requests: dict[str, Bound] = {}
        self.notifications: dict[str, Bound] = {}
        self._build()

    def bind(self, ref: Ref) -> Router:
        """The router of one connection (``ref[0]``, once it exists)."""
        r = Router()
        r.requests = {m: partial(h, ref) for m, h in self.requests.items()}
        r.notifications = {m: partial(h, ref) for m, h in self.notifications.items()}
        return r

    # -- building --------------------------------------------------------------------------------

    def _add(self, method: str, kind: str, fn: Bound) -> None:
        table = self.requests if kind == "request" else self.notifications
        table[method] = fn

    def _build(self) -> None:
        from .app import HOOKS

        app, protocol = self.app, self.protocol
        builtin: dict[str, Bound] = {"initialize": self.initialize, "new_session": self.new_session}
        if "prompt" in app.handlers:
            builtin["prompt"] = self.prompt
        if app.modes or "set_mode" in app.handlers:
            builtin["set_mode"] = self.set_mode
        if app.config_options or "set_config_option" in app.handlers:
            builtin["set_config_option"] = self.set_config_option
        if (app.models and app.legacy_models) or "set_model" in app.handlers:
            builtin["set_model"] = self.set_model
        handlers = app.hook_handlers()
        for hook in HOOKS:
            if not protocol.has(hook):
                continue
            method, kind = protocol.names[hook]
            fn = builtin.get(hook)
            if fn is None:
                h = handlers.get(hook)
                if h is None:
                    continue
                fn = self._plain(h, hook)
            self._add(method, kind, fn)
        for (method, kind), h in app.methods.items():
            if protocol.info(method, kind) is not None:  # (else a method of another version the app serves)
                self._add(method, kind, self._plain(h, method))
        for (method, kind), h in app.extensions.items():
            self._add(method, kind, self._plain(h, ""))

    def _plain(self, h: Callable[..., Awaitable[Any]], hook: str) -> Bound:
        """A handler of the app called with its :class:`Context` (no built-in behaviour)."""
        app = self.app
        forget = hook in ("close_session", "delete_session")
        closing = hook == "close_session"
        #: a session opened again: its MCP servers are the ones declared now
        redeclares = hook in ("load_session", "resume_session")
        declares = redeclares or hook == "fork_session"

        async def call(ref: Ref, p: Any) -> Any:
            sid = getattr(p, "session_id", None)
            if declares:
                check_declared(ref[0], p.mcp_servers)
            if closing and isinstance(sid, str):
                await _end_turn(ref[0], sid)
            sess = app.sessions.get(sid) if isinstance(sid, str) else None
            res = await h(Context(app, ref[0], p, sess))
            if forget and isinstance(sid, str):
                app.sessions.pop(sid, None)  # a closed or deleted session frees its slot
            if redeclares and isinstance(sid, str) and (opened := app.sessions.get(sid)) is not None:
                opened.mcp_servers = list(p.mcp_servers or [])
            elif hook == "fork_session":  # (the new session: the servers its request declared)
                new_id = res.get("sessionId") if isinstance(res, dict) else getattr(res, "session_id", None)
                forked = app.sessions.get(new_id) if isinstance(new_id, str) else None
                if forked is not None and not forked.mcp_servers:
                    forked.mcp_servers = list(p.mcp_servers or [])
            return res

        return call

    # -- the built-in behaviour ------------------------------------------------------------------

    async def _hook(self, hook: str, ctx: Context[Any]) -> Any:
        """The app's ``hook`` with ``ctx`` (None when it has none or it answered None)."""
        h = self.app.handlers.get(hook)
        return await h(ctx) if h is not None else None

    async def initialize(self, ref: Ref, p: s.InitializeRequest) -> Any:
        app = self.app
        res = await self._hook("initialize", Context(app, ref[0], p))
        if res is not None:
            return res
        return app.initialize_json(version=negotiate(p.protocol_version, app.protocols))

    async def new_session(self, ref: Ref, p: s.NewSessionRequest) -> Any:
        app = self.app
        check_declared(ref[0], p.mcp_servers)
        sess = app.create_session(p.cwd, mcp_servers=p.mcp_servers,
                                  additional_directories=p.additional_directories or [])
        _opened(ref[0], sess.session_id)
        res = await self._hook("new_session", Context(app, ref[0], p, sess))
        if res is not None:
            return res
        return s.NewSessionResponse(session_id=sess.session_id, **app.session_setup(sess))

    async def prompt(self, ref: Ref, p: s.PromptRequest) -> Any:
        app = self.app
        h = app.handlers["prompt"]
        sess = app.get_session(p.session_id)
        c = ref[0]
        ctx = PromptContext(app, c, p, sess, c.turns.get(p.session_id))
        store = app.sessions if isinstance(app.sessions, HistoryStore) else None
        if store is not None:  # the turn is journaled: the prompt, then what it sends, then its end
            try:
                store.begin_turn(p.session_id, [cast("dict[str, Any]", b.to_wire() if hasattr(b, "to_wire") else b)
                                                for b in p.prompt])
            except StoreError as exc:  # (the client is told why, not where: the file is the agent's)
                log.warning("%s", exc)
                raise InternalError(f"Internal error: the session store cannot record this turn "
                                    f"({str(exc).rsplit(': ', 1)[-1]}); try again") from None
        reason = "error"
        try:
            res = await h(ctx)
            reason = "cancelled" if ctx.cancelled else _stop_reason(res)
        except asyncio.CancelledError:
            reason = "cancelled"
            raise
        finally:
            await ctx._finish()
            if store is not None and p.session_id in store:
                store.end_turn(p.session_id, reason)
        if res is None:
            return s.PromptResponse(stop_reason="end_turn")
        if isinstance(res, str):
            if res.startswith("_") and getattr(c, "custom_stop_reasons", False):
                return RawJSON(orjson.dumps({"stopReason": res}))  # (receipt versions: stop reasons are open)
            return s.PromptResponse(stop_reason=cast("s.StopReason", res))  # (checked by the model)
        if isinstance(res, s.PromptResponse):
            return res
        raise UsageError(f"the prompt handler returned {type(res).__name__}; "
                         "return None, a stop reason string or a PromptResponse")

    async def _session_hook(self, hook: str, ref: Ref, p: Any) -> tuple[AgentSession, bool, Any]:
        """The session ``p`` names, whether the app has ``hook`` (then the built-in checks are
        its own), and its answer (None: the built-in behaviour goes on)."""
        app = self.app
        sess = app.get_session(p.session_id)
        if hook not in app.handlers:
            return sess, False, None
        return sess, True, await self._hook(hook, Context(app, ref[0], p, sess))

    async def set_mode(self, ref: Ref, p: s.SetSessionModeRequest) -> Any:
        app = self.app
        sess, own, res = await self._session_hook("set_mode", ref, p)
        if res is not None:
            return res
        if not own and app.modes and p.mode_id not in {m.id for m in app.modes}:
            raise InvalidParams(f"unknown mode {p.mode_id!r}")
        sess.mode_id = p.mode_id
        _save(app, sess)
        return s.SetSessionModeResponse()

    async def set_config_option(self, ref: Ref, p: Any) -> Any:
        app = self.app
        sess, own, res = await self._session_hook("set_config_option", ref, p)
        if res is not None:
            return res
        if not own:
            opt = next((o for o in app.config_options if o.id == p.config_id), None)
            if opt is None:
                raise InvalidParams(f"unknown config option {p.config_id!r}")
            values = _select_values(opt)
            if values is not None and p.value not in values:
                raise InvalidParams(f"invalid value {p.value!r} for config option {p.config_id!r}")
        sess.config[p.config_id] = p.value
        if p.config_id == app.model_option_id:
            sess.model_id = p.value
        _save(app, sess)
        return s.SetSessionConfigOptionResponse(config_options=app.current_config(sess))

    async def set_model(self, ref: Ref, p: s.SetSessionModelRequest) -> Any:
        app = self.app
        sess, own, res = await self._session_hook("set_model", ref, p)
        if res is not None:
            return res
        if not own and app.models and p.model_id not in {m.model_id for m in app.models}:
            raise InvalidParams(f"unknown model {p.model_id!r}")
        sess.model_id = p.model_id
        if app.model_option_id is not None:
            sess.config[app.model_option_id] = p.model_id
        _save(app, sess)
        return s.SetSessionModelResponse()


def _opened(conn: AgentSideConnection, session_id: str) -> None:
    """A session this connection opened (released from a history store when it closes)."""
    opened = getattr(conn, "opened_session", None)
    if opened is not None:
        opened(session_id)


def _save(app: AgentBase, sess: AgentSession) -> None:
    """A session's metadata changed: stored, when the app's store keeps sessions."""
    if isinstance(app.sessions, HistoryStore):
        app.sessions.save(sess)


def _stop_reason(res: Any) -> str:
    """The stop reason a prompt handler's result stands for."""
    if res is None:
        return "end_turn"
    if isinstance(res, str):
        return res
    reason = getattr(res, "stop_reason", None)
    return str(reason) if reason is not None else "end_turn"


def _select_values(opt: Any) -> set[Any] | None:
    options = getattr(opt, "options", None)
    if options is None:
        return None
    values: set[Any] = set()
    for o in options:
        if hasattr(o, "value"):
            values.add(o.value)
        for sub in getattr(o, "options", []) or []:
            values.add(sub.value)
    return values


async def _end_turn(conn: AgentSideConnection, session_id: str) -> None:
    """``session/close`` during a running prompt: the turn is cancelled (as by
    ``session/cancel``, forced after the grace) and has ended, answered ``cancelled``, before
    the app's close handler runs."""
    turn = conn.turns.get(session_id)
    if turn is not None:
        conn.cancel_turn(session_id)
        await asyncio.wait({turn.task})
