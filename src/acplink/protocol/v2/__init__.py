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

from ...schema import methods as m
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
    """The v2 wire names under their former spelling (``Method.SESSION_NEW``): a thin alias of
    the generated constants of :mod:`acplink.schema.methods` (one name per method), kept while
    modules still spell them this way; new code imports the constants."""

    INITIALIZE: Final = m.INITIALIZE
    AUTH_LOGIN: Final = m.AUTH_LOGIN
    AUTH_LOGOUT: Final = m.AUTH_LOGOUT
    AUTH_STATUS: Final = m.AUTH_STATUS
    PROVIDERS_LIST: Final = m.PROVIDERS_LIST
    PROVIDERS_SET: Final = m.PROVIDERS_SET
    PROVIDERS_DISABLE: Final = m.PROVIDERS_DISABLE
    SESSION_NEW: Final = m.SESSION_NEW
    SESSION_LIST: Final = m.SESSION_LIST
    SESSION_RESUME: Final = m.SESSION_RESUME
    SESSION_CLOSE: Final = m.SESSION_CLOSE
    SESSION_DELETE: Final = m.SESSION_DELETE
    SESSION_FORK: Final = m.SESSION_FORK
    SESSION_ARCHIVE: Final = m.SESSION_ARCHIVE
    SESSION_UNARCHIVE: Final = m.SESSION_UNARCHIVE
    SESSION_STATUS: Final = m.SESSION_STATUS
    SESSION_SET_TITLE: Final = m.SESSION_SET_TITLE
    SESSION_SET_CONFIG_OPTION: Final = m.SESSION_SET_CONFIG_OPTION
    SESSION_PROMPT: Final = m.SESSION_PROMPT
    TOOL_CALL_CANCEL: Final = m.TOOL_CALL_CANCEL
    TERMINAL_CANCEL: Final = m.TERMINAL_CANCEL
    SESSION_CANCEL: Final = m.SESSION_CANCEL
    #: (the constant is ``SESSION_REQUEST_PERMISSION``, after the wire name)
    REQUEST_PERMISSION: Final = m.SESSION_REQUEST_PERMISSION
    ELICITATION_CREATE: Final = m.ELICITATION_CREATE
    MCP_MESSAGE: Final = m.MCP_MESSAGE
    SESSION_UPDATE: Final = m.SESSION_UPDATE
    ELICITATION_COMPLETE: Final = m.ELICITATION_COMPLETE
    AUTH_STATUS_UPDATE: Final = m.AUTH_STATUS_UPDATE
    CANCEL_REQUEST: Final = m.CANCEL_REQUEST


#: methods the agent handles: name → "request" or "notification"
AGENT_METHODS: Final[dict[str, str]] = {
    **{m: "request" for m in (
        m.INITIALIZE, m.AUTH_LOGIN, m.AUTH_LOGOUT, m.AUTH_STATUS,
        m.PROVIDERS_LIST, m.PROVIDERS_SET, m.PROVIDERS_DISABLE,
        m.SESSION_NEW, m.SESSION_LIST, m.SESSION_RESUME, m.SESSION_CLOSE,
        m.SESSION_DELETE, m.SESSION_FORK, m.SESSION_ARCHIVE, m.SESSION_UNARCHIVE,
        m.SESSION_STATUS, m.SESSION_SET_TITLE, m.SESSION_SET_CONFIG_OPTION,
        m.SESSION_PROMPT, m.TOOL_CALL_CANCEL, m.TERMINAL_CANCEL)},
    m.SESSION_CANCEL: "notification",
    m.MCP_MESSAGE: "notification",
}

#: methods the client handles: name → "request" or "notification"
CLIENT_METHODS: Final[dict[str, str]] = {
    m.SESSION_REQUEST_PERMISSION: "request",
    m.ELICITATION_CREATE: "request",
    m.MCP_MESSAGE: "request",
    m.SESSION_UPDATE: "notification",
    m.ELICITATION_COMPLETE: "notification",
    m.AUTH_STATUS_UPDATE: "notification",
}

