"""Run leases: one process at a time runs (or resumes) a scenario run, and a dead one shows as interrupted.

The running process holds ``runs.lease_owner`` (``host:pid:token``, like the service's job leases) and
renews ``runs.lease_until`` from a heartbeat thread. A lease counts as live while it has not run out
and, on this host, while its process still exists (so a run killed with SIGKILL reads ``interrupted``
at once here, and after :data:`LEASE_SECONDS` on any other machine sharing the database). Taking a
lease is one conditional UPDATE, so two ``bqas run --resume`` started at the same moment cannot both win.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass

from sqlalchemy import update

from bqas.store.db import Store
from bqas.store.models import Run

LEASE_SECONDS = 60.0  # a lease not renewed for this long is stale (the process hung or died elsewhere)
HEARTBEAT_SECONDS = 10.0


class RunBusy(ValueError):
    """Another live process holds the run's lease (a usage error: exit code 2)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lease, parsed from ``host:pid:token``."""

    host: str
    pid: int | None

    @classmethod
    def parse(cls, owner: str) -> Holder:
        host, _, _token = owner.rpartition(":")
        host, _, pid = host.rpartition(":")
        return cls(host or owner, int(pid) if pid.isdigit() else None)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}" if self.pid is not None else f"a process on {self.host}"


def worker_name() -> str:
    """This process's lease owner name, ``host:pid:token`` (run leases and the service's job leases)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, belongs to another user
        return True
    return True


def lease_is_live(owner: str | None, until: float | None, at: float | None = None) -> bool:
    """Whether the lease ``owner``/``until`` still stands (not run out; on this host, its process exists)."""
    if not owner or until is None or until < (time.time() if at is None else at):
        return False
    holder = Holder.parse(owner)
    if holder.host == socket.gethostname() and holder.pid is not None:
        return _pid_exists(holder.pid)
    return True


def display_status(run: Run) -> str:
    """The status users see: a ``running`` run without a live lease is ``interrupted``."""
    if run.status == "running" and not lease_is_live(run.lease_owner, run.lease_until):
        return "interrupted"
    return run.status


class RunLease:
    """The lease of one run, held by this process; renewed by a daemon thread until :meth:`release`."""

    def __init__(self, store: Store, run_id: str, owner: str):
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"bqas-lease-{run_id}", daemon=True)

    @classmethod
    def acquire(cls, store: Store, run_id: str) -> RunLease:
        """Take the run's lease (free, run out, or its process gone); :class:`RunBusy` when it is live."""
        owner = worker_name()
        with store.session.begin() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise KeyError(run_id)
            previous, until = run.lease_owner, run.lease_until
        if lease_is_live(previous, until):
            raise RunBusy(_busy_message(run_id, str(previous)))
        # Compare-and-set on the lease we saw: if another process took it meanwhile, we lose.
        seen = Run.lease_owner.is_(None) if previous is None else Run.lease_owner == previous
        with store.session.begin() as s:
            result = s.execute(
                update(Run)
                .where(Run.id == run_id, seen)
                .values(lease_owner=owner, lease_until=time.time() + LEASE_SECONDS)
            )
            won = bool(getattr(result, "rowcount", 0))
        if not won:
            with store.session() as s:
                current = s.get(Run, run_id)
                holder = current.lease_owner if current is not None else None
            raise RunBusy(_busy_message(run_id, str(holder or "another process")))
        lease = cls(store, run_id, owner)
        lease._thread.start()
        return lease

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                with self.store.session.begin() as s:
                    s.execute(
                        update(Run)
                        .where(Run.id == self.run_id, Run.lease_owner == self.owner)
                        .values(lease_until=time.time() + LEASE_SECONDS)
                    )
            except Exception:  # a busy database must not kill the run; the next beat retries
                continue

    def release(self) -> None:
        """Stop renewing and give the lease up (only if this process still holds it)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self.store.session.begin() as s:
            s.execute(
                update(Run)
                .where(Run.id == self.run_id, Run.lease_owner == self.owner)
                .values(lease_owner=None, lease_until=None)
            )

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _busy_message(run_id: str, owner: str) -> str:
    holder = Holder.parse(owner).describe() if ":" in owner else owner
    return (
        f"run {run_id} is being run right now by {holder}; wait for it to finish (`bqas runs`) "
        "or stop that process, then resume again"
    )
