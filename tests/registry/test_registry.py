"""``Registry``: the index fetched from a loopback server (ETag, offline, overrides) and each
bad input; binaries installed and removed; npx/uvx command lines; ``connect(agent_id=...)``."""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import stat
import sys
import threading
from pathlib import Path

import pytest
from regutil import SNAPSHOT, Served, agent_entry, binary, launcher_script, make_tar, make_zip, registry_json

from acplink import RegistryError, connect
from acplink.registry import Registry, platform_key


def _unpacked(cache: Path) -> list[Path]:
    """Every file under the install folders."""
    return [p for p in (cache / "agents").rglob("*") if not p.is_dir()]


def _registry(served: Served, *agents: dict[str, object], etag: bool = True) -> str:
    """Serve a registry of ``agents``, with an ETag of its content."""
    body = registry_json(*agents)
    return served.put("/registry.json", body, etag=f'"{hashlib.sha256(body).hexdigest()[:16]}"' if etag else None)


def test_list_from_a_url_then_304_with_the_etag(served: Served, cache: Path) -> None:
    url = served.put("/registry.json", SNAPSHOT.read_bytes(), etag='"snap"')
    first = Registry(url)
    assert [a.id for a in first.agents()] == ["codex-acp", "gemini", "mistral-vibe"]
    assert first.how == "fetched"
    again = Registry(url)  # (a new process would do the same: the copy and its ETag are on disk)
    assert [a.id for a in again.agents()] == ["codex-acp", "gemini", "mistral-vibe"]
    assert again.how == "not modified"
    assert served.statuses("/registry.json") == [200, 304]
    # the registry changes: a new ETag, the new content
    served.put("/registry.json", registry_json(agent_entry("solo", {"npx": {"package": "solo"}})), etag='"v2"')
    third = Registry(url)
    assert [a.id for a in third.agents()] == ["solo"] and third.how == "fetched"
    assert served.statuses("/registry.json") == [200, 304, 200]
    gemini = Registry(url, offline=True)
    assert [a.id for a in gemini.agents()] == ["solo"] and gemini.how == "cached"
    assert len(served.log) == 3  # (offline: not asked)


def test_without_an_etag_it_is_fetched_each_time(served: Served, cache: Path) -> None:
    url = _registry(served, agent_entry("a", {"npx": {"package": "a"}}), etag=False)
    Registry(url).agents()
    Registry(url).agents()
    assert served.statuses("/registry.json") == [200, 200]


def test_offline_with_an_empty_cache_is_one_clear_error(served: Served, cache: Path) -> None:
    url = _registry(served, agent_entry("a", {"npx": {"package": "a"}}))
    with pytest.raises(RegistryError, match=r"^offline, and no copy of the registry .* is cached"):
        Registry(url, offline=True).agents()
    assert served.log == []


def test_a_registry_that_is_not_json_is_refused_and_not_cached(served: Served, cache: Path) -> None:
    url = served.put("/registry.json", b"<html>not json</html>", etag='"x"')
    with pytest.raises(RegistryError, match=r"^registry http://127\.0\.0\.1:\d+/registry\.json is not JSON: "):
        Registry(url).agents()
    with pytest.raises(RegistryError, match="offline, and no copy"):
        Registry(url, offline=True).agents()


def test_a_registry_that_fails_its_schema_is_refused(served: Served, cache: Path) -> None:
    bad = agent_entry("Bad_Id", {"npx": {"package": "x"}})
    url = _registry(served, bad, agent_entry("ok", {"binary": {"linux-x86_64": {"archive": "https://x/y"}}}))
    with pytest.raises(RegistryError) as err:
        Registry(url).agents()
    assert str(err.value) == (f"registry {url} fails its schema: agents[0].id: 'Bad_Id' does not match "
                              "^[a-z][a-z0-9-]*$ (and 1 more)")
    assert "\n" not in str(err.value)


