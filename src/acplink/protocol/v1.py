"""ACP v1: the protocol object of version 1 (the only stable version).

A second version goes beside this file (``protocol/v2.py``): its own models and table from
``acplink.schema.v2``, its own names, registered the same way.
"""

from __future__ import annotations

from ..schema import methods as m
from ..schema import v1 as _models
from ..schema.v1._stubs import AgentMethods, ClientMethods
from .base import Protocol, register_protocol

__all__ = ["PROTOCOL_VERSION", "V1"]

#: The ACP protocol version acplink speaks by default.
PROTOCOL_VERSION = 1

V1 = Protocol(
    version=PROTOCOL_VERSION,
    table=_models.TABLE,
    models=_models,
    agent_stubs=AgentMethods,
    client_stubs=ClientMethods,
    names={
        # handled by the agent: the hooks of AgentApp
        "initialize": (m.INITIALIZE, "request"),
        "authenticate": (m.AUTHENTICATE, "request"),
        "logout": (m.LOGOUT, "request"),
        "new_session": (m.SESSION_NEW, "request"),
        "load_session": (m.SESSION_LOAD, "request"),
        "list_sessions": (m.SESSION_LIST, "request"),
        "resume_session": (m.SESSION_RESUME, "request"),
        "close_session": (m.SESSION_CLOSE, "request"),
        "delete_session": (m.SESSION_DELETE, "request"),
        "fork_session": (m.SESSION_FORK, "request"),
        "archive_session": (m.SESSION_ARCHIVE, "request"),
        "unarchive_session": (m.SESSION_UNARCHIVE, "request"),
        "session_status": (m.SESSION_STATUS, "request"),
        "set_title": (m.SESSION_SET_TITLE, "request"),
        "set_mode": (m.SESSION_SET_MODE, "request"),
        "set_config_option": (m.SESSION_SET_CONFIG_OPTION, "request"),
        "set_model": (m.SESSION_SET_MODEL, "request"),
        "prompt": (m.SESSION_PROMPT, "request"),
        "cancel": (m.SESSION_CANCEL, "notification"),
        "stop": (m.SESSION_STOP, "request"),
        # handled by the client: the handlers of Client
        "session_update": (m.SESSION_UPDATE, "notification"),
        "request_permission": (m.SESSION_REQUEST_PERMISSION, "request"),
        "read_text_file": (m.FS_READ_TEXT_FILE, "request"),
        "write_text_file": (m.FS_WRITE_TEXT_FILE, "request"),
        "create_terminal": (m.TERMINAL_CREATE, "request"),
        "terminal_output": (m.TERMINAL_OUTPUT, "request"),
        "wait_for_terminal_exit": (m.TERMINAL_WAIT_FOR_EXIT, "request"),
        "kill_terminal": (m.TERMINAL_KILL, "request"),
        "release_terminal": (m.TERMINAL_RELEASE, "request"),
        "create_elicitation": (m.ELICITATION_CREATE, "request"),
        "mcp_message": (m.MCP_MESSAGE, "request"),
        # either side
        "cancel_request": (m.CANCEL_REQUEST, "notification"),
    },
    before_initialize=frozenset({m.INITIALIZE}),
    client_calls=(
        ("read_text_file", "fs.readTextFile"),
        ("request_permission", None),
        ("write_text_file", "fs.writeTextFile"),
    ),
    capability_flags=frozenset({"agent:loadSession", "agent:mcpCapabilities.acp", "client:fs.readTextFile",
                                "client:fs.writeTextFile", "client:terminal"}),
    session_openers=frozenset({"new_session", "load_session", "resume_session", "fork_session"}),
    long_running=frozenset({m.SESSION_PROMPT, m.SESSION_REQUEST_PERMISSION, m.TERMINAL_WAIT_FOR_EXIT,
                            m.ELICITATION_CREATE, m.MCP_MESSAGE}),
    mcp_transports={"stdio": None, "http": "mcpCapabilities.http", "sse": "mcpCapabilities.sse",
                    "acp": "mcpCapabilities.acp"},
)

register_protocol(V1)
