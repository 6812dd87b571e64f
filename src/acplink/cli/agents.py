"""``acplink agents list|show|install|remove|auth``: the agents of the ACP registry
(docs/registry.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import orjson

from .._text import sanitize_for_terminal
from ..errors import AcpError, RequestError
from .common import add_registry_options, add_startup_option, fail, one_line, registry_of

if TYPE_CHECKING:
    from ..registry import Launch, Registry, RegistryAgent

__all__ = ["add_parser", "run"]

HELP = "list, show, install and remove the agents of the ACP registry"
EXAMPLES = """examples:
  acplink agents list                      # the registry's agents and how each runs here
  acplink agents show gemini               # one agent: its distributions and command line
  acplink agents show gemini --auth        # ... and the auth methods it advertises (starts it)
  acplink agents install codex-acp         # download, check and unpack its binary
  acplink agents auth gemini               # its auth methods; `auth gemini METHOD` runs one
  acplink agents remove codex-acp
  acplink prompt --agent gemini "hello"    # run it (chat --agent ID too)
the registry: --registry URL|FILE, else $ACPLINK_REGISTRY, else the official one; cached with its
ETag in $ACPLINK_CACHE_DIR (default: the per-user cache folder)/acplink."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("agents", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    inner = p.add_subparsers(dest="agents_command", metavar="ACTION")
    listing = inner.add_parser("list", help="the registry's agents")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    show = inner.add_parser("show", help="one agent: its distributions and how it runs here")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    show.add_argument("--auth", action="store_true", help="start the agent and list the auth methods it advertises")
    install = inner.add_parser("install", help="download, check (sha256) and unpack an agent's binary")
    install.add_argument("id", metavar="ID")
    remove = inner.add_parser("remove", help="remove an agent's installed binaries from the cache")
    remove.add_argument("id", metavar="ID")
    auth = inner.add_parser("auth", help="list an agent's auth methods, or run one (agent or terminal auth)")
    auth.add_argument("id", metavar="ID")
    auth.add_argument("method", nargs="?", metavar="METHOD", help="the auth method to run")
    for q in (listing, show, install, remove, auth):
        add_registry_options(q)
        q.set_defaults(run=run)
    for q in (show, auth):
        add_startup_option(q)
    p.set_defaults(run=_usage(p))


def _usage(p: argparse.ArgumentParser) -> Any:
    def usage(args: argparse.Namespace) -> int:
        p.print_help(sys.stderr)
        return 2
    return usage


def run(args: argparse.Namespace) -> int:
    try:
        registry = registry_of(args)
        action = args.agents_command
        if action == "list":
            return _list(registry, args.json)
        if action == "show":
            return _show(registry, args)
        if action == "install":
            return _install(registry, args.id)
        if action == "remove":
            return _remove(registry, args.id)
        return _auth(registry, args)
    except AcpError as exc:
        return fail(one_line(exc))
    except KeyboardInterrupt:
        return fail("interrupted", 130)


def _out(text: str) -> None:
    print(sanitize_for_terminal(text))  # (the registry's text: no escapes)


def _runs_as(registry: Registry, agent: RegistryAgent) -> str:
    kinds = agent.kinds()
    if not kinds:
        return "-"
    if kinds[0] == "binary":
        installed = (registry.install_folder(agent) / ".acplink-install.json").is_file()
        return "binary (installed)" if installed else "binary"
    return kinds[0]


