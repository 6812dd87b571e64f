"""The ACP v2 (draft) requirements of ``acplink check --protocol 2``: id, level, spec, title.

Spec references are ``page#anchor`` under https://agentclientprotocol.com/protocol/v2/draft/
(the v2 draft pages; the vendored schema, newer than them, wins where they differ).
"""

from __future__ import annotations

import functools

from .requirements import Requirement, make_requirement

__all__ = ["V2_REQUIREMENTS", "V2_SPEC_BASE", "V2Requirement"]

V2_SPEC_BASE = "https://agentclientprotocol.com/protocol/v2/draft/"


#: a v2 requirement: a :class:`Requirement` whose spec pages are the v2 draft's
V2Requirement = Requirement

_r = functools.partial(make_requirement, spec_base=V2_SPEC_BASE)


V2_REQUIREMENTS: tuple[V2Requirement, ...] = (
    # initialization and negotiation
    _r("V2-INIT-001", "must", "initialization",
       "initialize with protocolVersion 2 is answered with a valid v2 InitializeResponse for version 2"),
    _r("V2-INIT-002", "must", "initialization#version-negotiation",
       "a newer protocolVersion is answered with 2 (the highest version at or below the one asked for)"),
    _r("V2-INIT-003", "should", "initialization#version-negotiation",
       "a version below every supported one gets -32022 with data {requested, supported}"),
    _r("V2-INIT-004", "should", "initialization#version-negotiation",
       "a repeated initialize asking for version 1 on a v2 connection gets -32600"),
    _r("V2-AUTH-001", "informational", "authentication", "auth/login with the method given by --auth-method succeeds"),
    # sessions
    _r("V2-SESS-001", "must", "session-setup", "session/new is answered with a valid NewSessionResponse"),
    _r("V2-SESS-002", "must", "session-list", "session/list works and lists a session just created"),
    _r("V2-SESS-003", "must", "session-setup#resuming-sessions",
       "session/resume with replayFrom replays the history before it responds"),
    _r("V2-SESS-004", "must", "session-setup#deleting-sessions", "session/delete works where advertised"),
    # the prompt lifecycle
    _r("V2-PROMPT-001", "must", "prompt-lifecycle#inserting-a-message",
       "session/prompt is answered with a receipt carrying the inserted message's messageId"),
    _r("V2-PROMPT-002", "should", "prompt-lifecycle#inserting-a-message",
       "the inserted user message is echoed (user_message with the receipt's messageId)"),
    _r("V2-PROMPT-003", "must", "prompt-lifecycle#session-states",
       "a turn reports state `running` before its idle state_update"),
    _r("V2-PROMPT-004", "must", "prompt-lifecycle#stop-reasons",
       "a turn ends with an idle state_update carrying a known or `_`-prefixed stopReason"),
    _r("V2-PROMPT-005", "should", "prompt-lifecycle#inserting-a-message",
       "an empty prompt is answered with -32602 and nothing is inserted"),
    # cancel and close
    _r("V2-CANCEL-001", "must", "prompt-lifecycle#cancellation",
       "after session/cancel the running work ends idle with stopReason cancelled within the bound"),
    _r("V2-CLOSE-001", "must", "session-setup#closing-sessions", "session/close is answered with a result"),
    _r("V2-CLOSE-002", "must", "session-setup#closing-sessions",
       "no session/update is sent for a session after its session/close response"),
    _r("V2-CLOSE-003", "should", "session-setup#closing-sessions",
       "closing or deleting an unknown session succeeds"),
    # JSON-RPC, extensibility, open enums
    _r("V2-RPC-001", "must", "overview#communication-model", "unknown methods are answered with -32601"),
    _r("V2-RPC-002", "should", "overview#communication-model",
       "v1 methods v2 removed (authenticate, session/load, session/set_mode, fs/*) are answered with -32601"),
    _r("V2-RPC-003", "must", "extensibility#custom-requests", "`_`-prefixed extension requests get a response"),
    _r("V2-RPC-004", "should", "overview#communication-model",
       "a request with id null is answered with -32600 and id null"),
    _r("V2-EXT-001", "should", "extensibility",
       "unknown `_` capabilities and `_meta` in initialize and session/new are tolerated"),
    # monitored over every check's traffic
    _r("V2-SCHEMA-001", "must", "schema", "every message the agent sends matches the ACP v2 schema"),
    _r("V2-SCHEMA-002", "should", "schema",
       "every message the agent sends matches the v2 schema without its leniency rules"),
    _r("V2-IDS-001", "must", "overview#communication-model",
       "every response carries the id of its request, exactly once"),
)
