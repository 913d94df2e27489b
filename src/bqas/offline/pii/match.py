"""What every detector family shares: a finding from a matched span, and the literal pre-check that
skips a pattern on text lacking what each of its matches contains."""

from __future__ import annotations

import re
from functools import cache

from bqas.offline.pii_types import PiiFinding
from bqas.offline.text.literals import Requirement, fold_case, required_literals


def _make(kind: str, text: str, start: int, end: int, method: str, confidence: float) -> PiiFinding:
    return PiiFinding(kind, text[start:end], start, end, method, confidence)


@cache
def _need(pattern: re.Pattern[str]) -> Requirement | None:
    return required_literals(pattern)


def _may_match(pattern: re.Pattern[str], text: str, pre: bool) -> bool:
    """Whether ``pattern`` could match ``text`` by the literals every match of it contains
    (bqas.offline.text.literals); always True with ``pre`` off or when the pattern has none."""
    need = _need(pattern) if pre else None
    return need is None or need.allows_text(fold_case(text) if need.folded else text)
