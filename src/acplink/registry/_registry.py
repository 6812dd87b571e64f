"""The registry client: ``registry.json`` fetched (cached, ``ETag``), validated, and an agent's
command line built from its distribution (a binary installed into the cache, or ``npx`` /
``uvx``)."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import orjson

from ..errors import RegistryError
from . import _fetch
from ._archive import ArchiveLimits, unpack
from ._schema import registry_problems

__all__ = ["DEFAULT_REGISTRY", "ENV_REGISTRY", "Launch", "Registry", "RegistryAgent", "platform_key"]

#: the official registry
DEFAULT_REGISTRY = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
#: ``$ACPLINK_REGISTRY``: another registry, a URL or a local file
ENV_REGISTRY = "ACPLINK_REGISTRY"
#: the most a registry.json may weigh
_MAX_REGISTRY_BYTES = 16 << 20
_MARKER = ".acplink-install.json"

Kind = Literal["binary", "npx", "uvx"]


def platform_key(system: str | None = None, machine: str | None = None) -> str:
    """This machine as the registry names platforms: ``linux-x86_64``, ``darwin-aarch64``,
    ``windows-x86_64``, ..."""
    system = (system or sys.platform).lower()
    os_name = "windows" if system.startswith(("win", "cygwin")) else "darwin" if system == "darwin" else \
        "linux" if system.startswith("linux") else system
    arch = (machine or platform.machine()).lower()
    arch = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    return f"{os_name}-{arch}"


@dataclass(frozen=True)
class RegistryAgent:
    """One agent of the registry (its entry, validated)."""

    id: str
    name: str
    version: str
    description: str
    distribution: dict[str, Any]
    repository: str | None = None
    website: str | None = None
    license: str | None = None
    authors: tuple[str, ...] = ()

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> RegistryAgent:
        return cls(id=entry["id"], name=entry["name"], version=entry["version"], description=entry["description"],
                   distribution=entry["distribution"], repository=entry.get("repository"),
                   website=entry.get("website"), license=entry.get("license"),
                   authors=tuple(entry.get("authors", ())))

    def kinds(self) -> list[Kind]:
        """Its distributions, in the order acplink prefers them (a binary for this platform
        first, then npx, then uvx)."""
        out: list[Kind] = []
        if platform_key() in self.distribution.get("binary", {}):
            out.append("binary")
        out.extend(k for k in ("npx", "uvx") if k in self.distribution)
        return out


@dataclass(frozen=True)
class Launch:
    """How to start an agent of the registry: ``command`` (the program and its arguments) and
    ``env``, the agent's variables the user's environment does not set (the user's values
    win: pass it as ``connect(env=...)`` or merge it over ``os.environ``)."""

    agent: RegistryAgent
    kind: Kind
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: the program without the registry's ``args`` (``npx --yes PACKAGE``, the binary): what a
    #: terminal auth method's own ``args`` follow
    program: list[str] = field(default_factory=list)
    #: the agent's own variables, as the registry gives them (before the merge)
    agent_env: dict[str, str] = field(default_factory=dict)
    #: a binary's install folder
    folder: Path | None = None


class Registry:
    """The ACP agent registry, as one process sees it.

    ``source``: a URL or a local file (default ``$ACPLINK_REGISTRY``, else the official
    registry). A URL is fetched once per :class:`Registry`, its copy kept in ``cache_dir``
    (default :func:`default_cache_dir`) with its ``ETag`` (asked again with ``If-None-Match``:
    a ``304`` keeps the copy). ``offline``: never fetch, use the cached copy. ``insecure``:
    install a binary whose archive has no ``sha256`` in the registry, or a wrong one (never
    do this for an archive you do not trust). Every failure is a one-line
    :class:`~acplink.RegistryError`. Blocking (files and HTTP): from async code run its calls
    in a thread (``connect(agent_id=...)`` does).
    """

    def __init__(self, source: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None,
                 offline: bool = False, insecure: bool = False, timeout: float = 60.0,
                 limits: ArchiveLimits | None = None, max_download: int = 2 << 30) -> None:
        given = os.fspath(source) if source is not None else os.environ.get(ENV_REGISTRY) or DEFAULT_REGISTRY
        self.source = given
        self.cache_dir = Path(cache_dir) if cache_dir is not None else _fetch.default_cache_dir()
        self.offline = offline
        self.insecure = insecure
        self.timeout = timeout
        self.limits = limits or ArchiveLimits()
        self.max_download = max_download
        self._agents: dict[str, RegistryAgent] | None = None
        self._stop = threading.Event()  # (set: a download in a thread stops)
        #: how the registry was read last: "file", "fetched", "not modified" (a 304), "cached" (offline)
        self.how = ""

    # the index ---------------------------------------------------------------------------

    def _cache_paths(self) -> tuple[Path, Path]:
        key = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        folder = self.cache_dir / "registry"
        return folder / f"{key}.json", folder / f"{key}.meta.json"

    def _read_source(self) -> bytes:
        if not _fetch.is_url(self.source):
            path = self.source.removeprefix("file://")
            try:
                with open(path, "rb") as f:
                    self.how = "file"
                    return f.read(_MAX_REGISTRY_BYTES + 1)
            except OSError as exc:
                raise RegistryError(f"registry {self.source!r} cannot be read: {exc.strerror or exc}") from None
        body_path, meta_path = self._cache_paths()
        cached = body_path.is_file() and meta_path.is_file()
        if self.offline:
            if not cached:
                raise RegistryError(f"offline, and no copy of the registry {self.source} is cached: run "
                                    "`acplink agents list` once online")
            self.how = "cached"
            return body_path.read_bytes()
        etag = None
        if cached:
            try:
                etag = json.loads(meta_path.read_text(encoding="utf-8")).get("etag")
            except (OSError, ValueError, AttributeError):
                etag = None
        reply = _fetch.get(self.source, etag=etag, max_bytes=_MAX_REGISTRY_BYTES, timeout=self.timeout)
        if reply.status == 304 and cached:
            self.how = "not modified"
            return body_path.read_bytes()
        self.how = "fetched"
        self._parse(reply.body)  # (a copy is kept only of a valid registry)
        with contextlib.suppress(OSError):  # (a cache that cannot be written: this run goes on without it)
            body_path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(body_path, reply.body)
            _write_atomic(meta_path, json.dumps({"url": self.source, "etag": reply.headers.get("etag"),
                                                 "fetched": time.time()}).encode())
        return reply.body

    def _parse(self, body: bytes) -> dict[str, RegistryAgent]:
        if len(body) > _MAX_REGISTRY_BYTES:
            raise RegistryError(f"registry {self.source} is larger than {_MAX_REGISTRY_BYTES:,} bytes")
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise RegistryError(f"registry {self.source} is not JSON: {exc}") from None
        problems = registry_problems(data)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RegistryError(f"registry {self.source} fails its schema: {problems[0]}{more}")
        return {entry["id"]: RegistryAgent.from_entry(entry) for entry in data["agents"]}

    def agents(self) -> list[RegistryAgent]:
        """Every agent of the registry (fetched on the first call)."""
        if self._agents is None:
            self._agents = self._parse(self._read_source())
        return list(self._agents.values())

    def agent(self, agent_id: str) -> RegistryAgent:
        """The agent ``agent_id``; an unknown id is a :class:`RegistryError` naming close ones."""
        self.agents()
        assert self._agents is not None
        found = self._agents.get(agent_id)
        if found is None:
            near = difflib.get_close_matches(agent_id, list(self._agents), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else "; `acplink agents list` lists them"
            raise RegistryError(f"no agent {agent_id!r} in the registry {self.source}{hint}")
        return found

    # installing --------------------------------------------------------------------------

    def _agent_folder(self, agent_id: str) -> Path:
        return self.cache_dir / "agents" / agent_id

    def install_folder(self, agent: RegistryAgent) -> Path:
        """Where a binary of ``agent`` (this version, this platform) is unpacked."""
        return self._agent_folder(agent.id) / agent.version / platform_key()

    def installed(self) -> list[tuple[str, str, Path]]:
        """(id, version, folder) of every binary installed in the cache."""
        out = []
        for marker in sorted((self.cache_dir / "agents").glob(f"*/*/*/{_MARKER}")):
            folder = marker.parent
            out.append((folder.parent.parent.name, folder.parent.name, folder))
        return out

    def target(self, agent: RegistryAgent) -> dict[str, Any]:
        """The binary distribution of ``agent`` for this platform."""
        binaries: dict[str, Any] = agent.distribution.get("binary", {})
        here = platform_key()
        if here not in binaries:
            offered = ", ".join(sorted(binaries)) or "none"
            raise RegistryError(f"agent {agent.id!r} has no binary for {here} (it has: {offered})")
        return dict(binaries[here])

    def install(self, agent_id: str) -> Path:
        """Download, verify and unpack the binary of ``agent_id`` for this platform (nothing to
        do when this version is installed); its folder."""
        agent = self.agent(agent_id)
        target = self.target(agent)
        folder = self.install_folder(agent)
        if (folder / _MARKER).is_file():
            return folder
        if self.offline:
            raise RegistryError(f"offline, and agent {agent.id!r} {agent.version} is not installed")
        url = target["archive"]
        expected = (target.get("sha256") or "").lower()
        if not expected and not self.insecure:
            raise RegistryError(f"the registry gives no sha256 for {url}: refusing to install agent {agent.id!r} "
                                "without checking it (--insecure to install it anyway)")
        try:
            self._install(agent, target, folder, url, expected)
        except OSError as exc:  # (the cache folder: not writable, full)
            raise RegistryError(f"cannot install agent {agent.id!r} in {folder}: {exc.strerror or exc}") from None
        return folder

    def _install(self, agent: RegistryAgent, target: dict[str, Any], folder: Path, url: str, expected: str) -> None:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".download-", dir=folder.parent) as tmp:
            archive = Path(tmp) / "archive"
            digest = _fetch.download(url, archive, max_bytes=self.max_download, timeout=self.timeout,
                                     stop=self._stop)
            if expected and digest != expected and not self.insecure:
                raise RegistryError(f"sha256 of {url} is {digest}, the registry says {expected}: nothing was "
                                    "unpacked")
            staging = Path(tmp) / "unpacked"
            raw_name = PurePosixPath(target["cmd"]).name or agent.id
            unpack(archive, staging, raw_name=raw_name, limits=self.limits, name=url)
            _program(staging, target["cmd"], agent.id)  # (the command must be in the archive)
            (staging / _MARKER).write_text(json.dumps({"id": agent.id, "version": agent.version, "archive": url,
                                                       "sha256": digest, "platform": platform_key()}))
            if (folder / _MARKER).is_file():  # (another process installed it meanwhile)
                return
            if folder.exists():  # (a half-removed earlier install)
                shutil.rmtree(folder)
            try:
                os.replace(staging, folder)
            except OSError:
                if not (folder / _MARKER).is_file():  # (else: another process's install won the race)
                    raise

    def remove(self, agent_id: str) -> list[Path]:
        """Remove every installed version of ``agent_id`` from the cache (the registry is not
        asked); the folders removed."""
        folder = self._agent_folder(agent_id)
        removed = [f for (i, _, f) in self.installed() if i == agent_id]
        if folder.exists():
            shutil.rmtree(folder)
        return removed

    # launching ---------------------------------------------------------------------------

    async def launch_async(self, agent_id: str, *, kind: Kind | None = None) -> Launch:
        """:meth:`launch` from async code: run in a thread of its own, which ends with it (no
        pool thread is left behind); cancelled, the download stops at its next chunk."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Launch] = loop.create_future()

        def settle(result: Launch | None, error: BaseException | None) -> None:
            if done.cancelled():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)  # type: ignore[arg-type]

        def work() -> None:
            try:
                result = self.launch(agent_id, kind=kind)
            except BaseException as exc:  # (handed to the awaiting task)
                loop.call_soon_threadsafe(settle, None, exc)
            else:
                loop.call_soon_threadsafe(settle, result, None)

        self._stop.clear()
        thread = threading.Thread(target=work, name=f"acplink-registry-{agent_id}", daemon=True)
        thread.start()
        try:
            return await done
        except asyncio.CancelledError:
            self._stop.set()
            raise
        finally:
            while thread.is_alive() and not self._stop.is_set():  # (it has settled: about to end)
                await asyncio.sleep(0.001)

    def launch(self, agent_id: str, *, kind: Kind | None = None) -> Launch:
        """How to start ``agent_id``: a binary for this platform (installed first when needed),
        else its ``npx`` package, else its ``uvx`` one (``kind`` picks one)."""
        agent = self.agent(agent_id)
        kinds = agent.kinds()
        if kind is not None:
            if kind not in kinds:
                raise RegistryError(f"agent {agent.id!r} has no {kind} distribution"
                                    + (f" for {platform_key()}" if kind == "binary" else ""))
            kinds = [kind]
        if not kinds:
            offered = ", ".join(sorted(agent.distribution.get("binary", {}))) or "none"
            raise RegistryError(f"agent {agent.id!r} has no distribution for {platform_key()} (binaries for: "
                                f"{offered}; no npx or uvx package)")
        chosen = kinds[0]
        if chosen == "binary":
            target = self.target(agent)
            folder = self.install(agent.id)
            head = [str(_program(folder, target["cmd"], agent.id))]
            command = [*head, *target.get("args", [])]
            agent_env = dict(target.get("env", {}))
        else:
            package = agent.distribution[chosen]
            tool = "npx" if chosen == "npx" else "uvx"
            found = shutil.which(tool)
            if found is None:
                need = "Node.js (npm)" if tool == "npx" else "uv"
                raise RegistryError(f"agent {agent.id!r} runs with {tool}, which is not on PATH: install {need}")
            # npx --yes: never ask whether to install the package (stdin is the ACP stream)
            head = [found, "--yes", package["package"]] if tool == "npx" else [found, package["package"]]
            command = [*head, *package.get("args", [])]
            agent_env = dict(package.get("env", {}))
            folder = None
        env = {k: v for k, v in agent_env.items() if k not in os.environ}
        return Launch(agent=agent, kind=chosen, command=command, env=env, program=head, agent_env=agent_env,
                      folder=folder)


def _program(folder: Path, cmd: str, agent_id: str) -> Path:
    """The program ``cmd`` names inside ``folder`` (made executable)."""
    pure = PurePosixPath(cmd.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts:
        raise RegistryError(f"agent {agent_id!r}: its cmd {cmd!r} is not a path inside its archive")
    program = folder.joinpath(*[p for p in pure.parts if p not in ("", ".")])
    real, root = os.path.realpath(program), os.path.realpath(folder)
    if os.path.commonpath([real, root]) != root or not os.path.isfile(real):
        raise RegistryError(f"agent {agent_id!r}: its cmd {cmd!r} is not a file of its archive")
    mode = os.stat(real).st_mode
    if not mode & 0o100:
        os.chmod(real, mode | 0o111)  # (zip archives often lose the executable bit)
    return program


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
