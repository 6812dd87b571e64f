"""Server time of each devtools view of one connection: ``python benchmarks/devtools_views.py DB [CONN]``.
The views that read the whole session are cached once the connection has ended (the first
run computes them unless the recorder or the importer did; ``--cold`` empties the cache first)."""

import sys
import time
from collections.abc import Callable

from acplink.devtools.compare import diff_page
from acplink.devtools.conversation import conversation_page
from acplink.devtools.store import Store
from acplink.devtools.views import Filters, findings_page, sessions_page, timeline_page
from acplink.devtools.waterfall import waterfall_page


def timed(label: str, fn: Callable[[], str]) -> None:
    t0 = time.perf_counter()
    out = fn()
    print(f"{label}: {time.perf_counter() - t0:.2f} s, {len(out) // 1024} KB")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--cold"]
    store = Store(args[0])
    if "--cold" in sys.argv:
        store.db.execute("DELETE FROM views")
    c = store.connection(int(args[1]) if len(args) > 1 else 1)
    assert c is not None, "no such connection"
    print(f"connection #{c.id}: {c.messages} messages")
    timed("sessions", lambda: sessions_page(store))
    timed("timeline", lambda: timeline_page(store, c, Filters.of({})))
    timed("findings", lambda: findings_page(store, c))
    timed("conversation", lambda: conversation_page(store, c, ""))
    timed("waterfall", lambda: waterfall_page(store, c))
    timed("diff (with itself)", lambda: diff_page(store, {"a": str(c.id), "b": str(c.id)}))


if __name__ == "__main__":
    main()
