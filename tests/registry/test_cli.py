"""``acplink agents ...``, ``prompt|chat|check --agent ID`` as real processes, against a
registry and archives served on loopback by the test: an agent installed from it passes
``acplink check`` and answers a prompt; each bad input is one line."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from regutil import Served, agent_entry, binary, launcher_script, make_tar, make_zip, registry_json

from acplink.registry import platform_key

_SCRIPT = Path(sys.executable).parent / "acplink"
ACPLINK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "acplink"]


def _run(args: list[str], env: dict[str, str], *, stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPLINK, *args], input=stdin, capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("acplink: error: ")
    return lines[0].removeprefix("acplink: error: ")


@pytest.fixture
def env(served: Served, tmp_path: Path) -> dict[str, str]:
    """The environment of the acplink processes: the test's cache and registry."""
    return {**os.environ, "ACPLINK_CACHE_DIR": str(tmp_path / "cache"),
            "ACPLINK_REGISTRY": served.url("/registry.json")}


LOGIN_AGENT = b'''import os, sys
if "--login" in sys.argv:  # terminal auth: the login flow, then exit
    with open(os.environ["LOGIN_OUT"], "w") as f:
        f.write(" ".join(sys.argv[1:]) + " " + os.environ.get("LOGIN_MODE", "-"))
    sys.exit(0)
from acplink import AgentApp, PromptContext, run_agent, schema as s
app = AgentApp("login-agent", auth_methods=[
    s.AuthMethodTerminal(id="login", name="Log in", description="in the terminal", args=["--login"],
                         env={"LOGIN_MODE": "terminal"})])

@app.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text("hi")

run_agent(app)
'''


def _publish(served: Served, tmp_path: Path) -> None:
    """A registry of: demo (a tar.gz whose run-agent starts the demo agent), zipped (the same
    as a zip), login (an agent with terminal auth), js (npx), far (another platform only),
    nodigest (no sha256), evil (an archive with a path out)."""
    demo = make_tar({"run-agent": launcher_script()})
    zipped = make_zip({"bin/agent": launcher_script()}, mode=0o644)
    login = make_tar({"login": f'#!/bin/sh\nexec "{sys.executable}" "$(dirname "$0")/login.py" "$@"\n'.encode(),
                      "login.py": LOGIN_AGENT})
    evil = make_tar({"run-agent": launcher_script(), "../../escaped": b"x"})
    other = "windows-aarch64" if platform_key() != "windows-aarch64" else "linux-x86_64"
    agents = [
        agent_entry("demo", binary(served.put("/demo.tar.gz", demo), demo)),
        agent_entry("zipped", binary(served.put("/zipped.zip", zipped), zipped, cmd="./bin/agent")),
        agent_entry("login", binary(served.put("/login.tgz", login), login, cmd="./login",
                                    env={"LOGIN_OUT": str(tmp_path / "login-out")})),
        agent_entry("js", {"npx": {"package": "@example/agent@2.0.0", "args": ["--acp"]}}),
        agent_entry("far", {"binary": {other: {"archive": "https://example.invalid/a.zip", "cmd": "./a"}}}),
        agent_entry("nodigest", binary(served.put("/nodigest.tar.gz", demo), demo, digest=False)),
        agent_entry("evil", binary(served.put("/evil.tar.gz", evil), evil)),
        agent_entry("wrongdigest", {"binary": {platform_key(): {
            "archive": served.url("/demo.tar.gz"), "cmd": "./run-agent", "sha256": "ab" * 32}}}),
    ]
    body = registry_json(*agents)
    served.put("/registry.json", body, etag=f'"{hashlib.sha256(body).hexdigest()[:12]}"')


