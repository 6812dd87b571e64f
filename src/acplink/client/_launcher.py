"""The supervisor between the client and a terminal's command (run as a script, stdlib only).

    python -I -S _launcher.py STATUS_FD PARENT_PID UNSET COMMAND [ARGS...]

The client starts this small program (in its own session and process group, stdout and
stderr on the terminal's output pipe, the command's environment as its own) instead of the
command itself. It

* becomes a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so every descendant of the
  command stays below it, also one that called ``setsid()`` and whose parent exited;
* starts the command (fork + exec: this process has one thread, so the code between fork and
  exec is safe) with a parent-death signal (``PR_SET_PDEATHSIG`` = SIGKILL): should this
  supervisor be killed, the command dies with it;
* reports on ``STATUS_FD``, one line each: ``ok PID`` once the command runs, or ``err ERRNO``
  when it could not be executed; then ``exit CODE`` or ``signal NUM`` when it ends;
* reaps every process that ends below it (no zombies), and lives on while the command's
  background descendants do (they keep running after the command exits, as in a shell);
* SIGTERM: forwards SIGTERM to every descendant. SIGUSR1: SIGKILLs every descendant (again,
  until none is left: a process forking meanwhile is caught in the next round), then exits;
* watches its parent (the client): when the client ends, even by SIGKILL, it kills every
  descendant and exits (Linux: a pidfd of the parent, at once; elsewhere by polling its
  parent pid, within half a second). It does not use ``PR_SET_PDEATHSIG`` for itself: that
  signal fires when the *thread* that forked it ends, not the client process.

Not imported by acplink: the client runs it with ``sys.executable -I -S`` (isolated: the
``PYTHON*`` variables of the command's environment do not affect it). ``UNSET`` names the
variables (comma-separated) to remove before the exec: Python's start-up may add
``LC_CTYPE`` (C locale coercion) where the command's environment had none.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from collections.abc import Callable

Prctl = Callable[..., int]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
HANDLED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGCHLD, signal.SIGHUP, signal.SIGINT)
LINUX = sys.platform.startswith("linux")


def _prctl() -> Prctl | None:
    if not LINUX:
        return None
    try:
        import ctypes

        prctl: Prctl = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError, ImportError):
        return None


def _parent_map() -> dict[int, list[int]]:
    """pid → its children, for every process we can see."""
    kids: dict[int, list[int]] = {}
    if LINUX:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    raw = f.read()
            except OSError:
                continue
            ppid = int(raw[raw.rfind(b")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(name))
        return kids
    try:  # macOS and the BSDs: no /proc
        with os.popen("ps -A -o pid= -o ppid=") as ps:
            for line in ps:
                child, _, parent = line.strip().partition(" ")
                kids.setdefault(int(parent), []).append(int(child))
    except (OSError, ValueError):
        pass
    return kids


def _descendants(root: int) -> list[int]:
    kids = _parent_map()
    out: list[int] = []
    stack = [root]
    while stack:
        for child in kids.get(stack.pop(), ()):
            out.append(child)
            stack.append(child)
    return out


def _signal_tree(sig: int) -> int:
    """Send ``sig`` to every descendant; the number of processes signalled."""
    n = 0
    for pid in _descendants(os.getpid()):
        try:
            os.kill(pid, sig)
            n += 1
        except OSError:
            pass
    return n


class Launcher:
    def __init__(self, status_fd: int, parent: int, argv: list[str], env: dict[str, str]) -> None:
        self.env = env
        self.status_fd = status_fd
        self.parent = parent
        self.argv = argv
        self.child = 0
        self.reported = False
        self.killing = False
        self.parent_fd: int | None = None

    def report(self, line: str) -> None:
        try:
            os.write(self.status_fd, line.encode() + b"\n")
        except OSError:  # the client is gone
            self.killing = True

    def spawn(self, prctl: Prctl | None) -> bool:
        err_r, err_w = os.pipe()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:  # the command's process: exec, or report errno through the pipe
            try:
                signal.set_wakeup_fd(-1)
                for sig in (*HANDLED, signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                if prctl is not None:
                    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != me:  # this supervisor died before the prctl
                    os._exit(137)
                os.execvpe(self.argv[0], self.argv, self.env)
            except OSError as exc:
                os.write(err_w, str(exc.errno or 0).encode())
            finally:
                os._exit(127)
        os.close(err_w)
        self.child = pid
        data = b""
        while chunk := os.read(err_r, 64):
            data += chunk
        os.close(err_r)
        if data:
            os.waitpid(pid, 0)
            self.report(f"err {int(data)}")
            return False
        self.report(f"ok {pid}")
        return True

    def reap(self) -> bool:
        """Collect every ended child; False when no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.child and not self.reported:
                self.reported = True
                if os.WIFSIGNALED(status):
                    self.report(f"signal {os.WTERMSIG(status)}")
                else:
                    self.report(f"exit {os.waitstatus_to_exitcode(status)}")

    def parent_gone(self) -> bool:
        return os.getppid() != self.parent

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        for sig in HANDLED:
            signal.signal(sig, lambda *_: None)
        prctl = _prctl()
        if prctl is not None:
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        if LINUX and hasattr(os, "pidfd_open"):
            try:
                self.parent_fd = os.pidfd_open(self.parent)
            except OSError:
                self.parent_fd = None
        if self.parent_gone():
            return 1
        if not self.spawn(prctl):
            return 0
        # the output pipe must close when the command's tree closes it, not stay open here
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        rounds = 0
        while True:
            left = self.reap()
            if not left and (self.reported or self.killing):
                return 0
            if self.killing:
                rounds += 1
                _signal_tree(signal.SIGKILL)
                if rounds > 1500:  # ~30 s of processes that do not die (uninterruptible sleep)
                    return 0
                timeout: float | None = 0.02
            else:
                timeout = None if self.parent_fd is not None else 0.5
            watch = [wake_r] if self.parent_fd is None else [wake_r, self.parent_fd]
            try:
                ready, _, _ = select.select(watch, [], [], timeout)
            except InterruptedError:
                ready = []
            if (self.parent_fd is not None and self.parent_fd in ready) or (self.parent_fd is None and self.parent_gone()):
                self.killing = True
            if wake_r in ready:
                try:
                    sigs = os.read(wake_r, 512)
                except BlockingIOError:
                    sigs = b""
                if signal.SIGUSR1 in sigs:
                    self.killing = True
                elif any(s in sigs for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)) and not self.killing:
                    _signal_tree(signal.SIGTERM)


def main() -> int:
    if len(sys.argv) < 5:
        sys.stderr.write("usage: _launcher.py STATUS_FD PARENT_PID UNSET COMMAND [ARGS...]\n")
        return 2
    status_fd = int(sys.argv[1])
    os.set_inheritable(status_fd, False)
    env = dict(os.environ)
    for name in sys.argv[3].split(","):
        env.pop(name, None)
    return Launcher(status_fd, int(sys.argv[2]), sys.argv[4:], env).run()


if __name__ == "__main__":
    sys.exit(main())
