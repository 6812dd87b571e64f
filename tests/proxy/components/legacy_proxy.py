"""A pass-through proxy that knows only the older ``_proxy/*`` names (as software built on the
Rust SDK before 5.0), standard library only; it logs every message it receives (argv[1])."""

import json
import sys

log = open(sys.argv[1], "a")
pending = {}
counter = 0


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def request(method, params, origin):
    global counter
    counter += 1
    rid = f"legacy-{counter}"
    pending[rid] = origin
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    send(msg)


for line in sys.stdin:
    msg = json.loads(line)
    log.write(json.dumps({**msg, **({"id": "<id>"} if "id" in msg else {})}, sort_keys=True) + "\n")
    log.flush()
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
    if method is None:
        origin = pending.pop(rid)
        send({"jsonrpc": "2.0", "id": origin, **{k: msg[k] for k in ("result", "error") if k in msg}})
    elif method == "proxy/initialize":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "_proxy/initialize":
        request("_proxy/successor", {"method": "initialize", "params": params}, rid)
    elif method == "_proxy/successor":
        inner = params.get("params")
        if rid is None:
            send({"jsonrpc": "2.0", "method": params["method"], **({"params": inner} if inner is not None else {})})
        else:
            request(params["method"], inner, rid)
    else:
        wrapped = {"method": method, **({"params": params} if params is not None else {})}
        if rid is None:
            send({"jsonrpc": "2.0", "method": "_proxy/successor", "params": wrapped})
        else:
            request("_proxy/successor", wrapped, rid)
