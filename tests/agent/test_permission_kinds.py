"""``ctx.request_permission(tool, options=[...])`` builds its options from kinds, ``(kind,
name)`` pairs and ready ``PermissionOption`` objects, mixed."""

from __future__ import annotations

from typing import Any

import pytest

from acplink import AgentApp, PermissionPolicy, PromptContext, UsageError, connect, schema
from acplink.agent.context import _permission_options


async def test_kinds_shorthand_offers_the_options_and_answers_with_the_pick() -> None:
    app = AgentApp("asker")
    offered: list[list[tuple[str, str, str]]] = []

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        tool = await ctx.start_tool_call("Edit notes.txt", kind="edit")
        if ctx.text == "two":
            answer = await ctx.request_permission(tool, options=["allow_once", "reject_once"])
        else:
            answer = await ctx.request_permission(tool, options=[
                "allow_once", ("allow_always", "Allow edits in this folder"),
                schema.PermissionOption(option_id="no", name="No thanks", kind="reject_once"), "allow_once"])
        await ctx.send_text(f"{answer.outcome} {answer.option_id} {answer.allowed}")

    async def ask(request: schema.RequestPermissionRequest) -> str | None:
        offered.append([(o.option_id, o.name, o.kind) for o in request.options])
        return request.options[-1].option_id  # the last one offered

    async with connect(app, permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session()
        assert await session.prompt("two").text() == "selected reject_once False"
        assert await session.prompt("mixed").text() == "selected allow_once_2 True"
    assert offered == [
        [("allow_once", "Allow", "allow_once"), ("reject_once", "Reject", "reject_once")],
        [("allow_once", "Allow", "allow_once"), ("allow_always", "Allow edits in this folder", "allow_always"),
         ("no", "No thanks", "reject_once"), ("allow_once_2", "Allow", "allow_once")],
    ]


def test_every_kind_of_the_schema_gets_a_name() -> None:
    kinds: list[schema.PermissionOptionKind] = ["allow_once", "allow_always", "reject_once", "reject_always"]
    options = _permission_options(kinds)
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("allow_once", "Allow", "allow_once"), ("allow_always", "Always allow", "allow_always"),
        ("reject_once", "Reject", "reject_once"), ("reject_always", "Always reject", "reject_always")]
    # an explicit option keeps its id: a derived id steps aside
    taken = _permission_options([schema.PermissionOption(option_id="allow_once", name="Yes", kind="allow_always"),
                                 "allow_once"])
    assert [o.option_id for o in taken] == ["allow_once", "allow_once_2"]


@pytest.mark.parametrize(("options", "message"), [
    (["allow"], "unknown permission option kind 'allow' .*allow_once, allow_always, reject_once, reject_always"),
    ([("allow_once",)], "a kind, a \\(kind, name\\) pair or a PermissionOption"),
    ([42], "not 42"),
    ([], "at least one option"),
    ([schema.PermissionOption(option_id="x", name="X", kind="allow_once"),
      schema.PermissionOption(option_id="x", name="Y", kind="reject_once")], "unique"),
])
def test_misuse_is_a_usage_error(options: list[Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _permission_options(options)
