"""``acplink chat`` against a hostile agent (hostile_agent.py) in a pseudo-terminal: none of
the agent's escape sequences reaches the terminal (the raw bytes written are checked, not the
emulated screen), a permission option shows its kind, and a question shown when the turn is
cancelled is closed (the agent gets "cancelled", the prompt comes back)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cliutil import ACPLINK, HERE, Cli
from termscreen import Term

HOSTILE = [sys.executable, str(HERE / "hostile_agent.py")]
#: what must never reach the terminal: clipboard write, window title, clear screen (7-bit and C1)
FORBIDDEN = ("\x1b]52", "\x1b]0;", "pwned", "\x1b[2J", "\x9b", "\x9d")


@pytest.fixture
def chat(cli: Cli, request: pytest.FixtureRequest) -> Iterator[Term]:
    t = Term(cli, 100, 30, *HOSTILE, *request.param)
    try:
        t.prompt(1)
        yield t
    finally:
        t.close()


def _assert_no_escapes(term: Term) -> None:
    raw = "".join(term.raw)
    for bad in FORBIDDEN:
        at = raw.find(bad)
        assert at < 0, (bad, raw[max(0, at - 80):at + 80])


@pytest.mark.parametrize("chat", [["chat"]], indirect=True)
def test_no_agent_escape_reaches_the_terminal(chat: Term) -> None:
    chat.send("go")
    chat.wait(r"choose 1-2")
    _assert_no_escapes(chat)  # (the raw bytes: a cleared screen would hide what the test reads)
    # the option named "Reject" is an allow_always one: its kind says so
    assert re.search(r"1\. Reject\s+\[allow always\]", chat.text()), chat.dump()
    assert re.search(r"2\. Allow\s+\[reject once\]", chat.text()), chat.dump()
    chat.send("2")
    chat.wait(r'answered \{"outcome": \{"optionId": "r", "outcome": "selected"\}\}')
    chat.prompt(2)
    _assert_no_escapes(chat)
    text = chat.text()
    # everything arrived, without its escapes
    for shown in ("hello world", "Read file", "tool output", "term out", "Delete all"):
        assert shown in text, (shown, chat.dump())


def _agent_got(term: Term, answer: str) -> None:
    """The agent reports (as its reply) that both its questions got ``answer``: the one shown
    when the turn was cancelled, and the one it asked after the cancel."""
    term.wait(r'"second": \{"answer": ' + re.escape(answer))
    assert re.search(r'"first": \{"answer": ' + re.escape(answer), term.text()), term.dump()


@pytest.mark.parametrize("chat", [["question", "permission"]], indirect=True)
@pytest.mark.parametrize("how", ["ctrl-c", "sigint"])
def test_cancel_closes_a_permission_question(chat: Term, how: str) -> None:
    chat.send("go")
    chat.wait(r"choose 1-2")
    if how == "ctrl-c":
        chat.child.send("\x03")  # a key for prompt_toolkit
    else:
        chat.child.kill(signal.SIGINT)  # the signal: the library cancels the question's callback
    _agent_got(chat, '{"outcome": {"outcome": "cancelled"}}')
    if how == "sigint":  # the library cancelled the question's callback: chat says so
        chat.wait(r"question withdrawn")
    chat.prompt(2)
    assert "Traceback" not in chat.text()
    chat.send("/status")  # the prompt reads input again
    chat.wait(r"session s1")
    chat.child.sendeof()
    assert chat.finish() == 0


@pytest.mark.parametrize("chat", [["question", "elicitation"]], indirect=True)
def test_signal_closes_an_elicitation(chat: Term) -> None:
    chat.send("go")
    chat.wait(r"Colour\?")
    chat.child.kill(signal.SIGINT)
    _agent_got(chat, '{"action": "cancel"}')
    chat.wait(r"question withdrawn")
    chat.prompt(2)
    assert "Traceback" not in chat.text()
    chat.child.sendeof()
    assert chat.finish() == 0


def test_plain_output_has_no_agent_escape(cli: Cli) -> None:
    """Not a terminal (stdin and stdout piped): the same, in the raw bytes of stdout and stderr."""
    proc = subprocess.run([*ACPLINK, "chat", "--", *HOSTILE, "chat"], input=b"go\n2\n", capture_output=True,
                          cwd=cli.workdir, env=cli.env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for data in (proc.stdout, proc.stderr):
        text = data.decode("utf-8")
        bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
        assert not bad, f"control characters: {bad!r} in {text!r}"
    out = proc.stdout.decode()
    for shown in ("hello world", "Read file", "tool output", "term out", "Delete all", '"optionId": "r"'):
        assert shown in out, (shown, out)
    assert re.search(r"1\. Reject\s+\[allow always\]", out), out
