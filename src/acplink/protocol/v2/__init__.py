"""ACP v2 (draft): the wire names and constants of the second protocol version.

v2 renames and removes methods (``authenticate`` → ``auth/login``, no ``session/load``,
``session/set_mode`` or client ``fs/*`` / ``terminal/*`` calls), answers ``session/prompt``
with an insertion receipt (``{"messageId"}``) and reports foreground work with
``state_update`` session updates (``running`` / ``requires_action`` / ``idle`` + stop reason).
Source: the vendored ``schemas/v2/schema.unstable.json`` (newer than the spec pages; the
schema wins). Everything here is data: the agent side (``acplink.agent``) and the client
side read their v2 names from this module instead of spelling them.
"""

from __future__ import annotations

from typing import Any, Final

from ..base import Protocol, register_protocol
from ..turns import V2_TURNS

__all__ = [
    "AGENT_METHODS",
    "NAMES",
    "CLIENT_METHODS",
    "PROTOCOL_VERSION",
    "STATES",
    "STOP_REASONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "UPDATE_KINDS",
    "V1_ONLY_METHODS",
    "Method",
    "Update",
    "protocol",
]

#: The protocol version number of ACP v2.
PROTOCOL_VERSION: Final = 2

#: JSON-RPC error code of an ``initialize`` asking for a version nobody here speaks
#: (data: ``{"requested": N, "supported": [...]}``).
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022


class Method:
    """The v2 wire method names (one attribute per method)."""

    # client → agent requests
    INITIALIZE: Final = "initialize"
    AUTH_LOGIN: Final = "auth/login"
    AUTH_LOGOUT: Final = "auth/logout"
    AUTH_STATUS: Final = "auth/status"
    PROVIDERS_LIST: Final = "providers/list"
    PROVIDERS_SET: Final = "providers/set"
    PROVIDERS_DISABLE: Final = "providers/disable"
    SESSION_NEW: Final = "session/new"
    SESSION_LIST: Final = "session/list"
    SESSION_RESUME: Final = "session/resume"
    SESSION_CLOSE: Final = "session/close"
    SESSION_DELETE: Final = "session/delete"
    SESSION_FORK: Final = "session/fork"
    SESSION_ARCHIVE: Final = "session/archive"
    SESSION_UNARCHIVE: Final = "session/unarchive"
    SESSION_STATUS: Final = "session/status"
    SESSION_SET_TITLE: Final = "session/set_title"
    SESSION_SET_CONFIG_OPTION: Final = "session/set_config_option"
    SESSION_PROMPT: Final = "session/prompt"
    TOOL_CALL_CANCEL: Final = "tool_call/cancel"
    TERMINAL_CANCEL: Final = "terminal/cancel"
    # client → agent notifications
    SESSION_CANCEL: Final = "session/cancel"
    # agent → client requests
    REQUEST_PERMISSION: Final = "session/request_permission"
    ELICITATION_CREATE: Final = "elicitation/create"
    MCP_MESSAGE: Final = "mcp/message"
    # agent → client notifications
    SESSION_UPDATE: Final = "session/update"
    ELICITATION_COMPLETE: Final = "elicitation/complete"
    AUTH_STATUS_UPDATE: Final = "auth/status_update"
    # both ways
    CANCEL_REQUEST: Final = "$/cancel_request"


#: methods the agent handles: name → "request" or "notification"
AGENT_METHODS: Final[dict[str, str]] = {
    **{m: "request" for m in (
        Method.INITIALIZE, Method.AUTH_LOGIN, Method.AUTH_LOGOUT, Method.AUTH_STATUS,
        Method.PROVIDERS_LIST, Method.PROVIDERS_SET, Method.PROVIDERS_DISABLE,
        Method.SESSION_NEW, Method.SESSION_LIST, Method.SESSION_RESUME, Method.SESSION_CLOSE,
        Method.SESSION_DELETE, Method.SESSION_FORK, Method.SESSION_ARCHIVE, Method.SESSION_UNARCHIVE,
        Method.SESSION_STATUS, Method.SESSION_SET_TITLE, Method.SESSION_SET_CONFIG_OPTION,
        Method.SESSION_PROMPT, Method.TOOL_CALL_CANCEL, Method.TERMINAL_CANCEL)},
    Method.SESSION_CANCEL: "notification",
    Method.MCP_MESSAGE: "notification",
}

#: methods the client handles: name → "request" or "notification"
CLIENT_METHODS: Final[dict[str, str]] = {
    Method.REQUEST_PERMISSION: "request",
    Method.ELICITATION_CREATE: "request",
    Method.MCP_MESSAGE: "request",
    Method.SESSION_UPDATE: "notification",
    Method.ELICITATION_COMPLETE: "notification",
    Method.AUTH_STATUS_UPDATE: "notification",
}

#: v1 methods v2 removed or renamed: a v2 peer answers them -32601
V1_ONLY_METHODS: Final = frozenset({
    "authenticate", "logout", "session/load", "session/set_mode", "session/set_model",
    "fs/read_text_file", "fs/write_text_file", "terminal/create", "terminal/output",
    "terminal/release", "terminal/wait_for_exit", "terminal/kill",
})


