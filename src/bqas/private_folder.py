"""Cache folders only their owner can write.

What BQAS reads back from a cache (model arrays, fitted intent weights, LLM replies) steers its
judgments, so a cache folder that another user can write would let them change those. Every folder
level BQAS creates for a cache is created with mode 0700; an existing cache folder that is group- or
world-writable, or owned by another user, is not used at all (neither read nor written) and a warning
says which folder, why, and how to fix it. The work goes on without that cache.

Nothing in a cache is ever code: arrays are read with ``allow_pickle=False``, replies and manifests are
JSON or SQLite rows, and the report template is compiled in memory.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from bqas.logs import get_logger

log = get_logger(__name__)

#: Mode of every cache folder level BQAS creates.
PRIVATE_MODE = 0o700

_warned: set[str] = set()


class UnsafeFolder(OSError):
    """A cache folder that another user could write (or that belongs to another user)."""


def _uid() -> int | None:
    # Windows has no POSIX owners or modes: there the folder's ACLs are the user's business.
    getuid = getattr(os, "getuid", None)
    return None if getuid is None else int(getuid())


def make_private(path: Path) -> Path:
    """Create ``path`` and its missing parents with mode 0700, then check it (:func:`check_private`).

    Raises :class:`UnsafeFolder` for a folder others can write, ``OSError`` when it cannot be created."""
    missing: list[Path] = []
    level = path
    while not level.exists() and level != level.parent:
        missing.append(level)
        level = level.parent
    for folder in reversed(missing):
        # Another process may create it first: it is checked below like any other.
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_MODE)
    check_private(path)
    return path


def check_private(path: Path) -> None:
    """Raise :class:`UnsafeFolder` unless ``path`` (symlinks followed) is a folder of this user that
    neither its group nor others can write."""
    uid = _uid()
    if uid is None:
        return
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"{path} is not a folder")
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != uid:
        raise UnsafeFolder(f"{path} belongs to another user (uid {info.st_uid}, this is uid {uid})")
    writers = [who for who, bit in (("its group", stat.S_IWGRP), ("every user", stat.S_IWOTH)) if mode & bit]
    if writers:
        raise UnsafeFolder(f"{path} can be written by {' and '.join(writers)} (mode {mode:04o})")


def private_folder(path: Path, what: str, setting: str) -> Path | None:
    """``path`` made private (:func:`make_private`), or None when it cannot be used: it is unsafe
    (warned once per folder, naming ``what`` it holds and the ``setting`` that moves it) or it cannot be
    created (a read-only disk: the caller goes on without the cache)."""
    try:
        return make_private(path)
    except UnsafeFolder as exc:
        _warn_once(
            path,
            "not using the %s: %s; anyone who can write there could change what BQAS reads back. "
            "Fix: chmod 700 %s (as its owner), or set %s to a folder only you can write",
            what,
            exc,
            path,
            setting,
        )
    except OSError as exc:
        _warn_once(path, "not using the %s: %s cannot be created (%s); going on without it", what, path, exc)
    return None


def _warn_once(path: Path, message: str, *args: object) -> None:
    if str(path) not in _warned:
        _warned.add(str(path))
        log.warning(message, *args)
