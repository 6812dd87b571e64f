"""The agent-side application: register handlers (decorators or a subclass), serve them.

    app = AgentApp("echo")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"You said: {ctx.text}")

    run_agent(app)

Capabilities are advertised from what is registered: registering ``load_session`` advertises
``loadSession``, ``list_sessions`` advertises ``sessionCapabilities.list``, and so on.

``app.on(name)`` is the one registration path: ``name`` is a hook name (a key of
:data:`HOOKS`) or any agent-side wire method of the protocol's method table, best spelt with its
constant (``app.on(PROVIDERS_LIST)``, :mod:`acplink.methods`), which types the handler; the typed
decorators (``@app.prompt``, ...) are sugar over it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

import orjson

from ..connection.agent_side import AgentSideConnection
from ..connection.base import RawJSON, Router
from ..errors import InternalError, ResourceNotFound, UsageError
from ..protocol import PROTOCOL_VERSION, Protocol, get_protocol, known_versions
from ..protocol.rules import session_refusal
from ..schema import _generated as s
from ._on import AgentOn
from .context import AgentSession
from .store import MemoryStore, SessionStore, current_principal

__all__ = ["HOOKS", "Agent", "AgentApp", "AgentBase"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

#: the hooks of the high-level API, in registration order (acplink's names of agent methods)
_HOOK_NAMES = (
    "initialize", "authenticate", "logout", "new_session", "load_session", "list_sessions",
    "resume_session", "close_session", "delete_session", "fork_session", "archive_session",
    "unarchive_session", "session_status", "set_title", "set_mode", "set_config_option", "set_model",
    "prompt", "cancel",
)

#: the protocol the app's handlers are written against: acplink's vocabulary (its models are
#: ``acplink.schema``); a version with other models serves them through its agent codec
_VOCABULARY = get_protocol(PROTOCOL_VERSION)

#: decorator / method name → (wire method, kind) in acplink's vocabulary. One hook per agent-side
#: method (the protocol object of each version has its own mapping: ``Protocol.names``).
HOOKS: dict[str, tuple[str, str]] = {hook: _VOCABULARY.names[hook] for hook in _HOOK_NAMES}


class AgentBase(AgentOn):
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
        protocols: Sequence[int] = (PROTOCOL_VERSION,),
        store: SessionStore | None = None,
        mcp_over_acp: bool = True,
        mcp_http: bool = False,
    ) -> None:
        self.name = name
        #: advertise ``acp`` MCP servers (MCP-over-ACP): the caller (``ctx.mcp``) is built into
        #: every acplink agent, so it is on unless the app turns it off (then declarations of
        #: ``acp`` servers are refused, as every transport not advertised)
        self.mcp_over_acp = mcp_over_acp
        #: advertise ``http`` MCP servers: the app's own MCP client takes the session's ``http``
        #: declarations (``ctx.session.mcp_servers``); off by default (refused as not advertised)
        self.mcp_http = mcp_http
        #: the protocol versions this agent serves (``initialize`` answers the requested one
        #: when it is here, the latest otherwise)
        self.protocols = tuple(protocols)
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
        known = known_versions()
        for served in self.protocols:  # (the object of a version built on first use is built now)
            if served in known:
                get_protocol(served)
        self.handlers: dict[str, Callable[..., Awaitable[Any]]] = {}
        self.extensions: dict[tuple[str, str], Callable[..., Awaitable[Any]]] = {}
        #: handlers of wire methods without a hook (``app.on("providers/list")``): (method, kind)
        self.methods: dict[tuple[str, str], Callable[..., Awaitable[Any]]] = {}
        #: the sessions this app holds: the session-store seam (:mod:`.store`; a
        #: :class:`MemoryStore` unless ``store`` is given)
        self.sessions: SessionStore = store if store is not None else MemoryStore()
        #: the dispatcher of each protocol version (built on first use; registering a handler
        #: bumps ``_generation``, which rebuilds them)
        self._dispatchers: dict[int, Any] = {}
        self._generation = 0
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

    def _on(self, name: str) -> Callable[[F], F]:
        """``on(name)``: register a handler. ``name`` is a hook (a key of :data:`HOOKS`, e.g.
        ``"prompt"``) or any agent-side wire method of the method table (a constant of
        :mod:`acplink.methods`: ``PROVIDERS_LIST``, ``NES_SUGGEST``, ``DOCUMENT_DID_OPEN``, ...).
        The handler takes a :class:`Context` whose ``params`` is the typed params, and returns
        the typed result, a dict or None. ``on`` itself is generated (``._on``): one overload per
        method, which types the handler for type checkers."""
        hook = self._hook_of(name)
        key: Any = hook
        if hook is None:
            info = self._agent_method(name)
            key = (info.method, info.kind)
        label = f"{name!r}" if hook is None or hook == name else f"{name!r} ({hook!r})"

        def register(fn: F) -> F:
            if key in self.handlers or key in self.methods:
                raise UsageError(f"a handler for {label} is already registered")
            if not _is_async(fn):
                raise UsageError(f"the {label} handler must be an async function")
            if hook is not None:
                self.handlers[hook] = fn
            else:
                self.methods[key] = fn
            self._generation += 1
            return fn

        return register

    def _hook_of(self, name: str) -> str | None:
        """The hook ``name`` stands for: itself, or the hook of a wire method of a served version."""
        if name in HOOKS:
            return name
        for version in self.protocols:
            proto = get_protocol(version)
            for kind in ("request", "notification"):
                hook = proto.name_of(name, kind)
                if hook in HOOKS:
                    return hook
        return None

    def _agent_method(self, method: str) -> Any:
        for version in self.protocols:
            info = next((m for m in get_protocol(version).handled_by("agent") if m.method == method), None)
            if info is not None:
                return info
        raise UsageError(f"unknown agent hook {method!r} (nor an agent-side method of the method table); "
                         f"hooks: {', '.join(sorted(HOOKS))}")

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
            self._generation += 1
            return fn

        return register

    def hook_handlers(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """The handler of each hook: the app's, and, for an app with a history store, acplink's
        own session methods for the hooks it left (:mod:`._store_hooks`)."""
        from ._store_hooks import store_hooks

        return {**store_hooks(self), **self.handlers}

    def store_hook(self, hook: str) -> Callable[..., Awaitable[Any]]:
        """acplink's own handler of a session hook for this app's history store (to call from
        the app's handler of that hook, adding to it: e.g. announcing commands after a load)."""
        from ._store_hooks import store_hooks

        found = store_hooks(self).get(hook)
        if found is None:
            raise UsageError(f"no built-in {hook!r} handler: the app's store keeps no sessions "
                             "(AgentApp(store=SqliteStore(path)))" if not store_hooks(self) else
                             f"no built-in {hook!r} handler (built-in: {', '.join(sorted(store_hooks(self)))})")
        return found

    # -- capabilities ---------------------------------------------------------------------------

    def _capabilities_wire(self, protocol: Protocol = _VOCABULARY) -> dict[str, Any]:
        """What this agent advertises, derived from the registered hooks and methods (wire form)."""
        caps = self.prompt_capabilities
        out: dict[str, Any] = {
            "loadSession": False,
            "promptCapabilities": caps.to_wire() if caps is not None else {"embeddedContext": True},
            "sessionCapabilities": {},
        }
        acp = protocol.mcp_transports.get("acp")
        if self.mcp_over_acp and acp is not None:
            protocol.advertise(out, "agent:" + acp)
        if self.mcp_http:  # (v1's flag; a v2 connection's codec makes it session.mcp.http)
            out["mcpCapabilities"] = {**out.get("mcpCapabilities", {}), "http": True}
        registered = [protocol.names[h] for h in self.hook_handlers() if protocol.has(h)] + list(self.methods)
        for method, kind in registered:
            info = protocol.info(method, kind)
            if info is not None and info.capability and info.capability.startswith("agent:"):
                protocol.advertise(out, info.capability)
        return out

    def _initialize_wire(self, meta: dict[str, Any] | None, version: int | None = None) -> dict[str, Any]:
        agent_info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            agent_info["title"] = self.title
        version = version if version is not None else max(self.protocols)
        body = {
            "protocolVersion": version,
            "agentCapabilities": self._capabilities_wire(get_protocol(version)),
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

    def initialize_json(self, *, meta: dict[str, Any] | None = None, version: int | None = None) -> RawJSON:
        """The built-in ``initialize`` answer as wire JSON, built without models, so that
        answering the first message of a freshly spawned agent costs no model building. An
        ``initialize`` hook may return it (e.g. with its own ``_meta``). ``version``: the
        protocol version agreed on (default: the latest of ``protocols``)."""
        return RawJSON(orjson.dumps(self._initialize_wire(meta, version)))

    # -- sessions --------------------------------------------------------------------------------

    def create_session(self, cwd: str, *, session_id: str | None = None, mcp_servers: Sequence[Any] = (),
                       additional_directories: Sequence[str] = (), principal: str | None = None) -> AgentSession:
        """A new session held by the app (``principal``: whose; default: the principal of the
        connection whose request runs now, see docs/sessions.md)."""
        sid = session_id or f"sess_{uuid.uuid4().hex}"
        if sid not in self.sessions and len(self.sessions) >= self.max_sessions:
            raise InternalError(f"too many sessions (limit {self.max_sessions}); close or delete one first",
                                {"limit": self.max_sessions})
        sess = AgentSession(sid, cwd, list(mcp_servers), list(additional_directories),
                            mode_id=self.default_mode, model_id=self.default_model,
                            principal=principal or current_principal.get())
        for opt in self.config_options:
            sess.config[opt.id] = opt.current_value
        self.sessions[sid] = sess
        return sess

    def get_session(self, session_id: str) -> AgentSession:
        sess = self.sessions.get(session_id)
        if sess is None:  # (the rule the state machine judges too: protocol.rules.session_refusal)
            raise ResourceNotFound(session_refusal(session_id, False) or "", {"sessionId": session_id})
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

    def router(self, conn_ref: list[AgentSideConnection], protocol: Protocol = _VOCABULARY) -> Router:
        """The router of one connection for ``protocol`` (``conn_ref`` is filled once the
        connection exists): the app's dispatcher for that protocol, built once and rebuilt only
        when a handler is registered, bound to the connection."""
        key = protocol.version
        cached = self._dispatchers.get(key)
        if cached is None or cached.generation != self._generation or cached.protocol is not protocol:
            from ._dispatch import Dispatcher

            cached = self._dispatchers[key] = Dispatcher(self, protocol, self._generation)
        return cached.bind(conn_ref)

    def connection(self, transport: Any, *, protocols: Collection[int] | None = None,
                   **kw: Any) -> AgentSideConnection:
        """A connection serving this app over ``transport`` (not started). ``protocols``: the
        ACP versions served (default: the app's), ``initialize`` choosing one."""
        from ._conn import AppConnection

        kw.setdefault("cancel_grace", self.cancel_grace)
        return AppConnection(transport, self, versions=self.protocols if protocols is None else tuple(protocols), **kw)


def _is_async(fn: object) -> bool:
    return asyncio.iscoroutinefunction(fn)


class AgentApp(AgentBase):
    """Decorator style: ``@app.prompt``, ``@app.new_session``, ... (one per hook: sugar over
    ``on``, keeping the handler's type as it is)."""

    def initialize(self, fn: F) -> F:
        return self._on("initialize")(fn)

    def authenticate(self, fn: F) -> F:
        return self._on("authenticate")(fn)

    def logout(self, fn: F) -> F:
        return self._on("logout")(fn)

    def new_session(self, fn: F) -> F:
        return self._on("new_session")(fn)

    def load_session(self, fn: F) -> F:
        return self._on("load_session")(fn)

    def list_sessions(self, fn: F) -> F:
        return self._on("list_sessions")(fn)

    def resume_session(self, fn: F) -> F:
        return self._on("resume_session")(fn)

    def close_session(self, fn: F) -> F:
        return self._on("close_session")(fn)

    def delete_session(self, fn: F) -> F:
        return self._on("delete_session")(fn)

    def fork_session(self, fn: F) -> F:
        return self._on("fork_session")(fn)

    def archive_session(self, fn: F) -> F:
        return self._on("archive_session")(fn)

    def unarchive_session(self, fn: F) -> F:
        return self._on("unarchive_session")(fn)

    def session_status(self, fn: F) -> F:
        return self._on("session_status")(fn)

    def set_title(self, fn: F) -> F:
        return self._on("set_title")(fn)

    def set_mode(self, fn: F) -> F:
        return self._on("set_mode")(fn)

    def set_config_option(self, fn: F) -> F:
        return self._on("set_config_option")(fn)

    def set_model(self, fn: F) -> F:
        return self._on("set_model")(fn)

    def prompt(self, fn: F) -> F:
        return self._on("prompt")(fn)

    def cancel(self, fn: F) -> F:
        return self._on("cancel")(fn)


class Agent(AgentBase):
    """Subclass style: override the hooks you implement (``prompt``, ``new_session``, ...).

        class Echo(Agent):
            async def prompt(self, ctx: PromptContext) -> None:
                await ctx.send_text(ctx.text)
    """
