"""The public surface: curated, sorted, and every name importable."""

from __future__ import annotations

import acplink
import acplink.schema


def test_all_is_sorted_and_exists() -> None:
    names = list(acplink.__all__)
    def group(n: str) -> tuple[int, str]:  # ruff/isort style: CONSTANTS, Classes, functions
        return (0 if n.isupper() else 1 if n[0].isupper() else 2, n)

    assert names == sorted(names, key=group)
    for name in names:
        assert hasattr(acplink, name), name


def test_errors_are_one_tree() -> None:
    for name in acplink.__all__:
        obj = getattr(acplink, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, acplink.AcpError), name


def test_request_errors_map_codes_one_to_one() -> None:
    codes = {
        acplink.ParseError: -32700, acplink.InvalidRequest: -32600, acplink.MethodNotFound: -32601,
        acplink.InvalidParams: -32602, acplink.InternalError: -32603, acplink.AuthRequired: -32000,
        acplink.ResourceNotFound: -32002, acplink.RequestCancelled: -32800,
    }
    for cls, code in codes.items():
        assert cls.code == code
        err = acplink.RequestError.from_wire({"code": code, "message": "m"})
        assert type(err) is cls and err.message == "m"
    other = acplink.RequestError.from_wire({"code": 1234, "message": "x", "data": {"a": 1}})
    assert type(other) is acplink.RequestError and other.code == 1234 and other.data == {"a": 1}
    junk = acplink.RequestError.from_wire("not an object")
    assert isinstance(junk, acplink.InternalError)


def test_py_typed_marker_ships() -> None:
    from pathlib import Path

    assert (Path(acplink.__file__).parent / "py.typed").exists()


def test_the_testing_kit_is_public_and_sorted() -> None:
    import acplink.testing

    names = list(acplink.testing.__all__)
    assert names == sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    assert {"FakeAgent", "FakeClient", "assert_turn", "assert_updates_in_order", "assert_tool_call"} <= set(names)
    for name in names:
        assert hasattr(acplink.testing, name), name
