"""PermissionPolicy: defaults, rules, remembered *_always choices, the ask callback, timeouts."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from acplink import builders as b
from acplink.client.permissions import PermissionPolicy, PermissionRule, allow_scope, with_known
from acplink.errors import UsageError
from acplink.schema import (
    RequestPermissionOutcomeCancelled,
    RequestPermissionOutcomeTimeout,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    ToolCallUpdate,
    dump,
    parse,
)

ALL = ("allow_once", "allow_always", "reject_once", "reject_always")


def request(kind: str | None = "execute", title: str = "Run `ls`", options: tuple[str, ...] = ALL,
            meta: dict[str, Any] | None = None) -> RequestPermissionRequest:
    call = ToolCallUpdate(tool_call_id="c1", title=title, **({"kind": kind} if kind else {}))
    opts = [b.permission_option(f"opt-{k}", name=k.replace("_", " "), kind=k) for k in options]  # type: ignore[arg-type]
    if meta is None:
        return RequestPermissionRequest(session_id="s", tool_call=call, options=opts)
    return RequestPermissionRequest(session_id="s", tool_call=call, options=opts, meta=meta)


def chosen(resp: RequestPermissionResponse) -> str | None:
    """The selected option's kind (from its id), or the outcome name."""
    wire = dump(resp)
    again = parse(RequestPermissionResponse, wire, strict=True)  # always valid on the wire
    assert dump(again) == wire
    if isinstance(resp.outcome, SelectedPermissionOutcome):
        return resp.outcome.option_id.removeprefix("opt-")
    assert isinstance(resp.outcome, RequestPermissionOutcomeCancelled | RequestPermissionOutcomeTimeout)
    return resp.outcome.outcome


async def test_default_deny_prefers_reject_once() -> None:
    p = PermissionPolicy()
    assert chosen(await p.decide(request())) == "reject_once"
    assert chosen(await p.decide(request(options=("allow_once", "reject_always")))) == "reject_always"
    assert chosen(await p.decide(request(options=("allow_once", "allow_always")))) == "cancelled"


async def test_default_allow_prefers_allow_once() -> None:
    p = PermissionPolicy(default="allow")
    assert chosen(await p.decide(request())) == "allow_once"
    assert chosen(await p.decide(request(options=("allow_always", "reject_once")))) == "allow_always"
    assert chosen(await p.decide(request(options=("reject_once",)))) == "cancelled"


async def test_allow_all_and_deny_all() -> None:
    assert chosen(await PermissionPolicy.allow_all().decide(request())) == "allow_once"
    assert chosen(await PermissionPolicy.deny_all().decide(request())) == "reject_once"


async def test_rules_first_match_wins() -> None:
    p = PermissionPolicy(rules=[
        PermissionRule(kind="read", decision="allow"),
        PermissionRule(title_pattern="Run `rm *", decision="deny"),
        PermissionRule(kind="execute", decision="allow"),
    ])
    assert chosen(await p.decide(request(kind="read", title="Read x"))) == "allow_once"
    assert chosen(await p.decide(request(kind="execute", title="Run `rm -rf /`"))) == "reject_once"
    assert chosen(await p.decide(request(kind="execute", title="Run `ls`"))) == "allow_once"
    assert chosen(await p.decide(request(kind="edit", title="Edit"))) == "reject_once"  # the default


async def test_rule_kind_and_title_must_both_match() -> None:
    rule = PermissionRule(kind="edit", title_pattern="*.md", decision="allow")
    assert rule.matches(request(kind="edit", title="Edit README.md"))
    assert not rule.matches(request(kind="edit", title="Edit main.py"))
    assert not rule.matches(request(kind="read", title="Read README.md"))
    assert PermissionRule(kind="other").matches(request(kind=None))  # no kind counts as "other"
    with pytest.raises(UsageError):
        PermissionRule(decision="maybe")  # type: ignore[arg-type]


