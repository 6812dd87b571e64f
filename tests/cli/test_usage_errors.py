"""Usage errors exit 2 in every subcommand, with the usage and one line naming the flag, before
anything is started: ``--url`` without a scheme or with an agent command, remote-only flags
without ``--url``, a bad ``--header``, ``--cwd``/``--add-dir`` that are not directories, a port
out of range."""

from __future__ import annotations

import pytest
from cliutil import Cli, no_traceback

CASES = {
    "url without a scheme": (["--url", "127.0.0.1:7331"],
                             "--url '127.0.0.1:7331' needs a scheme: ws://, wss:// (WebSocket), http:// or "
                             "https:// (streamable HTTP), e.g. --url ws://127.0.0.1:7331"),
    "url with an unknown scheme": (["--url", "tcp://host:1/acp"], "--url 'tcp://host:1/acp' needs a scheme"),
    "url without a host": (["--url", "ws:///acp"], "--url 'ws:///acp' names no host"),
    "url and an agent command": (["--url", "ws://127.0.0.1:9/acp", "--", "my-agent"],
                                 "--url and an agent command (-- AGENT_CMD) exclude each other"),
    "token without url": (["--token", "t"], "--token is for a remote agent: give --url too"),
    "remote flags without url": (["--remote-fs", "--header", "K: v"],
                                 "--header, --remote-fs are for a remote agent: give --url too"),
    "bad header": (["--url", "ws://127.0.0.1:9/acp", "--header", "nocolon"], "--header 'nocolon' is not 'Name: value'"),
    "cwd not a directory": (["--cwd", "/nonexistent-dir-xyz"], "--cwd '/nonexistent-dir-xyz' is not a directory"),
    "add-dir not a directory": (["--add-dir", "hello.txt"], "--add-dir 'hello.txt' is not a directory"),
}


@pytest.mark.parametrize("sub", ["prompt", "chat"])
@pytest.mark.parametrize("case", list(CASES))
def test_client_usage_errors_exit_2_naming_the_flag(cli: Cli, sub: str, case: str) -> None:
    extra, message = CASES[case]
    cut = extra.index("--") if "--" in extra else len(extra)
    args = [sub, *(["hi"] if sub == "prompt" else []), *extra[:cut], *extra[cut:]]
    res = cli.call(*args)
    assert res.returncode == 2, res.stderr
    usage, line = res.stderr.splitlines()[0], res.stderr.splitlines()[-1]
    assert usage.startswith(f"usage: acplink {sub} ")
    assert line.startswith(f"acplink: error: {message}"), line
    assert no_traceback(res.stderr) and res.stdout == ""


def test_the_url_check_runs_before_any_agent_starts(cli: Cli) -> None:
    """(a real process: nothing is spawned, nothing connects, and nothing is left behind)"""
    proc = cli.run("prompt", "--url", "ws://127.0.0.1:9/acp", "hi", "--", "sleep", "100")
    assert proc.returncode == 2 and "exclude each other" in proc.stderr


@pytest.mark.parametrize("sub", ["serve", "devtools"])
def test_a_port_out_of_range_is_a_usage_error(cli: Cli, sub: str) -> None:
    res = cli.call(sub, "--port", "99999")
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "acplink: error: argument --port: must be between 0 and 65535, not 99999"
    assert no_traceback(res.stderr)
