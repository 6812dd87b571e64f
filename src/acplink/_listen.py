"""The listening TCP socket of acplink's servers (``acplink serve``, devtools, the MCP HTTP
bridge), made in one place so that they all get the same options.

The socket is made with ``IPPROTO_TCP`` named: asyncio sets ``TCP_NODELAY`` on an accepted
connection only when the listening socket's protocol says TCP (an accepted socket inherits
it). Without it, a response written in two parts waits for the client's delayed ACK: about
40 ms for each request on a kept-alive connection."""

from __future__ import annotations

import socket

__all__ = ["listening_socket"]


def listening_socket(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A non-blocking, non-inheritable socket listening on ``host:port`` (``port`` 0: any free
    one; an IPv6 ``host`` with or without brackets). Raises :class:`OSError` (closed first)."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.set_inheritable(False)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
