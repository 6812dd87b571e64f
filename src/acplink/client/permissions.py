"""Answering ``session/request_permission``: rules, a default, remembered choices, a timeout.

:meth:`PermissionPolicy.decide` picks, in this order:

1. a remembered choice (``remember=True``): once an ``allow_always`` option was selected, later
   requests for *the same thing* select an allow option again, without asking; what counts as
   the same thing is what the client can check itself (:func:`allow_scope`), never the kind the
   agent claims alone: the command line when the tool call's ``rawInput`` carries one, else the
   paths a write touches (its diffs' paths, and its locations for an ``edit``, ``delete`` or
   ``move``), else the tool call's title and kind together. A ``reject_always`` choice is
   remembered for the tool kind (a refusal that reaches further errs on the safe side);
2. the first matching :class:`PermissionRule` (``kind`` equal, ``title_pattern`` a
   shell-style glob matched against the whole tool-call title, case-sensitive);
3. the ``default``: ``"deny"``, ``"allow"`` or ``"ask"`` (call the ``ask`` callback).

"allow" selects ``allow_once`` if offered, else ``allow_always``; "deny" selects
``reject_once``, else ``reject_always``. When no option of the wanted kind is offered the
answer is ``cancelled`` (the agent must treat that as "not allowed").

A *confining* policy (``confine=True``; :meth:`PermissionPolicy.deny_all`) denies what an
agent could do without asking too: a :class:`Client` with it advertises and serves no
``fs/write_text_file`` and no ``terminal/*`` (the agent may read inside the session's roots,
nothing else); an agent that calls them anyway gets "method not found".

The ``ask`` callback returns an ``optionId`` or ``None`` (= cancelled). An ``optionId`` that
was not offered is answered as ``cancelled`` and logged (a UI bug must not approve anything
by accident, nor crash the agent's turn). With ``timeout`` set, an ``ask`` that does not
answer in time is answered ``cancelled``; when the request's ``_meta`` has
``{"acplink": {"acceptsTimeout": true}}`` the agent opted in to the seed-era ``timeout``
outcome and gets that instead (a documented extension; see ``seeds/README.md``).
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import shlex
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UsageError
from ..schema import (
    Diff,
    PermissionOption,
    RequestPermissionOutcomeCancelled,
    RequestPermissionOutcomeTimeout,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    ToolKind,
)

__all__ = ["AskCallback", "Decision", "PermissionPolicy", "PermissionRule", "allow_scope", "cancelled_answer",
           "with_known"]

log = logging.getLogger("acplink.client.permissions")

Decision = Literal["allow", "deny"]
AskCallback = Callable[[RequestPermissionRequest], Awaitable[str | None]]

_PREFERENCE: dict[str, tuple[str, str]] = {
    "allow": ("allow_once", "allow_always"),
    "deny": ("reject_once", "reject_always"),
}


@dataclass(frozen=True)
class PermissionRule:
    """Allow or deny tool calls of one ``kind`` and/or whose title matches a glob."""

    kind: ToolKind | None = None
    title_pattern: str | None = None
    decision: Decision = "deny"

    def __post_init__(self) -> None:
        if self.decision not in ("allow", "deny"):
            raise UsageError(f"PermissionRule decision must be 'allow' or 'deny', not {self.decision!r}")

    def matches(self, params: RequestPermissionRequest) -> bool:
        """True when the request's tool call fits this rule."""
        call = params.tool_call
        if self.kind is not None and (call.kind or "other") != self.kind:
            return False
        if self.title_pattern is not None:
            return fnmatch.fnmatchcase(call.title or "", self.title_pattern)
        return True


def cancelled_answer() -> RequestPermissionResponse:
    """The ``cancelled`` outcome (also the answer to every pending request of a session
    whose turn the client cancels: see :class:`acplink.Client`)."""
    return RequestPermissionResponse(outcome=RequestPermissionOutcomeCancelled())


#: tool kinds whose locations are the paths they change
_WRITE_KINDS = ("edit", "delete", "move")


def _kind_scope(params: RequestPermissionRequest) -> str:
    return f"kind:{params.tool_call.kind or 'other'}"


def _command_line(raw: Any) -> str | None:
    """The command line a tool call's ``rawInput`` carries (``command`` or ``cmd``, a string or
    an argv list, with ``args`` appended when given apart), or None."""
    if not isinstance(raw, dict):
        return None
    command = raw.get("command", raw.get("cmd"))
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        words = list(command)
    elif isinstance(command, str) and command.strip():
        words = [command.strip()]
    else:
        return None
    args = raw.get("args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        words += args
    return shlex.join(words) if len(words) > 1 or isinstance(command, list) else words[0]


def _written_paths(params: RequestPermissionRequest) -> list[str]:
    call = params.tool_call
    paths = {item.path for item in call.content or () if isinstance(item, Diff)}
    if call.kind in _WRITE_KINDS:
        paths.update(loc.path for loc in call.locations or ())
    return sorted(paths)


def allow_scope(params: RequestPermissionRequest) -> str:
    """What an ``allow_always`` answer to ``params`` allows from then on, as a key: the command
    line (``"command:ls -la"``) when the tool call's ``rawInput`` carries one, else the paths a
    write touches (``"write:/src/a.py"``, one path a line), else the title and the kind together
    (``"tool:read:Read README.md"``). Never the claimed kind alone: an agent calling ``rm -rf ~``
    a ``read`` after reads were allowed is asked again."""
    call = params.tool_call
    command = _command_line(call.raw_input)
    if command is not None:
        return f"command:{command}"
    paths = _written_paths(params)
    if paths:
        return "write:" + "\n".join(paths)
    return f"tool:{call.kind or 'other'}:{call.title or ''}"


def with_known(params: RequestPermissionRequest, known: Any) -> RequestPermissionRequest:
    """``params`` with its tool call completed from what the client already knows of it
    (``known``: the session's :class:`~acplink.client.state.ToolCallState` for that id, or
    None): a request often names an announced tool call by id and title alone, and its diff,
    locations and ``rawInput`` are what :func:`allow_scope` checks."""
    call = params.tool_call
    if known is None:
        return params
    fill = {name: getattr(known, name) for name in ("title", "kind", "content", "locations", "raw_input")
            if getattr(call, name) is None and getattr(known, name) not in (None, [], "")}
    if not fill:
        return params
    return params.model_copy(update={"tool_call": call.model_copy(update=fill)})


def _selected(option: PermissionOption) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=option.option_id))


