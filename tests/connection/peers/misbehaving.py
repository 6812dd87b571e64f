"""A raw (not acplink) JSON-RPC agent that misbehaves on purpose.

``python misbehaving.py MODE [ARG]``. It answers requests ``echo`` (result = params) and
``die`` (exits without answering); MODE adds the misbehaviour:

- ``noise``: writes non-JSON lines to stdout before each response
- ``unknown-id``: writes a response with an unknown id before each real response
- ``flood-stderr MB``: writes MB megabytes of lines to stderr, then ``END``, then serves
- ``stop-reading``: sends a ``ready`` notification, stops reading, closes stdin, keeps running
- ``ignore-term``: ignores stdin close and SIGTERM, prints ``ready``, sleeps
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode == "flood-stderr":
        line = b"e" * 99 + b"\n"
        block = line * 10_000  # ~1 MB
        for i in range(int(sys.argv[2])):
            os.write(2, block[:-6] + b"%05d\n" % i)
        os.write(2, b"END\n")
    elif mode == "stop-reading":
        send({"jsonrpc": "2.0", "method": "ready", "params": {}})
        time.sleep(0.3)
        os.close(0)
        time.sleep(60)
        return
    elif mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.close(0)
        send({"jsonrpc": "2.0", "method": "ready", "params": {}})
        while True:
            time.sleep(1)
    for raw in sys.stdin:
        msg = json.loads(raw)
        if "id" not in msg:
            continue
        if msg["method"] == "die":
            os._exit(1)
        if mode == "noise":
            sys.stdout.write("Loading model weights... done\n\x1b[32mready\x1b[0m\n")
        elif mode == "unknown-id":
            send({"jsonrpc": "2.0", "id": 987654, "result": {"stray": True}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": msg.get("params")})


if __name__ == "__main__":
    main()