def _list(registry: Registry, as_json: bool) -> int:
    agents = sorted(registry.agents(), key=lambda a: a.id)
    if as_json:
        sys.stdout.write(orjson.dumps([{"id": a.id, "name": a.name, "version": a.version,
                                        "description": a.description, "runsAs": _runs_as(registry, a)}
                                       for a in agents], option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    width = max((len(a.id) for a in agents), default=2)
    for a in agents:
        _out(f"{a.id:<{width}}  {a.version:<10} {_runs_as(registry, a):<19} {a.name}: {a.description}")
    return 0


def _describe(registry: Registry, agent: RegistryAgent) -> dict[str, Any]:
    info: dict[str, Any] = {"id": agent.id, "name": agent.name, "version": agent.version,
                            "description": agent.description}
    for key in ("repository", "website", "license"):
        if getattr(agent, key):
            info[key] = getattr(agent, key)
    if agent.authors:
        info["authors"] = list(agent.authors)
    info["distribution"] = agent.distribution
    info["runsAs"] = _runs_as(registry, agent)
    return info


def _show(registry: Registry, args: argparse.Namespace) -> int:
    agent = registry.agent(args.id)
    info = _describe(registry, agent)
    methods = asyncio.run(_auth_methods(registry, args)) if args.auth else None
    if methods is not None:
        info["authMethods"] = methods
    if args.json:
        sys.stdout.write(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    _out(f"{agent.name} ({agent.id}) {agent.version}")
    _out(f"  {agent.description}")
    for key in ("repository", "website", "license"):
        if key in info:
            _out(f"  {key}: {info[key]}")
    if agent.authors:
        _out(f"  authors: {', '.join(agent.authors)}")
    dist = agent.distribution
    if "binary" in dist:
        _out(f"  binary: {', '.join(sorted(dist['binary']))}")
        for key, target in sorted(dist["binary"].items()):
            digest = target.get("sha256") or "no sha256"
            _out(f"    {key}: {target['archive']} ({digest}) cmd {target['cmd']}"
                 + (f" {' '.join(target.get('args', []))}" if target.get("args") else ""))
    for kind in ("npx", "uvx"):
        if kind in dist:
            pkg = dist[kind]
            _out(f"  {kind}: {pkg['package']}" + (f" {' '.join(pkg.get('args', []))}" if pkg.get("args") else ""))
    _out(f"  runs here as: {info['runsAs']}")
    if methods is not None:
        _out("  auth methods:" if methods else "  auth methods: none advertised")
        for m in methods:
            _out("    " + _method_line(m))
    return 0


def _method_line(m: dict[str, Any]) -> str:
    text = f"{m['id']} ({m.get('type', 'agent')} auth): {m.get('name', '')}"
    if m.get("description"):
        text += f": {m['description']}"
    if m.get("args"):
        text += f" [runs the agent with: {' '.join(m['args'])}]"
    return text


def _install(registry: Registry, agent_id: str) -> int:
    agent = registry.agent(agent_id)
    kinds = agent.kinds()
    if kinds and kinds[0] != "binary":
        pkg = agent.distribution[kinds[0]]["package"]
        _out(f"{agent.id} runs with {kinds[0]} {pkg}: nothing to install ({kinds[0]} fetches it when it starts)")
        return 0
    folder = registry.install(agent_id)
    _out(f"installed {agent.id} {agent.version} in {folder}")
    return 0


def _remove(registry: Registry, agent_id: str) -> int:
    removed = registry.remove(agent_id)
    if not removed:
        return fail(f"agent {agent_id!r} is not installed")
    for folder in removed:
        _out(f"removed {folder}")
    return 0


async def _with_client(launch: Launch, args: argparse.Namespace, method: str | None) -> list[dict[str, Any]]:
    """Start the agent; its auth methods (as data); with ``method``, authenticate with it."""
    from ..client.client import connect
    from ..schema._parse import dump

    opening = connect(launch.command, env=launch.env, stderr="capture", fs=False, terminal=False)
    async with asyncio.timeout(args.startup_timeout):
        client = await opening
    try:
        methods: list[dict[str, Any]] = [dump(m) for m in client.auth_methods]
        if method is not None:
            await client.authenticate(method)
        return methods
    finally:
        await client.aclose()


async def _auth_methods(registry: Registry, args: argparse.Namespace) -> list[dict[str, Any]]:
    launch = await registry.launch_async(args.id)
    try:
        return await _with_client(launch, args, None)
    except TimeoutError:
        raise AcpError(f"agent {args.id!r} did not answer initialize within {args.startup_timeout:g} s") from None


def _auth(registry: Registry, args: argparse.Namespace) -> int:
    launch = registry.launch(args.id)
    try:
        methods = asyncio.run(_with_client(launch, args, None))
    except TimeoutError:
        return fail(f"agent {args.id!r} did not answer initialize within {args.startup_timeout:g} s")
    if args.method is None:
        if not methods:
            _out(f"{args.id} advertises no auth methods")
        for m in methods:
            _out(_method_line(m))
        return 0
    chosen = next((m for m in methods if m.get("id") == args.method), None)
    if chosen is None:
        known = ", ".join(str(m.get("id")) for m in methods) or "none"
        return fail(f"agent {args.id!r} advertises no auth method {args.method!r} (it has: {known})")
    if chosen.get("type") == "terminal":
        return _terminal_auth(launch, chosen)
    try:
        asyncio.run(_with_client(launch, args, args.method))
    except RequestError as exc:
        return fail(f"authentication with {args.method!r} failed: {one_line(exc)}")
    _out(f"authenticated with {args.method!r}")
    return 0


def _terminal_auth(launch: Launch, method: dict[str, Any]) -> int:
    """Terminal auth: the agent's program with the method's ``args`` and ``env`` (instead of
    the registry's), run in this terminal; its exit status is ours."""
    command = [*launch.program, *method.get("args", [])]
    env = {**os.environ, **{k: v for k, v in launch.agent_env.items() if k not in os.environ},
           **(method.get("env") or {})}
    print(f"running {' '.join(command)} in this terminal ({method['id']})", file=sys.stderr)
    try:
        code = subprocess.run(command, env=env, check=False).returncode
    except OSError as exc:
        return fail(f"cannot run {command[0]!r}: {exc.strerror or exc}")
    if code != 0:
        return fail(f"the terminal auth command exited with code {code}")
    _out(f"authenticated with {method['id']!r} (terminal)")
    return 0
