"""A throwaway PostgreSQL server of its own (Debian's ``postgresql`` package) that a test or a fault drill
may stop and start again: a database outage and a restart, for real.

    with LocalPostgres() as pg:        # initdb in a temp folder, a free port on 127.0.0.1
        store = open_store(pg.url)
        pg.stop()                      # immediate shutdown: connections drop as in a crash
        pg.start()                     # same data, same port
        with pg.frozen():              # every server process stopped (SIGSTOP), not gone: nothing answers
            ...                        # SIGCONT on the way out, whatever happened inside

It needs the server binaries (``/usr/lib/postgresql/*/bin``, as ``scripts/ci-postgres.sh`` installs
them) and, when run as root, the ``postgres`` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from bqas.testing.processes import with_descendants


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL server's ``bin`` folder, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: [int(x) for x in p.split("/")[4].split(".") if x.isdigit()],
    )
    return Path(found[-1]).parent if found else None


def available() -> bool:
    """Whether :class:`LocalPostgres` can run here (binaries, and a ``postgres`` user when root)."""
    if server_binaries() is None:
        return False
    if os.geteuid() != 0:
        return True
    import pwd

    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalPostgres:
    """One PostgreSQL server in a temp folder on 127.0.0.1 (trust authentication, database ``bqas``)."""

    def __init__(self, port: int | None = None, database: str = "bqas"):
        binaries = server_binaries()
        if binaries is None:
            raise RuntimeError("no PostgreSQL server installed (apt-get install postgresql)")
        self.bin = binaries
        self.port = port or _free_port()
        self.database = database
        self.data = Path(tempfile.mkdtemp(prefix="bqas-pg-"))
        self._as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{self.database}"

    def _run(self, *args: str) -> None:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(c) for c in cmd)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def init(self) -> LocalPostgres:
        if self._as_postgres:
            shutil.chown(self.data, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", self.database)
        return self

    def start(self) -> None:
        """Start the server (again) and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.data / "log"), "-w", "start")

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server: ``immediate`` drops every connection at once, as a crash or a kill does."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def pid(self) -> int | None:
        """The postmaster's process id while it runs."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def processes(self) -> list[int]:
        """The postmaster and every process under it (backends, checkpointer, WAL writer, ...)."""
        root = self.pid()
        if root is None:
            return []
        return with_descendants([root])

    @contextlib.contextmanager
    def frozen(self) -> Iterator[list[int]]:
        """Every server process stopped with SIGSTOP (the postmaster first, so that it starts no new
        backend) for the ``with`` block, then continued with SIGCONT, also when the block fails: the fault
        of an overloaded host or a partitioned network, where connections stay open and nothing answers."""
        import signal

        stopped: list[int] = []
        try:
            for pid in self.processes():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            yield stopped
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def close(self) -> None:
        if self.pid() is not None:
            with contextlib.suppress(subprocess.SubprocessError):
                self.stop()
        shutil.rmtree(self.data, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.init()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
