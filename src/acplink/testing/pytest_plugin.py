"""The pytest plugin (registered as the ``acplink`` entry point of ``pytest11``): fixtures for
testing ACP agents and clients. See docs/testing.md.

Async tests that use these fixtures run with no configuration: under pytest-asyncio when it
handles the test, otherwise in a fresh event loop of their own. The kit's connections are
closed in the test's own loop when the test ends.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a fixture is used: pytest starts fast wherever acplink is installed
    from .fake_client import FakeClient
    from .kit import AcpKit, AcpPair

__all__ = ["acp_agent_process", "acp_client_factory", "acp_pair", "acp_transcript"]

_KIT = "_acp_kit"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("acplink").addoption(
        "--acp-update-golden", action="store_true", default=False,
        help="rewrite the golden transcripts that acp_transcript compares with")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Close the kit at the end of each async test that uses it, in the test's own loop."""
    for item in items:
        if isinstance(item, pytest.Function) and _KIT in item.fixturenames and inspect.iscoroutinefunction(item.obj):
            item.obj = _closing(item, item.obj)


def _closing(item: pytest.Function, test: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        kit: AcpKit = item.funcargs[_KIT]  # type: ignore[assignment]
        try:
            await test(*args, **kwargs)
        finally:
            await kit.aclose()
    return run


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An async test using the kit that no other plugin runs (no pytest-asyncio marker): run it."""
    if _KIT not in pyfuncitem.fixturenames or not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    if pyfuncitem.get_closest_marker("asyncio") is not None:
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**args))
    return True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    kit: AcpKit | None = getattr(item, "funcargs", {}).get(_KIT)
    if report.when == "call" and report.failed and kit is not None and kit.transcript.records:
        report.sections.append(("acp transcript", kit.report()))


@pytest.fixture
def _acp_kit(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AcpKit]:
    if not inspect.iscoroutinefunction(request.function):
        pytest.fail(f"{request.node.name}: acplink's fixtures ({', '.join(sorted(_names(request)))}) need an "
                    f"async test: write `async def {request.function.__name__}(...)`", pytrace=False)
    from .kit import AcpKit

    yield AcpKit(tmp_path)


def _names(request: pytest.FixtureRequest) -> set[str]:
    return {n for n in request.fixturenames if n.startswith("acp_")}


@pytest.fixture
def acp_client_factory(_acp_kit: AcpKit) -> Callable[..., Awaitable[FakeClient]]:
    """``await acp_client_factory(agent, **FakeClient options)``: a started :class:`FakeClient`
    connected to an agent (a command line, an agent app, a :class:`TraceAgent`, a transport)."""
    return _acp_kit.client


@pytest.fixture
def acp_pair(_acp_kit: AcpKit) -> Callable[..., Awaitable[AcpPair]]:
    """``pair = await acp_pair(app, **FakeClient options)``: ``app`` and a :class:`FakeClient`
    in memory, with ``pair.session`` open in ``tmp_path`` (``pair.root``)."""
    return _acp_kit.pair


@pytest.fixture
def acp_agent_process(_acp_kit: AcpKit) -> Callable[..., Awaitable[FakeClient]]:
    """``await acp_agent_process(["my-agent", ...], **FakeClient options)``: spawn an agent; its
    transcript (and stderr) is attached to the test report when the test fails."""
    async def spawn(command: list[str] | tuple[str, ...] | str, **kw: Any) -> FakeClient:
        return await _acp_kit.client(command if isinstance(command, str) else list(command), **kw)
    return spawn


class GoldenTranscript:
    """Compares the test's normalised transcript with a golden file."""

    def __init__(self, kit: AcpKit, directory: Path, update: bool) -> None:
        self.kit = kit
        self.directory = directory
        self.update = update

    def lines(self) -> list[str]:
        return self.kit.transcript.lines()

    def assert_matches(self, name: str | Path) -> None:
        """Compare with ``name`` (relative to the test file's directory); with
        ``--acp-update-golden`` the file is rewritten instead."""
        __tracebackhide__ = True
        path = Path(name) if Path(name).is_absolute() else self.directory / name
        try:
            self.kit.transcript.compare(path, update=self.update)
        except AssertionError as exc:
            pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def acp_transcript(_acp_kit: AcpKit, request: pytest.FixtureRequest) -> GoldenTranscript:
    """``acp_transcript.assert_matches("golden/x.txt")``: the transcript of the test's
    connections (ids, session ids, timestamps and ``tmp_path`` masked) equals the file."""
    return GoldenTranscript(_acp_kit, Path(request.path).parent, bool(request.config.getoption("acp_update_golden")))
