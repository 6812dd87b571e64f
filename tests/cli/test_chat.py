"""``acplink chat`` driven through a pseudo-terminal (pexpect), and line by line from a pipe.

The pty has a fixed size and TERM; prompt_toolkit's cursor-position requests are turned off
(PROMPT_TOOLKIT_NO_CPR) because nobody answers them here. Every expectation waits for text,
never for time.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator

import pexpect
import pytest
from cliutil import ACPLINK, CRASH_AGENT, Chat, Cli, official_agent, official_params

TIMEOUT = 20


@pytest.fixture
def chat(cli: Cli) -> Iterator[list[Chat]]:
    made: list[Chat] = []
    yield made
    for c in made:
        c.close()


def _start(chat: list[Chat], cli: Cli, *agent: str, term: str = "xterm-256color") -> Chat:
    c = Chat(cli, *agent, term=term)
    chat.append(c)
    return c


def test_chat_session_on_a_pty(cli: Cli, chat: list[Chat]) -> None:
    c = _start(chat, cli)
    banner = c.expect("ask>")
    assert "acplink demo agent" in banner
    # a streamed reply
    c.send("hello world")
    c.expect("You said: hello world")
    c.expect("ask>")
    # a thought (dimmed), then the answer
    c.send("think hard")
    c.expect("Let me think about")
    c.expect("I thought about it")
    c.expect("ask>")
    # a permission request answered, with the diff of an existing file shown
    c.send("write hello.txt line two")
    shown = c.expect("choose 1-3:")
    assert "The agent asks to:" in shown and "Write hello.txt" in shown
    assert "-line one" in shown and "+line two" in shown
    assert "1. " in shown and "Allow" in shown and "Reject" in shown
    c.send("1")
    c.expect("completed")
    c.expect("Wrote 9 characters to hello.txt")
    c.expect("ask>")
    assert (cli.workdir / "hello.txt").read_text() == "line two\n"
    # a rejected one leaves no file
    c.send("write new.txt nope")
    shown = c.expect("choose 1-3:")
    assert "new file" in shown and "+nope" in shown
    c.send("3")
    c.expect("Permission denied")
    c.expect("ask>")
    assert not (cli.workdir / "new.txt").exists()
    # a plan, updated in place, ends as a checklist
    c.send("plan first step; second step")
    c.expect(r"Plan \(2/2 done\)")
    c.expect("All steps done")
    c.expect("ask>")
    # a terminal: output shown after completion (mode auto: no question asked)
    c.send("/mode auto")
    c.expect("auto>")
    c.send("run echo from-the-terminal")
    c.expect("completed")
    c.expect("from-the-terminal")
    c.expect("exit code 0")
    c.expect("auto>")
    # Ctrl-C cancels the running turn (session/cancel); the chat goes on
    c.send("slow 500")
    c.expect("chunk 2/500")
    c.child.sendintr()
    c.expect("cancelling")
    c.expect(r"turn ended: cancelled")
    c.expect("auto>")
    c.send("still here")
    c.expect("You said: still here")
    c.expect("auto>")
    # Ctrl-D quits cleanly
    c.child.sendcontrol("d")
    assert c.finish() == 0
    cli.assert_no_leftovers()


def test_ctrl_c_at_the_prompt_then_cancel_then_quit(cli: Cli, chat: list[Chat]) -> None:
    c = _start(chat, cli)
    c.expect("ask>")
    c.child.sendintr()  # at the prompt: only a hint
    c.expect("Ctrl-C again or Ctrl-D to quit")
    c.send("slow 500")  # (typing a line resets the count)
    c.expect("chunk 2/500")
    c.child.sendintr()
    c.expect("cancelling")
    c.child.sendintr()  # during the cancelled turn, or at the prompt right after it: either quits
    assert c.finish() == 0
    cli.assert_no_leftovers()


def test_completion_commands_and_sessions(cli: Cli, chat: list[Chat]) -> None:
    c = _start(chat, cli)
    banner = c.expect("ask>")
    first = re.search(r"session\s+(\S+)", banner)
    assert first is not None
    first_id = re.sub(r"\x1b\[[0-9;]*m", "", first.group(1))
    c.send("remember me")
    c.expect("You said: remember me")
    c.expect("ask>")
    # the completion menu offers local and agent commands, with descriptions
    c.child.send("/ses")
    c.expect("list the agent's sessions")
    c.child.sendcontrol("u")
    c.child.send("/rea")
    c.expect("Read a file through the client")
    c.child.sendcontrol("u")
    c.send("/help")
    c.expect("Local commands")
    c.expect("The agent's commands")
    c.expect("ask>")
    c.send("/config style shouty")
    c.expect("style = shouty")
    c.expect("ask>")
    c.send("/new")
    c.expect("new session")
    c.expect("ask>")
    c.send("/sessions")
    c.expect(r"\* this session")
    c.expect("ask>")
    c.send(f"/resume {first_id}")
    c.expect("remember me")
    c.expect("resumed session")
    c.expect("ask>")
    c.send("/quit")
    assert c.finish() == 0
    cli.assert_no_leftovers()


def test_plain_terminal(cli: Cli, chat: list[Chat]) -> None:
    c = _start(chat, cli, term="dumb")
    c.expect("ask>")
    c.send("write notes.txt hi")
    c.expect("choose 1-3:")
    c.send("1")
    c.expect("Wrote")
    c.expect("ask>")
    # (not Ctrl-D: on a dumb terminal the prompt is printed before raw mode is on, and a
    # Ctrl-D typed in between would be eaten by the tty's line discipline)
    c.send("/quit")
    assert c.finish() == 0
    assert (cli.workdir / "notes.txt").read_text() == "hi\n"
    cli.assert_no_leftovers()


def test_agent_crash_is_one_readable_error(cli: Cli, chat: list[Chat]) -> None:
    c = _start(chat, cli, *CRASH_AGENT)
    c.expect(">")
    c.send("hi")
    out = c.expect("crash_agent: something broke")
    assert "acplink: error: the agent" in out and "exited with code 3" in out
    assert c.finish() == 1
    assert not any("Traceback" in t for t in c.transcript)
    cli.assert_no_leftovers()


def test_missing_agent(cli: Cli) -> None:
    proc = cli.call("chat", "--", "no-such-agent-xyz")
    assert proc.returncode == 1
    assert proc.stderr.startswith("acplink: error:") and "no-such-agent-xyz" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_piped_stdin_line_by_line(cli: Cli) -> None:
    script = "hello\nwrite notes.txt piped\n1\nread notes.txt\n/mode\n"
    proc = cli.run("chat", input=script)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "> hello" in out and "You said: hello" in out
    assert "+piped" in out and "choose 1-3:" in out
    assert "notes.txt has 1 lines" in out
    assert re.search(r"\* +ask +Ask", out)
    assert "\x1b[" not in out  # not a terminal: no escape codes
    assert (cli.workdir / "notes.txt").read_text() == "piped\n"


def test_elicitation_form_is_asked_field_by_field(cli: Cli) -> None:
    """The demo's `ask` sends elicitation/create (form mode); chat advertises elicitation,
    asks for each field and answers accept with the typed content."""
    proc = cli.run("chat", input="ask\nteal\nhello\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "What is your favourite colour?" in out
    assert "Colour:" in out
    assert "Nice, teal it is." in out
    assert "does not support elicitation" not in out
    assert "You said: hello" in out


@pytest.mark.parametrize("peer", official_params()[:1])
def test_official_agent_in_chat(cli: Cli, peer: str) -> None:
    proc = cli.run("chat", "--", *official_agent(peer), input="hello\nfull\n1\nfail\n")
    assert proc.returncode == 0, proc.stderr
    assert "Hello, world" in proc.stdout
    assert "read:written by peer" in proc.stdout
    assert "term-ok" in proc.stdout
    assert "the agent failed the prompt" in proc.stdout
    assert (cli.workdir / "interop.txt").read_text() == "written by peer\n"


def test_ctrl_c_answers_an_open_permission_question_when_piped(cli: Cli) -> None:
    """Not a terminal: SIGINT while the chat waits for a permission answer on stdin cancels
    the turn and answers the question "cancelled" (nothing is written)."""
    from pexpect.popen_spawn import PopenSpawn

    child = PopenSpawn([*ACPLINK, "chat"], cwd=str(cli.workdir), env=cli.env, encoding="utf-8", timeout=TIMEOUT)
    try:
        child.sendline("write notes.txt hi")
        child.expect("choose 1-3:")
        child.kill(signal.SIGINT)
        child.expect("cancelling")
        child.expect(r"turn ended: cancelled")
        child.sendline("after")
        child.expect("You said: after")
        child.sendeof()
        child.expect(pexpect.EOF)
        assert child.wait() == 0
    finally:
        if child.proc.poll() is None:
            child.proc.kill()
            child.proc.wait()
        for stream in (child.proc.stdout, child.proc.stdin):
            if stream is not None:
                stream.close()
    assert not (cli.workdir / "notes.txt").exists()
    cli.assert_no_leftovers()


def test_slash_completion() -> None:
    """The completer offers local and agent commands, then each command's arguments."""
    import argparse
    from types import SimpleNamespace

    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from acplink.cli.chat_app import ChatApp
    from acplink.cli.chat_commands import SlashCompleter
    from acplink.client.state import SessionState
    from acplink.demo.agent import COMMANDS, MODELS, MODES, STYLE
    from acplink.schema import AvailableCommand

    state = SessionState()
    state.available_modes = list(MODES)
    state.current_mode_id = "ask"
    state.config_options = [STYLE]
    state.available_models = list(MODELS)
    state.available_commands = [AvailableCommand(name=n, description=d) for n, d, _ in COMMANDS]
    app = ChatApp(argparse.Namespace(debug=False))
    app.session = SimpleNamespace(state=state)  # type: ignore[assignment]
    completer = SlashCompleter(app)

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/mo") == ["/mode", "/model"]
    assert complete("/re") == ["/resume", "/read"]
    assert complete("/he") == ["/help"]  # the agent's "help" is shadowed by the local one
    assert complete("/mode a") == ["ask", "auto"]
    assert complete("/config ") == ["style"]
    assert complete("/config style sh") == ["shouty"]
    assert complete("/model demo-l") == ["demo-large"]
    assert complete("hello /mo") == []


def test_model_command_uses_the_model_config_option(cli: Cli, chat: list[Chat]) -> None:
    """The demo offers its models as a config option of category "model" (the legacy
    ``models`` field is opt-in): ``/model`` lists and switches them through it."""
    c = _start(chat, cli)
    c.expect("ask>")
    c.send("/model")
    listing = c.expect(r"demo-large|no model selector")
    assert listing.endswith("demo-large"), listing
    c.send("/model demo-large")
    c.expect("model = demo-large")
    c.expect("ask>")
    c.send("/quit")
    assert c.finish() == 0