async def test_allow_always_is_remembered_for_the_same_tool_call_only() -> None:
    answers = ["opt-allow_always"]
    asked: list[str] = []

    async def ask(params: RequestPermissionRequest) -> str | None:
        asked.append(params.tool_call.title or "")
        return answers.pop(0) if answers else "opt-reject_once"

    p = PermissionPolicy(default="ask", ask=ask)
    assert chosen(await p.decide(request(kind="execute", title="one"))) == "allow_always"
    assert chosen(await p.decide(request(kind="execute", title="one"))) == "allow_always"
    assert chosen(await p.decide(request(kind="execute", title="one", options=("allow_once", "reject_once")))) \
        == "allow_once"
    assert asked == ["one"]  # not asked again for the same title and kind
    assert p.remembered == {"tool:execute:one": "allow"}
    assert chosen(await p.decide(request(kind="execute", title="two"))) == "reject_once"  # another title asks
    assert chosen(await p.decide(request(kind="edit", title="one"))) == "reject_once"  # another kind asks
    assert asked == ["one", "two", "one"]
    p.forget()
    assert chosen(await p.decide(request(kind="execute", title="one"))) == "reject_once"


def _call(kind: str, title: str, **fields: Any) -> RequestPermissionRequest:
    call = ToolCallUpdate(tool_call_id="c1", title=title, kind=kind, **fields)  # type: ignore[arg-type]
    opts = [b.permission_option(f"opt-{k}", name=k, kind=k) for k in ALL]  # type: ignore[arg-type]
    return RequestPermissionRequest(session_id="s", tool_call=call, options=opts)


async def test_a_hostile_kind_is_asked_again() -> None:
    """Reads allowed always: a tool call the agent calls a ``read`` that runs ``rm -rf ~`` (or
    carries another title, or writes) is asked again; the remembered scope is what the client
    can check (the command line, the paths written, the title and kind together)."""
    asked: list[str] = []

    async def ask(params: RequestPermissionRequest) -> str | None:
        asked.append(params.tool_call.title or "")
        return "opt-allow_always" if len(asked) == 1 else "opt-reject_once"

    p = PermissionPolicy(default="ask", ask=ask)
    read = _call("read", "Read README.md", locations=[b.location("/w/README.md")])
    assert chosen(await p.decide(read)) == "allow_always"
    assert chosen(await p.decide(read)) == "allow_always"  # the same read: not asked again
    for hostile in (_call("read", "rm -rf ~", raw_input={"command": "rm -rf ~"}),
                    _call("read", "Read README.md", raw_input={"command": ["rm", "-rf", "/home/u"]}),
                    _call("read", "Read README.md", content=[b.diff("/w/README.md", new_text="x", old_text="y")]),
                    _call("read", "rm -rf ~")):
        assert chosen(await p.decide(hostile)) == "reject_once"
    assert len(asked) == 5
    assert list(p.remembered) == ["tool:read:Read README.md"]


async def test_allow_always_for_a_command_or_a_written_path() -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        return "opt-allow_always" if params.tool_call.title in ("Run ls", "Edit a.py") else "opt-reject_once"

    p = PermissionPolicy(default="ask", ask=ask)
    assert chosen(await p.decide(_call("execute", "Run ls", raw_input={"command": ["ls", "-la"]}))) == "allow_always"
    # the same command line, however the agent names or labels it; another command asks
    assert chosen(await p.decide(_call("other", "List files", raw_input={"command": "ls", "args": ["-la"]}))) \
        == "allow_always"
    assert chosen(await p.decide(_call("execute", "Run ls /", raw_input={"command": ["ls", "-la", "/"]}))) \
        == "reject_once"
    assert chosen(await p.decide(_call("edit", "Edit a.py", locations=[b.location("/w/a.py")]))) == "allow_always"
    assert chosen(await p.decide(_call("edit", "Change a.py", content=[b.diff("/w/a.py", new_text="x")]))) == "allow_always"
    assert chosen(await p.decide(_call("edit", "Edit b.py", locations=[b.location("/w/b.py")]))) == "reject_once"
    assert p.remembered == {"command:ls -la": "allow", "write:/w/a.py": "allow"}
    assert allow_scope(_call("delete", "Delete", locations=[b.location("/b")], content=[b.diff("/a", new_text="")])) \
        == "write:/a\n/b"