class Update:
    """The ``sessionUpdate`` tags of v2 ``session/update`` notifications."""

    USER_MESSAGE_CHUNK: Final = "user_message_chunk"
    USER_MESSAGE: Final = "user_message"
    AGENT_MESSAGE_CHUNK: Final = "agent_message_chunk"
    AGENT_MESSAGE: Final = "agent_message"
    AGENT_THOUGHT_CHUNK: Final = "agent_thought_chunk"
    AGENT_THOUGHT: Final = "agent_thought"
    STATE_UPDATE: Final = "state_update"
    TOOL_CALL_CONTENT_CHUNK: Final = "tool_call_content_chunk"
    TOOL_CALL_UPDATE: Final = "tool_call_update"
    TERMINAL_UPDATE: Final = "terminal_update"
    TERMINAL_OUTPUT_CHUNK: Final = "terminal_output_chunk"
    PLAN_UPDATE: Final = "plan_update"
    PLAN_REMOVED: Final = "plan_removed"
    AVAILABLE_COMMANDS_UPDATE: Final = "available_commands_update"
    CONFIG_OPTION_UPDATE: Final = "config_option_update"
    SESSION_INFO_UPDATE: Final = "session_info_update"
    USAGE_UPDATE: Final = "usage_update"
    NOTICE: Final = "notice"
    COMPACTION_UPDATE: Final = "compaction_update"
    COMPACTION_SUMMARY_CHUNK: Final = "compaction_summary_chunk"
    SUBAGENT_UPDATE: Final = "subagent_update"
    SESSION_MESSAGE: Final = "session_message"
    SESSION_MESSAGE_CHUNK: Final = "session_message_chunk"


#: every known ``sessionUpdate`` tag (the union is open: others are kept as unknown)
UPDATE_KINDS: Final = frozenset(v for k, v in vars(Update).items() if k.isupper())

#: the ``state`` values of a ``state_update`` (open: others are kept as unknown)
STATES: Final = ("running", "requires_action", "idle", "unknown")

#: the known stop reasons of an idle ``state_update`` (open: ``_``-prefixed ones are custom)
STOP_REASONS: Final = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error")


# -- the protocol object ------------------------------------------------------------------------
# Built on first use (``protocol()`` or the module attribute ``V2``): it names the v2 models,
# whose package is big, and v2 is opt-in, so neither ``import acplink`` nor a v1-only agent
# pays for it.

#: acplink's name of each v2 method → (wire method, kind)
NAMES: Final[dict[str, tuple[str, str]]] = {
    # handled by the agent: the hooks of AgentApp (v1 hook names where the method survived)
    "initialize": (Method.INITIALIZE, "request"),
    "authenticate": (Method.AUTH_LOGIN, "request"),
    "logout": (Method.AUTH_LOGOUT, "request"),
    "auth_status": (Method.AUTH_STATUS, "request"),
    "list_providers": (Method.PROVIDERS_LIST, "request"),
    "set_provider": (Method.PROVIDERS_SET, "request"),
    "disable_provider": (Method.PROVIDERS_DISABLE, "request"),
    "new_session": (Method.SESSION_NEW, "request"),
    "list_sessions": (Method.SESSION_LIST, "request"),
    "resume_session": (Method.SESSION_RESUME, "request"),
    "close_session": (Method.SESSION_CLOSE, "request"),
    "delete_session": (Method.SESSION_DELETE, "request"),
    "fork_session": (Method.SESSION_FORK, "request"),
    "archive_session": (Method.SESSION_ARCHIVE, "request"),
    "unarchive_session": (Method.SESSION_UNARCHIVE, "request"),
    "session_status": (Method.SESSION_STATUS, "request"),
    "set_title": (Method.SESSION_SET_TITLE, "request"),
    "set_config_option": (Method.SESSION_SET_CONFIG_OPTION, "request"),
    "prompt": (Method.SESSION_PROMPT, "request"),
    "cancel": (Method.SESSION_CANCEL, "notification"),
    "cancel_tool_call": (Method.TOOL_CALL_CANCEL, "request"),
    "cancel_terminal": (Method.TERMINAL_CANCEL, "request"),
    # handled by the client: the handlers of Client
    "session_update": (Method.SESSION_UPDATE, "notification"),
    "request_permission": (Method.REQUEST_PERMISSION, "request"),
    "create_elicitation": (Method.ELICITATION_CREATE, "request"),
    "complete_elicitation": (Method.ELICITATION_COMPLETE, "notification"),
    "auth_status_update": (Method.AUTH_STATUS_UPDATE, "notification"),
    "mcp_message": (Method.MCP_MESSAGE, "request"),
    # either side
    "cancel_request": (Method.CANCEL_REQUEST, "notification"),
}


def protocol() -> Protocol:
    """The v2 protocol object (built and registered on first use)."""
    global _V2
    if _V2 is None:
        from ...schema import v2 as models
        from ...schema.v2._stubs import AgentMethods, ClientMethods
        from .client_codec import CODEC

        _V2 = Protocol(
            version=PROTOCOL_VERSION,
            table=models.TABLE,
            models=models,
            agent_stubs=AgentMethods,
            client_stubs=ClientMethods,
            names=NAMES,
            before_initialize=frozenset({Method.INITIALIZE}),
            client_calls=(("request_permission", None),),  # (no fs or terminal methods in v2)
            session_openers=frozenset({"new_session", "resume_session", "fork_session"}),
            capabilities_field=("capabilities", "capabilities"),
            long_running=frozenset({Method.SESSION_PROMPT, Method.REQUEST_PERMISSION, Method.ELICITATION_CREATE}),
            turns=V2_TURNS,
            info_field=("info", "info"),
            client_codec=CODEC,
        )
        register_protocol(_V2)
    return _V2


_V2: Protocol | None = None


def __getattr__(name: str) -> Any:
    if name == "V2":
        return protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
