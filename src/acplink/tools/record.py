"""Recording: ``acplink record``, a byte-transparent stdio proxy between an editor and an agent,
and :func:`recording_transport`, the same trace from inside a program (any transport, teed).

The editor launches ``acplink record --out trace.jsonl -- AGENT_CMD...`` instead of the agent.
Two forwarding threads copy raw bytes (our stdin → the agent's stdin, the agent's stdout → our
stdout) the moment they are read, untouched; the agent's stderr is inherited (never touched).
A third thread turns copies of the chunks into trace records (:class:`TraceWriter`: line
splitting, schema validation, redaction) when the traffic pauses, so recording adds no latency
to the traffic and does not compete with a burst for the CPU. With a spool (``--db``), every
chunk is appended to it before it is forwarded (:mod:`.spool`): a SIGKILLed proxy loses
nothing it forwarded.

When our stdin closes, the agent's stdin is closed and the shutdown ladder follows
(wait → SIGTERM → wait → SIGKILL). The proxy exits with the agent's exit code.
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from ..transports.base import Transport
from ..transports.recording import RecordingTransport
from .spool import SpoolWriter, _write_all
from .trace import TraceListener, TraceWriter

__all__ = ["RecordingProxy", "recording_transport", "run_proxy"]


def recording_transport(inner: Transport, out: str | os.PathLike[str] | IO[bytes] | None = None, *,
                        redact: bool = False, side: str = "client", validate: bool = True,
                        listeners: Sequence[TraceListener] = (),
                        header: Mapping[str, Any] | None = None) -> RecordingTransport:
    """``inner`` teed into a trace: every message either way becomes a record in ``out`` (a path
    or a binary file, or None with ``listeners`` only) and goes to each listener; the bytes pass
    untouched. ``side`` is which side *this process* is ("client": what we write goes
    client→agent); ``validate`` marks schema violations; ``redact``: see
    :func:`acplink.tools.redact.redact_message`."""
    writer = TraceWriter(out, redact=redact, validate=validate, listeners=listeners,
                         header={"transport": inner.description, "side": side, "validated": validate,
                                 **(header or {})})
    return RecordingTransport(inner, writer, side=side)

_CHUNK = 1 << 16
_STOP = ("stop", b"", 0.0, 0.0)
#: a pause in the traffic (seconds): the queued chunks are then stored
_QUIET = 0.02
#: the longest a chunk waits to be stored during a burst of traffic (seconds)
_LAG = 1.0
#: the most bytes of forwarded chunks waiting to be recorded: past it, forwarding waits for the
#: recording (backpressure), so memory stays bounded whatever rate a peer sends at
MAX_QUEUED = 32 << 20


class RecordingProxy:
    """One proxied agent process and its trace."""

    def __init__(self, command: Sequence[str], out: str | os.PathLike[str] | IO[bytes] | None, *,
                 redact: bool = False, validate: bool = True, close_timeout: float = 5.0, term_timeout: float = 3.0,
                 stdin_fd: int = 0, stdout_fd: int = 1, listeners: Sequence[TraceListener] = (),
                 on_idle: Callable[[], None] | None = None, on_close: Callable[[], None] | None = None,
                 on_quiet: Callable[[], bool] | None = None, spool: SpoolWriter | None = None,
                 max_queued: int = MAX_QUEUED) -> None:
        self.command = list(command)
        self.out = out
        #: more consumers of the trace records (``acplink record --db``: the database), and a
        #: hook called whenever the trace has caught up with the traffic (to commit a batch), and
        #: one called once after the last record, while a signal still cannot interrupt (to close)
        self.listeners = list(listeners)
        self.on_idle = on_idle
        self.on_close = on_close
        #: called when the traffic has paused (background work, e.g. validating stored rows;
        #: it returns True while work is left, to be called again at the next pause)
        self.on_quiet = on_quiet
        #: the write-ahead spool: every chunk is appended to it before it is forwarded, so a
        #: SIGKILLed proxy loses nothing it forwarded (see :mod:`.spool`)
        self.spool = spool
        self.redact = redact
        self.validate = validate
        self.close_timeout = close_timeout
        self.term_timeout = term_timeout
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self._q: queue.SimpleQueue[tuple[str, bytes, float, float]] = queue.SimpleQueue()
        self.proc: subprocess.Popen[bytes] | None = None
        self._stdin_closed = threading.Event()
        self._order = threading.Lock()
        #: bytes queued for the trace thread, and the wait for room under ``max_queued``
        self.max_queued = max_queued
        self._queued = 0
        self._room = threading.Condition()

    def _enqueue(self, kind: str, data: bytes) -> None:
        # the trace thread is max_queued behind: forwarding waits for it (the peer then waits
        # for us, as it would for a slow reader)
        with self._room:
            if self._queued >= self.max_queued:
                self._room.wait_for(lambda: self._queued < self.max_queued)
            self._queued += len(data)
        # timestamp and queue together, before forwarding: the trace's order is causal
        # (an answer cannot be queued before the message it answers) and its clock monotonic
        with self._order:
            mono, wall = time.monotonic(), time.time()
            if self.spool is not None:
                self.spool.append(kind if kind != "eof" else "eof-" + data.decode(), data, mono, wall)
            self._q.put((kind, data, mono, wall))

    # -- forwarding ----------------------------------------------------------------------------

    def _pump(self, src: int, dst: int, direction: str) -> None:
        """Copy ``src`` to ``dst`` until end of input, queueing every chunk for the trace. A
        destination that is gone stops the copy, not the recording."""
        broken = False
        while True:
            try:
                data = os.read(src, _CHUNK)
            except OSError:
                data = b""
            if not data:
                self._enqueue("eof", direction.encode())
                return
            self._enqueue(direction, data)
            if not broken:
                try:
                    _write_all(dst, data)
                except OSError:
                    broken = True

    def _client_to_agent(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self._pump(self.stdin_fd, self.proc.stdin.fileno(), "c2a")
        self._stdin_closed.set()
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def _agent_to_client(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        self._pump(self.proc.stdout.fileno(), self.stdout_fd, "a2c")

    def _trace(self, writer: TraceWriter) -> None:
        """Turn the queued chunks into records, out of the traffic's way: a batch is taken when
        the traffic pauses (nothing queued for :data:`_QUIET` seconds) or, in a burst, once the
        oldest chunk waited :data:`_LAG` seconds; then the trace file is flushed and ``on_idle``
        called (a database commit). So the work of recording does not compete with the traffic
        for the CPU while it flows, a live view lags a pause (or at most ``_LAG``) behind, and a
        flood is stored in big batches. The spool (if any) has every chunk already."""
        quiet_work = False  # on_quiet has more to do at the next pause
        while True:
            try:
                first = self._q.get(timeout=_QUIET) if quiet_work else self._q.get()
            except queue.Empty:
                quiet_work = self._call(writer, self.on_quiet)
                continue
            batch = [first]
            until = time.monotonic() + _LAG
            # wait for a pause (sleeping, not woken by every chunk of a burst), then take all
            while first[0] != "stop" and time.monotonic() < until:
                seen = self._q.qsize()
                time.sleep(_QUIET)
                if self._q.qsize() == seen:
                    break
            while batch[-1][0] != "stop":
                try:
                    batch.append(self._q.get_nowait())
                except queue.Empty:
                    break
            for kind, data, mono, wall in batch:
                if kind == "stop":
                    return
                if kind == "eof":
                    self._call(writer, functools.partial(writer.eof, data.decode(), mono, wall))
                else:
                    self._call(writer, functools.partial(writer.feed, kind, data, mono, wall))
            with self._room:
                self._queued -= sum(len(item[1]) for item in batch)
                self._room.notify_all()
            self._call(writer, writer.flush)
            self._call(writer, self.on_idle)
            quiet_work = self.on_quiet is not None

    @staticmethod
    def _call(writer: TraceWriter, fn: Callable[[], Any] | None) -> bool:
        """``fn()`` (True if it returned True); an error is noted in the trace, never raised:
        the trace must never break the traffic."""
        if fn is None:
            return False
        try:
            return fn() is True
        except Exception as exc:
            try:
                writer.event("recorder-error", message=f"{type(exc).__name__}: {exc}")
            except Exception:
                pass
            return False

    # -- lifecycle -----------------------------------------------------------------------------

    def _ladder(self, signalled: bool = False) -> None:
        """After our stdin closed: wait for the agent, then TERM, then KILL (its process group).
        ``signalled``: we were told to stop and passed the signal on, so it starts at the TERM step."""
        proc = self.proc
        assert proc is not None
        steps: tuple[tuple[signal.Signals | None, float], ...] = (
            (None, self.close_timeout), (signal.SIGTERM, self.term_timeout), (signal.SIGKILL, 5.0))
        for sig, timeout in steps[1:] if signalled else steps:
            if signalled and sig == signal.SIGTERM:
                sig = None  # (already sent)
            if sig is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    try:
                        proc.send_signal(sig)
                    except ProcessLookupError:
                        pass
            try:
                proc.wait(timeout)
                return
            except subprocess.TimeoutExpired:
                continue

    def run(self) -> int:
        """Run until the agent exits (or our stdin closes and the ladder ends); its exit code."""
        header: dict[str, Any] = {"tool": "acplink record", "command": self.command, "pid": os.getpid(),
                                  "validated": self.validate}
        if self.spool is not None:
            header["spool"] = os.fspath(self.spool.path)
        writer = TraceWriter(self.out, redact=self.redact, validate=self.validate, listeners=self.listeners,
                             header=header)
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=None, bufsize=0, start_new_session=True)
        except OSError as exc:
            writer.event("spawn-error", message=str(exc))
            writer.close()
            raise
        proc = self.proc
        tracer = threading.Thread(target=self._trace, args=(writer,), name="acplink-record-trace", daemon=True)
        a2c = threading.Thread(target=self._agent_to_client, name="acplink-record-a2c", daemon=True)
        c2a = threading.Thread(target=self._client_to_agent, name="acplink-record-c2a", daemon=True)
        tracer.start()
        a2c.start()
        c2a.start()

        stopping: list[int] = []  # (no lock in a signal handler: a signal may interrupt the last one)

        def forward(signum: int, _frame: Any) -> None:
            # told to stop (an editor closing us, ^C): pass it on to the agent, then store every
            # record still queued before exiting. Repeated signals change nothing (each signal
            # is passed on once: the ladder escalates if the agent does not exit)
            if signum in stopping:
                return
            stopping.append(signum)
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

        old = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                old[sig] = signal.signal(sig, forward)
        try:
            while proc.poll() is None:
                if self._stdin_closed.wait(0.05) or stopping:
                    self._ladder(signalled=bool(stopping))
                    break
            code = proc.wait()
            a2c.join(2.0)  # the agent's last bytes
        finally:
            # the trace may still be catching up (a flood, a slow --db): it is finished (every
            # queued record written and committed) before our own signal handlers are restored,
            # so a signal during the catch-up cannot cut it short
            writer_code = proc.returncode
            self._q.put(_STOP)
            tracer.join()
            if self.spool is not None:
                self.spool.append("exit", str(writer_code).encode(), time.monotonic(), time.time())
            writer.event("exit", code=writer_code)
            writer.close()
            if self.on_close is not None:
                self.on_close()
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return code


def run_proxy(command: Sequence[str], out: str | os.PathLike[str], *, redact: bool = False) -> int:
    """Proxy this process's stdio to ``command``, recording to ``out``; the agent's exit code."""
    code = RecordingProxy(command, out, redact=redact).run()
    if code < 0:  # killed by a signal: report it the way a shell would
        return 128 - code
    sys.stdout.flush()
    return code