def test_a_request_is_completed_from_the_known_tool_call() -> None:
    """A request that names an announced tool call by id and title alone is scoped by what the
    client knows of it (its diff's path), not by its title."""
    from acplink.client.state import ToolCallState

    known = ToolCallState("c1", title="Write a.py", kind="edit", content=[b.diff("/w/a.py", new_text="x")])
    bare = _call("edit", "Write a.py")
    assert allow_scope(bare) == "tool:edit:Write a.py"
    assert allow_scope(with_known(bare, known)) == "write:/w/a.py"
    assert with_known(bare, None) is bare
    claimed = _call("read", "Read a.py", raw_input={"command": "cat a.py"})  # what the request says wins
    assert allow_scope(with_known(claimed, known)) == "command:cat a.py"


async def test_reject_always_is_remembered_even_over_rules() -> None:
    p = PermissionPolicy(default="deny", rules=[PermissionRule(kind="fetch", decision="allow")])
    # only reject_always offered: the default deny picks it and remembers it (for the kind: a
    # refusal may reach further than what was asked)
    assert chosen(await p.decide(request(kind="delete", options=("allow_once", "reject_always")))) == "reject_always"
    assert p.remembered == {"kind:delete": "deny"}
    assert chosen(await p.decide(request(kind="delete", title="another"))) == "reject_always"
    assert chosen(await p.decide(request(kind="fetch"))) == "allow_once"


async def test_remember_off() -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        return "opt-allow_always"

    p = PermissionPolicy(default="ask", ask=ask, remember=False)
    await p.decide(request())
    assert p.remembered == {}


async def test_ask_none_means_cancelled() -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        return None

    assert chosen(await PermissionPolicy(default="ask", ask=ask).decide(request())) == "cancelled"


async def test_ask_with_an_option_not_offered_answers_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        return "opt-made-up"

    with caplog.at_level(logging.WARNING, logger="acplink.client.permissions"):
        assert chosen(await PermissionPolicy(default="ask", ask=ask).decide(request())) == "cancelled"
    assert "opt-made-up" in caplog.text


async def test_timeout_answers_cancelled_or_timeout_when_opted_in() -> None:
    never = asyncio.Event()
    calls = 0

    async def ask(params: RequestPermissionRequest) -> str | None:
        nonlocal calls
        calls += 1
        await never.wait()
        return "opt-allow_once"

    p = PermissionPolicy(default="ask", ask=ask, timeout=0.05)
    assert chosen(await p.decide(request())) == "cancelled"
    resp = await p.decide(request(meta={"acplink": {"acceptsTimeout": True}}))
    assert chosen(resp) == "timeout"
    assert dump(resp) == {"outcome": {"outcome": "timeout"}}
    assert chosen(await p.decide(request(meta={"acplink": {"acceptsTimeout": "yes"}}))) == "cancelled"
    assert calls == 3


async def test_timeout_not_hit_when_answered() -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        await asyncio.sleep(0)
        return "opt-allow_once"

    assert chosen(await PermissionPolicy(default="ask", ask=ask, timeout=30).decide(request())) == "allow_once"


async def test_errors_inside_ask_propagate() -> None:
    async def ask(params: RequestPermissionRequest) -> str | None:
        raise TimeoutError("the UI's own timeout, not ours")

    with pytest.raises(TimeoutError):
        await PermissionPolicy(default="ask", ask=ask, timeout=30).decide(request())


async def test_cancellation_of_the_request_propagates() -> None:
    started = asyncio.Event()

    async def ask(params: RequestPermissionRequest) -> str | None:
        started.set()
        await asyncio.Event().wait()
        return None

    task = asyncio.create_task(PermissionPolicy(default="ask", ask=ask).decide(request()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_bad_configuration() -> None:
    with pytest.raises(UsageError):
        PermissionPolicy(default="ask")
    with pytest.raises(UsageError):
        PermissionPolicy(default="sometimes")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        PermissionPolicy(timeout=0)


async def test_wire_shape_of_selected() -> None:
    resp = await PermissionPolicy.allow_all().decide(request())
    assert dump(resp) == {"outcome": {"outcome": "selected", "optionId": "opt-allow_once"}}