def test_a_local_file_and_the_environment_variable(tmp_path: Path, cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert next(a.id for a in Registry(SNAPSHOT).agents()) == "codex-acp"
    monkeypatch.setenv("ACPLINK_REGISTRY", str(SNAPSHOT))
    reg = Registry()
    assert reg.source == str(SNAPSHOT) and reg.agent("gemini").version == "0.27.3"
    with pytest.raises(RegistryError, match=r"registry '/nonexistent/registry\.json' cannot be read"):
        Registry("/nonexistent/registry.json").agents()


def test_download_failures(served: Served, cache: Path) -> None:
    with pytest.raises(RegistryError, match=r"download of .*/missing\.json failed: HTTP 404"):
        Registry(served.url("/missing.json")).agents()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RegistryError, match=rf"download of http://127\.0\.0\.1:{port}/r\.json failed: "):
        Registry(f"http://127.0.0.1:{port}/r.json", timeout=5).agents()


def test_redirects_to_http_are_followed_and_to_other_schemes_refused(served: Served, cache: Path) -> None:
    body = registry_json(agent_entry("a", {"npx": {"package": "a"}}))
    served.put("/real.json", body)
    served.redirects["/moved.json"] = served.url("/real.json")
    assert [a.id for a in Registry(served.url("/moved.json")).agents()] == ["a"]
    assert served.log == [("/moved.json", 302), ("/real.json", 200)]
    served.redirects["/ftp.json"] = "ftp://127.0.0.1/registry.json"
    with pytest.raises(RegistryError, match=r"download of .*/ftp\.json failed: it redirects to "
                                            r"'ftp://127\.0\.0\.1/registry\.json' \(refused"):
        Registry(served.url("/ftp.json")).agents()


def test_an_unknown_id_names_the_close_ones(cache: Path) -> None:
    with pytest.raises(RegistryError, match=r"no agent 'gemni' in the registry .*; did you mean gemini\?"):
        Registry(SNAPSHOT).agent("gemni")


def test_no_distribution_for_this_platform(served: Served, cache: Path) -> None:
    other = "windows-aarch64" if platform_key() != "windows-aarch64" else "linux-x86_64"
    _registry(served, agent_entry("far", {"binary": {other: {"archive": "https://x/y.zip", "cmd": "./y"}}}))
    with pytest.raises(RegistryError, match=rf"agent 'far' has no distribution for {platform_key()} "
                                            rf"\(binaries for: {other}; no npx or uvx package\)"):
        Registry(served.url("/registry.json")).launch("far")


# -- binaries ----------------------------------------------------------------------------


def _binary_agent(served: Served, agent_id: str = "demo", *, data: bytes | None = None, digest: bool = True,
                  sha: str | None = None, **kw: object) -> tuple[str, bytes]:
    data = data if data is not None else make_tar({"run-agent": launcher_script()})
    archive = served.put(f"/{agent_id}.tar.gz", data)
    dist = binary(archive, data, digest=digest, **kw)  # type: ignore[arg-type]
    if sha is not None:
        dist["binary"][platform_key()]["sha256"] = sha
    return _registry(served, agent_entry(agent_id, dist)), data


def test_install_launch_and_remove_a_binary(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served, args=["--flag"], env={"DEMO_REGISTRY_VAR": "1"})
    reg = Registry(url)
    folder = reg.install("demo")
    assert folder == cache / "agents" / "demo" / "1.0.0" / platform_key()
    program = folder / "run-agent"
    assert program.read_bytes() == launcher_script() and os.stat(program).st_mode & stat.S_IXUSR
    assert reg.installed() == [("demo", "1.0.0", folder)]
    assert reg.install("demo") == folder
    assert served.statuses("/demo.tar.gz") == [200]  # (installed: not downloaded again)
    launch = reg.launch("demo")
    assert launch.kind == "binary" and launch.command == [str(program), "--flag"]
    assert launch.env == {"DEMO_REGISTRY_VAR": "1"} and launch.program == [str(program)]
    assert [p.name for p in (cache / "agents" / "demo").iterdir()] == ["1.0.0"]  # (no temporary left)
    assert reg.remove("demo") == [folder]
    assert not (cache / "agents" / "demo").exists() and reg.installed() == []
    assert reg.remove("demo") == []


