"""Ray processes for tests, isolated from the machine's other Ray clusters.

Ray keeps a record of the last ``ray start`` cluster (``ray_current_cluster``) and its sessions in a temp
folder that every process on the machine shares (``/tmp/ray``); ``ray.init()`` joins the recorded
cluster even when it is long gone. A test's clusters live in a folder of their own (``RAY_TMPDIR``), short
enough for Ray's socket paths (at most 107 bytes on Linux), with a small object store.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from bqas.testing.processes import with_descendants

SMALL_OBJECT_STORE = "0.01"  # of the machine's memory (the floor, ~75 MB, applies below that)
# Ray starts its worker processes (the judge actors) at niceness 15. Beside the other tests' processes (niceness
# 0, CI runs three test workers on two cores) such an actor gets a few percent of a busy core: seen in CI, its
# start took longer than the 20 s placement bound and its first batch longer than the 30 s batch deadline,
# and every replacement again, so a lost or frozen node was never what the test saw. The actors of a
# test's cluster run at the niceness of the tests themselves (Ray reads its settings from RAY_<name>).
WORKER_NICENESS = "0"


@contextmanager
def isolated_ray_tmpdir() -> Iterator[str]:
    """A fresh Ray temp folder as ``RAY_TMPDIR`` for this process and the drivers it starts (with the
    clusters' settings above); removed after."""
    folder = tempfile.mkdtemp(prefix="bqr-", dir="/tmp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_TMPDIR", folder)
        mp.setenv("RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION", SMALL_OBJECT_STORE)
        mp.setenv("RAY_worker_niceness", WORKER_NICENESS)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def record_cluster(folder: str, address: str) -> str:
    """Write Ray's record of "the cluster started on this host" (what ``ray start`` leaves behind)."""
    path = os.path.join(folder, "ray", "ray_current_cluster")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(address)
    return path


def node_processes(node: Any) -> list[int]:
    """Every process of a Ray node: the ones Ray lists for it (raylet, log monitor, agents) and every
    descendant of them, the worker processes that host actors (``/proc/<pid>/task/*/children``)."""
    return with_descendants(int(info.process.pid) for infos in node.all_processes.values() for info in infos)


def kill_node(node: Any) -> list[int]:
    """SIGKILL everything a Ray node runs, as when its machine is lost (:func:`node_processes`).

    Killing only the raylet is not the same: whether its workers notice and exit depends on how the
    environment reparents orphans (a worker checks its parent), and a surviving worker goes on answering
    the driver, so the loss is never seen. The whole tree is listed before any signal, so no orphan is
    reparented out of it. Returns the PIDs signalled."""
    pids = node_processes(node)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids
