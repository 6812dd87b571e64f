"""The policy proxy (``acplink proxy policy``, ``--proxy acplink:policy=RULES``): it answers the
agent's ``session/request_permission`` by rule before the request reaches the editor.

A rule is ``KIND`` (a tool kind: ``read``, ``edit``, ``execute``, ...), ``KIND:GLOB`` (that kind
and a tool-call title matching the shell-style GLOB), ``*`` (every tool call) or ``*:GLOB``
(any kind, the title matching GLOB); its decision is ``allow`` or ``deny``. Rules are tried in
the order given; the first that matches answers (``allow`` selects ``allow_once``, else
``allow_always``; ``deny`` ``reject_once``, else ``reject_always``: the matching of
:class:`~acplink.PermissionRule` and the choice of :class:`~acplink.PermissionPolicy`). A
request no rule matches goes on to the editor (``default="ask"``), or is answered by the
``default`` decision. Each decision is written as one line to ``log`` (stderr by default).
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterable
from typing import IO, Any, Literal

from ..client.permissions import Decision, PermissionPolicy, PermissionRule
from ..errors import UsageError
from ..methods import INITIALIZE, SESSION_REQUEST_PERMISSION
from ..protocol.state import default_protocol, protocol_of_version
from ..schema import RequestPermissionRequest, ToolKind, dump, parse
from .app import ProxyApp, ProxyContext

__all__ = ["parse_policy_spec", "parse_rule", "policy_proxy"]

#: the tool kinds a rule may name
KINDS: tuple[str, ...] = tuple(typing.get_args(ToolKind))

#: what a request no rule matches gets: the editor's answer, or a fixed decision
Default = Literal["ask", "allow", "deny"]


def parse_rule(text: str, decision: Decision) -> PermissionRule:
    """One rule (``KIND``, ``KIND:GLOB``, ``*`` or ``*:GLOB``) with its decision; a bad one
    raises :class:`~acplink.errors.UsageError` naming it."""
    kind, sep, pattern = text.strip().partition(":")
    if not kind:
        raise UsageError(f"policy rule {text!r}: give a tool kind or * before ':' ({', '.join(KINDS)})")
    if kind != "*" and kind not in KINDS:
        raise UsageError(f"policy rule {text!r}: unknown tool kind {kind!r}; kinds: {', '.join(KINDS)}, or *")
    if sep and not pattern:
        raise UsageError(f"policy rule {text!r}: an empty title pattern after ':'")
    return PermissionRule(kind=None if kind == "*" else typing.cast(Any, kind),
                          title_pattern=pattern or None, decision=decision)


def parse_policy_spec(spec: str) -> tuple[list[PermissionRule], Default]:
    """The rules and default of ``acplink:policy=SPEC``: comma-separated ``allow:RULE`` /
    ``deny:RULE`` items, in order, and optionally ``default:ask|allow|deny``
    (``allow:read,deny:execute,deny:*:rm *``)."""
    rules: list[PermissionRule] = []
    default: Default = "ask"
    for item in spec.split(","):
        decision, sep, rule = item.strip().partition(":")
        if decision == "default" and rule in ("ask", "allow", "deny"):
            default = typing.cast(Default, rule)
        elif sep and decision in ("allow", "deny"):
            rules.append(parse_rule(rule, typing.cast(Decision, decision)))
        else:
            raise UsageError(f"policy item {item.strip()!r}: write allow:RULE, deny:RULE or default:ask|allow|deny "
                             f"(acplink:policy=allow:read,deny:execute)")
    return rules, default


def _describe(rule: PermissionRule) -> str:
    kind = rule.kind or "*"
    return f"{kind}:{rule.title_pattern}" if rule.title_pattern else kind


def policy_proxy(rules: Iterable[PermissionRule], *, default: Default = "ask",
                 log: IO[str] | None = None) -> ProxyApp:
    """A proxy answering permission requests by ``rules`` (see the module doc)."""
    rules = tuple(rules)
    if default not in ("ask", "allow", "deny"):
        raise UsageError(f"policy default must be 'ask', 'allow' or 'deny', not {default!r}")
    answer = {"allow": PermissionPolicy(default="allow", remember=False),
              "deny": PermissionPolicy(default="deny", remember=False)}
    app = ProxyApp("policy")

    def note(decision: str, why: str, params: RequestPermissionRequest) -> None:
        call = params.tool_call
        out = log if log is not None else sys.stderr
        print(f"acplink policy: {decision} {call.kind or 'other'} {call.title or ''!r} ({why}; "
              f"session {params.session_id}, tool call {call.tool_call_id})", file=out, flush=True)

    protocol = [default_protocol()]  # (the version the chain agreed on, from initialize)

    @app.from_client(INITIALIZE)
    async def initialize(ctx: ProxyContext, raw: Any) -> Any:
        result = await ctx.forward(raw)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        protocol[0] = protocol_of_version(version) or default_protocol()
        return result

    @app.from_agent(SESSION_REQUEST_PERMISSION)
    async def request_permission(ctx: ProxyContext, raw: Any) -> Any:
        proto = protocol[0]
        info = proto.info(SESSION_REQUEST_PERMISSION)
        model = getattr(info.models, info.params_name, None) if info is not None and info.models else None
        native = parse(model or RequestPermissionRequest, raw, name=SESSION_REQUEST_PERMISSION)
        codec = proto.client_codec  # (v2: its request as the v1 one a policy decides, and back)
        params = codec.permission_request(native, lambda _id: None) if codec is not None else native
        rule = next((r for r in rules if r.matches(params)), None)
        if rule is not None:
            decision, why = rule.decision, f"rule {rule.decision}:{_describe(rule)}"
        elif default != "ask":
            decision, why = default, "default"
        else:
            note("ask", "no rule", params)
            return await ctx.forward(raw)
        note(decision, why, params)
        answered = await answer[decision].decide(params)
        return codec.permission_answer(answered) if codec is not None else dump(answered)

    return app
