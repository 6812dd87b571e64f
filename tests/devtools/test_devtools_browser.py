"""The devtools UI in a real browser: Playwright driving Debian's Chromium (never downloaded).

One server and one browser for the module. ``ACPLINK_DEVTOOLS_SHOTS=DIR`` saves a screenshot
of every view there."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from dtutil import ACPLINK, demo_db, env

from acplink.devtools.store import Store

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 30_000  # ms: generous bounds against hangs, never a timing assertion

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium package to run the browser tests)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(autouse=True)
def _leak_check() -> Iterator[None]:
    """Replaces the suite's leak check here: the browser driver starts worker threads that live
    as long as the module's browser (its processes are closed by the module's fixtures)."""
    yield


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("ACPLINK_DEVTOOLS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    demo = demo_db(tmp_path_factory.mktemp("devtools"))
    db, work, one, two, bad = demo["db"], demo["work"], demo["one"], demo["two"], demo["bad"]
    proc = subprocess.Popen([*ACPLINK, "devtools", "--db", str(db), "--no-browser"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=work, env=env())
    assert proc.stdout is not None
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(60)
    url = line[0].decode().strip() if line else ""
    try:
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url, proc.stderr
        yield {"url": url, "base": url.split("/?")[0], "db": db, "one": one, "two": two, "bad": bad, "work": work}
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def browser(server: dict[str, Any]) -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, server: dict[str, Any]) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1300, "height": 850})
    pg = ctx.new_page()
    pg.set_default_timeout(WAIT)
    pg.goto(server["url"])  # the token, then its cookie
    try:
        yield pg
    finally:
        ctx.close()


def test_session_list(page: Any, server: dict[str, Any]) -> None:
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == 3
    assert "acplink demo agent 0.1.0" in page.locator(f'#sessions tr[data-conn="{server["one"]}"]').inner_text()
    assert "bad-agent 9" in page.locator(f'#sessions tr[data-conn="{server["bad"]}"]').inner_text()
    shot(page, "sessions")
    page.fill("#search", "bad-agent")
    page.click("form.bar button")
    page.wait_for_url("**/?q=bad-agent")
    assert page.locator("#sessions tbody tr").count() == 1


def test_live_update_while_a_recording_runs(page: Any, server: dict[str, Any]) -> None:
    rec = subprocess.Popen([*ACPLINK, "record", "--db", str(server["db"]), "--", sys.executable, "-m", "acplink.demo"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           cwd=server["work"], env=env())
    assert rec.stdin is not None and rec.stdout is not None

    def send(msg: dict[str, Any]) -> None:
        rec.stdin.write(orjson.dumps(msg) + b"\n")  # type: ignore[union-attr]
        rec.stdin.flush()  # type: ignore[union-attr]
        rec.stdout.readline()  # type: ignore[union-attr]  # its answer passed through

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        live_row = page.locator("#sessions tbody tr", has_text="live")
        live_row.wait_for()  # pushed to the open page: no reload
        conn = live_row.get_attribute("data-conn")
        assert int(conn) > server["bad"]
        page.goto(f'{server["base"]}/c/{conn}')
        page.locator('#timeline tr[data-seq="2"]').wait_for()  # (rendered, or pushed if not yet stored)
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
              "params": {"cwd": str(server["work"]), "mcpServers": []}})
        page.locator('#timeline tr.new[data-seq="4"]').wait_for()  # the answer appeared live
        assert "session/new" in page.locator('#timeline tr[data-seq="3"]').inner_text()
        shot(page, "live")
    finally:
        rec.stdin.close()
        rec.wait(30)
        rec.stdout.close()


def test_timeline_filter(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/c/{server["one"]}')
    total = page.locator("#timeline tbody tr").count()
    page.select_option("#filters select[name=method]", "session/prompt")
    page.click("#filters button")
    page.wait_for_url("**method=session%2Fprompt**")
    methods = page.locator("#timeline tbody td.method").all_inner_texts()
    assert methods and set(methods) == {"session/prompt"} and len(methods) == 6 < total
    shot(page, "timeline-filter")


def test_message_detail_with_a_schema_error(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/c/{server["bad"]}')
    page.click('#timeline tr[data-seq="5"]')
    errors = page.locator("#detail .violations")
    errors.wait_for()
    assert "$.params.prompt" in errors.inner_text() and "Field required" in errors.inner_text()
    assert '"method": "session/prompt"' in page.locator("#detail pre.json").first.inner_text()
    shot(page, "message-detail")
    page.goto(f'{server["base"]}/c/{server["bad"]}/findings')
    assert "$.params.prompt" in page.locator("#findings").inner_text()
    shot(page, "findings")


def test_conversation_with_a_diff_and_a_plan(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/c/{server["one"]}/conversation')
    talk = page.locator("#conversation")
    assert "You said: hello" in talk.inner_text()
    plan = page.locator("#conversation .plan")
    assert plan.count() == 1 and "write the code" in plan.inner_text() and "3/3 done" in plan.inner_text()
    diff = page.locator("#conversation pre.diff .add")
    assert diff.count() == 1 and diff.inner_text() == "+hi there"
    assert page.locator("#conversation .permission").count() == 1
    assert page.locator("#conversation .stop").count() == 3
    shot(page, "conversation")


def test_waterfall(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/c/{server["one"]}/waterfall')
    bars = page.locator("#waterfall .bar")
    assert bars.count() >= 6  # initialize, session/new, 3 prompts, the permission request
    assert page.locator("#waterfall .first").count() == 3  # each prompt's first update
    assert bars.first.bounding_box()["width"] > 0
    shot(page, "waterfall")


def test_diff_of_two_sessions(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/diff?a={server["one"]}&b={server["two"]}')
    table = page.locator("#diff")
    assert table.locator("tr.same").count() > 3  # initialize, session/new, the first turn
    assert table.locator("tr.text").count() >= 1  # the plan's other steps
    assert table.locator("tr.changed, tr.only-a, tr.only-b").count() >= 1  # write vs think
    shot(page, "diff")


def test_chat_with_the_demo_agent_through_connect(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/connect')
    page.fill("#connect input[name=command]", f"{sys.executable} -c \"import sys; "
                                             f"print('missing API key', file=sys.stderr); sys.exit(7)\"")
    page.click("#connect button")
    assert "exited with code 7" in page.locator("#connect-error").inner_text()
    assert page.locator("#connect-stderr").inner_text() == "missing API key"
    shot(page, "connect-failed")
    page.fill("#connect input[name=command]", f"{sys.executable} -m acplink.demo")
    page.click("#connect button")  # the page keeps working after a failure
    page.locator("#chat-status", has_text="Connected to acplink demo agent").wait_for()
    page.fill("#prompt input[name=text]", "hello there")
    page.press("#prompt input[name=text]", "Enter")
    page.locator("#chat-log .agent", has_text="You said: hello there").wait_for()
    page.locator("#chat-log .stop", has_text="end_turn").first.wait_for()  # (one turn at a time)
    page.fill("#prompt input[name=text]", "write notes.txt from the browser")
    page.press("#prompt input[name=text]", "Enter")
    page.locator("#chat-log .permission button", has_text="Allow").first.click()
    page.locator("#chat-log .stop", has_text="end_turn").nth(1).wait_for()
    assert page.locator("#chat-log .tool .status.completed").count() == 1
    assert (server["work"] / "notes.txt").read_text().strip() == "from the browser"
    shot(page, "connect-chat")
    conn = page.locator("#chat-status a").get_attribute("href").rsplit("/", 1)[-1]  # its traffic, recorded
    store = Store(server["db"])
    try:
        methods = {r["method"] for r in store.rows(int(conn), "")}
    finally:
        store.close()
    assert {"initialize", "session/new", "session/prompt", "session/request_permission"} <= methods


def _start_demo(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/connect')
    page.fill("#connect input[name=command]", f"{sys.executable} -m acplink.demo")
    page.fill("#connect input[name=cwd]", str(server["work"]))
    page.click("#connect button")
    page.locator("#chat-status", has_text="Connected to acplink demo agent").wait_for()


def _in_view(page: Any, selector: str) -> bool:
    """Whether the element is wholly visible: inside the window and inside the chat log's box."""
    return bool(page.evaluate("""(sel) => {
        const r = document.querySelector(sel).getBoundingClientRect();
        const box = document.querySelector("#chat-log").getBoundingClientRect();
        return r.top >= Math.max(0, box.top) - 1 && r.bottom <= Math.min(window.innerHeight, box.bottom) + 1;
    }""", selector))


