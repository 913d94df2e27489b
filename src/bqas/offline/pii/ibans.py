"""IBANs: a regex proposes, ``python-stdnum`` checks country length and mod-97 checksum."""

from __future__ import annotations

import re
from functools import cache

from bqas.offline.pii.match import _make
from bqas.offline.pii_types import PiiFinding


@cache
def _iban_pattern() -> re.Pattern[str]:
    # Country code, check digits, then 11-30 letters/digits in any grouping of single spaces.
    return re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")


# What every IBAN match starts with, without the look-behind that keeps re from skipping ahead by its
# first character: a text without it has no IBAN.
_IBAN_START_RE = re.compile(r"[A-Z]{2}\d{2}")


def _find_ibans(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """IBANs with a valid checksum; a longer regex match is shortened group by group until one validates
    (the regex may swallow a following number, e.g. ``DE89 3704 0044 0532 0130 00 12``)."""
    if pre and _IBAN_START_RE.search(text) is None:
        return []
    from stdnum import iban  # lazy: keeps module import cheap

    out: list[PiiFinding] = []
    for m in _iban_pattern().finditer(text):
        end = m.end()
        while end - m.start() >= 15:
            cand = text[m.start() : end]
            if iban.is_valid(cand):
                out.append(_make("iban", text, m.start(), end, "stdnum:iban", 0.99))
                break
            cut = cand.rfind(" ")
            if cut <= 4:
                break
            end = m.start() + cut
    return out
