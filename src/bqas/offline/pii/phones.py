"""Phone numbers: a regex takes what looks like a dialled number, ``phonenumbers`` (libphonenumber's
metadata) validates it for the language's regions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from bqas.offline.pii.match import _make
from bqas.offline.pii_types import PiiFinding

# Regions tried, in order, for numbers written without an international prefix.
_PHONE_REGIONS = {"de": ("DE", "AT", "CH"), "en": ("GB", "US", "DE"), "zh": ("CN", "DE")}


@cache
def _phone_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # A dialled number starts with "+", "00" or the trunk "0" (possibly in parentheses) or is a Chinese
    # mobile (1[3-9] + 9 digits) or a North-American "(555) 123-4567". Groups are separated by one space,
    # "-", "/", "." or parentheses. Dates ("12.03.2024"), times ("14:30"), grades ("1,7") and prices do not
    # have that shape, which is what keeps them out (phonenumbers alone takes some dates for numbers).
    candidate = re.compile(
        r"(?<![0-9A-Za-z+/.,:-])"
        r"(?>"
        r"(?:\+|00)[1-9]\d{0,3}(?:[ \-/.]?\(0\))?(?:[ \-/.]?\(?\d+\)?){2,8}"
        r"|\(?0\d{1,5}\)?(?:[ \-/.]?\d+){1,6}"
        r"|1[3-9]\d(?:[ -]?\d{4}){2}"
        r"|\(\d{3}\)[ ]?\d{3}[ .-]\d{4}"
        r")"
        r"(?![0-9A-Za-z]|[,.:/-]\d)"
    )
    # Dates written with leading zeros look like trunk-prefixed numbers: "01.03.2024", "03/12/24".
    date_like = re.compile(r"^\d{1,2}([./-])\d{1,2}\1(?:\d{2}|\d{4})$|^\d{4}-\d{2}-\d{2}$")
    return candidate, date_like


@cache
def _phone_cue() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(tel|telefon|phone|fon|handy|mobil|mobile|fax|anruf|ruf|erreichbar|nummer|whatsapp|call|"
        r"电话|手机|联系|号码|微信)"
    )


def _has_cue_before(text: str, start: int, cue: re.Pattern[str], window: int = 40) -> bool:
    """Whether a cue word (``Tel.``, ``E-Mail`` ...) stands shortly before ``start``."""
    return cue.search(text[max(0, start - window) : start]) is not None


def _find_phones(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """Phone numbers that libphonenumber says are valid for one of the language's regions."""
    if sum(map(str.isdigit, text)) < 7:  # map: no Python frame per character
        return []
    import phonenumbers  # lazy: ~20 ms import

    candidate, date_like = _phone_patterns()
    out: list[PiiFinding] = []
    for m in candidate.finditer(text):
        raw = m.group(0)
        if date_like.match(raw):
            continue
        hit = _validate_phone(phonenumbers, text, m.start(), raw, _PHONE_REGIONS[lang])
        if hit is not None:
            out.append(hit)
    return out


def _validate_phone(phonenumbers: object, text: str, start: int, raw: str, regions: Sequence[str]) -> PiiFinding | None:
    """Validate ``raw`` (shortened group by group from the right, at least 6 digits) in ``regions``."""
    pn = phonenumbers  # typed as object: the library ships no type hints
    groups = list(re.finditer(r"\(?\d+\)?", raw))
    for n_groups in range(len(groups), 0, -1):
        cand = raw[: groups[n_groups - 1].end()]
        if sum(ch.isdigit() for ch in cand) < 6:
            break
        for region in regions:
            try:
                number = pn.parse(cand, region)  # type: ignore[attr-defined]
            except Exception:  # phonenumbers.NumberParseException; anything unparsable is no number
                continue
            if pn.is_valid_number(number):  # type: ignore[attr-defined]
                conf = 0.95 if _has_cue_before(text, start, _phone_cue()) else 0.85
                where = pn.region_code_for_number(number) or region  # type: ignore[attr-defined]
                return _make("phone", text, start, start + len(cand), f"phonenumbers:{where}", conf)
    return None
