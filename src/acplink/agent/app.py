"""The agent-side application: register handlers (decorators or a subclass), serve them.

    app = AgentApp("echo")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"You said: {ctx.text}")

    run_agent(app)

Capabilities are advertised from what is registered: registering ``load_session`` advertises
``loadSession``, ``list_sessions`` advertises ``sessionCapabilities.list``, and so on.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar, cast

import orjson

from ..connection.agent_side import PROTOCOL_VERSION, AgentSideConnection
from ..connection.base import RawJSON, Router
from ..errors import InternalError, InvalidParams, ResourceNotFound, UsageError
from ..schema import _generated as s
from .context import AgentSession, Context, PromptContext

__all__ = ["HOOKS", "Agent", "AgentApp", "AgentBase"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

#: decorator / method name → (wire method, kind). One hook per agent-side method.
HOOKS: dict[str, tuple[str, str]] = {
    "initialize": ("initialize", "request"),
    "authenticate": ("authenticate", "request"),
    "logout": ("logout", "request"),
    "new_session": ("session/new", "request"),
    "load_session": ("session/load", "request"),
    "list_sessions": ("session/list", "request"),
    "resume_session": ("session/resume", "request"),
    "close_session": ("session/close", "request"),
    "delete_session": ("session/delete", "request"),
    "fork_session": ("session/fork", "request"),
    "archive_session": ("session/archive", "request"),
    "unarchive_session": ("session/unarchive", "request"),
    "session_status": ("session/status", "request"),
    "set_title": ("session/set_title", "request"),
    "set_mode": ("session/set_mode", "request"),
    "set_config_option": ("session/set_config_option", "request"),
    "set_model": ("session/set_model", "request"),
    "prompt": ("session/prompt", "request"),
    "cancel": ("session/cancel", "notification"),
}

#: hooks whose registration advertises a session capability
_SESSION_CAPS = {
    "list_sessions": "list", "resume_session": "resume", "close_session": "close",
    "delete_session": "delete", "fork_session": "fork", "archive_session": "archive",
    "session_status": "status", "set_title": "title",
}


class AgentBase:
    """The machinery shared by both styles (:class:`AgentApp`, :class:`Agent`): handlers,
    sessions, capabilities, and the router of each connection. Each handler takes one
    :class:`Context` (a :class:`PromptContext` for ``prompt``) whose ``params`` is the typed
    request."""

    def __init__(
        self,
        name: str = "acplink-agent",
        version: str = "0.1.0",
        *,
        title: str | None = None,
        prompt_capabilities: s.PromptCapabilities | None = None,
        auth_methods: Sequence[Any] = (),
        modes: Sequence[s.SessionMode] = (),
        default_mode: str | None = None,
        config_options: Sequence[Any] = (),
        models: Sequence[s.ModelInfo] = (),
        default_model: str | None = None,
        legacy_models: bool = False,
        cancel_grace: float = 2.0,
        max_sessions: int = 1000,
        protocols: Collection[int] = (1,),
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        #: None: the default (embedded context accepted), answered without building a model
        self.prompt_capabilities = prompt_capabilities
        self.auth_methods = list(auth_methods)
        self.modes = list(modes)
        self.default_mode = default_mode or (self.modes[0].id if self.modes else None)
        self.config_options = list(config_options)
        self.models = list(models)
        self.default_model = default_model or (self.models[0].model_id if self.models else None)
        #: also offer the models the schema-0.10.3 way (``models`` in session-setup results,
        #: ``session/set_model``); by default they are only a config option of category ``model``
        self.legacy_models = legacy_models
        #: the id of the config option that chooses the model (``sess.model_id`` follows it)
        self.model_option_id = self._add_model_option()
        self.cancel_grace = cancel_grace
        #: most sessions held at once (``self.sessions``); closed and deleted sessions free their slot
        self.max_sessions = max_sessions
        #: the ACP versions served, ``initialize`` choosing one per connection (``(1, 2)``: v1
        #: and the v2 draft; see docs/v2.md)
        self.protocols = tuple(protocols)
        self.handlers: dict[str, Callable[..., Awaitable[Any]]] = {}
        self.extensions: dict[tuple[str, str], Callable[..., Awaitable[Any]]] = {}
        self.sessions: dict[str, AgentSession] = {}
        for hook in HOOKS:  # subclass style: overridden methods are handlers
            method = getattr(type(self), hook, None)
            if method is not None and method is not getattr(AgentApp, hook, None):
                self.handlers[hook] = getattr(self, hook)

    def _add_model_option(self) -> str | None:
        """Offer ``models`` as a config option of category ``model`` (first), unless the app
        declares one itself."""
        own = next((o for o in self.config_options if getattr(o, "category", None) == "model"), None)
        if own is not None or not self.models:
            return own.id if own is not None else None
        option = s.SessionConfigOptionSelect(
            id="model", name="Model", category="model", current_value=self.default_model or "",
            options=[s.SessionConfigSelectOption(value=m.model_id, name=m.name, description=m.description)
                     for m in self.models])
        self.config_options.insert(0, option)
        return option.id

    # -- registration ----------------------------------------------------------------------------

    def on(self, hook: str) -> Callable[[F], F]:
        """Register the handler of ``hook`` (a key of :data:`HOOKS`)."""
        if hook not in HOOKS:
            raise UsageError(f"unknown agent hook {hook!r}; known: {', '.join(sorted(HOOKS))}")

        def register(fn: F) -> F:
            if hook in self.handlers:
                raise UsageError(f"a handler for {hook!r} ({HOOKS[hook][0]}) is already registered")
            if not _is_async(fn):
                raise UsageError(f"the {hook!r} handler must be an async function")
            self.handlers[hook] = fn
            return fn

        return register

    def ext_request(self, method: str) -> Callable[[F], F]:
        """Register a handler for a ``_``-prefixed extension request (raw params in, JSON out)."""
        return self._ext(method, "request")

    def ext_notification(self, method: str) -> Callable[[F], F]:
        """Register a handler for a ``_``-prefixed extension notification."""
        return self._ext(method, "notification")

    def _ext(self, method: str, kind: str) -> Callable[[F], F]:
        if not method.startswith("_"):
            raise UsageError(f"extension methods must start with '_' (got {method!r})")

        def register(fn: F) -> F:
            if (method, kind) in self.extensions:
                raise UsageError(f"a handler for extension {kind} {method!r} is already registered")
            self.extensions[(method, kind)] = fn
            return fn

        return register

    # -- capabilities ---------------------------------------------------------------------------

    def _capabilities_wire(self) -> dict[str, Any]:
        """What this agent advertises, derived from the registered hooks (wire form)."""
        caps = self.prompt_capabilities
        return {
            "loadSession": "load_session" in self.handlers,
            "promptCapabilities": caps.to_wire() if caps is not None else {"embeddedContext": True},
            "sessionCapabilities": {cap: {} for hook, cap in _SESSION_CAPS.items() if hook in self.handlers},
        }

    def _initialize_wire(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        agent_info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            agent_info["title"] = self.title
        body = {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": self._capabilities_wire(),
            "agentInfo": agent_info,
            "authMethods": [m.to_wire() if hasattr(m, "to_wire") else m for m in self.auth_methods],
        }
        if meta is not None:
            body["_meta"] = meta
        return body

    def agent_capabilities(self) -> s.AgentCapabilities:
        """The capabilities this agent advertises, as a model."""
        return s.AgentCapabilities.model_validate(self._capabilities_wire())

    def initialize_response(self, *, meta: dict[str, Any] | None = None) -> s.InitializeResponse:
        """The built-in ``initialize`` answer as a model (to adjust in an ``initialize`` hook)."""
        return s.InitializeResponse.model_validate(self._initialize_wire(meta))

    def initialize_json(self, *, meta: dict[str, Any] | None = None) -> RawJSON:
        """The built-in ``initialize`` answer as wire JSON, built without models, so that
        answering the first message of a freshly spawned agent costs no model building. An
        ``initialize`` hook may return it (e.g. with its own ``_meta``). The protocol version is
        always acplink's (1): the spec has the agent answer with the version it supports."""
        return RawJSON(orjson.dumps(self._initialize_wire(meta)))

    # -- sessions --------------------------------------------------------------------------------

    def create_session(self, cwd: str, *, session_id: str | None = None, mcp_servers: Sequence[Any] = (),
                       additional_directories: Sequence[str] = ()) -> AgentSession:
        sid = session_id or f"sess_{uuid.uuid4().hex}"
        if sid not in self.sessions and len(self.sessions) >= self.max_sessions:
            raise InternalError(f"too many sessions (limit {self.max_sessions}); close or delete one first",
                                {"limit": self.max_sessions})
        sess = AgentSession(sid, cwd, list(mcp_servers), list(additional_directories),
                            mode_id=self.default_mode, model_id=self.default_model)
        for opt in self.config_options:
            sess.config[opt.id] = opt.current_value
        self.sessions[sid] = sess
        return sess

    def get_session(self, session_id: str) -> AgentSession:
        sess = self.sessions.get(session_id)
        if sess is None:
            raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
        return sess

    def session_setup(self, sess: AgentSession) -> dict[str, Any]:
        """The modes / config options / legacy models fields of a session-setup response."""
        out: dict[str, Any] = {}
        if self.modes:
            out["modes"] = s.SessionModeState(current_mode_id=sess.mode_id or self.modes[0].id,
                                              available_modes=self.modes)
        if self.config_options:
            out["config_options"] = self.current_config(sess)
        if self.models and self.legacy_models:
            out["models"] = s.SessionModelState(current_model_id=sess.model_id or self.models[0].model_id,
                                                available_models=self.models)
        return out

    def current_config(self, sess: AgentSession) -> list[Any]:
        return [opt.model_copy(update={"current_value": sess.config.get(opt.id, opt.current_value)})
                for opt in self.config_options]

    # -- wiring ----------------------------------------------------------------------------------

    def router(self, conn_ref: list[AgentSideConnection]) -> Router:
        """Build the router of one connection (``conn_ref`` is filled once it exists)."""
        r = Router()

        def conn() -> AgentSideConnection:
            return conn_ref[0]

        def user(hook: str) -> Callable[..., Awaitable[Any]] | None:
            return self.handlers.get(hook)

        async def initialize(p: s.InitializeRequest) -> Any:
            h = user("initialize")
            if h is not None:
                res = await h(Context(self, conn(), p))
                if res is not None:
                    return res
            return self.initialize_json()

        async def new_session(p: s.NewSessionRequest) -> Any:
            sess = self.create_session(p.cwd, mcp_servers=p.mcp_servers,
                                       additional_directories=p.additional_directories or [])
            h = user("new_session")
            if h is not None:
                res = await h(Context(self, conn(), p, sess))
                if res is not None:
                    return res
            return s.NewSessionResponse(session_id=sess.session_id, **self.session_setup(sess))

        async def prompt(p: s.PromptRequest) -> Any:
            h = user("prompt")
            assert h is not None
            sess = self.get_session(p.session_id)
            c = conn()
            ctx = PromptContext(self, c, p, sess, c.turns.get(p.session_id))
            try:
                res = await h(ctx)
            finally:
                await ctx._finish()
            if res is None:
                return s.PromptResponse(stop_reason="end_turn")
            if isinstance(res, str):
                if res.startswith("_") and getattr(c, "custom_stop_reasons", False):
                    return RawJSON(orjson.dumps({"stopReason": res}))  # (v2: stop reasons are open)
                return s.PromptResponse(stop_reason=cast("s.StopReason", res))  # (checked by the model)
            if isinstance(res, s.PromptResponse):
                return res
            raise UsageError(f"the prompt handler returned {type(res).__name__}; "
                             "return None, a stop reason string or a PromptResponse")

        async def set_mode(p: s.SetSessionModeRequest) -> Any:
            sess = self.get_session(p.session_id)
            h = user("set_mode")
            if h is not None:
                res = await h(Context(self, conn(), p, sess))
                if res is not None:
                    return res
            elif self.modes and p.mode_id not in {m.id for m in self.modes}:
                raise InvalidParams(f"unknown mode {p.mode_id!r}")
            sess.mode_id = p.mode_id
            return s.SetSessionModeResponse()

        async def set_config_option(p: Any) -> Any:
            sess = self.get_session(p.session_id)
            h = user("set_config_option")
            if h is not None:
                res = await h(Context(self, conn(), p, sess))
                if res is not None:
                    return res
            else:
                opt = next((o for o in self.config_options if o.id == p.config_id), None)
                if opt is None:
                    raise InvalidParams(f"unknown config option {p.config_id!r}")
                values = _select_values(opt)
                if values is not None and p.value not in values:
                    raise InvalidParams(f"invalid value {p.value!r} for config option {p.config_id!r}")
            sess.config[p.config_id] = p.value
            if p.config_id == self.model_option_id:
                sess.model_id = p.value
            return s.SetSessionConfigOptionResponse(config_options=self.current_config(sess))

        async def set_model(p: s.SetSessionModelRequest) -> Any:
            sess = self.get_session(p.session_id)
            h = user("set_model")
            if h is not None:
                res = await h(Context(self, conn(), p, sess))
                if res is not None:
                    return res
            elif self.models and p.model_id not in {m.model_id for m in self.models}:
                raise InvalidParams(f"unknown model {p.model_id!r}")
            sess.model_id = p.model_id
            if self.model_option_id is not None:
                sess.config[self.model_option_id] = p.model_id
            return s.SetSessionModelResponse()

        builtin: dict[str, Callable[[Any], Awaitable[Any]]] = {"initialize": initialize, "new_session": new_session}
        if "prompt" in self.handlers:
            builtin["prompt"] = prompt
        if self.modes or "set_mode" in self.handlers:
            builtin["set_mode"] = set_mode
        if self.config_options or "set_config_option" in self.handlers:
            builtin["set_config_option"] = set_config_option
        if (self.models and self.legacy_models) or "set_model" in self.handlers:
            builtin["set_model"] = set_model

        for hook, (method, kind) in HOOKS.items():
            fn = builtin.get(hook)
            if fn is None:
                h = self.handlers.get(hook)
                if h is None:
                    continue
                fn = self._plain(h, conn, hook)
            if kind == "request":
                r.add_request(method, fn)
            else:
                r.add_notification(method, fn)
        for (method, kind), h in self.extensions.items():
            ext = self._plain(h, conn, "")
            if kind == "request":
                r.add_request(method, ext)
            else:
                r.add_notification(method, ext)
        return r

    def _plain(self, h: Callable[..., Awaitable[Any]], conn: Callable[[], AgentSideConnection],
               hook: str) -> Callable[[Any], Awaitable[Any]]:
        forget = hook in ("close_session", "delete_session")

        async def call(p: Any) -> Any:
            sid = getattr(p, "session_id", None)
            sess = self.sessions.get(sid) if isinstance(sid, str) else None
            res = await h(Context(self, conn(), p, sess))
            if forget and isinstance(sid, str):
                self.sessions.pop(sid, None)  # a closed or deleted session frees its slot
            return res

        return call

    def connection(self, transport: Any, *, protocols: Collection[int] | None = None,
                   **kw: Any) -> AgentSideConnection:
        """A connection serving this app over ``transport`` (not started). ``protocols``: the
        ACP versions served (default: the app's), ``initialize`` choosing one."""
        protocols = self.protocols if protocols is None else tuple(protocols)
        ref: list[AgentSideConnection] = []
        kw.setdefault("cancel_grace", self.cancel_grace)
        if 2 in protocols:
            from ._v2_conn import VersionedAgentConnection

            conn: AgentSideConnection = VersionedAgentConnection(transport, self.router(ref), app=self,
                                                                 versions=protocols, **kw)
        else:
            conn = AgentSideConnection(transport, self.router(ref), **kw)
        ref.append(conn)
        return conn


