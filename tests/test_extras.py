"""A lean install: ``pip install acplink`` brings pydantic and orjson only; the command line's
terminal UI, the remote transports and devtools are extras (``cli``, ``remote``, ``devtools``,
``mcp``, ``all``). Without an extra, the library still works over stdio and in-process, and what needs
the extra says so in one line naming it (``MissingDependency``), never with a traceback.

The subprocess tests make the optional libraries unimportable with a ``sitecustomize`` that
puts ``None`` in ``sys.modules`` for each (inherited by the agents the CLI starts); the last
test builds a real virtualenv with the core dependencies only."""

from __future__ import annotations

import ast
import os
import pickle
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import acplink
from acplink import HttpTransport, MissingDependency, RemoteOptions, UsageError, WebSocketTransport, connect
from acplink._extras import require

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "acplink"
ECHO_AGENT = ROOT / "examples" / "echo_agent.py"

#: the library's own dependencies (``[project] dependencies``), as import names
CORE = {"pydantic", "pydantic_core", "orjson"}
#: what the extras bring, with what those bring in turn: none of it is installed by ``pip install acplink``
OPTIONAL = ("rich", "prompt_toolkit", "pygments", "markdown_it", "wcwidth", "uvicorn", "starlette", "websockets",
            "httpx", "httpx_sse", "httpcore", "h2", "h11", "httptools", "sniffio", "anyio", "mcp", "mcp_types",
            "httpx2", "opentelemetry", "pydantic_ai", "langgraph", "langchain_core", "psycopg")

#: the modules that import an optional library when imported; each is imported only after
#: ``require()`` checked its extra (the pytest plugin: only pytest loads it)
OPTIONAL_AT_IMPORT = {
    "cli/chat_app.py", "cli/chat_ask.py", "cli/chat_commands.py", "cli/chat_content.py", "cli/chat_input.py",
    "cli/chat_reconnect.py", "cli/chat_render.py", "cli/chat_resume.py", "cli/chat_stream.py", "tools/console.py", "tools/inspect.py",
    "devtools/server.py", "testing/pytest_plugin.py",
    # OpenTelemetry: imported only once the application imported it and configured an SDK
    # (connection/_otel_hook.py), or after require() (cli/otel.py)
    "connection/_otel.py", "cli/prometheus.py", "bridges/mcp_server.py",
    # PostgresStore: imported after require() (acplink.agent's __getattr__)
    "agent/store_postgres.py", "agent/_postgres_db.py",
}

LINE = re.compile(r"^acplink: error: (?P<what>.+) needs the '(?P<extra>\w+)' extra \(not installed: [\w, ]+\): "
                  r"pip install 'acplink\[(?P<again>\w+)\]'$")


@pytest.fixture(scope="module")
def lean_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose Python processes cannot import any optional library."""
    site = tmp_path_factory.mktemp("lean-site")
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        f"for _name in {OPTIONAL!r}:\n"
        "    sys.modules[_name] = None  # `import rich` raises ModuleNotFoundError\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore"}


def _acplink(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acplink", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_blocker_blocks(lean_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", "import rich"], env=lean_env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr


_ROUND_TRIP = """
import asyncio, sys
import acplink
from acplink import AgentApp, AgentMessageChunk, PromptContext, connect
from acplink.testing import FakeAgent, say, stop

app = AgentApp("lean")

@app.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text(f"lean: {ctx.text}")

async def reply(agent) -> str:
    async with connect(agent) as client:
        session = await client.new_session(cwd=".")
        text = ""
        async for update in session.prompt("hi"):
            if isinstance(update, AgentMessageChunk):
                text += update.content.text
        return text

async def main() -> None:
    print(await reply(app))  # in-process
    print(await reply([sys.executable, sys.argv[1]]))  # over stdio
    print(await reply(FakeAgent([[say("scripted"), stop("end_turn")]])))  # the testing kit

