"""Which ACP version ``acplink prompt`` / ``chat`` speak: v1 by default (v2 has no client files
or terminals yet), ``--protocol auto`` as an opt-in that never fails where v1 works — with an
agent that echoes the version it was asked for (the official Python SDK 0.12.1's example echo
agent does; so does fast-agent-acp) it goes on with v1."""

from __future__ import annotations

import pytest
from cliutil import PEERS_PYTHON, ROOT, Cli

ECHO_AGENT = [str(PEERS_PYTHON), str(ROOT / "tests" / "interop" / "peers" / "py_echo_agent.py")]
needs_py_sdk = pytest.mark.skipif(not PEERS_PYTHON.exists(), reason=(
    "official Python SDK venv missing: python3 -m venv .peers-venv && "
    ".peers-venv/bin/pip install agent-client-protocol==0.12.1"))


@pytest.mark.parametrize(("command", "said"), [
    ("read hello.txt", "hello.txt has 1 lines"),  # the examples of prompt --help and the README
    ("write notes.txt hi", "Wrote"),
    ("run cat hello.txt", "finished with exit code 0"),
])
def test_the_demos_files_and_terminals_work_with_no_flag(cli: Cli, command: str, said: str) -> None:
    proc = cli.call("prompt", "--allow", command)
    assert proc.returncode == 0, proc.stderr
    assert said in proc.stdout and "ACP v2" not in proc.stdout, proc.stdout


def test_the_default_is_v1_in_prompt_and_chat() -> None:
    from acplink.cli.main import build_parser

    parser = build_parser()
    for cmd in ("prompt", "chat"):
        args = parser.parse_args([cmd, *(["hi"] if cmd == "prompt" else [])])
        assert args.protocol == "1"


@needs_py_sdk
@pytest.mark.parametrize("protocol", [None, "auto", "1"])
@pytest.mark.parametrize("shape", [[], ["--with-info"]], ids=["bare", "with-info"])
def test_an_agent_that_echoes_the_version_works(cli: Cli, protocol: str | None, shape: list[str]) -> None:
    flag = ["--protocol", protocol] if protocol else []
    proc = cli.run("prompt", *flag, "hello echo", "--", *ECHO_AGENT, *shape, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "hello echo\n", "")


@needs_py_sdk
def test_auto_says_once_in_the_debug_log_that_it_went_on_with_v1(cli: Cli) -> None:
    proc = cli.run("prompt", "--protocol", "auto", "--debug", "hi", "--", *ECHO_AGENT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "echoes the version" in line]
    assert said == ["acplink.client: the agent answered protocolVersion 2 with a v1 initialize response (it "
                    "echoes the version asked for): continuing on v1"]


@needs_py_sdk
def test_protocol_2_refuses_an_echoing_agent_in_one_line(cli: Cli) -> None:
    proc = cli.run("prompt", "--protocol", "2", "hi", "--", *ECHO_AGENT, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        'acplink: error: asked for ACP protocol version 2, the agent answered 2 with a v1 initialize response '
        '(it echoes the version asked for and speaks v1; protocol "auto" continues on v1)']
