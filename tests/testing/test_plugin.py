"""The pytest plugin, seen from a user's test files (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest
from acplink.testing import FakeAgent, FakeClient, assert_turn, read_file, say

async def test_unmarked(acp_pair, tmp_path):
    (tmp_path / "a.txt").write_text("data")
    pair = await acp_pair(FakeAgent([[read_file("a.txt"), say("ok")]]))
    assert isinstance(pair.client, FakeClient)
    assert_turn(await pair.client.turn(pair.session, "hi"), text="ok")
    assert pair.agent.results == [("read_file", "data")]

@pytest.mark.asyncio
async def test_marked_for_pytest_asyncio(acp_pair):
    pair = await acp_pair(FakeAgent([[say("fine")]]), files={})
    assert_turn(await pair.client.turn(pair.session, "hi"), text="fine")
'''


def test_a_users_test_file_runs_with_no_configuration(pytester: pytest.Pytester) -> None:
    """No conftest, no ini, no -p: only the installed entry point (a separate process)."""
    from importlib.metadata import entry_points

    assert any(ep.value == "acplink.testing.pytest_plugin" for ep in entry_points(group="pytest11")), \
        "the pytest11 entry point is not installed: run `pip install -e .` again"
    pytester.makepyfile(test_kit_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.fixture
def quiet(pytester: pytest.Pytester) -> None:
    """In-process runs: pytest-asyncio's loop-scope warning would land in this suite's summary."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.mark.usefixtures("quiet")
def test_a_fixture_in_a_sync_test_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kit_sync="def test_sync(acp_pair):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_sync: acplink's fixtures (acp_pair) need an async test: "
                                 "write `async def test_sync(...)`*"])


GOLDEN_TEST = '''
from acplink.testing import FakeAgent, say

async def test_golden(acp_pair, acp_transcript):
    pair = await acp_pair(FakeAgent([[say("REPLY")]]))
    await pair.client.turn(pair.session, "hi")
    acp_transcript.assert_matches("golden/hello.txt")
'''


@pytest.mark.usefixtures("quiet")
def test_golden_transcripts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kit_golden=GOLDEN_TEST)
    golden = pytester.path / "golden" / "hello.txt"

    missing = pytester.runpytest("-p", "no:cacheprovider")
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines([f"*golden transcript {golden} does not exist; create it by running the test "
                                  "with `pytest --acp-update-golden`*"])

    pytester.runpytest("-p", "no:cacheprovider", "--acp-update-golden").assert_outcomes(passed=1)
    text = golden.read_text()
    assert "<sessionId#1>" in text and "<root>" in text and '"REPLY"' in text
    assert "sess_" not in text and str(pytester.path) not in text
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)  # masked: equal on another run

    pytester.makepyfile(test_kit_golden=GOLDEN_TEST.replace('say("REPLY")', 'say("CHANGED")'))
    changed = pytester.runpytest("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*the transcript differs from*--acp-update-golden*", '*-*"REPLY"*',
                                  '*+*"CHANGED"*'])


@pytest.mark.usefixtures("quiet")
def test_a_failing_test_shows_the_agent_transcript(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kit_proc='''
import sys
from acplink.testing import assert_turn

async def test_proc(acp_agent_process):
    client = await acp_agent_process([sys.executable, "-m", "acplink", "demo-agent"])
    session = await client.new_session()
    assert_turn(await client.turn(session, "hello"), text="something else")
''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*reply text differs*", "*- acp transcript -*",
                                 '→ {"jsonrpc":"2.0","id":1,"method":"initialize"*', '*"name":"acplink-demo"*'])


def test_loading_the_plugin_imports_no_protocol_code() -> None:
    """The plugin loads in every pytest run where acplink is installed: it must cost nothing."""
    import json
    import subprocess
    import sys

    code = "import json, sys, acplink.testing.pytest_plugin; print(json.dumps([m for m in sys.modules if 'acplink.' in m]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(out.stdout))
    assert {"acplink.testing.pytest_plugin"} <= loaded <= {"acplink._version", "acplink._lazy", "acplink.testing",
                                                           "acplink.testing.pytest_plugin"}  # (_lazy: stdlib only)