asyncio.run(main())
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {optional} and sys.modules[name] is not None)
assert not loaded, loaded
"""


def test_the_library_works_without_any_extra(lean_env: dict[str, str]) -> None:
    code = _ROUND_TRIP.replace("{optional}", repr(set(OPTIONAL)))
    done = subprocess.run([sys.executable, "-c", code, str(ECHO_AGENT)], env=lean_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["lean: hi", "You said: hi", "scripted"]


@pytest.mark.parametrize(("args", "extra"), [
    (["chat"], "cli"),
    (["chat", "--reconnect", "--", sys.executable, str(ECHO_AGENT)], "cli"),
    (["inspect", "TRACE"], "cli"),
    (["serve", "--port", "0"], "remote"),
    (["serve", "--http", "--port", "0"], "remote"),
    (["devtools", "--no-browser", "--port", "0", "--db", "DB"], "devtools"),
    (["prompt", "--url", "ws://127.0.0.1:9/acp", "hi"], "remote"),
    (["mcp-server", "--", "my-agent"], "mcp"),
    (["prompt", "--url", "https://127.0.0.1:9/acp", "hi"], "remote"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_command_without_its_extra_says_which_in_one_line(lean_env: dict[str, str], tmp_path: Path,
                                                             args: list[str], extra: str) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("")
    db = tmp_path / "devtools.db"
    args = [str(trace) if a == "TRACE" else str(db) if a == "DB" else a for a in args]
    done = _acplink(lean_env, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    m = LINE.match(done.stderr.strip())
    assert m and m["extra"] == m["again"] == extra, done.stderr
    assert not db.exists()  # (devtools checks before it creates its database)
    if args == ["chat"]:  # docs/cli.md shows this line
        assert f"$ acplink chat\n{done.stderr}" in (ROOT / "docs" / "cli.md").read_text()


def test_the_rest_of_the_command_line_needs_no_extra(lean_env: dict[str, str], tmp_path: Path) -> None:
    done = _acplink(lean_env, "--help")
    assert done.returncode == 0 and "chat" in done.stdout and "serve" in done.stdout, done.stderr
    done = _acplink(lean_env, "--version")
    assert done.returncode == 0 and done.stdout.strip() == f"acplink {acplink.__version__}"
    for command in ("chat", "serve", "devtools", "inspect"):  # their help is there without their extra
        done = _acplink(lean_env, command, "--help")
        assert done.returncode == 0 and done.stdout.startswith(f"usage: acplink {command}"), done.stderr
    trace = tmp_path / "hi.jsonl"
    done = _acplink(lean_env, "prompt", "hi", "--", sys.executable, "-m", "acplink", "record", "--out", str(trace),
                    "--", sys.executable, "-m", "acplink", "demo-agent", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    done = _acplink(lean_env, "prompt", "hi", "--", sys.executable, "-m", "acplink", "replay", str(trace),
                    cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    done = _acplink(lean_env, "devtools", "import", str(trace), "--db", str(tmp_path / "t.db"))
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr


@pytest.mark.parametrize("url", ["ws://127.0.0.1:9/acp", "wss://example.invalid/acp", "http://127.0.0.1:9/acp"])
def test_connect_to_a_url_without_the_remote_extra_is_a_missing_dependency(monkeypatch: pytest.MonkeyPatch,
                                                                           url: str) -> None:
    for name in ("websockets", "httpx", "httpx_sse", "h2"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependency) as caught:
        connect(url)
    err = caught.value
    assert isinstance(err, UsageError) and isinstance(err, ImportError)
    assert err.extra == "remote" and "pip install 'acplink[remote]'" in str(err) and "\n" not in str(err)
    transport = WebSocketTransport if url.startswith("ws") else HttpTransport
    with pytest.raises(MissingDependency, match=r"'remote' extra"):
        transport(RemoteOptions(url))


def test_http_without_http2_does_not_need_h2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "h2", None)
    options = RemoteOptions("http://127.0.0.1:9/acp")
    HttpTransport(options, http2=False)
    with pytest.raises(MissingDependency) as caught:
        HttpTransport(options)
    assert caught.value.modules == ("h2",) and caught.value.name == "h2"


def test_require_names_only_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    require("json", "cli", "json", "orjson")  # installed: nothing happens
    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(MissingDependency) as caught:
        require("acplink chat", "cli", "json", "rich", "no_such_module_for_acplink")
    err = caught.value
    assert (err.what, err.extra, err.modules) == ("acplink chat", "cli", ("rich", "no_such_module_for_acplink"))
    assert str(err) == ("acplink chat needs the 'cli' extra (not installed: rich, no_such_module_for_acplink): "
                        "pip install 'acplink[cli]'")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is MissingDependency and str(again) == str(err) and again.modules == err.modules


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_core_dependencies_are_exactly_the_library_s() -> None:
    """Nobody re-adds a heavy dependency to ``pip install acplink`` by accident: it goes in an extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {_name(r) for r in project["dependencies"]} == {"pydantic", "orjson"}
    extras = project["optional-dependencies"]
    assert {"rich", "prompt-toolkit"} <= {_name(r) for r in extras["cli"]}
    assert {"uvicorn", "websockets", "httpx", "httpx-sse"} <= {_name(r) for r in extras["remote"]}
    assert "httpx[http2]" in "".join(extras["remote"])
    assert {"starlette", "uvicorn"} <= {_name(r) for r in extras["devtools"]}
    assert {"mcp"} <= {_name(r) for r in extras["mcp"]}
    assert {"opentelemetry-api"} == {_name(r) for r in extras["otel"]}  # (the API only: the SDK is the user's)
    assert {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} <= {_name(r) for r in extras["otlp"]}
    assert {"pydantic-ai-slim"} <= {_name(r) for r in extras["pydantic-ai"]}
    assert {"langgraph", "langchain-core"} <= {_name(r) for r in extras["langgraph"]}
    assert {"psycopg"} == {_name(r) for r in extras["postgres"]}
    assert extras["all"] == ["acplink[cli,remote,devtools,mcp,otel,otlp,postgres]"]
    assert "acplink[all]" in extras["test"] and "acplink[test]" in extras["dev"]  # CI installs .[dev]: everything
    assert "acplink[pydantic-ai,langgraph]" in extras["test"]


