"""Process trees for fault drills: what to stop or kill so that a whole server or node is gone or frozen."""

from __future__ import annotations

import contextlib
import glob
from collections.abc import Iterable
from pathlib import Path


def with_descendants(roots: Iterable[int]) -> list[int]:
    """``roots`` and every process under them (Linux: ``/proc/<pid>/task/*/children``), parents first.

    Listed before any signal is sent, so a child reparented once its parent dies is still in the list."""
    found = list(roots)
    todo = list(found)
    while todo:
        pid = todo.pop()
        for task in glob.glob(f"/proc/{pid}/task/*/children"):
            with contextlib.suppress(OSError):
                children = [int(c) for c in Path(task).read_text().split()]
                found.extend(children)
                todo.extend(children)
    return found