#: v1 methods v2 removed or renamed: a v2 peer answers them -32601
V1_ONLY_METHODS: Final = frozenset({
    m.AUTHENTICATE, m.LOGOUT, m.SESSION_LOAD, m.SESSION_SET_MODE, m.SESSION_SET_MODEL,
    m.FS_READ_TEXT_FILE, m.FS_WRITE_TEXT_FILE, m.TERMINAL_CREATE, m.TERMINAL_OUTPUT,
    m.TERMINAL_RELEASE, m.TERMINAL_WAIT_FOR_EXIT, m.TERMINAL_KILL,
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
STOP_REASONS: Final = tuple(sorted(V2_TURNS.stop_reasons))


# -- the protocol object ------------------------------------------------------------------------
# Built on first use (``protocol()`` or the module attribute ``V2``): it names the v2 models,
# whose package is big, and v2 is opt-in, so neither ``import acplink`` nor a v1-only agent
# pays for it.

#: acplink's name of each v2 method → (wire method, kind)
NAMES: Final[dict[str, tuple[str, str]]] = {
    # handled by the agent: the hooks of AgentApp (v1 hook names where the method survived)
    "initialize": (m.INITIALIZE, "request"),
    "authenticate": (m.AUTH_LOGIN, "request"),
    "logout": (m.AUTH_LOGOUT, "request"),
    "auth_status": (m.AUTH_STATUS, "request"),
    "list_providers": (m.PROVIDERS_LIST, "request"),
    "set_provider": (m.PROVIDERS_SET, "request"),
    "disable_provider": (m.PROVIDERS_DISABLE, "request"),
    "new_session": (m.SESSION_NEW, "request"),
    "list_sessions": (m.SESSION_LIST, "request"),
    "resume_session": (m.SESSION_RESUME, "request"),
    "close_session": (m.SESSION_CLOSE, "request"),
    "delete_session": (m.SESSION_DELETE, "request"),
    "fork_session": (m.SESSION_FORK, "request"),
    "archive_session": (m.SESSION_ARCHIVE, "request"),
    "unarchive_session": (m.SESSION_UNARCHIVE, "request"),
    "session_status": (m.SESSION_STATUS, "request"),
    "set_title": (m.SESSION_SET_TITLE, "request"),
    "set_config_option": (m.SESSION_SET_CONFIG_OPTION, "request"),
    "prompt": (m.SESSION_PROMPT, "request"),
    "cancel": (m.SESSION_CANCEL, "notification"),
    "cancel_tool_call": (m.TOOL_CALL_CANCEL, "request"),
    "cancel_terminal": (m.TERMINAL_CANCEL, "request"),
    # handled by the client: the handlers of Client
    "session_update": (m.SESSION_UPDATE, "notification"),
    "request_permission": (m.SESSION_REQUEST_PERMISSION, "request"),
    "create_elicitation": (m.ELICITATION_CREATE, "request"),
    "complete_elicitation": (m.ELICITATION_COMPLETE, "notification"),
    "auth_status_update": (m.AUTH_STATUS_UPDATE, "notification"),
    "mcp_message": (m.MCP_MESSAGE, "request"),
    # either side
    "cancel_request": (m.CANCEL_REQUEST, "notification"),
}


def protocol() -> Protocol:
    """The v2 protocol object (built and registered on first use)."""
    global _V2
    if _V2 is None:
        from ...schema import v2 as models
        from ...schema.v2._stubs import AgentMethods, ClientMethods
        from .agent_codec import V2AgentCodec
        from .client_codec import CODEC

        _V2 = Protocol(
            version=PROTOCOL_VERSION,
            table=models.TABLE,
            models=models,
            agent_stubs=AgentMethods,
            client_stubs=ClientMethods,
            names=NAMES,
            before_initialize=frozenset({m.INITIALIZE}),
            client_calls=(("request_permission", None),),  # (no fs or terminal methods in v2)
            session_openers=frozenset({"new_session", "resume_session", "fork_session"}),
            capabilities_field=("capabilities", "capabilities"),
            long_running=frozenset({m.SESSION_PROMPT, m.SESSION_REQUEST_PERMISSION, m.ELICITATION_CREATE,
                                    m.MCP_MESSAGE}),
            turns=V2_TURNS,
            # (tool_call_update is an upsert: it announces the call)
            tool_call_kinds=(frozenset({Update.TOOL_CALL_UPDATE}), frozenset({Update.TOOL_CALL_UPDATE})),
            requirement_set="acp-v2-draft",
            agent_codec=V2AgentCodec(),
            features=frozenset({"agent_terminals"}),
            info_field=("info", "info"),
            client_codec=CODEC,
            mcp_transports={"stdio": "session.mcp.stdio", "http": "session.mcp.http", "acp": "session.mcp.acp"},
        )
        register_protocol(_V2)
    return _V2


_V2: Protocol | None = None


def __getattr__(name: str) -> Any:
    if name == "V2":
        return protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
