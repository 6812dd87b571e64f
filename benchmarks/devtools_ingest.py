"""µs per row of the recorder's trace thread: TraceWriter (validation) + Ingest into SQLite,
and (``validate=False db=True``, what ``acplink record --db`` does on the traffic's path) the
deferred validation of the stored rows afterwards: ``python benchmarks/devtools_ingest.py TRACE``."""
import os
import sys
import tempfile
import time

import orjson

from acplink.devtools.store import Ingest, Store
from acplink.tools.trace import TraceWriter, read_trace

recs = [r for r in read_trace(sys.argv[1]) if r.get("type") == "message"]
chunks = [(r["dir"], orjson.dumps(r["msg"]) + b"\n") for r in recs]
for validate in (True, False):
    for db in (False, True):
        d = tempfile.mkdtemp()
        store = Store(os.path.join(d, "b.sqlite")) if db else None
        ing = Ingest(store, "bench") if store else None
        w = TraceWriter(None, validate=validate, listeners=[ing] if ing else [])
        t = time.process_time()
        for dr, data in chunks:
            w.feed(dr, data)
        if ing:
            ing.close()
        dt = time.process_time() - t
        print(f"validate={validate} db={db}: {dt/len(chunks)*1e6:.1f} us/row ({len(chunks)} rows)")
        if store and ing and ing.conn and not validate:
            t = time.process_time()
            store.validate_pending(ing.conn)
            dt = time.process_time() - t
            print(f"  then the deferred validation of the stored rows: {dt/len(chunks)*1e6:.1f} us/row")
