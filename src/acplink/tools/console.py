"""A rich console for the command line's output streams."""

from __future__ import annotations

from rich.console import Console

__all__ = ["PipeConsole"]


class PipeConsole(Console):
    """A console that lets a closed stdout surface as ``BrokenPipeError`` (rich itself would
    exit with status 1), so the ``acplink`` command ends quietly with the status of ``cat``."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError
