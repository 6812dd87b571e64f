"""The devtools UI in Firefox: Debian's firefox-esr driven over WebDriver BiDi (tests/devtools/
bidi.py; no driver, no browser download). One server and one Firefox for the module; real clicks
and key presses. Skipped with a message when firefox-esr is absent."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bidi import ENTER, FIREFOX, Firefox
from dtutil import Devtools, demo_db

if not Path(FIREFOX).exists():
    pytest.skip(f"{FIREFOX} is absent (install Debian's firefox-esr package to run the Firefox tests)",
                allow_module_level=True)


@pytest.fixture(autouse=True)
def _leak_check() -> Iterator[None]:
    """Replaces the suite's leak check here: the module's server and browser live across the
    tests (their processes, threads and profile are checked by the module's fixtures)."""
    yield


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    demo = demo_db(tmp_path_factory.mktemp("devtools-firefox"))
    d = Devtools(demo["db"], demo["work"])
    try:
        assert d.url.startswith("http://127.0.0.1:") and "/?token=" in d.url, d.url
        yield {"url": d.url, "base": d.base, **demo}
    finally:
        code, err = d.stop()
    assert code == 0 and "Traceback" not in err, err


@pytest.fixture(scope="module")
def firefox(server: dict[str, Any]) -> Iterator[Firefox]:
    ff = Firefox()
    try:
        ff.navigate(server["url"])  # the token, then its cookie
        yield ff
    finally:
        ff.close()
    assert ff.proc.returncode is not None and not ff.profile.exists()


def test_session_list(firefox: Firefox, server: dict[str, Any]) -> None:
    firefox.navigate(server["base"] + "/")
    assert firefox.count("#sessions tbody tr") == 3
    assert "acplink demo agent 0.1.0" in firefox.text(f'#sessions tr[data-conn="{server["one"]}"]')
    assert "bad-agent 9" in firefox.text(f'#sessions tr[data-conn="{server["bad"]}"]')
    firefox.type("#search", "bad-agent" + ENTER)  # the search form, submitted by the key
    firefox.wait_for("() => location.search === '?q=bad-agent' && document.readyState === 'complete'")
    assert firefox.count("#sessions tbody tr") == 1


def test_timeline_with_a_filter(firefox: Firefox, server: dict[str, Any]) -> None:
    firefox.navigate(f'{server["base"]}/c/{server["one"]}')
    total = firefox.count("#timeline tbody tr")
    firefox.call("() => { const s = document.querySelector('#filters select[name=method]');"
                 " s.value = 'session/prompt'; s.dispatchEvent(new Event('change', {bubbles: true})); }")
    firefox.click("#filters button")
    firefox.wait_for("() => location.search.includes('method=session%2Fprompt') && document.readyState === 'complete'")
    methods = firefox.call("() => [...document.querySelectorAll('#timeline tbody td.method')].map(e => e.innerText)")
    assert set(methods) == {"session/prompt"} and len(methods) == 6 < total


def test_message_detail_with_a_schema_error(firefox: Firefox, server: dict[str, Any]) -> None:
    firefox.navigate(f'{server["base"]}/c/{server["bad"]}')
    firefox.click('#timeline tr[data-seq="5"]')
    firefox.wait_text("#detail .violations", "$.params.prompt")
    assert "Field required" in firefox.text("#detail .violations")
    assert '"method": "session/prompt"' in firefox.text("#detail pre.json")
    assert firefox.count('#timeline tr.sel[data-seq="5"]') == 1


def test_conversation_with_a_diff_and_a_plan(firefox: Firefox, server: dict[str, Any]) -> None:
    firefox.navigate(f'{server["base"]}/c/{server["one"]}/conversation')
    assert "You said: hello" in firefox.text("#conversation")
    plan = firefox.text("#conversation .plan")
    assert firefox.count("#conversation .plan") == 1 and "write the code" in plan and "3/3 done" in plan
    assert firefox.call("() => [...document.querySelectorAll('#conversation pre.diff .add')]"
                        ".map(e => e.innerText)") == ["+hi there"]
    assert firefox.count("#conversation .permission") == 1 and firefox.count("#conversation .stop") == 3


def test_chat_with_the_demo_agent_through_connect(firefox: Firefox, server: dict[str, Any]) -> None:
    firefox.navigate(f'{server["base"]}/connect')
    firefox.call("(cmd) => { document.querySelector('#connect input[name=command]').value = cmd; }",
                 f"{sys.executable} -m acplink.demo")
    firefox.click("#connect button")
    firefox.wait_text("#chat-status", "Connected to acplink demo agent")
    firefox.type("#prompt input[name=text]", "hello from firefox" + ENTER)
    firefox.wait_text("#chat-log .agent", "You said: hello from firefox")  # streamed over server-sent events
    # the next prompt once this turn has ended (a prompt during a running turn is refused)
    firefox.wait_for("() => document.querySelectorAll('#chat-log .stop').length === 1")
    firefox.type("#prompt input[name=text]", "write ff.txt typed in firefox" + ENTER)
    firefox.wait_text("#chat-log .permission button", "Allow")
    firefox.click("#chat-log .permission button[data-kind^=allow]")
    firefox.wait_for("() => document.querySelectorAll('#chat-log .stop').length === 2")
    assert firefox.count("#chat-log .tool .status.completed") == 1
    assert (server["work"] / "ff.txt").read_text().strip() == "typed in firefox"
    assert firefox.call("() => location.pathname").startswith("/connect/")  # the chat's own address
