"""Moved to :mod:`bqas.auth` (kept so that older imports keep working)."""

from bqas.auth.keys import Authenticator, load_keys_file

__all__ = ["Authenticator", "load_keys_file"]
