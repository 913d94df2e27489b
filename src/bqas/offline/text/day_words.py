"""Day words of German (with spoken and dialect forms), English and Chinese, each with one canonical word:
what the voice judge checks a reply's days against and what the RAG grounding reads as weekdays."""

from __future__ import annotations

import re

# Day words with their spoken and dialect forms (DE/AT/CH), each mapped to one canonical word.
_DAY_VARIANTS = {
    "heute": ("heut", "hüt", "hüüt", "hit", "heit"),
    "morgen": ("morgn", "morn", "moarn", "morge"),
    "übermorgen": ("übermorgn", "übermorn", "übermorge"),
    "gestern": ("gestan", "geschter", "gescht"),
    "vorgestern": (),
    "montag": ("mäntig", "mentig"),
    "dienstag": ("zischtig", "ziischtig"),
    "mittwoch": ("mittwuch", "mittwuch"),
    "donnerstag": ("dunschtig", "donnschtig"),
    "freitag": ("friitig", "fritig"),
    "samstag": ("sunnabend", "samschtig", "sonnabend"),
    "sonntag": ("sunntig",),
    "wochenende": (),
    "today": (),
    "tonight": (),
    "tomorrow": (),
    "yesterday": (),
    "monday": (),
    "tuesday": (),
    "wednesday": (),
    "thursday": (),
    "friday": (),
    "saturday": (),
    "sunday": (),
    "weekend": (),
}
_ZH_DAYS = {
    "今天": "今天", "今晚": "今晚", "明天": "明天", "后天": "后天", "昨天": "昨天", "前天": "前天", "周末": "周末",
    **{f"{p}{d}": f"周{d}" for p in ("周", "星期", "礼拜") for d in "一二三四五六日"},
    "星期天": "周日", "礼拜天": "周日",
}  # fmt: skip
DAY_CANON = {v: k for k, vs in _DAY_VARIANTS.items() for v in (k, *vs)}
DAY_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(w) for w in sorted(DAY_CANON, key=len, reverse=True)) + r")s?\b", re.I
)
_ZHDAY_RE = re.compile("|".join(re.escape(w) for w in sorted(_ZH_DAYS, key=len, reverse=True)))


def day_words(text: str) -> list[tuple[str, str]]:
    """(as written, canonical) for the day words of ``text`` ("montags" and "Mäntig" are "montag")."""
    out: list[tuple[str, str]] = []
    for m in DAY_RE.finditer(text):
        key = m.group(0).casefold()
        canon = DAY_CANON.get(key) or DAY_CANON.get(key.removesuffix("s"))
        if canon is not None:
            out.append((m.group(0), canon))
    out += [(m.group(0), _ZH_DAYS[m.group(0)]) for m in _ZHDAY_RE.finditer(text)]
    return out
