"""The Python snippets of README.md and docs/*.md, as files that type-check and run.

Every fenced ```python block is a snippet, and every snippet is checked: type-checked with
``mypy --strict`` (no plugin) and ``pyright`` (strict), then run (``tests/test_docs_snippets.py``).
A snippet is a complete program unless an HTML comment on the line before its fence names a
setup (and, for some, options)::

    <!-- snippet: SETUP key=value ... -->

The setups (each adds a few lines around the snippet; those lines are checked too):

``program`` (the default)
    A complete program, run with ``python`` in a fresh temporary folder (stdin closed; the
    virtualenv's scripts such as ``acplink`` on ``PATH``). It must exit 0.
``agent``
    A complete agent program (it calls ``run_agent``): spawned with ``connect([python,
    FILE])``; a session is opened in the temporary folder and one prompt sent
    (``prompt=TEXT``, default ``hello``); the turn must end without error.
``app``
    Module code that registers handlers on ``app``, an ``AgentApp`` (unless the snippet
    assigns ``app`` itself). Available: ``Any``, ``AgentApp``,
    ``Context``, ``PermissionPolicy``, ``PromptContext``, ``builders``, ``connect``,
    ``schema``, and ``my_model``, a stand-in LLM whose ``stream(text)`` yields its words.
    Then the app is driven in memory (permission: allow all): a session in the temporary
    folder and, when it has a prompt handler, one prompt (``prompt=TEXT``); with
    ``cancel=yes`` the turn is cancelled at its first update and must end ``cancelled``.
``prompt``
    The body of a prompt handler: ``ctx`` (the ``PromptContext``) and ``tool`` (a started
    tool call) are there, and the same names as for ``app``. Driven as ``app``.
``main``
    The body of an async function run with ``asyncio.run``: top-level ``await`` and
    ``async with`` work. The same names as for ``app`` are imported.
``client``
    As ``main``, with ``client`` (a ``Client`` connected in memory to the demo agent, which
    answers ``help``, ``read FILE``, ``slow N``, ...; permission: allow all) and ``session``
    (a session in the temporary folder).

``pytest``
    A pytest test file, type-checked as it is and run with ``python -m pytest`` (the
    installed plugin supplies acplink's fixtures); its tests must pass.

In every setup but ``agent`` and ``pytest``, each ``async def test_*()`` the snippet defines at module
level is awaited after it ran (so a snippet can show a test and have it run).

Fragments skip pyright's unused-import and unused-variable reports (the names a setup
provides, the variables a reader goes on with); everything else is strict.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SETUPS = ("program", "agent", "app", "prompt", "main", "client", "pytest")

FENCE = re.compile(r"^```(?:python|py)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
DIRECTIVE = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->\s*\Z", re.S)

_IMPORTS = """\
# pyright: reportUnusedImport=false, reportUnusedVariable=false
from asyncio import run as _snippet_run
from collections.abc import AsyncIterator
from typing import Any

from acplink import AgentApp, Context, PermissionPolicy, PromptContext, builders, connect, schema


class _StandInModel:
    async def stream(self, text: str) -> AsyncIterator[str]:
        for word in text.split():
            yield word + " "


my_model = _StandInModel()
"""

_DRIVE_APP = """\


async def _snippet_drive() -> None:
    async with connect(app, permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(cwd=".")
        if "prompt" in app.handlers:
            turn = session.prompt({prompt!r})
            async for _ in turn:
                if {cancel!r}:
                    await turn.cancel()
            assert not {cancel!r} or turn.stop_reason == "cancelled", turn.stop_reason


_snippet_run(_snippet_drive())
"""

_RUN_TESTS = """\


async def _snippet_tests() -> None:
    import inspect

    for name, fn in list(globals().items()):
        if name.startswith("test_") and inspect.iscoroutinefunction(fn):
            await fn()


if __name__ == "__main__":
    from asyncio import run as _snippet_run_tests

    _snippet_run_tests(_snippet_tests())
"""


@dataclass
class Snippet:
    doc: Path
    index: int  # the snippet's number in its page
    line: int  # the line of its fence
    code: str
    setup: str = "program"
    options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """A module name: ``snippet_<page>_<n>``."""
        return f"snippet_{re.sub(r'[^0-9a-zA-Z]+', '_', self.doc.stem).lower()}_{self.index}"

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    def source(self) -> str:
        """The file that is type-checked and run (``from __future__`` imports go first)."""
        future = re.findall(r"^from __future__ import .*\n", self.code, re.M)
        code = re.sub(r"^from __future__ import .*\n", "", self.code, flags=re.M)
        return "".join(future) + self._wrapped(code)

    def _wrapped(self, code: str) -> str:
        prompt = self.options.get("prompt", "hello")
        cancel = self.options.get("cancel", "no") == "yes"
        tests = _RUN_TESTS if re.search(r"^async def test_", code, re.M) else ""
        if self.setup == "pytest":
            return code
        if self.setup in ("program", "agent"):
            return code + tests
        if self.setup == "app":
            own_app = re.search(r"^app\s*[:=]", code, re.M) is not None
            head = _IMPORTS + ("" if own_app else '\napp = AgentApp("docs-agent")\n')
            return head + "\n" + code + tests + _DRIVE_APP.format(prompt=prompt, cancel=cancel)
        if self.setup == "prompt":
            body = textwrap.indent(code, "    ")
            return (_IMPORTS + '\napp = AgentApp("docs-agent")\n\n\n@app.prompt\n'
                    "async def _snippet_prompt(ctx: PromptContext) -> Any:\n"
                    '    tool = await ctx.start_tool_call("Example tool", kind="edit")\n'
                    f"{body}\n" + _DRIVE_APP.format(prompt=prompt, cancel=cancel))
        if self.setup == "main":
            body = textwrap.indent(code, "    ")
            return _IMPORTS + f"\n\nasync def _snippet_main() -> None:\n{body}\n\n\n_snippet_run(_snippet_main())\n"
        assert self.setup == "client"
        body = textwrap.indent(code, "        ")
        return (_IMPORTS + "from acplink.demo import create_demo_agent\n\n\n"
                "async def _snippet_main() -> None:\n"
                "    async with connect(create_demo_agent(), permission=PermissionPolicy.allow_all()) as client:\n"
                '        session = await client.new_session(cwd=".")\n'
                f"{body}\n\n\n_snippet_run(_snippet_main())\n")


def snippets(docs: list[Path] = DOCS) -> list[Snippet]:
    """Every Python snippet of the given Markdown files, with its setup."""
    out: list[Snippet] = []
    for doc in docs:
        text = doc.read_text()
        for index, m in enumerate(FENCE.finditer(text)):
            snip = Snippet(doc, index, text.count("\n", 0, m.start()) + 1, m.group(1))
            before = text[:m.start()].rstrip("\n")
            last = before[before.rfind("\n") + 1:]
            d = DIRECTIVE.search(last)
            if d is not None:
                words = shlex.split(d.group(1))
                if not words or words[0] not in SETUPS:
                    raise ValueError(f"{snip.where}: unknown snippet setup {d.group(1)!r} (one of {SETUPS})")
                snip.setup = words[0]
                for word in words[1:]:
                    key, sep, value = word.partition("=")
                    if not sep or key not in ("prompt", "cancel"):
                        raise ValueError(f"{snip.where}: unknown snippet option {word!r}")
                    snip.options[key] = value
            out.append(snip)
    return out