def test_list_show_install_remove(served: Served, tmp_path: Path, env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    listed = _run(["agents", "list"], env)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert sorted(rows) == ["demo", "evil", "far", "js", "login", "nodigest", "wrongdigest", "zipped"]
    assert " binary " in rows["demo"] and " npx " in rows["js"] and " - " in rows["far"]
    assert served.statuses("/registry.json") == [200]
    as_json = json.loads(_run(["agents", "list", "--json"], env).stdout)
    assert {a["id"]: a["runsAs"] for a in as_json}["demo"] == "binary"
    assert served.statuses("/registry.json") == [200, 304]  # the cached copy, revalidated

    shown = _run(["agents", "show", "demo"], env)
    assert shown.returncode == 0 and shown.stdout.startswith("Test demo (demo) 1.0.0\n")
    assert f"    {platform_key()}: {served.url('/demo.tar.gz')} (" in shown.stdout
    installed = _run(["agents", "install", "demo"], env)
    assert installed.returncode == 0, installed.stderr
    folder = tmp_path / "cache" / "agents" / "demo" / "1.0.0" / platform_key()
    assert installed.stdout == f"installed demo 1.0.0 in {folder}\n"
    assert (folder / "run-agent").is_file()
    assert "binary (installed)" in _run(["agents", "list"], env).stdout
    npx = _run(["agents", "install", "js"], env)
    assert npx.returncode == 0 and "runs with npx @example/agent@2.0.0: nothing to install" in npx.stdout
    removed = _run(["agents", "remove", "demo"], env)
    assert removed.returncode == 0 and removed.stdout == f"removed {folder}\n" and not folder.exists()
    again = _run(["agents", "remove", "demo"], env)
    assert again.returncode == 1 and _error_line(again) == "agent 'demo' is not installed"


def test_an_installed_agent_answers_a_prompt_and_passes_check(served: Served, tmp_path: Path,
                                                              env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    for agent in ("demo", "zipped"):  # (tar.gz and zip)
        proc = _run(["prompt", "--agent", agent, "hello", "--cwd", str(tmp_path)], env)
        assert proc.returncode == 0, proc.stderr
        assert "hello" in proc.stdout.lower()
    check = _run(["check", "--agent", "demo", "--cwd", str(tmp_path), "--json"], env, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr
    report = json.loads(check.stdout)
    assert report["summary"]["must_failed"] == 0 and report["summary"]["passed"] > 10
    assert report["command"][0].endswith(f"agents/demo/1.0.0/{platform_key()}/run-agent")
    assert served.statuses("/demo.tar.gz") == [200]  # installed once, reused


def test_several_agents_by_id_and_by_command_side_by_side(served: Served, tmp_path: Path,
                                                          env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    demo_cmd = shlex.join([sys.executable, "-m", "acplink.demo"])
    proc = _run(["prompt", "--json", "--no-record", "--agent", "demo", "--agent", demo_cmd, "--agent", "far",
                 "hello", "--cwd", str(tmp_path)], env)
    assert proc.returncode == 1, proc.stderr  # (far cannot run here)
    by_id, by_command, far = json.loads(proc.stdout)["agents"]
    assert by_id["ok"] and by_id["reply"] == "You said: hello"
    assert by_id["command"][0].endswith(f"agents/demo/1.0.0/{platform_key()}/run-agent")
    assert by_command["ok"] and by_command["command"] == shlex.split(demo_cmd)
    assert not far["ok"] and f"agent 'far' has no distribution for {platform_key()}" in far["error"]


def test_chat_with_an_agent_of_the_registry(served: Served, tmp_path: Path, env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    proc = _run(["chat", "--agent", "demo", "--cwd", str(tmp_path)], env, stdin="hello\n")
    assert proc.returncode == 0, proc.stderr
    assert "hello" in proc.stdout.lower()


def test_offline(served: Served, tmp_path: Path, env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    empty = _run(["agents", "list", "--offline"], env)
    assert empty.returncode == 1
    assert _error_line(empty) == (f"offline, and no copy of the registry {served.url('/registry.json')} is cached: "
                                  "run `acplink agents list` once online")
    assert _run(["agents", "install", "demo"], env).returncode == 0
    n = len(served.log)
    proc = _run(["prompt", "--agent", "demo", "--offline", "hello", "--cwd", str(tmp_path)], env)
    assert proc.returncode == 0, proc.stderr
    assert len(served.log) == n  # nothing asked


@pytest.mark.parametrize(("args", "message"), [
    (["agents", "show", "nope"], r"no agent 'nope' in the registry http://127\.0\.0\.1:\d+/registry\.json; "
                                 r"`acplink agents list` lists them"),
    (["prompt", "--agent", "far", "hi"], rf"agent 'far' has no distribution for {platform_key()} \(binaries for: [a-z0-9_-]+; no npx or uvx "
                                      r"package\)"),
    (["agents", "install", "nodigest"], r"the registry gives no sha256 for http://.*/nodigest\.tar\.gz: refusing to "
                                        r"install agent 'nodigest' without checking it \(--insecure to install it "
                                        r"anyway\)"),
    (["agents", "install", "wrongdigest"], r"sha256 of http://.*/demo\.tar\.gz is [0-9a-f]{64}, the registry says "
                                           r"(ab){32}: nothing was unpacked"),
    (["agents", "install", "evil"], r"archive http://.*/evil\.tar\.gz refused: member '\.\./\.\./escaped' has a "
                                    r"'\.\.' part \(a path out of the folder\)"),
    (["prompt", "--agent", "js", "hi"], r"agent 'js' runs with npx, which is not on PATH: install Node\.js \(npm\)"),
])
def test_bad_inputs_are_one_line(served: Served, tmp_path: Path, env: dict[str, str], args: list[str],
                                 message: str) -> None:
    import re

    _publish(served, tmp_path)
    if "js" in args:
        env = {**env, "PATH": os.path.dirname(sys.executable)}  # (no npx there)
    proc = _run(args, env)
    assert proc.returncode == 1, proc.stderr
    assert re.fullmatch(message, _error_line(proc))
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and "agents" in p.parts] == []
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize(("body", "message"), [
    (b"{not json", r"registry http://.*/registry\.json is not JSON: .*"),
    (json.dumps({"version": "1.0.0", "agents": [{"id": "x"}], "extensions": []}).encode(),
     r"registry http://.*/registry\.json fails its schema: agents\[0\]: 'name' is missing \(and 3 more\)"),
    (None, r"download of http://.*/registry\.json failed: HTTP 404 Not Found"),
])
def test_a_bad_registry_is_one_line(served: Served, env: dict[str, str], body: bytes | None, message: str) -> None:
    import re

    if body is not None:
        served.put("/registry.json", body)
    for args in (["agents", "list"], ["prompt", "--agent", "x", "hi"]):
        proc = _run(args, env)
        assert proc.returncode == 1
        assert re.fullmatch(message, _error_line(proc)), proc.stderr


def test_usage_errors(env: dict[str, str]) -> None:
    for args, message in (
        (["prompt", "--agent", "demo", "hi", "--", "my-agent"], "--agent and an agent command (-- AGENT_CMD) exclude "
                                                                "each other"),
        (["prompt", "--offline", "hi"], "--offline is for an agent of the registry: give --agent ID"),
        (["prompt", "--agent", "demo", "--url", "ws://127.0.0.1:1/acp", "hi"], "--url and --agent exclude each other"),
    ):
        proc = _run(args, env)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == f"acplink: error: {message}", proc.stderr


def test_auth_methods_and_agent_auth(served: Served, tmp_path: Path, env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    listed = _run(["agents", "auth", "demo"], env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "demo (agent auth): Demo login: Always succeeds; no key needed\n"
    shown = _run(["agents", "show", "demo", "--auth"], env)
    assert "  auth methods:\n    demo (agent auth): Demo login" in shown.stdout
    done = _run(["agents", "auth", "demo", "demo"], env)
    assert done.returncode == 0 and done.stdout == "authenticated with 'demo'\n", done.stderr
    unknown = _run(["agents", "auth", "demo", "oauth"], env)
    assert unknown.returncode == 1
    assert _error_line(unknown) == "agent 'demo' advertises no auth method 'oauth' (it has: demo)"


def test_terminal_auth_runs_the_agent_with_the_method_args(served: Served, tmp_path: Path,
                                                           env: dict[str, str]) -> None:
    _publish(served, tmp_path)
    listed = _run(["agents", "auth", "login"], env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "login (terminal auth): Log in: in the terminal [runs the agent with: --login]\n"
    done = _run(["agents", "auth", "login", "login"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "authenticated with 'login' (terminal)\n"
    # the method's args replace the registry's, its env is added; the registry's env is kept
    assert (tmp_path / "login-out").read_text() == "--login terminal"
