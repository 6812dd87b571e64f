"""The ACP v2 (draft) requirement set of ``acplink check --protocol 2``: its requirements, its
check table and how the findings of recorded traffic map onto it (data only: see
:mod:`acplink.protocol.requirements`).

Spec references are ``page#anchor`` under https://agentclientprotocol.com/protocol/v2/draft/
(the v2 draft pages; the vendored schema, newer than them, wins where they differ).
"""

from __future__ import annotations

import functools

from ..requirements import CheckSpec, Requirement, RequirementSet, make_requirement

__all__ = ["REQUIREMENTS", "REQUIREMENT_SET", "SPEC_BASE"]

SPEC_BASE = "https://agentclientprotocol.com/protocol/v2/draft/"

_r = functools.partial(make_requirement, spec_base=SPEC_BASE)


REQUIREMENTS: tuple[Requirement, ...] = (
    # initialization and negotiation
    _r("V2-INIT-001", "must", "initialization",
       "initialize with protocolVersion 2 is answered with a valid v2 InitializeResponse for version 2",
       "INIT-001", "INIT-201", "INIT-203", "INIT-204"),
    _r("V2-INIT-002", "must", "initialization#version-negotiation",
       "a newer protocolVersion is answered with 2 (the highest version at or below the one asked for)", "INIT-003"),
    _r("V2-INIT-003", "should", "initialization#version-negotiation",
       "a version below every supported one gets -32022 with data {requested, supported}"),
    _r("V2-INIT-004", "should", "initialization#version-negotiation",
       "a repeated initialize asking for version 1 on a v2 connection gets -32600"),
    _r("V2-AUTH-001", "must", "authentication", "auth/login with the method given by --auth-method succeeds",
       "AUTH-204"),
    _r("V2-AUTH-002", "should", "authentication", "the advertised auth method ids are unique", "AUTH-201"),
    _r("V2-AUTH-003", "must", "authentication",
       "no `terminal` auth method is offered to a client that did not advertise capabilities.auth.terminal",
       "AUTH-202"),
    _r("V2-AUTH-004", "must", "authentication", "every auth method type is `agent`, `terminal` or `_`-prefixed",
       "AUTH-206"),
    _r("V2-AUTH-005", "should", "authentication",
       "with no auth methods advertised, session/new never fails with -32000 (authentication required)",
       "AUTH-205"),
    # sessions
    _r("V2-SESS-001", "must", "session-setup", "session/new is answered with a valid NewSessionResponse",
       "SESSION-001"),
    _r("V2-SESS-002", "must", "session-list", "session/list works and lists a session just created", "LIST-201"),
    _r("V2-SESS-003", "must", "session-setup#resuming-sessions",
       "session/resume with replayFrom replays the history before it responds", "RESUME-202"),
    _r("V2-SESS-004", "must", "session-setup#deleting-sessions", "session/delete works where advertised",
       "DELETE-201"),
    _r("V2-SESS-005", "must", "session-setup", "two session/new calls return distinct session ids", "SESSION-002"),
    _r("V2-SESS-006", "must", "session-setup", "session/new with mcpServers omitted is accepted (as with [])",
       "SESSION-203"),
    _r("V2-SESS-007", "must", "session-setup#deleting-sessions",
       "a deleted session no longer appears in session/list (where delete is advertised)", "DELETE-202"),
    _r("V2-SESS-008", "must", "session-setup#resuming-sessions",
       "session/resume without replayFrom succeeds and replays no history before its response",
       "RESUME-201", "RESUME-203"),
    _r("V2-LIST-001", "must", "session-list",
       "session/list filtered by a cwd no session uses answers `sessions: []`", "LIST-202"),
    _r("V2-LIST-002", "must", "session-list",
       "session/list filtered by a cwd returns only sessions of that cwd (absolute paths)", "LIST-203", "LIST-204"),
    # the prompt lifecycle
    _r("V2-PROMPT-001", "must", "prompt-lifecycle#inserting-a-message",
       "session/prompt is answered with a receipt carrying the inserted message's messageId", "PROMPT-201"),
    _r("V2-PROMPT-002", "must", "prompt-lifecycle#inserting-a-message",
       "the inserted user message is echoed (user_message with the receipt's messageId)", "PROMPT-203"),
    _r("V2-PROMPT-003", "must", "prompt-lifecycle#session-states",
       "a turn reports state `running` before its idle state_update", "STATE-201"),
    _r("V2-PROMPT-004", "must", "prompt-lifecycle#stop-reasons",
       "a turn ends with an idle state_update carrying a known or `_`-prefixed stopReason", "STATE-202", "STATE-203"),
    _r("V2-PROMPT-005", "should", "prompt-lifecycle#inserting-a-message",
       "an empty prompt is answered with -32602 and nothing is inserted"),
    _r("V2-PROMPT-006", "must", "prompt-lifecycle#inserting-a-message",
       "two prompts on one session get distinct messageIds", "PATCH-203"),
    _r("V2-PROMPT-007", "must", "prompt-lifecycle",
       "every session/update during a session's turns names that session", "PROMPT-205"),
    _r("V2-CONTENT-001", "should", "content", "a prompt of text and resource_link blocks is accepted and ends idle",
       "PROMPT-003"),
    _r("V2-CONTENT-002", "must", "initialization#prompt-capabilities",
       "a prompt with an image block is accepted and ends idle when advertised", "PROMPTCAP-001"),
    _r("V2-CONTENT-003", "must", "initialization#prompt-capabilities",
       "a prompt with an audio block is accepted and ends idle when advertised", "PROMPTCAP-002"),
    _r("V2-CONTENT-004", "must", "initialization#prompt-capabilities",
       "a prompt with an embedded resource block is accepted and ends idle when advertised (embeddedContext)",
       "PROMPTCAP-003"),
    # cancel and close
    _r("V2-CANCEL-001", "must", "prompt-lifecycle#cancellation",
       "after session/cancel the running work ends idle with stopReason cancelled within the bound",
       "CANCEL-201", "CANCEL-203", "CANCEL-206", "CANCEL-207"),
    _r("V2-CANCEL-002", "must", "prompt-lifecycle#cancellation",
       "a session/cancel carrying _meta is honoured (idle cancelled) and never answered", "CANCEL-205", "CANCEL-206"),
    _r("V2-CANCEL-003", "must", "prompt-lifecycle#cancellation",
       "no state_update for the session after its cancelled idle (until a new prompt)", "CANCEL-202"),
    _r("V2-CLOSE-001", "must", "session-setup#closing-sessions", "session/close is answered with a result",
       "CLOSE-201"),
    _r("V2-CLOSE-002", "must", "session-setup#closing-sessions",
       "no session/update is sent for a session after its session/close response"),
    _r("V2-CLOSE-003", "should", "session-setup#closing-sessions",
       "closing or deleting an unknown session succeeds", "DELETE-203"),
    _r("V2-CLOSE-004", "must", "session-setup#closing-sessions",
       "session/close of a session whose turn is running ends that turn idle with stopReason cancelled",
       "CANCEL-208", "CLOSE-202"),
    _r("V2-SHUT-001", "should", "transports", "the agent exits within the bound once its stdin closes",
       "SHUTDOWN-001"),
    # JSON-RPC, extensibility, open enums
    _r("V2-RPC-001", "must", "overview#communication-model", "unknown methods are answered with -32601",
       "JSONRPC-004"),
    _r("V2-RPC-002", "should", "overview#communication-model",
       "v1 methods v2 removed (authenticate, session/load, session/set_mode, fs/*) are answered with -32601"),
    _r("V2-RPC-003", "must", "extensibility#custom-requests", "`_`-prefixed extension requests get a response",
       "EXT-001"),
    _r("V2-RPC-004", "should", "overview#communication-model",
       "a request with id null is answered with -32600 and id null"),
    _r("V2-RPC-005", "should", "extensibility#custom-requests",
       "an unknown `_`-prefixed request is answered with error -32601, not a result (e.g. `result: null`)",
       "JSONRPC-004"),
    _r("V2-RPC-006", "must", "overview#communication-model",
       "notifications (session/cancel, unknown `_` ones) are never answered", "JSONRPC-003", "CANCEL-205"),
    _r("V2-RPC-007", "should", "extensibility#custom-notifications",
       "the agent keeps working after an unknown `_` notification and an invalid request", "EXT-201", "JSONRPC-005"),
    _r("V2-EXT-001", "should", "extensibility",
       "unknown `_` capabilities and `_meta` in initialize and session/new are tolerated"),
    _r("V2-EXT-002", "should", "extensibility#the-_meta-field",
       "a session/prompt carrying `_meta` is accepted (its turn ends idle)", "META-001"),
    # monitored over every check's traffic
    _r("V2-SCHEMA-001", "must", "schema", "every message the agent sends matches the ACP v2 schema",
       "SCHEMA-001", "INIT-204", "JSONRPC-002", "PROMPT-205", "PATCH-201", "PATCH-204", "PATCH-205", "META-201"),
    _r("V2-SCHEMA-002", "should", "schema",
       "every message the agent sends matches the v2 schema without its leniency rules"),
    _r("V2-IDS-001", "must", "overview#communication-model",
       "every response carries the id of its request, exactly once", "JSONRPC-001"),
    _r("V2-RPC-008", "should", "overview#communication-model",
       "every error the agent sends has a non-empty, single-line message", "ERROR-001"),
    _r("V2-CAP-001", "must", "overview#communication-model",
       "the agent calls only the client methods v2 defines (or `_` ones): no fs/* or terminal/*, and no "
       "elicitation/create to a client that advertised none", "CLIENTCAP-201", "CLIENTCAP-202"),
    _r("V2-TRANS-001", "must", "transports",
       "every line the agent writes to stdout is valid UTF-8 JSON (one message a line)",
       "TRANSPORT-201", "TRANSPORT-002", "TRANSPORT-203"),
)

