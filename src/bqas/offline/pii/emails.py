"""E-mail addresses, plain and in the spam-proof ``name(at)schule.de`` spelling."""

from __future__ import annotations

import re
from functools import cache

from bqas.offline.pii.match import _make, _may_match
from bqas.offline.pii_types import PiiFinding


@cache
def _email_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    plain = re.compile(
        r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9äöüÄÖÜ](?:[A-Za-z0-9äöüÄÖÜ-]*[A-Za-z0-9äöüÄÖÜ])?\.)+"
        r"[A-Za-z]{2,24}(?![\w-])"
    )
    # "max.muster(at)schule.de" / "max [at] schule [dot] de": the usual spam-proof spelling on German sites.
    obfuscated = re.compile(
        r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*\s?[(\[{]\s?(?:at|ät|@)\s?[)\]}]\s?"
        r"(?:[A-Za-z0-9-]+(?:\.|\s?[(\[{]\s?(?:dot|punkt)\s?[)\]}]\s?))+[A-Za-z]{2,24}(?![\w-])",
        re.IGNORECASE,
    )
    return plain, obfuscated


def _find_emails(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """E-mail addresses; ``lang`` is unused (addresses look the same everywhere)."""
    if "@" not in text and "at" not in text.lower():
        return []
    plain, obfuscated = _email_patterns()
    out: list[PiiFinding] = []
    if _may_match(plain, text, pre):
        out += [_make("email", text, m.start(), m.end(), "regex:email", 0.99) for m in plain.finditer(text)]
    if _may_match(obfuscated, text, pre):
        out += [
            _make("email", text, m.start(), m.end(), "regex:email_obfuscated", 0.9) for m in obfuscated.finditer(text)
        ]
    return out
