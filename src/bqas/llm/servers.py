"""What the client learned about each server, kept for the life of the process.

Every client for the same ``base_url`` (the service builds one per backend, a run one per engine) shares
one record, so a negotiation is paid once per server: the structured-output format that worked (or the
formats it rejected, remembered even when the next try timed out), whether it refuses token
log-probabilities, and whether it honours ``n`` (several samples in one request).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class ServerTraits:
    """One server's negotiated capabilities; ``None`` means not known yet."""

    mode: str | None = None
    rejected_modes: set[str] = field(default_factory=set)
    logprobs: bool | None = None
    n: bool | None = None


_lock = threading.Lock()
_traits: dict[str, ServerTraits] = {}


def _key(base_url: str) -> str:
    return base_url.rstrip("/").lower()


def traits_for(base_url: str) -> ServerTraits:
    """The shared record of the server at ``base_url``."""
    with _lock:
        return _traits.setdefault(_key(base_url), ServerTraits())


def forget_servers() -> None:
    """Forget every server (tests start each scripted server on a fresh port; a reused port is a new server)."""
    with _lock:
        _traits.clear()
