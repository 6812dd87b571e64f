"""The listening socket of acplink's servers: a connection it accepts gets TCP_NODELAY from
asyncio (else a response written in two parts waits for the client's delayed ACK, ~40 ms a
request on a kept-alive connection), on IPv4 and IPv6."""

from __future__ import annotations

import asyncio
import socket

import pytest

from acplink._listen import listening_socket


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
async def test_an_accepted_connection_has_tcp_nodelay(host: str) -> None:
    try:
        sock = listening_socket(host, 0)
    except OSError as exc:  # (a machine without IPv6)
        pytest.skip(f"cannot listen on {host}: {exc}")
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def made(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    assert not sock.get_inheritable() and sock.getblocking() is False
    server = await asyncio.start_server(made, sock=sock)
    try:
        port = sock.getsockname()[1]
        _, writer = await asyncio.open_connection(host.strip("[]"), port)
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_a_port_in_use_is_an_oserror_and_leaves_no_socket() -> None:
    first = listening_socket("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with pytest.raises(OSError):
            listening_socket("127.0.0.1", port)
    finally:
        first.close()
