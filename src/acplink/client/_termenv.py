"""The environment of a terminal: the agent's ``env`` entries, checked, over a base.

Refused unless the user allows them (``TerminalHandler(allow_env=...)``): the variables that
make a program load code it was not asked to run, before or instead of its own. The agent
names the command; these would let it change what that command does without showing it:

* the dynamic loaders: every ``LD_*`` (glibc, musl: ``LD_PRELOAD``, ``LD_LIBRARY_PATH``,
  ``LD_AUDIT``, ...), every ``DYLD_*`` (macOS), ``GLIBC_TUNABLES``, ``GCONV_PATH``
  (``iconv`` modules are shared libraries);
* shells: ``BASH_ENV`` and ``ENV`` (a script sourced at start-up), ``SHELLOPTS``,
  ``BASHOPTS``, ``PS4`` (with ``xtrace``, run at each command), exported functions
  (``BASH_FUNC_*``, which can replace any command a bash script runs);
* interpreters' start-up hooks and module paths: ``PYTHONPATH``, ``PYTHONHOME``,
  ``PYTHONSTARTUP``, ``PYTHONUSERBASE``, ``PYTHONBREAKPOINT``, ``PYTHONPLATLIBDIR``,
  ``PYTHONEXECUTABLE``, ``PERL5LIB``, ``PERLLIB``, ``PERL5OPT``, ``PERL5DB``, ``RUBYOPT``,
  ``RUBYLIB``, ``NODE_OPTIONS``, ``NODE_PATH``, ``JAVA_TOOL_OPTIONS``, ``_JAVA_OPTIONS``,
  ``JDK_JAVA_OPTIONS``, ``CLASSPATH``.

Names are compared case-insensitively. Not refused: ``PATH`` (the agent picks the program
anyway), and tool-specific hooks (``GIT_*``, ...): a program run in the user's project can
be steered by the project's own files as well, so this list is about hooks that reach
*every* program, not a sandbox.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ..errors import InvalidParams

__all__ = ["LOADER_ENV", "build_env", "is_loader_env"]

#: exact names (upper case) refused by default; see also :data:`LOADER_ENV_PREFIXES`
LOADER_ENV: frozenset[str] = frozenset({
    "GLIBC_TUNABLES", "GCONV_PATH",
    "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4",
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONBREAKPOINT", "PYTHONPLATLIBDIR",
    "PYTHONEXECUTABLE",
    "PERL5LIB", "PERLLIB", "PERL5OPT", "PERL5DB",
    "RUBYOPT", "RUBYLIB",
    "NODE_OPTIONS", "NODE_PATH",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
})
#: prefixes (upper case) refused by default
LOADER_ENV_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")


def is_loader_env(name: str) -> bool:
    """Whether ``name`` changes how programs load (refused unless allowed)."""
    upper = name.upper()
    return upper in LOADER_ENV or upper.startswith(LOADER_ENV_PREFIXES)


def build_env(base: Mapping[str, str], entries: Iterable[tuple[str, str]],
              allow: bool | Collection[str]) -> dict[str, str]:
    """``base`` with ``entries`` set over it; ``InvalidParams`` for a malformed or refused name."""
    env = dict(base)
    refused: list[str] = []
    for name, value in entries:
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise InvalidParams(f"invalid environment variable name or value: {name!r}",
                                {"reason": "invalid_env", "name": name})
        if allow is not True and is_loader_env(name) and not (allow and name in allow):
            refused.append(name)
        env[name] = value
    if refused:
        raise InvalidParams(
            f"environment variables that change how programs load are not allowed: {', '.join(refused)}",
            {"reason": "env_refused", "names": refused})
    return env
