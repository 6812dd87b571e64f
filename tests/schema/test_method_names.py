"""One name per method: a generated constant per wire method of every version's table
(``acplink.methods``), the keys of those tables, and the typed ``on`` of each side."""

from __future__ import annotations

import ast
import inspect
import itertools
import typing
from pathlib import Path

import pytest

import acplink
import acplink.methods
from acplink import AgentApp, Client, Context, UsageError, memory_pair
from acplink.agent._on import AgentOn
from acplink.client._on import ClientOn
from acplink.methods import ELICITATION_CREATE, PROVIDERS_LIST, SESSION_PROMPT
from acplink.protocol.v2 import Method
from acplink.schema import methods as generated
from acplink.schema import v1, v2
from acplink.schema.v1._methods import METHOD_TABLE as V1_ROWS
from acplink.schema.v2._methods import METHOD_TABLE as V2_ROWS

TABLES = {"v1": v1.TABLE, "v2": v2.TABLE}


def _constants() -> dict[str, str]:
    return {name: getattr(acplink.methods, name) for name in acplink.methods.__all__}


def test_every_constant_is_a_wire_method_and_every_method_has_one() -> None:
    constants = _constants()
    wire = {m.method for table in TABLES.values() for m in table.methods}
    assert set(constants.values()) == wire
    assert len(set(constants.values())) == len(constants), "two constants name the same method"
    assert constants["SESSION_PROMPT"] == "session/prompt"
    assert constants["FS_READ_TEXT_FILE"] == "fs/read_text_file"
    assert constants["CANCEL_REQUEST"] == "$/cancel_request"
    assert constants["DOCUMENT_DID_OPEN"] == "document/didOpen"
    assert constants["AUTH_LOGIN"] == "auth/login"  # (v2 only)
    assert constants["SESSION_LOAD"] == "session/load"  # (v1 only)


def test_the_public_module_is_the_generated_one() -> None:
    assert acplink.methods.__all__ == generated.__all__
    assert acplink.methods.SESSION_PROMPT is generated.SESSION_PROMPT
    assert "methods" in acplink.__all__


def test_the_tables_are_keyed_by_the_constants() -> None:
    # the rows name the constant objects themselves (not equal strings spelt again)
    by_value = {v: k for k, v in _constants().items()}
    for rows in (V1_ROWS, V2_ROWS):
        for row in rows:
            assert row[0] is getattr(generated, by_value[row[0]]), row


def test_each_constant_documents_direction_kind_types_and_versions() -> None:
    tree = ast.parse(Path(inspect.getfile(generated)).read_text())
    docs: dict[str, str] = {}
    body = tree.body
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr):
            docs[node.target.id] = after.value.value  # type: ignore[attr-defined]
    assert set(docs) == set(acplink.methods.__all__)
    for name, method in _constants().items():
        for version, table in TABLES.items():
            for info in table.methods:
                if info.method != method:
                    continue
                assert version in docs[name] and f"``{info.params_name}``" in docs[name], name
                if info.result_name:
                    assert f"``{info.result_name}``" in docs[name], name
                assert info.kind in docs[name], name
    assert docs["SESSION_PROMPT"].startswith("client → agent request in v1, v2:")
    assert docs["FS_READ_TEXT_FILE"].startswith("agent → client request in v1:")


def _literals(cls: type) -> set[str]:
    out = set()
    for overload in typing.get_overloads(cls.on):  # type: ignore[attr-defined]
        hint = next(iter(v for k, v in overload.__annotations__.items() if k != "return"))
        if hint.startswith("Literal["):
            out.add(ast.literal_eval(hint.removeprefix("Literal[").removesuffix("]")))
    return out


def test_on_has_an_overload_per_v1_method_of_its_side() -> None:
    assert _literals(AgentOn) == {m.method for m in v1.TABLE.agent_methods()}
    assert _literals(ClientOn) == {m.method for m in v1.TABLE.client_methods()}


def test_the_v2_method_namespace_is_an_alias_of_the_constants() -> None:
    names = {m.method for m in v2.TABLE.methods}
    values = {v for k, v in vars(Method).items() if k.isupper()}
    assert values <= names
    assert Method.SESSION_PROMPT is SESSION_PROMPT
    assert Method.REQUEST_PERMISSION == acplink.methods.SESSION_REQUEST_PERMISSION


def test_on_takes_the_constants_and_the_hook_names() -> None:
    app = AgentApp("names")

    async def prompt(ctx: Context[object]) -> None: ...
    async def providers(ctx: Context[object]) -> None: ...
    async def new_session(ctx: Context[object]) -> None: ...

    assert app.on(SESSION_PROMPT)(prompt) is prompt
    assert app.handlers["prompt"] is prompt  # the wire method of a hook is that hook
    app.on(PROVIDERS_LIST)(providers)
    assert app.methods[(PROVIDERS_LIST, "request")] is providers
    app.on("new_session")(new_session)
    assert app.handlers["new_session"] is new_session
    with pytest.raises(UsageError, match="already registered"):
        app.on("prompt")(prompt)
    with pytest.raises(UsageError, match="unknown agent hook"):
        app.on(acplink.methods.FS_READ_TEXT_FILE)(prompt)  # (a client-side method)


async def test_client_on_takes_the_constants() -> None:
    ours, _theirs = memory_pair()
    client = Client(ours)

    async def elicit(params: object) -> dict[str, str]:
        return {"action": "decline"}

    assert client.on(ELICITATION_CREATE)(elicit) is elicit
    assert client.handlers[(ELICITATION_CREATE, "request")] is elicit
    with pytest.raises(UsageError, match="not a method a client handles"):
        client.on(SESSION_PROMPT)(elicit)
