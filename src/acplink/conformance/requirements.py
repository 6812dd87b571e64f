"""The requirements the conformance checker verifies: id, level, spec section, description.

Spec references are ``page#anchor`` under https://agentclientprotocol.com/protocol/ (v1). The
test suite tags its tests with the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["REQUIREMENTS", "SPEC_BASE", "Level", "Requirement", "requirement"]

Level = Literal["must", "should", "informational"]

SPEC_BASE = "https://agentclientprotocol.com/protocol/v1/"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    spec: str
    title: str

    @property
    def url(self) -> str:
        return SPEC_BASE + self.spec


def _r(id: str, level: Level, spec: str, title: str) -> Requirement:
    return Requirement(id, level, spec, title)


REQUIREMENTS: tuple[Requirement, ...] = (
    # initialization
    _r("INIT-001", "must", "initialization", "initialize is answered with a valid InitializeResponse"),
    _r("INIT-002", "must", "initialization#version-negotiation",
       "a supported protocol version is answered with the same version"),
    _r("INIT-003", "must", "initialization#version-negotiation",
       "an unknown protocol version is answered with the latest version the agent supports (not an error)"),
    _r("INIT-004", "should", "initialization#implementation-information",
       "the agent names itself (agentInfo with name and version)"),
    _r("AUTH-001", "informational", "initialization",
       "authenticate with the method given by --auth-method succeeds"),
    # capabilities
    _r("CAP-001", "must", "initialization#client-capabilities",
       "the agent never calls fs/* methods the client did not advertise"),
    _r("CAP-002", "must", "initialization#client-capabilities",
       "the agent never calls terminal/* methods the client did not advertise"),
    _r("CAP-003", "must", "initialization#client-capabilities",
       "the agent never calls elicitation or other capability-gated client methods the client did not advertise"),
    _r("CAP-004", "must", "initialization#agent-capabilities",
       "every method the agent advertises is implemented (never -32601)"),
    # sessions
    _r("SESS-001", "must", "session-setup#creating-a-session",
       "session/new is answered with a valid NewSessionResponse"),
    _r("SESS-002", "should", "session-setup#session-id", "each session/new returns a distinct session id"),
    _r("SESS-010", "must", "session-list", "session/list works where advertised"),
    _r("SESS-011", "must", "session-setup#loading-sessions",
       "session/load works where advertised (history replayed before the response)"),
    _r("SESS-012", "must", "session-setup", "session/resume works where advertised"),
    _r("SESS-013", "must", "session-setup", "session/close works where advertised"),
    _r("SESS-014", "must", "session-setup", "session/delete works where advertised"),
    _r("SESS-015", "should", "session-setup", "session/fork works where advertised (unstable)"),
    # prompt turns
    _r("PROMPT-001", "must", "prompt-turn#stop-reasons",
       "a prompt turn ends with a response carrying a valid stopReason"),
    _r("PROMPT-002", "must", "prompt-turn#4-check-for-completion",
       "every session/update of a turn arrives before the turn's response"),
    _r("PROMPT-003", "must", "prompt-turn#3-agent-reports-output",
       "session/update is only sent for sessions that exist"),
    _r("PROMPT-004", "should", "tool-calls#updating",
       "tool_call_update only names tool calls announced with tool_call"),
    _r("PROMPT-005", "should", "prompt-turn", "a prompt for an unknown session is answered with an error"),
    # content
    _r("CONTENT-001", "must", "initialization#prompt-capabilities",
       "prompts with text and resource_link blocks are accepted"),
    _r("CONTENT-002", "must", "initialization#prompt-capabilities", "image blocks are accepted when advertised"),
    _r("CONTENT-003", "must", "initialization#prompt-capabilities", "audio blocks are accepted when advertised"),
    _r("CONTENT-004", "must", "initialization#prompt-capabilities",
       "embedded resource blocks are accepted when advertised (embeddedContext)"),
    # cancellation
    _r("CANCEL-001", "must", "prompt-turn#cancellation",
       "after session/cancel the turn ends with stopReason cancelled within the bound"),
    _r("CANCEL-002", "should", "prompt-turn#cancellation",
       "a permission request answered `cancelled` during cancellation is handled (turn ends cancelled)"),
    _r("CANCEL-003", "should", "cancellation",
       "a request cancelled with $/cancel_request is still answered (result or -32800) within the bound"),
    # JSON-RPC
    _r("RPC-001", "must", "overview#communication-model", "unknown methods are answered with error -32601"),
    _r("RPC-002", "must", "extensibility#custom-requests", "`_`-prefixed extension requests get a response"),
    _r("RPC-003", "should", "extensibility#custom-notifications",
       "unknown `_`-prefixed notifications are ignored (the agent keeps working)"),
    _r("RPC-004", "must", "overview#communication-model", "the agent survives invalid JSON input"),
    _r("RPC-005", "should", "overview#communication-model", "invalid JSON is answered with error -32700"),
    _r("RPC-006", "must", "overview#communication-model", "the agent survives a JSON array (batch) message"),
    _r("RPC-007", "should", "overview#communication-model",
       "a JSON array (batch) message is answered with an error (ACP has no batches)"),
    _r("RPC-008", "must", "overview#communication-model",
       "a request with invalid params is answered with an error, and the agent survives"),
    _r("RPC-009", "should", "overview#communication-model", "invalid params are answered with error -32602"),
    _r("RPC-010", "must", "overview#communication-model",
       "every response carries the id of its request (string ids and 0 included), exactly once"),
    _r("RPC-011", "must", "extensibility#the-_meta-field", "`_meta` is tolerated everywhere"),
    _r("RPC-012", "should", "overview#communication-model",
       "an invalid request object (method not a string) is answered with error -32600"),
    # schema
    _r("SCHEMA-001", "must", "schema", "every message the agent sends matches the ACP schema"),
    _r("SCHEMA-002", "should", "schema",
       "every message the agent sends matches the schema without its leniency rules"),
    # lifecycle
    _r("SHUT-001", "should", "transports#stdio", "the agent exits within the bound once its stdin closes"),
)

_BY_ID = {r.id: r for r in REQUIREMENTS}


def requirement(id: str) -> Requirement:
    """The requirement with this id (KeyError if unknown)."""
    return _BY_ID[id]
