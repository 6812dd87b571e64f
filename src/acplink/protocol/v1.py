"""ACP v1: the protocol object of version 1 (the only stable version).

A second version goes beside this file (``protocol/v2.py``): its own models and table from
``acplink.schema.v2``, its own names, registered the same way.
"""

from __future__ import annotations

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
        "stop": ("session/stop", "request"),
        # handled by the client: the handlers of Client
        "session_update": ("session/update", "notification"),
        "request_permission": ("session/request_permission", "request"),
        "read_text_file": ("fs/read_text_file", "request"),
        "write_text_file": ("fs/write_text_file", "request"),
        "create_terminal": ("terminal/create", "request"),
        "terminal_output": ("terminal/output", "request"),
        "wait_for_terminal_exit": ("terminal/wait_for_exit", "request"),
        "kill_terminal": ("terminal/kill", "request"),
        "release_terminal": ("terminal/release", "request"),
        "create_elicitation": ("elicitation/create", "request"),
        # either side
        "cancel_request": ("$/cancel_request", "notification"),
    },
    before_initialize=frozenset({"initialize"}),
    client_calls=(
        ("read_text_file", "fs.readTextFile"),
        ("request_permission", None),
        ("write_text_file", "fs.writeTextFile"),
    ),
    capability_flags=frozenset({"agent:loadSession", "agent:mcpCapabilities.acp", "client:fs.readTextFile",
                                "client:fs.writeTextFile", "client:terminal"}),
    session_openers=frozenset({"new_session", "load_session", "resume_session", "fork_session"}),
)

register_protocol(V1)
