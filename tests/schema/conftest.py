"""Shared fixtures of the schema tests (helpers live in ``schema_support``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st
from schema_support import (
    INPUTS,
    UNSTABLE,
    _merge,
    defs_of,
    is_object_def,
    load_schema,
    strategy_for,
    validator_for,
)


@pytest.fixture(scope="session")
def schemas() -> dict[str, dict[str, Any]]:
    return {rel: load_schema(rel) for rel in INPUTS}


@pytest.fixture(scope="session")
def unstable_defs() -> dict[str, Any]:
    return defs_of(UNSTABLE)


# --------------------------------------------------------------------------------------------
# Parametrization and fixtures built on the generator
# --------------------------------------------------------------------------------------------

#: the definitions of v1/schema.unstable.json whose instances are JSON objects
OBJECT_DEFS: list[str] = sorted(n for n, d in defs_of(UNSTABLE).items() if is_object_def(d))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "object_def" in metafunc.fixturenames:
        metafunc.parametrize("object_def", OBJECT_DEFS)


@pytest.fixture(scope="session")
def object_defs() -> list[str]:
    return OBJECT_DEFS


@pytest.fixture(scope="session")
def instances() -> Any:
    """``instances(name)``: a strategy of valid instances of an unstable-schema definition."""
    defs = defs_of(UNSTABLE)

    def make(name: str) -> st.SearchStrategy[Any]:
        return strategy_for(defs, {"$ref": f"#/$defs/{name}"})

    return make


@pytest.fixture(scope="session")
def validator() -> Any:
    """``validator(name)``: a jsonschema validator of an unstable-schema definition."""
    return lambda name: validator_for(UNSTABLE, name)


@pytest.fixture(scope="session")
def merged_def() -> Any:
    """``merged_def(name)``: the definition with its ``$ref``/``allOf`` flattened."""
    defs = defs_of(UNSTABLE)
    return lambda name: _merge(defs, defs[name])


@pytest.fixture(scope="session")
def roundtrip_coverage() -> dict[str, str]:
    """Filled by the round-trip tests: definition -> "covered" | why it was skipped."""
    return {}
