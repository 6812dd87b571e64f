"""Options and helpers shared by the client subcommands (chat, prompt)."""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from .._text import sanitize_for_terminal
from ..client.client import Client, connect
from ..client.permissions import PermissionPolicy
from ..client.session import Session
from ..errors import (
    AcpError,
    AuthRequired,
    ConnectionClosed,
    PeerOutputNotJson,
    RequestError,
    TransportError,
    UsageError,
)
from ..transports._remote import CookieJar, require_libraries
from ..transports.subprocess import SubprocessTransport, stderr_report
from .mcp_option import add_mcp_option, mcp_usage_error, offer_mcp, require_mcp

if TYPE_CHECKING:
    from ..registry import Registry

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "ArgParser",
    "StartupTimeout",
    "add_client_options",
    "add_registry_options",
    "add_startup_option",
    "agent_command",
    "client_usage_error",
    "describe_failure",
    "fail",
    "given_command",
    "library_warnings",
    "one_line",
    "open_client",
    "port_number",
    "positive_seconds",
    "registry_of",
    "start_session",
]

#: how long an agent may take to answer ``initialize`` (``--startup-timeout``)
DEFAULT_STARTUP_TIMEOUT = 60.0


class _BadArguments(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ArgParser(argparse.ArgumentParser):
    """argparse with one error style: the usage of the (sub)command that failed, then one
    ``acplink: error: ...`` line naming the bad option; exit status 2. Subcommand parsers
    reject unknown arguments themselves, so the usage shown is theirs."""

    def error(self, message: str) -> NoReturn:
        raise _BadArguments(message)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        try:
            ns, extra = super().parse_known_args(argv, namespace)
        except _BadArguments as exc:
            unknown = self._unknown_options(argv)  # they often cause the error argparse reports
            self._fail(_unknown_message(unknown) if unknown else exc.message)
        if extra and self._subcommand():
            self._fail(_unknown_message(extra))
        return ns, extra

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            self._fail(_unknown_message(extra))
        return ns

    def _subcommand(self) -> bool:
        return " " in self.prog

    def _unknown_options(self, argv: list[str]) -> list[str]:
        """The arguments argparse does not recognise, found by parsing again with nothing required."""
        saved = [(a, a.required) for a in self._actions]
        groups = [(g, g.required) for g in self._mutually_exclusive_groups]
        try:
            for a, _ in saved:
                a.required = False
            for g, _ in groups:
                g.required = False
            _, extra = super().parse_known_args(argv, argparse.Namespace())
        except _BadArguments:
            return []
        finally:
            for a, req in saved:
                a.required = req
            for g, req in groups:
                g.required = req
        return [x for x in extra if x.startswith("-")]

    def _fail(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.exit(fail(message, 2))


def _unknown_message(extra: Sequence[str]) -> str:
    options = [x for x in extra if x.startswith("-") and x != "-"]
    if options:
        names = ", ".join(x.split("=", 1)[0] for x in options)
        return f"unknown option{'s' if len(options) > 1 else ''}: {names}"
    return f"unexpected argument{'s' if len(extra) > 1 else ''}: {' '.join(extra)}"


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def add_startup_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--startup-timeout", type=positive_seconds, default=DEFAULT_STARTUP_TIMEOUT, metavar="S",
                   help=f"give up when the agent has not answered initialize within S seconds "
                        f"(default {DEFAULT_STARTUP_TIMEOUT:g})")


class _AgentAfterDashDash(ArgParser):
    """Everything after the first ``--`` is the agent command line, verbatim; options may
    come before or after the other arguments (``prompt "hi" --json -- agent --flag``)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        agent: list[str] = []
        if "--" in argv:
            cut = argv.index("--")
            argv, agent = argv[:cut], argv[cut + 1:]
        ns, extra = super().parse_known_args(argv, namespace)
        if agent:
            ns.agent = [*(ns.agent or []), *agent]
        if hasattr(ns, "url"):  # (the client options: their usage errors, before anything starts)
            wrong = client_usage_error(ns)
            if wrong:
                self._fail(wrong)
            if ns.url:  # (the remote extra; main() shows the MissingDependency)
                require_libraries(ns.url)
            require_mcp(ns)
        return ns, extra


#: the schemes of ``--url``
URL_SCHEMES = ("ws://", "wss://", "http://", "https://")


def client_usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the client options (``--url`` without a scheme or with an agent
    command, remote-only options without ``--url``, a bad ``--header``, ``--cwd`` / ``--add-dir``
    that are not directories), or None."""
    url = args.url
    if url is not None:
        head, sep, rest = url.partition("://")
        if not sep or f"{head.lower()}://" not in URL_SCHEMES:
            example = f"ws://{rest if sep else url}".rstrip("/")
            return (f"--url {url!r} needs a scheme: ws://, wss:// (WebSocket), http:// or https:// (streamable "
                    f"HTTP), e.g. --url {example}")
        parts = urlsplit(url)
        if not parts.hostname:
            return f"--url {url!r} names no host (e.g. --url {head.lower()}://127.0.0.1:7331/acp)"
        if parts.username or parts.password:
            return "--url must not carry credentials: put them in --token or a --header"
        if given_command(args):
            return "--url and an agent command (-- AGENT_CMD) exclude each other"
        if getattr(args, "agent_id", None):
            return "--url and --agent exclude each other"
    else:
        remote = [flag for flag, given in (("--token", args.token is not None), ("--header", bool(args.header)),
                                           ("--remote-fs", args.remote_fs),
                                           ("--remote-terminal", args.remote_terminal)) if given]
        if remote:
            return f"{', '.join(remote)} {'is' if len(remote) == 1 else 'are'} for a remote agent: give --url too"
    for h in args.header:
        name, sep, _ = h.partition(":")
        if not sep or not name.strip():
            return f"--header {h!r} is not 'Name: value'"
    if getattr(args, "agent_id", None) and given_command(args):
        return "--agent and an agent command (-- AGENT_CMD) exclude each other"
    if not getattr(args, "agent_id", None) and (args.offline or args.insecure or args.registry):
        used = [f for f, v in (("--registry", args.registry), ("--offline", args.offline),
                               ("--insecure", args.insecure)) if v]
        return f"{', '.join(used)} {'is' if len(used) == 1 else 'are'} for an agent of the registry: give --agent ID"
    if not os.path.isdir(args.cwd):
        return f"--cwd {args.cwd!r} is not a directory"
    for d in args.add_dir:
        if not os.path.isdir(d):
            return f"--add-dir {d!r} is not a directory"
    return mcp_usage_error(args)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 0 and 65535, not {value}")
    return value


def add_client_options(p: argparse.ArgumentParser) -> None:
    p.__class__ = _AgentAfterDashDash  # subparsers are built by argparse; only parsing changes
    p.add_argument("--cwd", default=".", help="session working directory (default: current directory)")
    p.add_argument("--add-dir", action="append", default=[], metavar="DIR",
                   help="another directory the agent may access (repeatable)")
    p.add_argument("--auth-method", metavar="ID", help="authenticate with this method before the session")
    p.add_argument("--no-fs", action="store_true", help="do not offer file-system access to the agent")
    p.add_argument("--no-terminal", action="store_true", help="do not offer terminals to the agent")
    add_startup_option(p)
    p.add_argument("--debug", action="store_true", help="show tracebacks and protocol logs")
    add_mcp_option(p)
    _add_remote_options(p)
    add_registry_options(p, agent=True)
    p.add_argument("agent", nargs="*", default=[], metavar="-- AGENT_CMD",
                   help="the agent command line, after `--` (default: the built-in demo agent)")


def add_registry_options(p: argparse.ArgumentParser, *, agent: bool = False) -> None:
    """``--registry``, ``--offline``, ``--insecure`` (and, with ``agent``, ``--agent ID``):
    an agent of the ACP registry (docs/registry.md)."""
    r = p.add_argument_group("an agent of the ACP registry (instead of -- AGENT_CMD)" if agent else "the ACP registry")
    if agent:
        r.add_argument("--agent", dest="agent_id", metavar="ID|CMD", action=_AgentOption,
                       help="start the registry's agent ID (installed into the cache first when needed); a "
                            "value with a space or a '/', or naming an existing file, is a command line "
                            "instead (shell-quoted)")
    r.add_argument("--registry", metavar="URL|FILE",
                   help="the registry.json to use (default: $ACPLINK_REGISTRY, else the official registry)")
    r.add_argument("--offline", action="store_true", help="never fetch: use the cached registry and installs")
    r.add_argument("--insecure", action="store_true",
                   help="install an archive whose sha256 the registry does not give, or that does not match it")


def is_agent_command(value: str) -> bool:
    """Whether an ``--agent`` value is a command line rather than a registry ID: it has a space
    or a path separator, or names an existing file (registry IDs are single words)."""
    return any(c.isspace() for c in value) or "/" in value or os.sep in value or os.path.exists(value)


class _AgentOption(argparse.Action):
    """``--agent VALUE``: the last value in ``agent_id``, and every value, in order, in ``agents``
    (``acplink prompt`` runs several side by side)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.agents = [*(getattr(namespace, "agents", None) or []), values]


def registry_of(args: argparse.Namespace) -> Registry:
    """The :class:`Registry` of the registry options."""
    from ..registry import Registry  # (imported when used: most commands never read the registry)

    return Registry(args.registry, offline=args.offline, insecure=args.insecure)


def _add_remote_options(p: argparse.ArgumentParser) -> None:
    r = p.add_argument_group("remote agent (instead of -- AGENT_CMD)")
    r.add_argument("--url", metavar="URL", help="a remote agent: ws:// or wss:// (WebSocket), http:// or https:// "
                                                "(streamable HTTP); the path defaults to /acp")
    r.add_argument("--token", metavar="T", help="send Authorization: Bearer T (default: $ACPLINK_TOKEN)")
    r.add_argument("--header", action="append", default=[], metavar="'K: V'",
                   help="an HTTP header for every request (repeatable)")
    r.add_argument("--remote-fs", action="store_true", help="offer file-system access to the remote agent")
    r.add_argument("--remote-terminal", action="store_true", help="offer terminals to the remote agent")


def _remote_connect(args: argparse.Namespace, permission: PermissionPolicy, kw: dict[str, Any]) -> connect:
    """``connect(...)`` for ``--url``: its headers and token; the cookie jar is kept in
    ``args.cookie_jar`` so that a reconnect sends the same cookies."""
    if given_command(args):
        raise UsageError("--url and an agent command (-- AGENT_CMD) exclude each other")
    headers: list[tuple[str, str]] = []
    for h in args.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header {h!r} is not 'Name: value'")
        headers.append((name.strip(), value.strip()))
    jar = getattr(args, "cookie_jar", None)
    if jar is None:
        jar = args.cookie_jar = CookieJar()
    token = args.token if args.token is not None else os.environ.get("ACPLINK_TOKEN") or None
    kw.pop("stderr", None)
    kw["terminal"] = kw["terminal"] and args.remote_terminal
    # (chat --reconnect: a dropped stream is resumed where it stopped, where the server can)
    resume = bool(getattr(args, "reconnect", False))
    return connect(args.url, fs=args.remote_fs and not args.no_fs, permission=permission, debug=args.debug,
                   headers=headers, token=token, cookies=jar, reconnect=resume, **kw)


def add_protocol_option(p: argparse.ArgumentParser) -> None:
    """``--protocol {1,2,auto}``: the ACP version to ask for, 1 by default (see docs/v2.md)."""
    p.add_argument("--protocol", choices=("1", "2", "auto"), default="1",
                   help="ACP version: 1 (default), 2 (the v2 draft: files and terminals are offered as the MCP "
                        "server 'workspace' over ACP; the agent must answer 2) or auto (ask for 2, go on with v1 "
                        "when the agent answers 1, refuses 2 or echoes 2 with a v1 answer)")


def protocol_choice(args: argparse.Namespace) -> Any:
    """The ``protocol=`` of ``connect()`` for ``--protocol`` (1 when the command has no such flag)."""
    value = getattr(args, "protocol", "1")
    return "auto" if value == "auto" else int(value)


def given_command(args: argparse.Namespace) -> list[str]:
    """The agent command line the user gave after ``--`` (possibly empty)."""
    cmd = list(args.agent or [])
    return cmd[1:] if cmd and cmd[0] == "--" else cmd


def agent_argv(value: str, option: str = "--agent") -> list[str]:
    """A command line given to ``option`` (``--agent``, ``--proxy``), split as a shell would."""
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"{option} {value!r}: cannot split the command: {exc}") from None
    if not argv:
        raise UsageError(f"{option}: an empty command")
    return argv


def agent_command(args: argparse.Namespace) -> list[str]:
    """The agent command line: everything after ``--``, or the built-in demo agent."""
    if getattr(args, "otel", False) and not given_command(args):  # (the demo agent reports too)
        return [sys.executable, "-m", "acplink", "demo-agent", "--otel"]
    return given_command(args) or [sys.executable, "-m", "acplink.demo"]


def open_client(args: argparse.Namespace, permission: PermissionPolicy, **kw: Any) -> _Startup:
    """``connect(...)`` for the agent the user asked for, with the default handlers, bounded by
    ``--startup-timeout`` (``async with`` it, or ``await`` it and close the client)."""
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        raise AcpError(f"--cwd {args.cwd!r} is not a directory")
    for d in args.add_dir:
        if not os.path.isdir(d):
            raise AcpError(f"--add-dir {d!r} is not a directory")
    kw.setdefault("terminal", not args.no_terminal)
    # the agent's stderr is kept for error reports; with --debug it is shown as it comes
    kw.setdefault("stderr", _SafeStderr() if args.debug else "capture")
    kw.setdefault("protocol", protocol_choice(args))
    if getattr(args, "url", None):
        opening = _remote_connect(args, permission, kw)
        cmd = [args.url]
    elif getattr(args, "agent_id", None) and is_agent_command(args.agent_id):  # --agent 'CMD ARGS'
        cmd = agent_argv(args.agent_id)
        opening = connect(cmd, cwd=cwd, fs=not args.no_fs, permission=permission, debug=args.debug, **kw)
    elif getattr(args, "agent_id", None):
        limit = getattr(args, "startup_timeout", None) or DEFAULT_STARTUP_TIMEOUT

        async def prepare() -> tuple[connect, list[str]]:
            # the registry read and the install run before the startup limit starts, in a thread
            launch = await registry_of(args).launch_async(args.agent_id)
            return connect(launch.command, env=launch.env, cwd=cwd, fs=not args.no_fs, permission=permission,
                           debug=args.debug, **kw), launch.command

        return _Startup(None, limit, [f"--agent {args.agent_id}"], args, prepare=prepare)
    else:
        cmd = agent_command(args)
        opening = connect(cmd, cwd=cwd, fs=not args.no_fs, permission=permission, debug=args.debug, **kw)
    limit = getattr(args, "startup_timeout", None) or DEFAULT_STARTUP_TIMEOUT
    return _Startup(opening, limit, cmd, args)


class StartupTimeout(AcpError):
    """The agent did not answer ``initialize`` within the startup limit."""


class _Startup:
    """``connect(...)`` whose opening (spawn + ``initialize``) must end within ``limit`` seconds;
    past it the agent is stopped and :class:`StartupTimeout` raised."""

    def __init__(self, opening: connect | None, limit: float, command: Sequence[str],
                 args: argparse.Namespace | None = None,
                 prepare: Callable[[], Awaitable[tuple[connect, list[str]]]] | None = None) -> None:
        self._opening = opening
        self.limit = limit
        self.command = shlex.join(command)
        self.args = args
        #: an agent of the registry: its connect() and command line, made before the limit starts
        self.prepare = prepare

    @property
    def opening(self) -> connect:
        assert self._opening is not None, "the registry's agent is prepared in _open()"
        return self._opening

    async def _open(self) -> Client:
        if self._opening is None and self.prepare is not None:
            self._opening, command = await self.prepare()
            self.command = shlex.join(command)
        bound = asyncio.timeout(self.limit)
        try:
            async with bound:
                client = await self.opening.__aenter__()
        except TimeoutError:
            if not bound.expired():
                raise
            raise StartupTimeout(f"the agent {self.command!r} did not answer initialize within {self.limit:g} s "
                                 "(--startup-timeout)") from None
        if self.args is not None:
            offer_mcp(client, self.args)  # (the --mcp servers, declared in the sessions it opens)
        return client

    async def __aenter__(self) -> Client:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self._opening is not None:
            await self._opening.__aexit__(*exc)

    def __await__(self) -> Generator[Any, None, Client]:
        return self._open().__await__()


async def start_session(client: Client, args: argparse.Namespace) -> Session:
    """Authenticate (``--auth-method``) and open a new session in ``--cwd``."""
    if args.auth_method:
        await client.authenticate(args.auth_method)
    try:
        return await client.new_session(args.cwd, additional_directories=args.add_dir)
    except AuthRequired as exc:
        methods = ", ".join(f"{m.id} ({m.name})" if getattr(m, "name", None) else str(getattr(m, "id", m))
                            for m in client.auth_methods)
        hint = f"; pass --auth-method with one of: {methods}" if methods else ""
        raise AcpError(f"the agent requires authentication ({exc}){hint}") from None


async def describe_failure(client: Client | None, exc: BaseException) -> str:
    """One readable line for ``exc``; for a lost agent process: its command line, exit code
    and last stderr lines (on the following lines)."""
    transport = client.transport if client is not None else None
    if not isinstance(exc, TransportError) or not isinstance(transport, SubprocessTransport):
        return one_line(exc)
    if isinstance(exc, PeerOutputNotJson):  # (it is still running: acplink stopped reading it)
        return f"the agent {transport.command_line!r}: {one_line(exc)}"
    try:  # the pipes close a moment before the exit status is known
        code = await asyncio.wait_for(transport.wait(), 10.0)
    except (TimeoutError, AcpError):
        code = transport.returncode
    how = f"exited with code {code}" if code is not None and code >= 0 else (
        f"was killed by signal {-code}" if code is not None else "closed the connection")
    msg = f"the agent {transport.command_line!r} {how}"
    if not isinstance(exc, ConnectionClosed):
        msg += f": {one_line(exc)}"
    return msg + stderr_report(transport.stderr_tail)


def fail(message: str, code: int = 1) -> int:
    """Print one readable error line (no traceback) and return the exit code. The message
    may quote the agent (its errors, its stderr): control characters are removed."""
    print(f"acplink: error: {sanitize_for_terminal(message)}", file=sys.stderr)
    return code


def one_line(exc: BaseException) -> str:
    """The error's message for the command line: its ``cli_message`` (naming acplink's flags
    where the message for Python callers names arguments: ``--token``, not ``token=``), else
    the message. An error answer from the agent adds the reason its ``data`` gives (a string,
    or ``details``/``message`` in an object: "Internal error" alone tells a user nothing),
    on one line, without control characters, at most 300 characters."""
    text = getattr(exc, "cli_message", None) or str(exc) or type(exc).__name__
    reason = _error_reason(exc.data) if isinstance(exc, RequestError) else None
    if reason and reason.strip() and reason.strip() not in text:
        text += ": " + " ".join(sanitize_for_terminal(reason).split())[:300]
    return text


def _error_reason(data: object) -> str | None:
    """The reason an error answer's ``data`` gives: itself when a string, else its
    ``details`` or ``message`` string."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in ("details", "message"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return None


class _SafeStderr:
    """The agent's stderr copied to ours (``--debug``) without its control characters."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def __call__(self, data: bytes) -> None:
        text = sanitize_for_terminal(self._decoder.decode(data))
        if text:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(text)
                sys.stderr.flush()


class _StderrHandler(logging.Handler):
    """Log records to the current ``sys.stderr``, without control characters (a warning may
    quote what the agent sent)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(sanitize_for_terminal(self.format(record)) + "\n")
        except (OSError, ValueError):
            pass


@contextlib.contextmanager
def library_warnings(debug: bool = False) -> Iterator[None]:
    """While inside: the library's warnings (``--debug``: its debug logs too) go to stderr,
    one line each, sanitized. (The connection rate-limits its warnings about bad input.)"""
    lib = logging.getLogger("acplink")
    handler = _StderrHandler(logging.DEBUG if debug else logging.WARNING)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s" if debug else "%(message)s"))
    level = lib.level
    lib.addHandler(handler)
    if debug:
        lib.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        lib.removeHandler(handler)
        lib.setLevel(level)
