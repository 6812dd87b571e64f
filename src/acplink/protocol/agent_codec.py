"""The agent side of a version whose models are not acplink's vocabulary (sans-I/O).

An :class:`~acplink.AgentApp` is written once, against acplink's vocabulary: the v1 models
(``acplink.schema``), its hooks named as in :data:`acplink.agent.HOOKS`. A version whose
models are that vocabulary (v1, and any version that only renames methods) needs nothing
more: its ``Protocol.agent_codec`` is None and the app's handlers are its handlers. A version
with other shapes supplies an :class:`AgentCodec`: pure functions between the app's values
(wire JSON in the vocabulary's shape) and the version's wire JSON, plus a :class:`Route` for
each wire request saying who answers it. The agent's connection does the I/O and runs the
prompt lifecycle from ``Protocol.turns``; nothing in it names a version.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AgentCodec", "Route"]


@dataclass(frozen=True)
class Route:
    """Who answers one wire request of a codec version.

    ``action`` is one of the agent connection's services:

    - ``"hook"``: the app's hook ``hook`` with ``params`` (the vocabulary's shape); the answer
      is shaped by ``result``: ``"setup"`` (a session-setup result, its config options),
      ``"list"`` (a session list), ``"same"`` (the hook's answer as it is: the two versions'
      results have one shape), ``"empty"`` (``{}``);
    - ``"prompt"``: the prompt lifecycle (``Protocol.turns``), ``params`` the app's prompt;
    - ``"resume"``, ``"close"``, ``"delete"``: the session services (``delete`` needs the
      ``delete_session`` hook);
    - ``"config"``: a config option (the codec says which hook sets it: :meth:`AgentCodec.config_call`);
    - ``"login"``: the ``authenticate`` hook, when the app offers auth methods;
    - ``"cancel_entity"``: the cancel hook of the entity ``params[key]`` (``label`` names it).
    """

    action: str
    params: dict[str, Any] = field(default_factory=dict)
    hook: str | None = None
    result: str = "empty"
    key: str = ""
    label: str = ""


class AgentCodec:
    """The agent side of one version, between the app's values and the wire (see the module).
    Every method is pure: wire dicts in, wire dicts out."""

    #: the protocol the app's handlers are written against (its models, its names)
    app_protocol: Any = None

    def route(self, method: str, params: dict[str, Any]) -> Route | None:
        """Who answers the wire request ``method`` (None: nobody, ``-32601``); raises
        ``InvalidParams`` for params the app cannot take."""
        raise NotImplementedError

    def client_view(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The client's capabilities in the vocabulary's shape and its implementation info,
        from this version's ``initialize`` params."""
        raise NotImplementedError

    def initialize_result(self, info: dict[str, Any], capabilities: dict[str, Any], hooks: Collection[str],
                          auth: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """This version's ``initialize`` answer from the app's info, its capabilities in the
        vocabulary's shape, its registered hooks and its auth methods."""
        raise NotImplementedError

    def capabilities_of(self, result: dict[str, Any]) -> Any:
        """The agent's own capabilities in an ``initialize`` answer of this version."""
        raise NotImplementedError

    def setup_result(self, app_result: dict[str, Any], modes: Sequence[dict[str, Any]],
                     mode: str | None) -> dict[str, Any]:
        """This version's session-setup fields from the app's result (config options, modes)."""
        raise NotImplementedError

    def config_call(self, params: dict[str, Any], has_modes: bool) -> tuple[str, dict[str, Any]]:
        """The hook that sets a config option and its params."""
        raise NotImplementedError

    def config_result(self, options: Sequence[dict[str, Any]], modes: Sequence[dict[str, Any]],
                      mode: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def list_result(self, app_result: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def update(self, update: dict[str, Any], *, message_id: Callable[[str], str], cancellable: Callable[[str], bool],
               modes: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        """An update the app sent → this version's (None: it has no place for it)."""
        raise NotImplementedError

    def message_of(self, update: dict[str, Any]) -> tuple[str, str, Any] | None:
        """(role, message id, content) of a sent update that is part of the conversation (kept
        for replay), else None."""
        raise NotImplementedError

    def replay_requested(self, params: dict[str, Any]) -> bool:
        """Whether a resume request asks for the conversation to be replayed."""
        raise NotImplementedError

    def replay_update(self, role: str, message_id: str, content: Any) -> dict[str, Any]:
        raise NotImplementedError

    def request_params(self, name: str, params: Any) -> Any:
        """The params of the app's request ``name`` (``request_permission``, ...) in this
        version's shape."""
        raise NotImplementedError

    def missing(self, method: str) -> str | None:
        """Why the app's request ``method`` cannot be sent in this version (None: it can)."""
        raise NotImplementedError

    def terminal_update(self, terminal_id: str, **fields: Any) -> dict[str, Any]:
        """An agent-owned display terminal's upsert (feature ``agent_terminals``)."""
        raise NotImplementedError

    def terminal_output(self, terminal_id: str, data: str) -> dict[str, Any]:
        raise NotImplementedError

