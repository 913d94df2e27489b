"""Tenant names: what a service tenant may be called, and the reserved names of BQAS itself.

Names that start with ``@`` belong to BQAS: CLI runs (``bqas run``) file their review items, gold labels
and memory under :data:`LOCAL_TENANT`. No API key (``bqas keys create``, ``BQAS_API_KEYS_FILE``) can be
issued for such a name, so no service tenant can reach what local runs stored.
"""

from __future__ import annotations

import unicodedata

RESERVED_PREFIX = "@"
LOCAL_TENANT = "@local"
MAX_TENANT_CHARS = 100


def is_reserved(name: str) -> bool:
    """Is ``name`` one of BQAS's own tenants (never reachable with an API key)?"""
    return name.startswith(RESERVED_PREFIX)


def check_tenant_name(name: str) -> str:
    """``name`` stripped; ValueError saying why when it cannot be a service tenant."""
    name = name.strip()
    if not name or len(name) > MAX_TENANT_CHARS:
        raise ValueError(f"tenant: expected 1-{MAX_TENANT_CHARS} characters")
    if is_reserved(name):
        raise ValueError(f"tenant: names starting with {RESERVED_PREFIX!r} are reserved for BQAS (got {name!r})")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in name):
        raise ValueError("tenant: control or format characters are not allowed")
    return name
