"""What is sent while a chunk read from a pipe is handled leaves in one write per transport,
right after the chunk (transports/stream.py ``deliver``), and a child's stdout reaches its
connection in the read's own turn of the loop, in order (transports/subprocess.py)."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from typing import Any

from connhelpers import guard

from acplink.transports import SubprocessTransport
from acplink.transports.stream import StreamTransport, deliver


class Recording(StreamTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def start(self, sink: Any) -> None:
        self._sink = sink

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    @property
    def description(self) -> str:
        return "recording"


class Forwarder:
    """A sink that sends every line it reads on to two transports."""

    def __init__(self, *outs: Recording) -> None:
        self.outs = outs
        self.during: list[list[bytes]] = []

    def data_received(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True):
            for out in self.outs:
                out.send(line)
        self.during.append(list(self.outs[0].writes))  # (what was written before the chunk ended)


async def test_what_a_chunk_causes_is_written_once_per_transport_right_after_it() -> None:
    a, b = Recording(), Recording()
    a.send(b"first\n")  # (outside a chunk: written at once, the turn's later sends batched)
    assert a.writes == [b"first\n"]
    sink = Forwarder(a, b)
    deliver(sink, b"1\n2\n3\n")
    assert sink.during == [[b"first\n"]]  # nothing more went out while the chunk was handled
    assert a.writes == [b"first\n", b"1\n2\n3\n"]  # then one write, in order
    assert b.writes == [b"1\n2\n3\n"]
    await asyncio.sleep(0)  # the turn's scheduled flush finds nothing left
    assert a.writes == [b"first\n", b"1\n2\n3\n"] and b.writes == [b"1\n2\n3\n"]


async def test_a_big_chunk_is_written_as_it_reaches_the_batch_size() -> None:
    out = Recording()
    out.flush_at = 10
    deliver(Forwarder(out), b"".join(b"line%d\n" % i for i in range(6)))
    assert b"".join(out.writes) == b"".join(b"line%d\n" % i for i in range(6))
    assert len(out.writes) > 1  # (not all held until the end of the chunk)


async def test_a_failing_sink_still_writes_what_it_sent() -> None:
    out = Recording()

    class Failing:
        def data_received(self, data: bytes) -> None:
            out.send(b"sent before the failure\n")
            raise RuntimeError("boom")

    try:
        deliver(Failing(), b"x\n")
    except RuntimeError:
        pass
    assert out.writes == [b"sent before the failure\n"]
    out.send(b"later\n")  # (and the next chunk, or the next turn, batches normally)
    assert out.writes[-1] == b"later\n"


class Collect:
    def __init__(self) -> None:
        self.data = bytearray()
        self.eof = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        assert not self.eof.is_set(), "data after the end of input"
        self.data += data

    def message_received(self, message: bytes, meta: Any) -> None:
        raise AssertionError("a stream transport")

    def eof_received(self, exc: BaseException | None) -> None:
        self.eof.set()

    def write_paused(self) -> None:
        pass

    def send_failed(self, exc: BaseException) -> None:
        pass


async def test_a_childs_output_arrives_whole_and_in_order_before_its_end() -> None:
    # lines written at once on start-up (read before the connection was made) and later ones
    child = textwrap.dedent("""
        import sys, time
        out = sys.stdout.buffer
        for i in range(2000):
            out.write(b"early %d\\n" % i)
        out.flush()
        time.sleep(0.2)
        for i in range(2000):
            out.write(b"late %d\\n" % i)
            if i % 100 == 0:
                out.flush()
    """)
    sink = Collect()
    transport = SubprocessTransport([sys.executable, "-c", child])
    await transport.start(sink)
    try:
        await guard(sink.eof.wait())
    finally:
        await transport.aclose()
    expected = b"".join(b"early %d\n" % i for i in range(2000)) + b"".join(b"late %d\n" % i for i in range(2000))
    assert bytes(sink.data) == expected


async def test_a_childs_output_is_not_handed_on_through_a_scheduled_callback() -> None:
    # asyncio's subprocess transport passes each read of a child's pipe on with call_soon (a
    # turn of the loop later); acplink reads the child's stdout itself. Output produced once the
    # child is running (after it read a line from us) must reach the sink without that hop.
    loop = asyncio.get_running_loop()
    scheduled: list[Any] = []
    call_soon = loop.call_soon

    def recording(callback: Any, *args: Any, **kw: Any) -> Any:
        scheduled.append((getattr(callback, "__name__", ""), args))
        return call_soon(callback, *args, **kw)

    child = "import sys\nsys.stdin.readline()\nsys.stdout.write('after\\n' * 100)\nsys.stdout.flush()\n"
    sink = Collect()
    transport = SubprocessTransport([sys.executable, "-c", child])
    await transport.start(sink)
    try:
        await asyncio.sleep(0.05)  # (whatever start-up scheduled has run)
        loop.call_soon = recording  # type: ignore[method-assign]
        try:
            transport.send(b"go\n")
            await guard(sink.eof.wait())
        finally:
            del loop.call_soon
    finally:
        await transport.aclose()
    assert bytes(sink.data) == b"after\n" * 100
    assert not [args for name, args in scheduled if name == "pipe_data_received" and args[:1] == (1,)]
