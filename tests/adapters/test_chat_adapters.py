"""``acplink chat`` against each adapter, on a pseudo-terminal (pyte, tests/cli/termscreen.py):
the reply streams in (seen while the turn still runs), a tool call is shown with its result, and
a permission the framework asks for (a Pydantic AI tool needing approval, a LangGraph
``interrupt()``) is answered in the chat and reaches the agent."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pexpect")
pytest.importorskip("pyte")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))

from adapter_kit import agent_cmd
from cliutil import Cli
from termscreen import Term, start


@pytest.fixture
def chat_cli(tmp_path: Path) -> Iterator[Cli]:
    runner = Cli(tmp_path)
    yield runner
    runner.assert_no_leftovers()


@pytest.fixture
def chats() -> Iterator[list[Term]]:
    made: list[Term] = []
    yield made
    for t in made:
        t.close()


def test_chat_with_a_pydantic_ai_agent(chat_cli: Cli, chats: list[Term]) -> None:
    pytest.importorskip("pydantic_ai")
    t = start(chats, chat_cli, 100, 30, *agent_cmd("pai_agent.py"))
    t.send("slow")
    t.wait(r"0 1 2 3 4")  # streamed: on screen while the turn runs (200 chunks, 50 ms apart)
    assert sum(1 for line in t.lines() if line.startswith(">")) == 1
    t.child.sendintr()  # Ctrl-C cancels the turn
    t.wait(r"\(turn ended: cancelled\)")
    t.prompt(2)
    assert " 198 199" not in t.text()

    t.send("read a.txt")
    t.wait(r"⏺ read_note a\.txt … completed apples \[alpha\] read_note said: apples")
    t.prompt(3)

    t.send("delete b.txt")
    t.wait(r"The agent asks to: delete_note b\.txt .*choose 1-2")
    t.send("2")  # Reject
    t.wait(r"⏺ delete_note b\.txt … failed .*delete_note said: The user rejected this tool call\.")
    t.prompt(4)
    t.send("delete b.txt")
    t.wait(r"choose 1-2.*choose 1-2")
    t.send("1")  # Allow
    t.wait(r"⏺ delete_note b\.txt … completed b\.txt deleted \[alpha\] delete_note said: b\.txt deleted")
    t.prompt(5)
    t.send("/quit")
    assert t.finish() == 0


def test_chat_with_a_langgraph_agent(chat_cli: Cli, chats: list[Term]) -> None:
    pytest.importorskip("langgraph")
    t = start(chats, chat_cli, 100, 30, *agent_cmd("lg_agent.py"))
    t.send("slow")
    t.wait(r"> slow working")  # streamed: the node then works for 60 s, the turn still runs
    t.child.sendintr()
    t.wait(r"\(turn ended: cancelled\)")
    t.prompt(2)

    t.send("read a.txt")
    t.wait(r"⏺ read_note a\.txt … completed apples read_note said: apples")
    t.prompt(3)

    t.send("deploy")  # interrupt({"permission": ...}) → an ACP permission request
    t.wait(r"The agent asks to: Deploy to production .*choose 1-2")
    t.send("1")
    t.wait(r"⏺ Deploy to production … completed deployed")
    t.prompt(4)

    t.send("name")  # interrupt("What is your name?") → an elicitation, answered in the chat
    t.wait(r"What is your name\? +Answer:")
    t.send("Ada")
    t.wait(r"Hi Ada")
    t.prompt(5)
    t.send("/quit")
    assert t.finish() == 0
