"""One name per ACP method: ``SESSION_PROMPT == "session/prompt"``, ``FS_READ_TEXT_FILE``, ...

A constant per wire method of every protocol version (v1 and the v2 draft), equal to its wire
name and typed as its literal, so that ``app.on(SESSION_PROMPT)`` / ``client.on(ELICITATION_CREATE)``
type the handler. Each constant's docstring names its direction, kind, params and result types,
and the versions that have it. Generated (``acplink.schema.methods``, by tools/gen_schema.py)
from the method tables, whose keys they are. See docs/schema.md.

    from acplink.methods import SESSION_PROMPT

    @app.on(SESSION_PROMPT)
    async def prompt(ctx: PromptContext) -> None: ...
"""

from __future__ import annotations

from .schema.methods import *  # noqa: F403
from .schema.methods import __all__ as __all__
