"""Ray processes for tests, isolated from the machine's other Ray clusters.

Ray keeps a record of the last ``ray start`` cluster (``ray_current_cluster``) and its sessions in a temp
folder that every process on the machine shares (``/tmp/ray``); ``ray.init()`` joins the recorded
cluster even when it is long gone. A test's clusters live in a folder of their own (``RAY_TMPDIR``), short
enough for Ray's socket paths (at most 107 bytes on Linux), with a small object store.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

SMALL_OBJECT_STORE = "0.01"  # of the machine's memory (the floor, ~75 MB, applies below that)


@contextmanager
def isolated_ray_tmpdir() -> Iterator[str]:
    """A fresh Ray temp folder as ``RAY_TMPDIR`` for this process and the drivers it starts; removed after."""
    folder = tempfile.mkdtemp(prefix="bqr-", dir="/tmp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_TMPDIR", folder)
        mp.setenv("RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION", SMALL_OBJECT_STORE)
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