def test_a_zip_loses_the_executable_bit_and_gets_it_back(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served, data=make_zip({"bin/agent": launcher_script()}, mode=0o644), cmd="./bin/agent")
    launch = Registry(url).launch("demo")
    assert os.stat(launch.command[0]).st_mode & stat.S_IXUSR


def test_a_digest_mismatch_unpacks_nothing(served: Served, cache: Path) -> None:
    url, _data = _binary_agent(served, sha="0" * 64)
    with pytest.raises(RegistryError, match=r"sha256 of .*/demo\.tar\.gz is [0-9a-f]{64}, the registry says 0{64}: "
                                            "nothing was unpacked"):
        Registry(url).install("demo")
    assert _unpacked(cache) == []
    # --insecure: installed all the same
    assert (Registry(url, insecure=True).install("demo") / "run-agent").is_file()


def test_a_missing_digest_is_refused_unless_insecure(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served, digest=False)
    with pytest.raises(RegistryError, match=r"the registry gives no sha256 for .*: refusing to install agent "
                                            r"'demo' without checking it \(--insecure"):
        Registry(url).install("demo")
    assert served.statuses("/demo.tar.gz") == []  # (refused before downloading)
    assert (Registry(url, insecure=True).install("demo") / "run-agent").is_file()


def test_an_archive_that_fails_to_download(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served)
    del served.files["/demo.tar.gz"]
    with pytest.raises(RegistryError, match=r"download of .*/demo\.tar\.gz failed: HTTP 404"):
        Registry(url).install("demo")
    assert _unpacked(cache) == []


def test_an_unsafe_archive_installs_nothing(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served, data=make_tar({"run-agent": b"x", "../../evil": b"x"}))
    with pytest.raises(RegistryError, match=r"archive .* refused: member '\.\./\.\./evil' has a '\.\.' part"):
        Registry(url).install("demo")
    assert _unpacked(cache) == [] and not (cache / "evil").exists()


def test_a_cmd_that_is_not_in_the_archive(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served, cmd="./not-there")
    with pytest.raises(RegistryError, match=r"its cmd './not-there' is not a file of its archive"):
        Registry(url).install("demo")
    url, _ = _binary_agent(served, "up", cmd="../../bin/sh")
    with pytest.raises(RegistryError, match=r"its cmd '\.\./\.\./bin/sh' is not a path inside its archive"):
        Registry(url).install("up")


def test_offline_launch_uses_the_installed_binary(served: Served, cache: Path) -> None:
    url, _ = _binary_agent(served)
    Registry(url).install("demo")
    n = len(served.log)
    assert Registry(url, offline=True).launch("demo").kind == "binary"
    assert len(served.log) == n
    Registry(url).remove("demo")
    with pytest.raises(RegistryError, match=r"offline, and agent 'demo' 1\.0\.0 is not installed"):
        Registry(url, offline=True).launch("demo")


async def test_a_cancelled_launch_stops_its_download_and_its_thread(served: Served, cache: Path) -> None:
    data = make_tar({"run-agent": launcher_script(), "padding": os.urandom(2 << 20)})
    url, _ = _binary_agent(served, data=data)
    served.slow["/demo.tar.gz"] = 0.2  # (2 MiB in 64 KiB chunks: 6.4 s, longer than the wait below)
    reg = Registry(url)
    task = asyncio.create_task(reg.launch_async("demo"))
    while not served.statuses("/demo.tar.gz"):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(200):  # the thread ends at its next chunk (the leak check would see it otherwise)
        if not any(t.name == "acplink-registry-demo" for t in threading.enumerate()):
            break
        await asyncio.sleep(0.01)
    assert not any(t.name == "acplink-registry-demo" for t in threading.enumerate())
    assert _unpacked(cache) == [] and not reg.installed()


def test_a_cache_folder_that_cannot_be_written(served: Served, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    url, _ = _binary_agent(served)
    reg = Registry(url, cache_dir=blocked)
    assert [a.id for a in reg.agents()] == ["demo"]  # (read; not cached)
    with pytest.raises(RegistryError, match=r"^cannot install agent 'demo' in .*blocked/agents/demo/"):
        reg.install("demo")


# -- npx / uvx ---------------------------------------------------------------------------


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``npx`` and ``uvx`` on PATH (scripts of the test: nothing is fetched)."""
    folder = tmp_path / "tools"
    folder.mkdir()
    for name in ("npx", "uvx"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_npx_and_uvx_command_lines(served: Served, cache: Path, tools: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER_SET", "the user's")
    _registry(served,
              agent_entry("js", {"npx": {"package": "@scope/agent@1.2.3", "args": ["--acp"],
                                         "env": {"USER_SET": "the agent's", "AGENT_ONLY": "a"}}}),
              agent_entry("py", {"uvx": {"package": "py-agent==0.4", "args": ["serve", "--stdio"]}}),
              agent_entry("both", {"npx": {"package": "b"}, "uvx": {"package": "b"}}))
    reg = Registry(served.url("/registry.json"))
    js = reg.launch("js")
    assert js.kind == "npx" and js.command == [str(tools / "npx"), "--yes", "@scope/agent@1.2.3", "--acp"]
    assert js.env == {"AGENT_ONLY": "a"}  # (the user's USER_SET wins: not overridden)
    assert js.agent_env == {"USER_SET": "the agent's", "AGENT_ONLY": "a"}
    py = reg.launch("py")
    assert py.kind == "uvx" and py.command == [str(tools / "uvx"), "py-agent==0.4", "serve", "--stdio"]
    assert py.program == [str(tools / "uvx"), "py-agent==0.4"]
    assert reg.launch("both").kind == "npx" and reg.launch("both", kind="uvx").kind == "uvx"
    with pytest.raises(RegistryError, match="agent 'js' has no uvx distribution"):
        reg.launch("js", kind="uvx")
    (tools / "npx").unlink()
    with pytest.raises(RegistryError, match=r"agent 'js' runs with npx, which is not on PATH: install Node\.js"):
        reg.launch("js")


# -- connect(agent_id=...) -----------------------------------------------------------------


async def test_connect_by_agent_id_runs_the_installed_agent(served: Served, cache: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "env-seen"
    script = launcher_script(f'printf "%s %s" "$REG_A" "$REG_B" > "{out}"')
    url, _ = _binary_agent(served, data=make_tar({"run-agent": script}),
                           env={"REG_A": "registry", "REG_B": "registry"})
    monkeypatch.setenv("REG_B", "user")
    async with connect(agent_id="demo", registry=url, stderr="capture") as client:
        assert client.agent_info is not None and client.agent_info.name == "acplink-demo"
        session = await client.new_session(str(tmp_path))
        assert "hello" in (await session.prompt("hello").text()).lower()
    assert out.read_text() == "registry user"  # the agent's variable added, the user's kept


async def test_connect_by_agent_id_fails_with_the_registry_error(cache: Path) -> None:
    with pytest.raises(RegistryError, match="no agent 'nope'"):
        await connect(agent_id="nope", registry=str(SNAPSHOT))


def test_connect_takes_an_agent_or_an_agent_id() -> None:
    from acplink import UsageError

    with pytest.raises(UsageError, match="one of them"):
        connect()
    with pytest.raises(UsageError, match="one of them"):
        connect([sys.executable], agent_id="x")
    with pytest.raises(UsageError, match="registry= is for agent_id="):
        connect([sys.executable], registry="r.json")