def _accepts_timeout(meta: dict[str, Any] | None) -> bool:
    ours = meta.get("acplink") if isinstance(meta, dict) else None
    return isinstance(ours, dict) and ours.get("acceptsTimeout") is True


class PermissionPolicy:
    """Decides permission requests (see the module doc for the order and the rules).

    ``remembered`` maps a scope (:func:`allow_scope` for an ``allow_always`` choice,
    ``"kind:KIND"`` for a ``reject_always`` one) to the decision recorded.
    ``confine``: the policy grants nothing at all (see the module doc): only with the default
    "deny" and no "allow" rule.
    """

    def __init__(
        self,
        *,
        default: Literal["deny", "allow", "ask"] = "deny",
        rules: Iterable[PermissionRule] = (),
        remember: bool = True,
        timeout: float | None = None,
        ask: AskCallback | None = None,
        confine: bool = False,
    ) -> None:
        if default not in ("deny", "allow", "ask"):
            raise UsageError(f"default must be 'deny', 'allow' or 'ask', not {default!r}")
        if default == "ask" and ask is None:
            raise UsageError("default='ask' needs an ask callback")
        if timeout is not None and timeout <= 0:
            raise UsageError("timeout must be positive (or None)")
        self.default = default
        self.rules = tuple(rules)
        if confine and (default != "deny" or any(r.decision == "allow" for r in self.rules)):
            raise UsageError("confine=True needs default='deny' and no 'allow' rule")
        self.confine = confine
        self.remember = remember
        self.timeout = timeout
        self.ask = ask
        self.remembered: dict[str, Decision] = {}  # scope -> decision

    @classmethod
    def allow_all(cls) -> PermissionPolicy:
        """A policy that allows everything (``allow_once`` when offered)."""
        return cls(default="allow", remember=False)

    @classmethod
    def deny_all(cls) -> PermissionPolicy:
        """A policy that rejects everything (``reject_once`` when offered) and confines the
        agent: no writes, no terminals (see the module doc)."""
        return cls(default="deny", remember=False, confine=True)

    def forget(self) -> None:
        """Drop every remembered ``*_always`` choice."""
        self.remembered.clear()

    async def decide(self, params: RequestPermissionRequest) -> RequestPermissionResponse:
        """Answer one ``session/request_permission`` request."""
        remembered = self._remembered(params) if self.remember else None
        if remembered is not None:
            option = self._pick(params.options, remembered, prefer_always=True)
            if option is not None:
                return _selected(option)
        for rule in self.rules:
            if rule.matches(params):
                return self._answer(params, self._pick(params.options, rule.decision))
        if self.default == "ask":
            return await self._ask(params)
        return self._answer(params, self._pick(params.options, self.default))

    def _pick(self, options: list[PermissionOption], decision: Decision, *,
              prefer_always: bool = False) -> PermissionOption | None:
        order = _PREFERENCE[decision][::-1] if prefer_always else _PREFERENCE[decision]
        for wanted in order:
            for option in options:
                if option.kind == wanted:
                    return option
        return None

    def _answer(self, params: RequestPermissionRequest, option: PermissionOption | None) -> RequestPermissionResponse:
        if option is None:
            return cancelled_answer()
        if self.remember and option.kind == "allow_always":
            self.remembered[allow_scope(params)] = "allow"
        elif self.remember and option.kind == "reject_always":
            self.remembered[_kind_scope(params)] = "deny"
        return _selected(option)

    def _remembered(self, params: RequestPermissionRequest) -> Decision | None:
        denied = self.remembered.get(_kind_scope(params))
        if denied == "deny":
            return denied
        return self.remembered.get(allow_scope(params))

    async def _ask(self, params: RequestPermissionRequest) -> RequestPermissionResponse:
        assert self.ask is not None
        deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline:
                option_id = await self.ask(params)
        except TimeoutError:
            if not deadline.expired():
                raise
            if _accepts_timeout(params.meta):
                return RequestPermissionResponse(outcome=RequestPermissionOutcomeTimeout())
            return cancelled_answer()
        if option_id is None:
            return cancelled_answer()
        for option in params.options:
            if option.option_id == option_id:
                return self._answer(params, option)
        log.warning("permission callback chose option %r, which the agent did not offer; answering cancelled",
                    option_id)
        return cancelled_answer()