def test_the_connect_fields_are_labelled(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/connect')
    for label, name in (("Agent command", "command"), ("Working directory", "cwd"), ("Prompt", "text")):
        field = page.get_by_label(label, exact=True)
        assert field.count() == 1 and field.get_attribute("name") == name, label
    for label in ("files", "terminals"):
        assert page.get_by_label(label, exact=True).get_attribute("type") == "checkbox"


def test_connect_follows_the_conversation_unless_scrolled_up(page: Any, server: dict[str, Any]) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    _start_demo(page, server)
    long = "\\n".join(f"line {i} of a long file" for i in range(80))
    page.locator("#prompt input[name=text]").fill(f"write long.txt {long}")
    page.locator("#prompt input[name=text]").press("Enter")
    question = page.locator("#chat-log .permission").last
    question.wait_for()
    # the 80-line diff above it does not push the question below the fold
    page.wait_for_function("""() => { const l = document.querySelector("#chat-log");
                                     return l.scrollHeight - l.scrollTop - l.clientHeight < 24; }""")
    assert _in_view(page, "#chat-log .permission:last-child")
    assert _in_view(page, "#chat-log .permission:last-child button")
    question.locator("button", has_text="Allow").first.click()
    page.locator("#chat-log .stop").last.wait_for()
    assert _in_view(page, "#chat-log .stop:last-child")  # (followed to the turn's end)
    # the user scrolls up to read while a reply streams: new output leaves them there, and a
    # button says there is more below
    page.locator("#prompt input[name=text]").fill("slow 100")
    page.locator("#prompt input[name=text]").press("Enter")
    page.locator("#chat-log .agent", has_text="chunk 1/100").wait_for()
    page.evaluate('() => { const l = document.querySelector("#chat-log"); l.scrollTop = 0; '
                  'l.dispatchEvent(new Event("scroll")); }')
    page.locator("#chat-log .stop").nth(1).wait_for()
    assert "chunk 100/100" in page.locator("#chat-log .agent").last.inner_text()
    assert page.evaluate('() => document.querySelector("#chat-log").scrollTop') == 0
    page.click("#chat-latest")
    assert _in_view(page, "#chat-log .stop:last-child")


def test_send_is_disabled_with_its_reason_while_a_turn_runs(page: Any, server: dict[str, Any]) -> None:
    _start_demo(page, server)
    send = page.locator("#prompt button", has_text="Send")
    assert send.is_enabled()
    page.locator("#prompt input[name=text]").fill("write asked.txt something")
    page.locator("#prompt input[name=text]").press("Enter")
    page.locator("#chat-log .permission").wait_for()
    assert send.is_disabled()
    assert "permission question" in page.locator("#send-why").inner_text()
    page.locator("#prompt input[name=text]").fill("typed meanwhile")
    page.locator("#prompt input[name=text]").press("Enter")  # (nothing is sent: the text stays)
    assert page.locator("#prompt input[name=text]").input_value() == "typed meanwhile"
    page.locator("#chat-log .permission button", has_text="Allow").first.click()
    page.locator("#chat-log .stop").wait_for()
    page.wait_for_function('() => !document.querySelector("#send").disabled')
    assert page.locator("#send-why").inner_text() == ""
    assert page.locator("#chat-log .user").count() == 1  # the prompt typed during the turn was not sent


def test_an_answered_permission_stays_answered_after_a_reload(page: Any, server: dict[str, Any]) -> None:
    _start_demo(page, server)
    page.locator("#prompt input[name=text]").fill("write answered.txt yes")
    page.locator("#prompt input[name=text]").press("Enter")
    options = page.locator("#chat-log .permission button")
    options.first.wait_for()
    names = options.all_inner_texts()
    assert len(names) >= 2 and all(options.nth(i).is_enabled() for i in range(len(names)))
    reject = next(i for i, n in enumerate(names) if "Reject" in n or "Deny" in n)
    options.nth(reject).click()
    page.locator("#chat-log .stop").wait_for()

    def check() -> None:
        for i in range(len(names)):
            assert options.nth(i).is_disabled()
            chosen = options.nth(i).get_attribute("aria-pressed") == "true"
            assert chosen == (i == reject) and ("chosen" in (options.nth(i).get_attribute("class") or "")) == chosen
        assert "Reject" in page.locator("#chat-log .permission .answer").inner_text() or \
            "Deny" in page.locator("#chat-log .permission .answer").inner_text()

    check()
    page.reload()
    page.locator("#chat-log .stop").wait_for()  # (the chat's events, replayed)
    check()
    assert not (server["work"] / "answered.txt").exists()


def test_the_timeline_fits_1280_px_without_wrapping(page: Any, server: dict[str, Any]) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f'{server["base"]}/c/{server["one"]}')
    measure = """() => {
        const cells = [...document.querySelectorAll("#timeline tbody td, #timeline thead th")];
        const line = parseFloat(getComputedStyle(document.querySelector("#timeline td")).lineHeight);
        const box = document.querySelector("#rows-box");
        return {tallest: Math.max(...cells.map(c => c.getBoundingClientRect().height)), line,
                overflow: box.scrollWidth - box.clientWidth, cells: cells.length};
    }"""
    shown = page.evaluate(measure)  # the detail pane empty
    assert shown["cells"] > 100 and shown["tallest"] < 2 * shown["line"], shown
    assert shown["overflow"] <= 0, shown
    page.click('#timeline tr[data-seq="5"]')
    page.locator("#detail .detail").wait_for()
    shown = page.evaluate(measure)  # a message open beside it
    assert shown["tallest"] < 2 * shown["line"] and shown["overflow"] <= 0, shown


def test_diff_preselects_two_different_recordings(page: Any, server: dict[str, Any]) -> None:
    page.goto(f'{server["base"]}/diff')
    a, b = page.locator("#diffform select[name=a]").input_value(), page.locator("#diffform select[name=b]").input_value()
    assert a and b and a != b
    page.click("#diffform button")
    page.locator("#diff").wait_for()
    assert page.get_by_label("left recording").input_value() == a
