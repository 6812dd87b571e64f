"""``acplink prompt --agent A --agent B`` in a git repository: each agent works in a ``git
worktree`` detached at ``HEAD`` with the user's uncommitted work (staged, unstaged, untracked)
applied, removed afterwards unless ``--keep``; the user's tree and index are never touched. A
real repository, the demo agent twice."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ACPLINK

pytestmark = pytest.mark.timeout(180)

DEMO = shlex.join([sys.executable, "-m", "acplink.demo"])
STATUS = sorted([" M README.md", "D  gone.txt", "A  staged.txt", "?? untracked.txt"])


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


def _repo(tmp_path: Path) -> Path:
    """A repository with one commit, and uncommitted work of every kind (and an ignored file)."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "README.md").write_text("# project\n")
    (repo / "gone.txt").write_text("old\n")
    (repo / "sub" / "a.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("*.log\nscratch/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    (repo / "README.md").write_text("# project\nuncommitted line\n")  # unstaged
    (repo / "staged.txt").write_text("staged\n")
    _git(repo, "add", "staged.txt")  # staged
    _git(repo, "rm", "-q", "gone.txt")  # a staged deletion
    (repo / "untracked.txt").write_text("new\n")
    (repo / "build.log").write_text("ignored\n")
    return repo


def _status(cwd: Path) -> list[str]:
    return sorted(line for line in _git(cwd, "status", "--porcelain").splitlines())


def _compare(cwd: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run([*ACPLINK, "prompt", "--json", "--allow", "--no-record", "--agent", DEMO, "--agent", DEMO,
                           *args], cwd=cwd, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_each_agent_gets_a_worktree_with_the_users_uncommitted_work(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    head = _git(repo, "rev-parse", "HEAD").strip()
    assert _status(repo) == STATUS
    out = _compare(repo, "--keep", "read README.md")
    runs = out["agents"]
    assert isinstance(runs, list) and len(runs) == 2
    trees = [Path(r["workdir"]) for r in runs]
    try:
        for run, tree in zip(runs, trees, strict=True):
            # the agent read the user's uncommitted README (2 lines), not HEAD's (1 line)
            assert run["workcopy"] == "git worktree" and run["reply"] == "README.md has 2 lines and 27 characters."
            assert run["filesChanged"] == []
            assert _status(tree) == STATUS  # staged stays staged, unstaged unstaged, untracked untracked
            assert _git(tree, "rev-parse", "HEAD").strip() == head
            assert not (tree / "build.log").exists() and not (tree / "gone.txt").exists()
            assert (tree / "untracked.txt").read_text() == "new\n"
        listed = _git(repo, "worktree", "list", "--porcelain")
        assert all(f"worktree {tree}" in listed for tree in trees) and listed.count("detached") == 2
    finally:
        for tree in trees:
            _git(repo, "worktree", "remove", "--force", str(tree))
    assert _status(repo) == STATUS  # the user's tree and index as they were


def test_worktrees_are_removed_and_the_agent_works_in_the_same_subfolder(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    out = _compare(repo / "sub", "write notes.txt hi")
    runs = out["agents"]
    assert isinstance(runs, list)
    for run in runs:
        assert run["ok"] and run["workcopy"] == "git worktree" and run["workdir"] is None
        assert run["filesChanged"] == [{"path": "notes.txt", "change": "added"}]  # (not the applied work)
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1  # removed, and forgotten
    assert not (repo / "sub" / "notes.txt").exists() and _status(repo) == STATUS


def test_in_place_uses_the_users_tree_and_no_worktree(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    out = _compare(repo, "--in-place", "write notes.txt hi")
    runs = out["agents"]
    assert isinstance(runs, list) and {r["workcopy"] for r in runs} == {"in place"}
    assert (repo / "notes.txt").read_text() == "hi\n"
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


@pytest.mark.parametrize("where", ["no commit yet", "an ignored folder", "not a repository"])
def test_a_copy_where_there_can_be_no_worktree(tmp_path: Path, where: str) -> None:
    if where == "no commit yet":
        cwd = tmp_path / "fresh"
        cwd.mkdir()
        _git(cwd, "init", "-q")
    elif where == "an ignored folder":
        cwd = _repo(tmp_path) / "scratch"
        cwd.mkdir()
    else:
        cwd = tmp_path / "plain"
        cwd.mkdir()
    (cwd / "README.md").write_text("# here\n")
    out = _compare(cwd, "write notes.txt hi")
    runs = out["agents"]
    assert isinstance(runs, list)
    for run in runs:
        assert run["ok"] and run["workcopy"] == "copy"
        assert run["filesChanged"] == [{"path": "notes.txt", "change": "added"}]
    assert not (cwd / "notes.txt").exists()
    if where == "an ignored folder":  # (the worktrees tried were removed again)
        assert _git(cwd, "worktree", "list", "--porcelain").count("worktree ") == 1
