"""The store that the commands over stored runs read and write, as the settings name it."""

from __future__ import annotations

from typing import Any


def _store() -> Any:
    from bqas.settings import get_settings
    from bqas.store.db import open_store

    return open_store(get_settings().resolved_database_url())