def _top_level_imports(path: Path) -> set[str]:
    """The third-party modules ``path`` imports when it is imported (not those imported inside a
    function or under ``TYPE_CHECKING``)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "acplink"}


def test_only_the_modules_behind_require_import_an_optional_library_when_imported() -> None:
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        optional = _top_level_imports(path) - CORE
        if optional and rel not in OPTIONAL_AT_IMPORT:
            offenders[rel] = sorted(optional)
    assert not offenders, f"import these inside a function, after require() (acplink/_extras.py): {offenders}"
    for rel in OPTIONAL_AT_IMPORT:  # (the table may only shrink)
        assert _top_level_imports(SRC / rel) - CORE, f"{rel} needs no optional library at import: drop it here"


# -- a real install with the core dependencies only ---------------------------------------------

#: how long installing into the virtualenv may take before the test gives up (skips): pip
#: reaches the package index (or its cache) for pydantic, orjson and setuptools (to build acplink)
_PIP_BUDGET = 60.0
_SLOW = f"installing pydantic and orjson into a fresh virtualenv took over {_PIP_BUDGET:g} s (a slow package index or a busy machine)"


def _pip(venv: Path, *args: str, deadline: float) -> None:
    """``pip install`` into ``venv`` (the running pip, ``--python``: the virtualenv has none)."""
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                               "-q", "--disable-pip-version-check", "--no-compile", *args],
                              capture_output=True, text=True, timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        pytest.skip(_SLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_core_only_virtualenv_runs_an_agent_over_stdio(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    deadline = time.monotonic() + _PIP_BUDGET
    _pip(venv, "pydantic>=2.11,<3", "orjson>=3.9", "setuptools>=68", deadline=deadline)
    _pip(venv, "--no-deps", "--no-build-isolation", "-e", str(ROOT), deadline=deadline)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    probe = ("import importlib.util, sys; import acplink; "
             f"print(sorted(n for n in {OPTIONAL!r} if importlib.util.find_spec(n)))")
    done = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr  # nothing optional
    example = subprocess.run([python, str(ROOT / "examples" / "client.py"), "hello", "--", python, str(ECHO_AGENT)],
                             env=env, capture_output=True, text=True, timeout=120)
    assert example.returncode == 0, example.stderr
    assert "You said: hello" in example.stdout and "[stop] end_turn" in example.stdout
    script = str(venv / "bin" / "acplink")
    done = subprocess.run([script, "prompt", "hi"], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr  # the demo agent, over stdio
    done = subprocess.run([script, "chat"], env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "pip install 'acplink[cli]'" in done.stderr
