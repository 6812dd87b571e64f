"""``acplink proxy NAME``: run one of the built-in ACP proxies on stdio, for a conductor."""

from __future__ import annotations

import argparse
from typing import Any

from .common import fail
from .otel import add_otel_option

HELP = "run a built-in ACP proxy on stdio (a component of `acplink conduct` or another conductor)"

EXAMPLES = """examples:
  acplink conduct --proxy 'acplink proxy policy --allow read,search --deny execute' -- my-agent
  acplink conduct --proxy 'acplink proxy redact' -- my-agent
  acplink conduct --proxy 'acplink proxy mcp-http' -- my-http-mcp-only-agent

In process, the same proxies are `--proxy acplink:NAME` of `acplink conduct`
(acplink:policy=allow:read,deny:execute)."""

POLICY_RULES = """A RULE is KIND (read, edit, delete, move, search, execute, think, fetch, switch_mode,
other), KIND:GLOB (that kind, its tool-call title matching the shell-style GLOB), * (any tool
call) or *:GLOB. --allow and --deny take comma-separated rules and may be repeated; the rules are
tried in the order given, the first match answers. A request no rule matches goes on to the
editor (--default ask) or gets --default allow|deny. Each decision is logged to stderr."""


class _Rules(argparse.Action):
    """--allow / --deny: (decision, rule text) pairs appended in command-line order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        decision = "allow" if option_string == "--allow" else "deny"
        rules = list(getattr(namespace, self.dest) or [])
        rules += [(decision, text) for text in str(values).split(",")]
        setattr(namespace, self.dest, rules)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("proxy", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    names = p.add_subparsers(dest="proxy_name", metavar="NAME", required=True)
    policy = names.add_parser("policy", help="answer permission requests by rule before they reach the editor",
                              description="answer session/request_permission by rule before it reaches the editor",
                              epilog=POLICY_RULES)
    policy.add_argument("--allow", action=_Rules, dest="rules", metavar="RULES", help="allow what these rules match")
    policy.add_argument("--deny", action=_Rules, dest="rules", metavar="RULES", help="deny what these rules match")
    policy.add_argument("--default", choices=("ask", "allow", "deny"), default="ask",
                        help="what a request no rule matches gets (default: ask the editor)")
    policy.set_defaults(run=run)
    mcp_http = names.add_parser("mcp-http", help="MCP-over-ACP for an agent whose MCP client only speaks HTTP",
                                description="advertise acp MCP servers for an agent that only takes HTTP ones, and "
                                            "serve each declared acp server to it on a loopback HTTP endpoint "
                                            "(docs/proxies.md)")
    mcp_http.add_argument("--port", type=int, default=0,
                          help="the loopback port of the HTTP endpoints (default: any free one)")
    mcp_http.add_argument("--max-active", type=int, default=64, metavar="N",
                          help="MCP requests in flight per server (default: 64)")
    mcp_http.set_defaults(run=run)
    for name, text in (("passthrough", "forward everything unchanged"),
                       ("context", "add a line of text before every prompt"),
                       ("redact", "redact what the agent sends upstream (the rules of `acplink record --redact`)")):
        q = names.add_parser(name, help=text, description=text)
        if name == "context":
            q.add_argument("text", nargs="?", help="the line (default: a fixed one)")
        q.set_defaults(run=run)
    for q in names.choices.values():
        q.add_argument("--debug", action="store_true", help="log protocol details to stderr")
        add_otel_option(q)


def _app(args: argparse.Namespace) -> Any:
    from ..proxy import builtin_proxy
    from ..proxy.policy import parse_rule, policy_proxy

    if args.proxy_name == "policy":
        if not args.rules and args.default == "ask":
            from ..errors import UsageError

            raise UsageError("give rules: acplink proxy policy --allow RULES --deny RULES (or --default)")
        return policy_proxy([parse_rule(text, decision) for decision, text in args.rules or []],
                            default=args.default)
    if args.proxy_name == "mcp-http":
        from ..proxy import mcp_http_proxy

        if args.max_active < 1:
            from ..errors import UsageError

            raise UsageError(f"--max-active must be at least 1, not {args.max_active}")
        return mcp_http_proxy(port=args.port, max_active=args.max_active)
    if args.proxy_name == "context" and args.text:
        return builtin_proxy(f"context={args.text}")
    return builtin_proxy(args.proxy_name)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError

    try:
        app = _app(args)
    except UsageError as exc:
        return fail(str(exc), 2)
    app.debug = args.debug
    app.run()
    return 0
