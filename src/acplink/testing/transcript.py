"""Transcripts: the messages of a connection, normalised so that runs compare equal.

Every message becomes one line ``DIR KIND METHOD JSON``. Values that change from run to run are
masked: request ids and every ``...Id`` value (numbered by first appearance, so equal ids stay
equal: ``<sessionId#1>``), timestamps, and the test's directories (``<root>``).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Transcript"]

#: ids that name a choice rather than an instance: kept
_STABLE_IDS = {"optionId", "modeId", "currentModeId", "modelId", "currentModelId", "methodId", "configId",
               "protocolVersion"}
_TIME_KEYS = {"timestamp", "createdAt", "updatedAt", "lastModified", "mono", "wall"}


class Transcript:
    """Collects trace records (a trace listener of :func:`acplink.tools.record.recording_transport`: :meth:`add`)."""

    def __init__(self, roots: list[str] | None = None) -> None:
        self.records: list[dict[str, Any]] = []
        self.roots = sorted({os.path.realpath(r) for r in roots or []} | set(roots or []), key=len, reverse=True)

    def add(self, record: dict[str, Any]) -> None:
        if record.get("type") == "message":
            self.records.append(record)

    def raw_lines(self) -> list[str]:
        """The messages as recorded (for a failure report)."""
        out = []
        for rec in self.records:
            body = orjson.dumps(rec["msg"]).decode() if "msg" in rec else f"<{rec.get('size')} bytes, not JSON>"
            out.append(f"{'→' if rec['dir'] == 'c2a' else '←'} {body}")
        return out

    def lines(self) -> list[str]:
        """The normalised transcript, one line per message."""
        masks: dict[tuple[str, Any], str] = {}
        out = []
        for rec in self.records:
            msg = rec.get("msg")
            if msg is None:
                out.append(f"{rec['dir']} <not JSON>")
                continue
            norm = self._mask(msg, masks, None)
            kind = rec.get("kind", "?")
            out.append(f"{rec['dir']} {kind} {rec.get('method', '?')} {orjson.dumps(norm, option=orjson.OPT_SORT_KEYS).decode()}")
        return out

    def _mask(self, node: Any, masks: dict[tuple[str, Any], str], key: str | None) -> Any:
        if isinstance(node, dict):
            return {k: self._mask(v, masks, k) for k, v in node.items()}
        if isinstance(node, list):
            return [self._mask(v, masks, key) for v in node]
        if key in _TIME_KEYS:
            return "<time>"
        if key is not None and (key == "id" or key.endswith("Id")) and key not in _STABLE_IDS \
                and isinstance(node, (str, int)):
            name = "id" if key == "id" else key
            return masks.setdefault((name, node), f"<{name}#{sum(1 for n, _ in masks if n == name) + 1}>")
        if isinstance(node, str):
            for root in self.roots:
                node = node.replace(root, "<root>")
        return node

    def compare(self, path: str | os.PathLike[str], *, update: bool = False) -> None:
        """Compare with the golden file ``path`` (``update``: rewrite it instead)."""
        golden = Path(path)
        text = "\n".join(self.lines()) + "\n"
        if update:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text)
            return
        if not golden.exists():
            raise AssertionError(f"golden transcript {golden} does not exist; create it by running the test "
                                 f"with `pytest --acp-update-golden`")
        want = golden.read_text()
        if want != text:
            diff = "\n".join(difflib.unified_diff(want.splitlines(), text.splitlines(), str(golden), "this run",
                                                  lineterm=""))
            raise AssertionError(f"the transcript differs from {golden} (rerun with --acp-update-golden "
                                 f"to accept the change):\n{diff}")
