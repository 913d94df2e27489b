"""Which detector family runs on which text, and how their findings become one list: the entry point
behind :func:`bqas.offline.pii.detect_pii`."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from bqas.offline.pii.addresses import _address_patterns, _find_addresses
from bqas.offline.pii.emails import _email_patterns, _find_emails
from bqas.offline.pii.ibans import _find_ibans
from bqas.offline.pii.merge import _resolve_overlaps, _with_chinese_ner, _without_cut_words
from bqas.offline.pii.person_latin import _latin_persons, _person_patterns
from bqas.offline.pii.person_zh import _chinese_persons, _has_han
from bqas.offline.pii.phones import _find_phones
from bqas.offline.pii_types import KINDS, PiiFinding


def detect_pii(
    text: str,
    language: str = "de",
    *,
    kinds: Collection[str] | None = None,
    prefilter: bool = True,
    ner: bool = True,
) -> list[PiiFinding]:
    """Find personal data in ``text``.

    ``language`` is ``"de"``, ``"en"`` or ``"zh"``; regional tags (``"de-AT"``, ``"zh-CN"``) are read by
    their prefix and anything else falls back to German rules. ``kinds`` restricts the search to some of
    :data:`KINDS`. Returns findings sorted by start offset, without overlaps. ``prefilter=False`` runs every
    pattern even where the literals it needs are missing (the same findings, slower; tests compare them).
    ``ner=False`` leaves out the Chinese NER model's second pass (the regex rules alone).
    """
    if not text:
        return []
    wanted = set(KINDS) if kinds is None else set(kinds)
    unknown = wanted - set(KINDS)
    if unknown:
        raise ValueError(f"unknown PII kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    lang = _base_language(language)
    finders: dict[str, Callable[[str, str, bool], list[PiiFinding]]] = {
        "email": _find_emails,
        "phone": _find_phones,
        "iban": _find_ibans,
        "address": _find_addresses,
        "person": _find_persons,
    }
    found: list[PiiFinding] = []
    for kind in KINDS:
        if kind in wanted:
            found.extend(finders[kind](text, lang, prefilter))
    han = _has_han(text)
    if ner and wanted & {"person", "address"} and han:
        found = _with_chinese_ner(text, found, wanted)
    if han and "person" in wanted:
        found = _without_cut_words(text, found)
    return _resolve_overlaps(found)


def _base_language(language: str) -> str:
    """``"de-AT"`` -> ``"de"``; unknown languages use the German rules (the assistant's main language)."""
    base = (language or "de").replace("_", "-").split("-", 1)[0].lower()
    return base if base in {"de", "en", "zh"} else "de"


def _find_persons(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """Person names: Latin-script rules always (names appear in any language), Chinese rules on Han text."""
    # Every Latin rule starts from a word with an upper-case first letter (a title, a role, a capitalised
    # name, an initial): text without one (most Chinese answers) has no Latin name to find.
    latin = not pre or (not text.islower() and any(map(str.isupper, text)))
    return (_latin_persons(text, pre) if latin else []) + _chinese_persons(text, pre)


def _prefiltered_patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns :func:`_may_match` tests by their required literals (tests check each)."""
    return (*_email_patterns(), *_address_patterns(), _person_patterns()[1])
