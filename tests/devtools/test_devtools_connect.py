"""``acplink devtools -- AGENT_CMD``: the agent starts at launch, the printed URL opens its chat,
a prompt is answered (over the HTTP endpoints, and in Chromium when it is installed), its traffic
is recorded; a bad command gives one line on stderr while the UI keeps serving; SIGTERM stops
devtools and its agent (no child left). Every test runs the real command in a subprocess."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from dtutil import WAIT, Devtools, read_line

from acplink.devtools.store import Store

CHROMIUM = "/usr/bin/chromium"


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except FileNotFoundError:
            continue
        for t in tasks:
            try:
                kids = Path(f"/proc/{p}/task/{t}/children").read_text().split()
            except FileNotFoundError:
                continue
            for k in map(int, kids):
                if k not in found:
                    found.add(k)
                    todo.append(k)
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.fixture
def devtools(tmp_path: Path) -> Iterator[Callable[[list[str]], Devtools]]:
    started: list[Devtools] = []

    def start(agent: list[str]) -> Devtools:
        started.append(Devtools(tmp_path / "d.sqlite", tmp_path, ["--", *agent]))
        return started[-1]

    yield start
    for d in started:
        if d.proc.returncode is None:
            d.stop()


DEMO = [sys.executable, "-m", "acplink.demo"]


def test_the_agent_starts_at_launch_answers_a_prompt_and_stops_with_devtools(
        devtools: Callable[[list[str]], Devtools], tmp_path: Path) -> None:
    d = devtools(DEMO)
    assert d.url.startswith("http://127.0.0.1:") and "/connect/1?token=" in d.url, d.url
    landing = d.http.get(d.url)
    assert landing.status_code == 200 and 'data-chat="1"' in landing.text  # the page follows chat 1
    # a prompt sent at once waits for the agent to be ready, then is answered
    sent = d.http.post("/connect/1/prompt", content=orjson.dumps({"text": "hello from http"}))
    assert sent.status_code == 200, sent.text
    events = d.events(1, lambda e: e["type"] == "stop")
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["starting", "ready"] and "prompt" in kinds and kinds[-1] == "stop"
    assert events[1]["agent"].startswith("acplink demo agent")
    reply = "".join(e["update"]["content"]["text"] for e in events
                    if e["type"] == "update" and e["update"]["sessionUpdate"] == "agent_message_chunk")
    assert "You said: hello from http" in reply
    conn = events[1]["conn"]
    agents = {p for p in descendants(d.proc.pid) if running(p)}
    assert agents  # the demo agent runs under devtools
    code, err = d.stop()
    assert code == 0 and "Traceback" not in err, err
    assert not any(running(p) for p in agents)  # stopped with it: no child left behind
    store = Store(tmp_path / "d.sqlite")
    try:
        methods = [r["method"] for r in store.rows(conn, "")]
        assert store.connection(conn).ended is not None  # type: ignore[union-attr]
    finally:
        store.close()
    assert {"initialize", "session/new", "session/prompt", "session/update"} <= set(methods)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is absent (Debian's chromium package)")
def test_the_printed_url_opens_the_chat_ready_to_prompt_in_a_browser(
        devtools: Callable[[list[str]], Devtools]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    d = devtools(DEMO)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT * 1000)
            page.goto(d.url)
            page.locator("#chat-status", has_text="Connected to acplink demo agent").wait_for()
            page.fill("#prompt input[name=text]", "hello from the page")
            page.press("#prompt input[name=text]", "Enter")
            page.locator("#chat-log .agent", has_text="You said: hello from the page").wait_for()
            assert page.locator("#chat-log .user").inner_text().endswith("hello from the page")
            page.locator("#chat-log .stop").first.wait_for()  # (one turn at a time)
            # a reply that streams around plan updates stays one reply (the plan updates in place)
            page.fill("#prompt input[name=text]", "plan check; build; test")
            page.press("#prompt input[name=text]", "Enter")
            page.locator("#chat-log .agent", has_text="All steps done").wait_for()
            replies = page.locator("#chat-log .agent").all_inner_texts()
            assert len(replies) == 2, replies
            # one line per step: the streamed text keeps its line breaks
            assert [line for line in replies[1].splitlines() if "Working on" in line] == [
                f"- Working on: {step}" for step in ("check", "build", "test")], replies
            assert page.locator("#live-plan li").count() == 3
            page.reload()  # the chat's events are replayed: the conversation is still there
            page.locator("#chat-log .agent", has_text="You said: hello from the page").wait_for()
            assert page.locator("#chat-log .user").count() == 2
        finally:
            browser.close()
    code, err = d.stop()
    assert code == 0 and err == "", err


INIT_ERROR = ("import json, sys\n"
              "msg = json.loads(sys.stdin.readline())\n"
              "print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'error': {'code': -32000, "
              "'message': 'no credentials \\u001b[2J\\u001b]0;pwned\\u0007configured'}}), flush=True)\n"
              "sys.stdin.read()\n")
BAD = {
    "not found": (["no-such-agent-for-devtools"], "'no-such-agent-for-devtools' was not found", []),
    "exits at once": ([sys.executable, "-c", "import sys; print('missing API key', file=sys.stderr); sys.exit(7)"],
                      "exited with code 7 before answering initialize", ["missing API key"]),
    "fails initialize": ([sys.executable, "-c", INIT_ERROR], "initialize failed: no credentials configured", []),
    "echoes": (["cat"], "does not speak ACP: it sent acplink's initialize request back", []),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_agent_command_gives_one_line_and_the_ui_still_serves(
        devtools: Callable[[list[str]], Devtools], case: str) -> None:
    agent, reason, stderr = BAD[case]
    d = devtools(agent)
    assert "/connect/1?token=" in d.url
    line = read_line(d.proc.stderr)  # type: ignore[arg-type]
    assert line.startswith(("acplink devtools: the agent '", "acplink devtools: cannot start the agent '")), line
    assert reason in line, line
    assert not any(ch < " " for ch in line.rstrip("\n")), repr(line)  # (the agent's escapes never reach a terminal)
    assert d.http.get(d.url).status_code == 200  # serving, and the page shows the failure:
    failed = d.events(1, lambda e: e["type"] == "failed")[-1]
    assert reason in failed["message"] and failed["stderr"] == stderr
    refused = d.http.post("/connect/1/prompt", content=b'{"text": "hi"}')
    assert refused.status_code == 409 and reason in refused.json()["error"]
    assert d.http.get("/").status_code == 200 and d.http.get("/connect").status_code == 200
    code, rest = d.stop()
    assert code == 0 and rest == "", rest  # that one line was all


def marked(marker: str) -> set[int]:
    """The running processes whose command line holds ``marker``."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() \
                    and running(int(entry)):
                found.add(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("when", ["at once", "once the agent runs"])
def test_stopping_devtools_while_its_agent_is_still_starting_stops_the_agent(
        devtools: Callable[[list[str]], Devtools], when: str, tmp_path: Path) -> None:
    marker = f"acplink-test-agent-{tmp_path.name}"
    d = devtools([sys.executable, "-c", "import time; time.sleep(120)", marker])  # never answers initialize
    assert "/connect/1?token=" in d.url
    if when != "at once":
        deadline = time.monotonic() + WAIT
        # (devtools' own command line holds the marker too: wait for the agent below it)
        while not marked(marker) & descendants(d.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marked(marker) & descendants(d.proc.pid)
    code, err = d.stop()  # (long before the 30 s start timeout)
    assert code == 0 and err == "", err
    assert not marked(marker)


def test_startup_names_the_database_and_how_to_stop(devtools: Callable[[list[str]], Devtools],
                                                     tmp_path: Path) -> None:
    d = devtools(DEMO)
    assert d.url.startswith("http://")  # (the URL stays the first line, for scripts)
    line = read_line(d.proc.stdout)  # type: ignore[arg-type]
    assert str(tmp_path / "d.sqlite") in line and "Ctrl-C" in line, line
    assert "0 recordings" in line or "1 recording" in line, line


def test_a_prompt_during_a_turn_is_refused_with_the_reason(devtools: Callable[[list[str]], Devtools]) -> None:
    d = devtools(DEMO)
    d.http.get(d.url)  # (the token's cookie)
    assert d.http.post("/connect/1/prompt", content=orjson.dumps({"text": "write asked.txt x"})).status_code == 200
    asked = d.events(1, lambda e: e["type"] == "permission")[-1]
    again = d.http.post("/connect/1/prompt", content=orjson.dumps({"text": "hello"}))
    assert again.status_code == 409 and "permission question" in again.json()["error"], again.text
    d.http.post("/connect/1/answer", content=orjson.dumps({"id": asked["id"], "option": asked["options"][0]["id"]}))
    events = d.events(1, lambda e: e["type"] == "stop")
    answered = [e for e in events if e["type"] == "answered"]
    assert answered == [{"type": "answered", "id": asked["id"], "option": asked["options"][0]["id"]}]
    assert d.http.post("/connect/1/prompt", content=orjson.dumps({"text": "slow 200"})).status_code == 200
    d.events(1, lambda e: "chunk 1/200" in str(e.get("update")))
    busy = d.http.post("/connect/1/prompt", content=orjson.dumps({"text": "hello"}))
    assert busy.status_code == 409 and "still answering" in busy.json()["error"] and "Cancel" in busy.json()["error"]
    d.http.post("/connect/1/cancel")
    assert d.events(1, lambda e: e["type"] == "stop" and e["reason"] == "cancelled")
