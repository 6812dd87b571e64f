"""Mutation testing of a few acplink modules: does the test suite notice when the code changes?

Not run in CI (minutes to hours). Each mutant is one small change of the module's syntax
tree (see ``Mutator``): a comparison flipped or moved by one, ``+``/``-`` and ``|``/``&``
swapped, one side of a ``|`` of flags dropped, an integer moved by one, ``and``/``or``
swapped, a ``not`` removed, an ``if`` negated, ``True``/``False`` swapped, a ``raise`` or a
call statement deleted. Docstrings, strings, annotations, ``__all__`` and logging calls are
left alone. The mutant is written into a private copy of ``src/`` (the checkout is never
touched) and a fast subset of the tests runs against it (``pytest -x``, hypothesis examples
capped at 25, a time limit: a mutant that hangs counts as killed). Survivors are listed with
their line, for a human to decide whether each is equivalent (changes no behaviour).

    python tools/mutate.py fs                     # src/acplink/client/fs/*.py
    python tools/mutate.py engine framing -j 2    # two workers
    python tools/mutate.py fs --lines 120-180     # only mutants on those lines
    python tools/mutate.py fs --list              # the mutants, without running anything

Targets and their test subsets are in ``TARGETS``; ``--tests`` replaces the subset.
Results go to ``mutation-<target>.json`` in ``--out`` (default: the current folder).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TARGETS: dict[str, tuple[list[str], list[str], list[str]]] = {
    # name: (files to mutate, the tests that run against each mutant, modules imported once)
    "fs": (["src/acplink/client/fs/__init__.py", "src/acplink/client/fs/_resolve.py",
            "src/acplink/client/fs/_budget.py"],
           ["tests/client/test_fs.py", "tests/client/test_fs_owner.py", "tests/client/test_fs_errors.py",
            "tests/client/test_fs_limits.py", "-k", "not 64_concurrent"],
           ["acplink.schema", "acplink.rpc", "acplink.connection", "acplink.transports"]),
    "engine": (["src/acplink/rpc/engine.py"],
               ["tests/rpc/test_engine.py", "tests/rpc/test_limits_exact.py", "tests/rpc/test_deferred.py"],
               ["acplink.schema"]),
    "framing": (["src/acplink/rpc/framing.py"],
                ["tests/rpc/test_framing.py", "tests/rpc/test_limits_exact.py"],
                ["acplink.schema"]),
}

_SWAP_CMP: dict[type[ast.cmpop], list[type[ast.cmpop]]] = {
    ast.Lt: [ast.LtE, ast.GtE], ast.LtE: [ast.Lt, ast.Gt], ast.Gt: [ast.GtE, ast.LtE],
    ast.GtE: [ast.Gt, ast.Lt], ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.In: [ast.NotIn],
    ast.NotIn: [ast.In], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
}
_SWAP_BIN: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr, ast.Mod: ast.FloorDiv,
}


@dataclass
class Mutant:
    file: str
    index: int
    line: int
    what: str
    outcome: str = ""
    seconds: float = 0.0


class Mutator(ast.NodeTransformer):
    """Counts the mutation points in visiting order; applies the one numbered ``target``."""

    def __init__(self, target: int = -1) -> None:
        self.target = target
        self.count = 0
        self.found: list[tuple[int, str]] = []  # (line, description) per point

    def point(self, node: ast.AST, what: str) -> bool:
        """Register one mutation point; True when it is the one to apply."""
        self.found.append((getattr(node, "lineno", 0), what))
        hit = self.count == self.target
        self.count += 1
        return hit

    # -- what is never mutated ----------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = node.returns  # annotations are not visited (see visit_arg / AnnAssign)
        for deco in node.decorator_list:
            self.visit(deco)
        node.args = self.visit(node.args)
        node.body = [self.visit(stmt) for stmt in _skip_docstring(node.body)] or [ast.Pass()]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.body = [self.visit(stmt) for stmt in _skip_docstring(node.body)] or [ast.Pass()]
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node
        return self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node  # messages

    # -- mutations ------------------------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if isinstance(node.value, ast.Constant):
            return node
        if isinstance(node.value, ast.Call) and _is_logging(node.value):
            return node
        if isinstance(node.value, (ast.Call, ast.Await)) and self.point(node, "delete the call statement"):
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        if self.point(node, "delete the raise"):
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_If(self, node: ast.If) -> ast.AST:
        if self.point(node, "negate the if condition"):
            node.test = ast.UnaryOp(ast.Not(), node.test)
            return node
        return self.generic_visit(node)

    def visit_While(self, node: ast.While) -> ast.AST:
        if not (isinstance(node.test, ast.Constant)) and self.point(node, "negate the while condition"):
            node.test = ast.UnaryOp(ast.Not(), node.test)
            return node
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        for i, op in enumerate(node.ops):
            for new in _SWAP_CMP.get(type(op), []):
                if self.point(node, f"{type(op).__name__} -> {new.__name__}"):
                    node.ops[i] = new()
                    return node
        return self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        value = _constant(node)
        if value is not None:  # e.g. 64 * 1024 * 1024: a size, moved by one as a whole
            for new in (value + 1, value - 1):
                if self.point(node, f"{ast.unparse(node)} -> {new}"):
                    return ast.copy_location(ast.Constant(new), node)
            return node
        new = _SWAP_BIN.get(type(node.op))
        if new is not None and self.point(node, f"{type(node.op).__name__} -> {new.__name__}"):
            node.op = new()
            return node
        if isinstance(node.op, ast.BitOr):
            if self.point(node, f"drop `| {ast.unparse(node.right)}`"):
                return node.left
            if self.point(node, f"drop `{ast.unparse(node.left)} |`"):
                return node.right
        return self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        new = _SWAP_BIN.get(type(node.op))
        if new is not None and self.point(node, f"{type(node.op).__name__}= -> {new.__name__}="):
            node.op = new()
            return node
        return self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        new: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        if self.point(node, f"{type(node.op).__name__} -> {type(new).__name__}"):
            node.op = new
            return node
        return self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if isinstance(node.op, ast.Not) and self.point(node, "remove `not`"):
            return node.operand
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            if self.point(node, f"{value} -> {not value}"):
                return ast.copy_location(ast.Constant(not value), node)
        elif isinstance(value, int):
            for new in (value + 1, value - 1) if value else (1,):
                if self.point(node, f"{value} -> {new}"):
                    return ast.copy_location(ast.Constant(new), node)
        return node


def _constant(node: ast.AST) -> int | None:
    """The value of an integer expression made of constants only, else None."""
    if not all(isinstance(n, (ast.BinOp, ast.Constant, ast.operator)) for n in ast.walk(node)):
        return None
    try:
        value = eval(compile(ast.Expression(node), "<constant>", "eval"))  # only constants: see above
    except Exception:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _skip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body


def _is_logging(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in {"log", "logger", "logging"}


def mutants_of(rel: str) -> list[Mutant]:
    tree = ast.parse((ROOT / rel).read_text())
    m = Mutator()
    m.visit(tree)
    return [Mutant(rel, i, line, what) for i, (line, what) in enumerate(m.found)]


def mutated_source(rel: str, index: int) -> str:
    tree = ast.parse((ROOT / rel).read_text())
    tree = Mutator(index).visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


class Worker:
    """A private copy of src/ and a server process (tools/_mutation_server.py) that forks
    one pytest run per mutant, so the heavy imports happen once."""

    def __init__(self, preload: list[str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="acplink-mutate-"))
        shutil.copytree(ROOT / "src", self.dir / "src", ignore=shutil.ignore_patterns("__pycache__"))
        env = dict(os.environ, PYTHONPATH=str(self.dir / "src"), PYTHONDONTWRITEBYTECODE="1",
                   MUTATION_PRELOAD=" ".join(preload))
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "_mutation_server.py")], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.timeout = 600.0

    def ask(self, job: dict[str, object]) -> dict[str, object]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]

    def run(self, tests: list[str], source: str | None = None, rel: str | None = None) -> tuple[str, float]:
        target = self.dir / rel if rel else None
        original = target.read_text() if target else None
        if target and source is not None:
            target.write_text(source)
        try:
            answer = self.ask({"tests": tests, "timeout": self.timeout})
        finally:
            if target and original is not None:
                target.write_text(original)
        return str(answer["outcome"]), float(answer["seconds"])  # type: ignore[arg-type]

    def cover(self, tests: list[str], files: list[str]) -> dict[str, dict[int, list[str]]]:
        """Which tests run which lines of ``files`` (paths relative to the checkout)."""
        out = self.dir / "cover.json"
        self.ask({"tests": tests, "cover": str(out), "files": [str(self.dir / f) for f in files]})
        raw = json.loads(out.read_text())
        return {f: {int(line): ids for line, ids in raw[str(self.dir / f)].items()} for f in files}

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_all(mutants: list[Mutant], workers: list[Worker], tests: list[str],
            covered: dict[str, dict[int, list[str]]]) -> None:
    """Run every mutant against the tests that run its line (all of them when none does, e.g.
    a module-level constant); worker k takes every k-th mutant."""
    done = 0
    options = [t for t in tests if t.startswith("-")] if "-k" not in tests else tests[tests.index("-k"):]

    def one(k: int) -> None:
        nonlocal done
        for j, m in enumerate(mutants):
            if j % len(workers) != k:
                continue
            selected = covered.get(m.file, {}).get(m.line)
            m.outcome, m.seconds = workers[k].run(selected + options if selected else tests,
                                                  mutated_source(m.file, m.index), m.file)
            done += 1
            if m.outcome == "survived":
                print(f"  [{done}/{len(mutants)}] SURVIVED {m.file}:{m.line}: {m.what}", flush=True)

    with ThreadPoolExecutor(len(workers)) as pool:
        list(pool.map(one, range(len(workers))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+", choices=sorted(TARGETS))
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--lines", help="only mutants on lines A-B")
    ap.add_argument("--files", nargs="+", help="only mutants of files whose path ends with one of these")
    ap.add_argument("--tests", nargs="+", help="the tests to run (default: the target's subset)")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--again", metavar="JSON", help="only the survivors of an earlier run (same source)")
    ap.add_argument("--out", default=".", help="folder for mutation-<target>.json")
    args = ap.parse_args()
    for name in args.targets:
        files, tests, preload = TARGETS[name]
        tests = args.tests or tests
        mutants = [m for rel in files for m in mutants_of(rel)]
        if args.files:
            mutants = [m for m in mutants if m.file.endswith(tuple(args.files))]
        if args.lines:
            lo, hi = (int(x) for x in args.lines.split("-"))
            mutants = [m for m in mutants if lo <= m.line <= hi]
        if args.again:
            earlier = json.loads(Path(args.again).read_text())["mutants"]
            keep = {(m["file"], m["index"]) for m in earlier if m["outcome"] == "survived"}
            mutants = [m for m in mutants if (m.file, m.index) in keep]
        if args.list:
            for m in mutants:
                print(f"{m.file}:{m.line}: {m.what}")
            print(f"{len(mutants)} mutants")
            continue
        workers = [Worker(preload) for _ in range(max(1, args.jobs))]
        try:
            outcome, base = workers[0].run(tests)
            if outcome != "survived":
                print(f"{name}: the tests fail without any mutant; fix them first", file=sys.stderr)
                return 2
            covered = workers[0].cover(tests, files)
            for w in workers:
                w.timeout = min(max(20.0, 2 * base), 60.0)  # a mutant that hangs counts as killed
            print(f"{name}: {len(mutants)} mutants, tests take {base:.1f}s unmutated", flush=True)
            run_all(mutants, workers, tests, covered)
        finally:
            for w in workers:
                w.close()
        killed = sum(m.outcome != "survived" for m in mutants)
        score = killed / len(mutants) if mutants else 1.0
        print(f"{name}: {killed}/{len(mutants)} killed ({score:.1%})")
        Path(args.out, f"mutation-{name}.json").write_text(json.dumps(
            {"target": name, "tests": tests, "killed": killed, "total": len(mutants),
             "mutants": [asdict(m) for m in mutants]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
