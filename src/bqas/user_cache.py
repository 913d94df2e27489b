"""The user's cache folder of BQAS: data that is slow to parse, kept in a form that is fast to load.

It holds the memory-mapped model arrays (:mod:`bqas.offline.array_cache`); everything in it can be
deleted at any time and is rebuilt on use. It is used only while no one else can write it
(:mod:`bqas.private_folder`).
``BQAS_MODEL_CACHE`` names the folder (default: the platform's user cache folder, e.g.
``~/.cache/bqas/models``); ``off`` switches caching off. Not the BQAS home's ``cache/`` (the LLM
response cache), which holds results and belongs to a project.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable with the cache folder, or ``off``.
CACHE_ENV = "BQAS_MODEL_CACHE"
_OFF = {"off", "0", "false", "no", "none"}


def cache_root() -> Path | None:
    """The cache folder: ``$BQAS_MODEL_CACHE``, else the user cache folder; None when switched off."""
    raw = os.environ.get(CACHE_ENV, "").strip()
    if raw.lower() in _OFF:
        return None
    if raw:
        return Path(raw)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("bqas", appauthor=False)) / "models"