#: judged from every check's traffic
MONITORED = ("V2-SCHEMA-001", "V2-SCHEMA-002", "V2-IDS-001", "V2-RPC-008", "V2-TRANS-001", "V2-CAP-001")

CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("v2-initialize", {"answer": "V2-INIT-001", "repeat": "V2-INIT-004", "login": "V2-AUTH-001"},
              MONITORED, probe="handshake"),
    CheckSpec("v2-versions", {"newer": "V2-INIT-002", "too_old": "V2-INIT-003"}, probe="negotiation"),
    CheckSpec("v2-prompt", {"session": "V2-SESS-001", "receipt": "V2-PROMPT-001", "echo": "V2-PROMPT-002",
                            "running": "V2-PROMPT-003", "idle": "V2-PROMPT-004", "empty": "V2-PROMPT-005"},
              MONITORED, probe="receipt-turn"),
    CheckSpec("v2-cancel", {"cancelled": "V2-CANCEL-001"}, MONITORED, probe="cancel-to-idle"),
    CheckSpec("v2-close", {"answered": "V2-CLOSE-001", "quiet_after": "V2-CLOSE-002", "unknown": "V2-CLOSE-003"},
              MONITORED, probe="close"),
    CheckSpec("v2-sessions", {"listed": "V2-SESS-002", "replay": "V2-SESS-003", "delete": "V2-SESS-004"},
              MONITORED, probe="list-resume-delete"),
    CheckSpec("v2-rpc", {"unknown_method": "V2-RPC-001", "removed": "V2-RPC-002", "extension": "V2-RPC-003",
                         "null_id": "V2-RPC-004", "meta": "V2-EXT-001"}, probe="rpc"),
    # for parity with the official kit (acp-tck, v2)
    CheckSpec("v2-session-ids", {"distinct": "V2-SESS-005", "mcp_omitted": "V2-SESS-006"}, MONITORED,
              probe="session-ids"),
    CheckSpec("v2-prompt-ids", {"distinct": "V2-PROMPT-006", "same_session": "V2-PROMPT-007", "meta": "V2-EXT-002"},
              MONITORED, probe="message-ids"),
    CheckSpec("v2-cancel-meta", {"honoured": "V2-CANCEL-002", "quiet_after": "V2-CANCEL-003"}, MONITORED,
              probe="cancel-meta"),
    CheckSpec("v2-close-running", {"cancelled": "V2-CLOSE-004"}, MONITORED, probe="close-running-turn"),
    CheckSpec("v2-content", {"context": "V2-CONTENT-001", "image": "V2-CONTENT-002", "audio": "V2-CONTENT-003",
                             "embedded": "V2-CONTENT-004"}, MONITORED, probe="content-turns"),
    CheckSpec("v2-shutdown", {"exits": "V2-SHUT-001"}, probe="shutdown"),
    CheckSpec("v2-notifications", {"unknown_extension": "V2-RPC-005", "unanswered": "V2-RPC-006",
                                   "still_working": "V2-RPC-007"}, MONITORED, probe="unanswered-notifications"),
    CheckSpec("v2-list", {"empty": "V2-LIST-001", "cwd": "V2-LIST-002", "deleted": "V2-SESS-007",
                          "no_replay": "V2-SESS-008"}, MONITORED, probe="list-filters"),
    CheckSpec("v2-auth-methods", {"unique_ids": "V2-AUTH-002", "no_terminal": "V2-AUTH-003", "types": "V2-AUTH-004",
                                  "no_auth_required": "V2-AUTH-005"}, MONITORED, probe="auth-methods"),
)

REQUIREMENT_SET = RequirementSet(
    "acp-v2-draft", REQUIREMENTS, CHECKS, MONITORED,
    findings={"schema": "V2-SCHEMA-001", "schema-strict": "V2-SCHEMA-002", "invalid-json": "V2-TRANS-001",
              "response-unknown-id": "V2-IDS-001", "duplicate-response": "V2-IDS-001", "capability": "V2-CAP-001"},
    # (not update-after-close → V2-CLOSE-002 on every check: the idle that ends a turn still
    # running at session/close may follow the close response, V2-CLOSE-004; v2-close judges it)
    error_message="V2-RPC-008", foreign_call="V2-CAP-001",
    initialize={"info": {"name": "acplink-check", "version": "1"}, "capabilities": {}}, tck_key="v2",
    null_id_responses=False,
    facts={"auth_method_id": "methodId", "auth_method_types": ("agent", "terminal"),
           # methods of the first version this one removed (answered -32601)
           "removed_methods": ("authenticate", "session/load", "session/set_mode", "fs/read_text_file"),
           # where the session capabilities are in the initialize result, and the prompt ones in them
           "session_capabilities": ("capabilities", "session"), "prompt_capabilities": "prompt"},
)
