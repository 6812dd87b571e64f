"""A throwaway PostgreSQL cluster for the tests (and the store benchmark): Debian's
``postgresql`` (``scripts/test.sh`` installs it), ``initdb`` in a temporary directory, started
with ``pg_ctl`` on a free loopback port; run as the ``postgres`` user when this is root
(PostgreSQL refuses to run as root). :func:`start` says why when it cannot (the tests skip)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    root: str
    port: int
    pg_ctl: str
    as_user: list[str]
    #: fsync on (the benchmark); the tests' throwaway clusters run without it
    fsync: bool = False

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://acplink@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """A new empty database; its DSN."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def _ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.as_user, self.pg_ctl, "-D", f"{self.root}/data", *args],
                              capture_output=True, text=True, timeout=60, check=False)

    def stop(self) -> None:
        """Stop the server (immediately: the data dir is thrown away, or started again)."""
        self._ctl("-m", "immediate", "-w", "stop")

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root}" + ("" if self.fsync else " -c fsync=off")
        done = self._ctl("-w", "-l", f"{self.root}/log", "-o", options, "start")
        if done.returncode:
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip() or done.stdout.strip()}")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start(*, fsync: bool = False) -> Cluster | str:
    """A running cluster (``fsync``: PostgreSQL's default durability), or why there is none."""
    initdb, pg_ctl = _tool("initdb"), _tool("pg_ctl")
    if initdb is None or pg_ctl is None:
        return "PostgreSQL is not installed (scripts/test.sh installs Debian's postgresql)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'acplink[postgres]')"
    as_user: list[str] = []
    root = tempfile.mkdtemp(prefix="acplink-pg-")
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            return "running as root and there is no postgres user to run PostgreSQL as"
        if runuser is None:
            shutil.rmtree(root)
            return "running as root and runuser is missing"
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = [runuser, "-u", "postgres", "--"]
    done = subprocess.run([*as_user, initdb, "-D", f"{root}/data", "-A", "trust", "-U", "acplink", "--no-sync",
                           "-E", "UTF8"], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode:
        shutil.rmtree(root, ignore_errors=True)
        return f"initdb failed: {(done.stderr or done.stdout).strip()[-300:]}"
    cluster = Cluster(root, _free_port(), pg_ctl, as_user, fsync)
    try:
        cluster.start()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(root, ignore_errors=True)
        return str(exc)
    return cluster
