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


# -- ``__all__`` both ways: everything exported exists, nothing public is missing ----------------

import ast  # noqa: E402
import importlib  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SRC = Path(acplink.__file__).resolve().parent

#: the packages whose ``__init__`` re-exports names of their modules
PACKAGES = ["acplink", "acplink.agent", "acplink.client", "acplink.connection", "acplink.transports",
            "acplink.conformance", "acplink.rpc", "acplink.testing", "acplink.protocol",
            "acplink.registry", "acplink.proxy", "acplink.adapters"]


def _imported_names(package: str) -> set[str]:
    """The public names a package's ``__init__`` imports from its own modules (at run time or
    for the type checkers)."""
    init = SRC.joinpath(*package.split(".")[1:], "__init__.py")
    names: set[str] = set()
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            names.update(a.asname or a.name for a in node.names)
    return {n for n in names if not n.startswith("_") or n == "__version__"}


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_what_the_package_imports(package: str) -> None:
    mod = importlib.import_module(package)
    exported = set(mod.__all__)
    assert len(exported) == len(mod.__all__), "a name is exported twice"
    assert exported == _imported_names(package)
    for name in exported:
        assert getattr(mod, name) is not None, f"{package}.{name}"


def test_every_public_error_is_exported() -> None:
    import acplink.errors

    errors = {n for n, v in vars(acplink.errors).items()
              if isinstance(v, type) and issubclass(v, acplink.AcpError) and not n.startswith("_")}
    assert errors - set(acplink.__all__) == set()


def test_the_root_all_is_derived_once() -> None:
    # the run-time table of lazy names and ``__all__`` are the same list
    assert set(acplink.__all__) == set(acplink._LAZY) | {"__version__"}
