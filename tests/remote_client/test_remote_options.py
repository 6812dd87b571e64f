"""The remote client's options: URLs, headers, the token, the cookie jar; ``--url`` on the
command line; and stdio commands not importing the network libraries."""

from __future__ import annotations

import subprocess
import sys

import pytest

from acplink import UsageError, connect
from acplink.transports._remote import CookieJar, RemoteOptions, is_remote_url


def test_urls() -> None:
    assert is_remote_url("ws://h/acp") and is_remote_url("HTTPS://h") and not is_remote_url("my-agent")
    assert RemoteOptions("ws://127.0.0.1:7331").url == "ws://127.0.0.1:7331/acp"  # the default path
    assert RemoteOptions("http://h:1/").url == "http://h:1/acp"
    assert RemoteOptions("https://h/x/acp?k=v").url == "https://h/x/acp?k=v"
    for bad in ("ftp://h/acp", "ws:///acp", "http://user:pw@h/acp"):
        with pytest.raises(UsageError):
            RemoteOptions(bad)


def test_headers_and_token() -> None:
    opts = RemoteOptions("ws://h", headers={"X-A": "1", "Authorization": "Basic x"}, token="t0k")
    assert opts.request_headers() == [("X-A", "1"), ("Authorization", "Bearer t0k")]
    for headers in ({"Bad Name": "v"}, {"X": "a\r\nInjected: 1"}):
        with pytest.raises(UsageError):
            RemoteOptions("ws://h", headers=headers)
    with pytest.raises(UsageError):
        RemoteOptions("ws://h", token="a\nb")
    with pytest.raises(UsageError, match="remote agent"):
        connect(["my-agent"], token="t")


def test_cookie_jar() -> None:
    jar = CookieJar()
    jar.store(["aff=one; Path=/; HttpOnly", "other=2", "garbage", "=novalue"])
    assert jar.cookies == {"aff": "one", "other": "2"}
    jar.store(["aff=two; Secure"])  # a later value replaces the earlier one
    assert jar.header() == "aff=two; other=2"
    assert jar.header("mine=3; other=9") == "aff=two; other=9; mine=3"  # the caller's own wins
    opts = RemoteOptions("http://h", headers=[("Cookie", "mine=3")], cookies=jar)
    assert opts.request_headers() == [("Cookie", "aff=two; other=2; mine=3")]


def _acplink(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acplink", *args], capture_output=True, text=True, timeout=60)


def test_url_and_agent_command_exclude_each_other() -> None:
    done = _acplink("prompt", "--url", "ws://127.0.0.1:9/acp", "hi", "--", "my-agent")
    # a usage error: exit 2, the usage, then one line
    assert done.returncode == 2 and done.stderr.startswith("usage: acplink prompt ")
    assert done.stderr.splitlines()[-1] == "acplink: error: --url and an agent command (-- AGENT_CMD) exclude each other"


def test_unreachable_server_is_one_line() -> None:
    for scheme in ("ws", "http"):
        done = _acplink("prompt", "--url", f"{scheme}://127.0.0.1:9/acp", "hi")
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "cannot connect to" in done.stderr and "127.0.0.1:9" in done.stderr


def test_stdio_commands_do_not_import_the_network_libraries() -> None:
    code = ("import sys, acplink, acplink.cli.main, acplink.cli.prompt, acplink.cli.chat\n"
            "heavy = [m for m in ('websockets', 'httpx', 'httpx_sse', 'h2') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "acplink", "prompt", "hello"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip()
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert not imported & {"websockets", "httpx", "httpx_sse", "h2"}
