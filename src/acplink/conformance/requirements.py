"""The requirements the conformance checker verifies: id, level, spec section, description.

Spec references are ``page#anchor`` under https://agentclientprotocol.com/protocol/ (v1). The
test suite tags its tests with the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

__all__ = ["REQUIREMENTS", "SPEC_BASE", "KitRequirement", "Level", "Requirement", "make_requirement", "requirement",
           "tck_data", "tck_requirements"]

Level = Literal["must", "should", "informational"]

SPEC_BASE = "https://agentclientprotocol.com/protocol/v1/"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    spec: str
    title: str
    #: the ids of the official conformance kit (acp-tck; of its v1 or v2 suite, as this requirement's) it covers
    tck: tuple[str, ...] = ()
    #: where the spec pages ``spec`` names are (the v1 pages, or another version's)
    spec_base: str = SPEC_BASE

    @property
    def url(self) -> str:
        return self.spec_base + self.spec


def make_requirement(id: str, level: Level, spec: str, title: str, *tck: str,
                     spec_base: str = SPEC_BASE) -> Requirement:
    """One row of a requirement table (the agent's v1 and v2 ones, the client's): ``tck``, the
    numbers of the acp-tck requirements it covers (``"INIT-001"`` for ``ACP-INIT-001``)."""
    return Requirement(id, level, spec, title, tuple(f"ACP-{t}" for t in tck), spec_base)


_r = make_requirement


REQUIREMENTS: tuple[Requirement, ...] = (
    # initialization
    _r("INIT-001", "must", "initialization", "initialize is answered with a valid InitializeResponse", "INIT-001"),
    _r("INIT-002", "must", "initialization#version-negotiation",
       "a supported protocol version is answered with the same version", "INIT-002"),
    _r("INIT-003", "must", "initialization#version-negotiation",
       "an unknown protocol version is answered with the latest version the agent supports (not an error)",
       "INIT-003"),
    _r("INIT-004", "should", "initialization#implementation-information",
       "the agent names itself (agentInfo with name and version)", "INIT-004"),
    _r("AUTH-001", "must", "initialization",
       "authenticate with the method given by --auth-method succeeds", "AUTH-003"),
    _r("AUTH-002", "should", "initialization#authentication-methods", "the advertised auth method ids are unique",
       "AUTH-001"),
    _r("AUTH-003", "must", "authentication",
       "no `terminal` auth method is offered to a client that did not advertise auth.terminal", "AUTH-002"),
    _r("AUTH-004", "should", "authentication",
       "with no auth methods advertised, session/new never fails with -32000 (authentication required)",
       "AUTH-005"),
    _r("AUTH-005", "must", "authentication",
       "logout works where advertised (only run with --allow-logout: it may end the user's login)", "AUTH-004"),
    # capabilities
    _r("CAP-001", "must", "initialization#client-capabilities",
       "the agent never calls fs/* methods the client did not advertise", "CLIENTCAP-001"),
    _r("CAP-002", "must", "initialization#client-capabilities",
       "the agent never calls terminal/* methods the client did not advertise", "CLIENTCAP-002"),
    _r("CAP-003", "must", "initialization#client-capabilities",
       "the agent never calls elicitation or other capability-gated client methods the client did not advertise",
       "CLIENTCAP-003"),
    _r("CAP-004", "must", "initialization#agent-capabilities",
       "every method the agent advertises is implemented (never -32601)"),
    # sessions
    _r("SESS-001", "must", "session-setup#creating-a-session",
       "session/new is answered with a valid NewSessionResponse", "SESSION-001"),
    _r("SESS-002", "must", "session-setup#session-id", "each session/new returns a distinct session id",
       "SESSION-002"),
    _r("SESS-003", "should", "session-setup#creating-a-session",
       "no session/update names a new session before the session/new response that returns its id"),
    _r("SESS-010", "must", "session-list", "session/list works where advertised", "LIST-001"),
    _r("SESS-011", "must", "session-setup#loading-sessions",
       "session/load works where advertised (history replayed before the response)", "LOAD-001"),
    _r("SESS-012", "must", "session-setup", "session/resume works where advertised", "RESUME-001"),
    _r("SESS-013", "must", "session-setup", "session/close works where advertised", "CLOSE-001"),
    _r("SESS-014", "must", "session-setup", "session/delete works where advertised", "DELETE-001"),
    _r("SESS-015", "should", "session-setup", "session/fork works where advertised (unstable)"),
    _r("SESS-016", "must", "session-setup#loading-sessions",
       "no history of a loaded session arrives after the session/load response", "LOAD-002"),
    _r("SESS-017", "should", "session-setup#loading-sessions",
       "the session/load result is an object ({}), not null", "LOAD-003"),
    _r("SESS-018", "must", "session-setup",
       "session/resume replays no history (no message or thought chunks before its response)", "RESUME-002"),
    _r("SESS-019", "must", "session-list",
       "session/list filtered by a cwd no session uses answers `sessions: []`", "LIST-002"),
    _r("SESS-020", "should", "session-delete", "session/delete of an unknown session succeeds", "DELETE-002"),
    _r("SESS-021", "must", "session-setup",
       "session/close during a running prompt ends that turn with stopReason cancelled", "CLOSE-002"),
    _r("SESS-022", "must", "session-setup",
       "session/new with additionalDirectories is accepted where advertised", "ADDDIRS-001"),
    # modes and config options
    _r("MODE-001", "must", "session-modes", "the current mode is one of the available modes", "MODES-001"),
    _r("MODE-002", "must", "session-modes", "session/set_mode to another available mode succeeds", "MODES-002"),
    _r("CONFIG-001", "must", "session-config-options",
       "every config option's current value is valid for its type (a select's value is one of its options)",
       "CONFIG-001"),
    _r("CONFIG-002", "must", "session-config-options",
       "session/set_config_option answers with the complete list of options, the new value applied", "CONFIG-002"),
    _r("CONFIG-003", "must", "session-config-options",
       "no boolean config option unless the client advertised session.configOptions.boolean", "CONFIG-003"),
    # prompt turns
    _r("PROMPT-001", "must", "prompt-turn#stop-reasons",
       "a prompt turn ends with a response carrying a valid stopReason", "PROMPT-001"),
    _r("PROMPT-002", "must", "prompt-turn#4-check-for-completion",
       "every session/update of a turn arrives before the turn's response", "CANCEL-002"),
    _r("PROMPT-003", "must", "prompt-turn#3-agent-reports-output",
       "session/update is only sent for sessions that exist", "PROMPT-002"),
    _r("PROMPT-004", "should", "tool-calls#updating",
       "tool_call_update only names tool calls announced with tool_call"),
    _r("PROMPT-005", "should", "prompt-turn", "a prompt for an unknown session is answered with an error",
       "INFO-UNKNOWNSESSION-001"),
    _r("PROMPT-006", "must", "prompt-turn#3-agent-reports-output",
       "the updates sent during a prompt turn name the prompted session", "PROMPT-002"),
    # content
    _r("CONTENT-001", "must", "initialization#prompt-capabilities",
       "prompts with text and resource_link blocks are accepted", "PROMPT-003"),
    _r("CONTENT-002", "must", "initialization#prompt-capabilities", "image blocks are accepted when advertised",
       "PROMPTCAP-001"),
    _r("CONTENT-003", "must", "initialization#prompt-capabilities", "audio blocks are accepted when advertised",
       "PROMPTCAP-002"),
    _r("CONTENT-004", "must", "initialization#prompt-capabilities",
       "embedded resource blocks are accepted when advertised (embeddedContext)", "PROMPTCAP-003"),
    # cancellation
    _r("CANCEL-001", "must", "prompt-turn#cancellation",
       "after session/cancel the turn ends with stopReason cancelled within the bound", "CANCEL-001"),
    _r("CANCEL-002", "should", "prompt-turn#cancellation",
       "a permission request answered `cancelled` during cancellation is handled (turn ends cancelled)"),
    _r("CANCEL-003", "should", "cancellation",
       "a request cancelled with $/cancel_request is still answered (result or -32800) within the bound"),
    # JSON-RPC
    _r("RPC-001", "must", "overview#communication-model", "unknown methods are answered with error -32601",
       "JSONRPC-004"),
    _r("RPC-002", "must", "extensibility#custom-requests", "`_`-prefixed extension requests get a response",
       "EXT-001"),
    _r("RPC-003", "should", "extensibility#custom-notifications",
       "unknown `_`-prefixed notifications are ignored (the agent keeps working)"),
    _r("RPC-004", "must", "overview#communication-model",
       "the agent survives malformed input (invalid JSON, a JSON object that is not JSON-RPC)",
       "INFO-PARSE-001", "JSONRPC-005"),
    _r("RPC-005", "should", "overview#communication-model", "invalid JSON is answered with error -32700",
       "INFO-PARSE-001"),
    _r("RPC-006", "should", "overview#communication-model",
       "the agent survives a JSON array (batch) message (v1 has no batches)"),
    _r("RPC-007", "should", "overview#communication-model",
       "a JSON array (batch) message is answered with an error (ACP has no batches)"),
    _r("RPC-008", "must", "overview#communication-model",
       "a request with invalid params is answered with an error, and the agent survives", "JSONRPC-005"),
    _r("RPC-009", "should", "overview#communication-model", "invalid params are answered with error -32602"),
    _r("RPC-010", "must", "overview#communication-model",
       "every response carries the id of its request (string ids and 0 included), exactly once", "JSONRPC-001"),
    _r("RPC-011", "must", "extensibility#the-_meta-field", "`_meta` is tolerated everywhere", "META-001"),
    _r("RPC-012", "should", "overview#communication-model",
       "an invalid request object (method not a string) is answered with error -32600"),
    _r("RPC-013", "must", "overview#communication-model",
       "notifications (session/cancel, unknown `_` ones) are never answered", "JSONRPC-003"),
    _r("RPC-014", "should", "overview#communication-model",
       "every error the agent sends has a non-empty, single-line message", "ERROR-001"),
    _r("RPC-015", "informational", "overview#communication-model",
       'a JSON object that is not JSON-RPC ({"foo":"bar"}) is answered with error -32600', "INFO-INVALIDREQ-001"),
    _r("RPC-016", "should", "extensibility#custom-requests",
       "an unknown `_`-prefixed request is answered with error -32601, not a result (e.g. `result: null`)",
       "JSONRPC-004"),
    # schema and transport
    _r("SCHEMA-001", "must", "schema", "every message the agent sends matches the ACP schema",
       "SCHEMA-001", "TRANSPORT-001", "JSONRPC-002"),
    _r("SCHEMA-002", "should", "schema",
       "every message the agent sends matches the schema without its leniency rules"),
    _r("SCHEMA-003", "should", "extensibility#the-_meta-field",
       "no message the agent sends has root keys its schema does not declare (custom data goes in _meta)",
       "SCHEMA-002"),
    _r("TRANS-001", "must", "transports#stdio", "everything the agent writes to stdout is valid UTF-8",
       "TRANSPORT-002"),
    _r("TRANS-002", "informational", "transports#stdio",
       "what the agent writes to stderr during a session (reported, never judged)", "STDERR-001"),
    # lifecycle
    _r("SHUT-001", "should", "transports#stdio", "the agent exits within the bound once its stdin closes",
       "SHUTDOWN-001"),
)

_BY_ID = {r.id: r for r in REQUIREMENTS}


def requirement(id: str) -> Requirement:
    """The requirement with this id (KeyError if unknown)."""
    return _BY_ID[id]


@dataclass(frozen=True)
class KitRequirement:
    """One requirement of the official conformance kit (acp-tck) and the acplink ones covering it
    (``not_covered``: why none does, when none does)."""

    id: str
    tier: str  # MANDATORY | CAPABILITY | ADVISORY | INFORMATIONAL
    capability: str | None
    summary: str
    covered_by: tuple[str, ...]
    not_covered: str = ""


def tck_data() -> dict[str, Any]:
    """``tck_ids.json``: the kit's v1 ids (top level) and v2 ids (``v2``), with their sources."""
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath("tck_ids.json").read_text(encoding="utf-8"))
    return data


def tck_requirements(protocol: int = 1) -> list[KitRequirement]:
    """The kit's requirement ids of ``protocol`` (1 or 2; vendored in ``tck_ids.json``), each
    with the acplink requirements that cover it (empty when none does, with the reason)."""
    from .suites import suite_of

    suite = suite_of(protocol)
    data = tck_data()
    if suite.tck_key is not None:
        data = data[suite.tck_key]
    ours: Sequence[Requirement] = suite.requirements
    reasons = data.get("not_covered", {})
    return [KitRequirement(k["id"], k["tier"], k.get("capability"), k.get("summary", ""),
                           tuple(r.id for r in ours if k["id"] in r.tck), reasons.get(k["id"], ""))
            for k in data["requirements"]]
