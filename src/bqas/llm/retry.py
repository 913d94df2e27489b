"""When to send an HTTP request again, and how long to wait first: shared by the LLM client and the
targets (the assistants under test), so that both back off the same way and honour ``Retry-After``."""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

# Answers worth another try: a timeout or conflict on the server's side, too many requests, a server error.
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504})


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``Retry-After`` on 429/503 wins unless it asks for too long."""

    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, attempt: int) -> float:
        """The wait before attempt ``attempt + 1`` (attempts count from 1), with jitter in [50 %, 100 %]."""
        base = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return float(base * (0.5 + random.random() / 2))

    def wait_after_status(self, status: int, retry_after: float | None, attempt: int) -> float | None:
        """How long to wait before sending again after answer ``status``; None: do not send again
        (not a transient status, retries used up, or a ``Retry-After`` beyond ``max_retry_after``)."""
        if status not in RETRY_STATUSES or attempt > self.max_retries:
            return None
        if retry_after is not None and status in (429, 503):
            return retry_after if retry_after <= self.max_retry_after else None
        return self.backoff(attempt)
