"""The API types as documented, for users' type checkers (mypy --strict without the pydantic
plugin, pyright strict): the cases in ``tests/typing_cases`` mark each line that must be
reported with ``# error``; every other line must be clean. Also: what REPL completion sees."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from typecheck import CASES, WAITS_FOR_RESULTS, results

import acplink.schema
from acplink import Client, connect

CASE_FILES = sorted(CASES.glob("*.py"))


def _marked(path: Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if line.rstrip().endswith("# error")}


@WAITS_FOR_RESULTS
@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_typing_case(path: Path) -> None:
    res = results()
    expected = _marked(path)
    assert expected, f"{path.name} marks no line: it would check nothing"
    for checker, found in res.errors(f"case_{path.name}").items():
        lines = {line for line, _ in found}
        detail = "\n".join(f"  {line}: {msg}" for line, msg in sorted(found))
        assert lines == expected, (f"{checker} on {path.name}: reported lines {sorted(lines)}, "
                                   f"marked {sorted(expected)}\n{detail}")


def test_connect_takes_the_client_options() -> None:
    # connect() repeats Client's keyword parameters (so that a misspelt one fails type
    # checking): the two lists must stay the same
    client = {n: (p.default, p.annotation) for n, p in inspect.signature(Client).parameters.items()
              if p.kind is p.KEYWORD_ONLY}
    conn = inspect.signature(connect).parameters
    assert client and all(conn[n].kind is conn[n].KEYWORD_ONLY for n in client)
    # except fs= and terminal=, whose None in connect() means "on for a local agent command,
    # off for a remote URL" (the Client of a transport has no such choice to make)
    remote_aware = {"fs", "terminal"}
    assert {n: (conn[n].default, conn[n].annotation) for n in client if n not in remote_aware} == {
        n: v for n, v in client.items() if n not in remote_aware}
    for n in remote_aware:
        assert conn[n].default is None and conn[n].annotation == f"{client[n][1]} | None"
    assert not any(p.kind is p.VAR_KEYWORD for p in conn.values())


def test_a_misspelt_connect_option_fails_at_once() -> None:
    with pytest.raises(TypeError, match="permision"):
        connect(["my-agent"], permision=None)  # type: ignore[call-arg]


def test_dir_of_schema_lists_the_models() -> None:
    names = dir(acplink.schema)
    assert {"Diff", "PermissionOption", "PromptRequest", "SessionNotification", "parse"} <= set(names)
    assert set(acplink.schema.__all__) <= set(names)
    assert names == sorted(names)


def test_every_stub_init_takes_exactly_the_model_fields() -> None:
    # the .pyi's __init__ overloads: one with the attribute names, one with the wire names;
    # both must name every field of the runtime model (inherited ones too), and nothing else
    import ast

    stub = ast.parse((Path(acplink.schema.__file__).parent / "v1" / "_generated.pyi").read_text())
    checked = 0
    for cls in (n for n in stub.body if isinstance(n, ast.ClassDef)):
        model = getattr(acplink.schema, cls.name)
        inits = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
        assert inits, f"{cls.name} has no __init__ in the stub"
        if issubclass(model, acplink.schema.UnknownVariant):
            assert inits[0].args.kwarg is not None  # keeps whatever it is given
            continue
        fields = model.model_fields
        spellings = [set(fields), {f.alias or n for n, f in fields.items()}]
        found = [{a.arg for a in init.args.kwonlyargs} for init in inits]
        assert found[0] == spellings[0], cls.name
        assert len(found) == 1 or found[1] == spellings[1], cls.name
        required = {a.arg for a, d in zip(inits[0].args.kwonlyargs, inits[0].args.kw_defaults, strict=True)
                    if d is None}
        assert required == {n for n, f in fields.items() if f.is_required()}, cls.name
        checked += 1
    assert checked > 250