def _is_async(fn: object) -> bool:
    return asyncio.iscoroutinefunction(fn)


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


class AgentApp(AgentBase):
    """Decorator style: ``@app.prompt``, ``@app.new_session``, ... (one per hook)."""

    def initialize(self, fn: F) -> F:
        return self.on("initialize")(fn)

    def authenticate(self, fn: F) -> F:
        return self.on("authenticate")(fn)

    def logout(self, fn: F) -> F:
        return self.on("logout")(fn)

    def new_session(self, fn: F) -> F:
        return self.on("new_session")(fn)

    def load_session(self, fn: F) -> F:
        return self.on("load_session")(fn)

    def list_sessions(self, fn: F) -> F:
        return self.on("list_sessions")(fn)

    def resume_session(self, fn: F) -> F:
        return self.on("resume_session")(fn)

    def close_session(self, fn: F) -> F:
        return self.on("close_session")(fn)

    def delete_session(self, fn: F) -> F:
        return self.on("delete_session")(fn)

    def fork_session(self, fn: F) -> F:
        return self.on("fork_session")(fn)

    def archive_session(self, fn: F) -> F:
        return self.on("archive_session")(fn)

    def unarchive_session(self, fn: F) -> F:
        return self.on("unarchive_session")(fn)

    def session_status(self, fn: F) -> F:
        return self.on("session_status")(fn)

    def set_title(self, fn: F) -> F:
        return self.on("set_title")(fn)

    def set_mode(self, fn: F) -> F:
        return self.on("set_mode")(fn)

    def set_config_option(self, fn: F) -> F:
        return self.on("set_config_option")(fn)

    def set_model(self, fn: F) -> F:
        return self.on("set_model")(fn)

    def prompt(self, fn: F) -> F:
        return self.on("prompt")(fn)

    def cancel(self, fn: F) -> F:
        return self.on("cancel")(fn)


class Agent(AgentBase):
    """Subclass style: override the hooks you implement (``prompt``, ``new_session``, ...).

        class Echo(Agent):
            async def prompt(self, ctx: PromptContext) -> None:
                await ctx.send_text(ctx.text)
    """
