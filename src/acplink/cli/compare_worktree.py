"""The working copies of ``acplink prompt --agent A --agent B`` in a git repository: one
``git worktree`` per agent, detached at ``HEAD``, with the user's uncommitted work laid on top so
every agent starts from the tree the user sees (docs/compare.md, "Working copies").

The uncommitted work is taken once, before any worktree is made, so every agent gets the same:
the staged changes (``git diff --cached``, applied to the worktree's index and files), the
unstaged ones (``git diff``, applied to its files), and the untracked files that are not ignored
(copied). Ignored files (build output, virtualenvs, ``node_modules``) and submodules' contents
are not in a worktree. Git runs with the user's configuration; every call is a subprocess,
awaited in a worker thread, one at a time per repository (git locks its worktree list)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AcpError

__all__ = ["GitRepo", "WorktreeError", "find_repo"]

#: environment variables that would point git at another repository than the cwd's
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")


class WorktreeError(AcpError):
    """A git command failed (its stderr, one line)."""


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV}
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], input=stdin, capture_output=True, env=env,
                              timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git {args[0]}: {exc}") from None
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode(errors="replace").split()) or f"exit code {proc.returncode}"
        raise WorktreeError(f"git {args[0]}: {err}")
    return proc.stdout


@dataclass
class GitRepo:
    """The repository the cwd is in, and the user's uncommitted work in it (taken once)."""

    top: Path
    #: the cwd relative to ``top`` (where each agent works inside its worktree)
    rel: Path
    head: str
    staged: bytes = b""
    unstaged: bytes = b""
    untracked: list[str] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def add(self, dest: Path) -> Path:
        """A worktree at ``dest`` with the user's work applied; the folder the agent works in."""
        async with self.lock:
            await asyncio.to_thread(_git, self.top, "worktree", "add", "--detach", "--quiet", str(dest), self.head)
        try:
            await asyncio.to_thread(self._apply, dest)
        except (WorktreeError, OSError):
            await self.remove(dest)
            raise
        work = dest / self.rel
        if not work.is_dir():  # (the cwd is ignored by git: not in a worktree)
            await self.remove(dest)
            raise WorktreeError(f"{self.rel} is not in the repository's worktree (ignored by git?)")
        return work

    def _apply(self, dest: Path) -> None:
        if self.staged:
            _git(dest, "apply", "--index", "--whitespace=nowarn", "-", stdin=self.staged)
        if self.unstaged:
            _git(dest, "apply", "--whitespace=nowarn", "-", stdin=self.unstaged)
        for name in self.untracked:
            source, target = self.top / name, dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
            elif source.is_file():
                shutil.copy2(source, target)

    async def remove(self, dest: Path) -> None:
        """Remove the worktree at ``dest`` (its changes with it) and git's record of it."""
        async with self.lock:
            try:
                await asyncio.to_thread(_git, self.top, "worktree", "remove", "--force", str(dest))
            except WorktreeError:  # (half made, or its folder already gone: forget it)
                await asyncio.to_thread(shutil.rmtree, dest, True)
                await asyncio.to_thread(_git, self.top, "worktree", "prune")


def _read(cwd: Path) -> GitRepo | None:
    try:
        top = Path(_git(cwd, "rev-parse", "--show-toplevel").decode().strip()).resolve()
        head = _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").decode().strip()
    except WorktreeError:  # (not a repository, no commit yet, no git)
        return None
    if not head:
        return None
    repo = GitRepo(top, cwd.resolve().relative_to(top), head)
    repo.staged = _git(top, "diff", "--cached", "--binary", "--ignore-submodules", "--no-color", "--no-ext-diff")
    repo.unstaged = _git(top, "diff", "--binary", "--ignore-submodules", "--no-color", "--no-ext-diff")
    listed = _git(top, "ls-files", "--others", "--exclude-standard", "-z")
    repo.untracked = [name for name in listed.decode(errors="surrogateescape").split("\0") if name]
    return repo


async def find_repo(cwd: Path) -> GitRepo | None:
    """The git repository ``cwd`` is in, with the user's uncommitted work (None: not in one,
    or it has no commit, or git is not installed)."""
    return await asyncio.to_thread(_read, cwd)
