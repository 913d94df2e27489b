"""Dates in a claim and in the facts (written dates, weekdays and months named alone) and whether a
claim's date is one of the facts'."""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from bqas.offline.grounding.numbers import _zh_number
from bqas.offline.text.day_words import DAY_CANON, DAY_RE, day_words
from bqas.offline.text.literals import Prefilter, Requirement, required_literals


@dataclass(frozen=True)
class DateFact:
    """A date (any of year / month / day may be missing)."""

    text: str
    year: int | None
    month: int | None
    day: int | None


_MONTHS: dict[str, int] = {}
for _i, _names in enumerate(
    (
        "januar jänner january jan",
        "februar february feb",
        "märz maerz march mar mär",
        "april apr",
        "mai may",
        "juni june jun",
        "juli july jul",
        "august aug",
        "september sept sep",
        "oktober october okt oct",
        "november nov",
        "dezember december dez dec",
    ),
    start=1,
):
    for _n in _names.split():
        _MONTHS[_n] = _i
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"), "ymd"),
    (re.compile(r"(?<![\d.])(\d{1,2})\.\s?(\d{1,2})\.\s?(\d{4}|\d{2})(?!\d)"), "dmy"),
    (re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(\d{4})(?!\d)"), "mdy"),
    (re.compile(r"(\d{4})\s?年\s?(\d{1,2})\s?月\s?(\d{1,2})\s?[日号]"), "ymd"),
    (re.compile(r"(\d{4})\s?年\s?(\d{1,2})\s?月"), "ym"),
    (re.compile(r"(?<!\d)(\d{1,2})\s?月\s?(\d{1,2})\s?[日号]"), "md"),
    (
        re.compile(
            r"(?<![\d零〇一二两三四五六七八九十])([一二三四五六七八九十]{1,2})月([一二三四五六七八九十]{1,3})[日号]"
        ),
        "zh_md",
    ),
    (
        re.compile(
            rf"(?<!\d)(\d{{1,2}})(?:\.|st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_ALT})\.?(?:,?\s+(\d{{4}}))?(?![a-zäöü])", re.I
        ),
        "dMy",
    ),
    (re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.I), "Mdy"),
    (re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{4}})(?!\d)", re.I), "My"),
]


@functools.cache
def _date_prefilter() -> Prefilter:
    """Which date patterns could match a text, from the literals every match of each must contain (a
    separator, 年/月, a month name): the case-insensitive month-name patterns try every position, and most
    texts hold no month name."""
    needs: list[tuple[str, Requirement | None]] = []
    for pattern, _ in _DATE_PATTERNS:
        need = required_literals(pattern)
        if need is not None and any(" " in s for s in need.strings()):
            # A match's span is blanked with spaces before the next pattern runs: a literal holding a space
            # could appear only then, so such a pattern always runs.
            need = None
        needs.append(("text", need))
    return Prefilter(needs)


def extract_dates(text: str, *, prefilter: bool = True) -> tuple[list[DateFact], str]:
    """Dates in ``text`` and the text with the date spans blanked out (for number extraction).

    ``prefilter=False`` runs every pattern (the reference the tests hold the pre-filtered run equal to)."""
    dates: list[DateFact] = []
    chars = list(text)
    patterns = _DATE_PATTERNS
    if prefilter:
        # Blanking only writes spaces over matched spans, so a pattern ruled out on the original text
        # stays ruled out on the blanked one.
        patterns = [_DATE_PATTERNS[i] for i in _date_prefilter().candidates(lambda _form: text)]
    for pattern, kind in patterns:
        for m in pattern.finditer("".join(chars)):
            g = m.groups()
            y: int | None
            mo: int | None
            d: int | None
            try:
                if kind == "ymd":
                    y, mo, d = int(g[0]), int(g[1]), int(g[2])
                elif kind == "dmy":
                    y = int(g[2]) + (2000 if len(g[2]) == 2 else 0)
                    mo, d = int(g[1]), int(g[0])
                elif kind == "mdy":
                    mo, d, y = int(g[0]), int(g[1]), int(g[2])
                elif kind == "ym":
                    y, mo, d = int(g[0]), int(g[1]), None
                elif kind == "md":
                    y, mo, d = None, int(g[0]), int(g[1])
                elif kind == "zh_md":
                    zh_month, zh_day = _zh_number(g[0]), _zh_number(g[1])
                    if zh_month is None or zh_day is None:
                        continue
                    y, mo, d = None, int(zh_month), int(zh_day)
                elif kind == "dMy":
                    d, mo, y = int(g[0]), _MONTHS[g[1].casefold()], int(g[2]) if g[2] else None
                elif kind == "Mdy":
                    mo, d, y = _MONTHS[g[0].casefold()], int(g[1]), int(g[2])
                else:  # My
                    mo, y, d = _MONTHS[g[0].casefold()], int(g[1]), None
            except (KeyError, ValueError):
                continue
            if (mo is not None and not 1 <= mo <= 12) or (d is not None and not 1 <= d <= 31):
                continue
            dates.append(DateFact(m.group(0), y, mo, d))
            for i in range(m.start(), m.end()):
                chars[i] = " "
    return dates, "".join(chars)


def date_supported(claim: DateFact, context: list[DateFact]) -> bool:
    """Whether a context date has every component of ``claim`` with the same value."""
    for other in context:
        ok = True
        for a, b in ((claim.year, other.year), (claim.month, other.month), (claim.day, other.day)):
            if a is not None and a != b:
                ok = False
                break
        if ok:
            return True
    return False


_WEEKDAYS = {
    **dict.fromkeys(("montag", "monday", "周一"), 0),
    **dict.fromkeys(("dienstag", "tuesday", "周二"), 1),
    **dict.fromkeys(("mittwoch", "wednesday", "周三"), 2),
    **dict.fromkeys(("donnerstag", "thursday", "周四"), 3),
    **dict.fromkeys(("freitag", "friday", "周五"), 4),
    **dict.fromkeys(("samstag", "saturday", "周六"), 5),
    **dict.fromkeys(("sonntag", "sunday", "周日"), 6),
}
_DAY_RANGE_RE = re.compile(r"\s*(?:bis|to|through|until|till|-|–|至|到)\s*$", re.I)
# Full month names only, capitalised as written in German and English; not "May" (a verb that starts
# sentences), nor abbreviations ("Mar" is a name).
_MONTH_WORD_RE = re.compile(
    r"(?<![\w-])(Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember"
    r"|January|February|March|June|July)(?![\w-])"
)
# A German month opening a compound ("am letzten Januarfreitag", "Märzwoche"); not Mai/Juni/Juli/August,
# which open other words ("Maisfeld", "Augustiner").
_MONTH_COMPOUND_RE = re.compile(
    r"(?<![\w-])(Januar|Februar|März|April|September|Oktober|November|Dezember)(?=[a-zäöüß]{3,})"
)
# School holidays are dates too ("bis zu den Herbstferien"); the key is what the facts must name.
_HOLIDAY_RE = re.compile(
    r"(?<![\w-])(?:(?P<de>Herbst|Weihnachts|Oster|Sommer|Winter|Pfingst|Faschings|Fastnachts|Fasnachts|Halbjahres)ferien"
    r"|(?P<en>Christmas|Easter|summer|autumn|fall|winter|spring|half-term|Thanksgiving)\s+(?:holidays?|break|vacation))"
    r"(?![\w-])|(?P<zh>寒假|暑假|春假|国庆|春节|五一假期|劳动节|中秋)",
    re.IGNORECASE,
)
_ZH_MONTH_RE = re.compile(
    r"(?<![\d年零〇一二两三四五六七八九十])(\d{1,2}|十[一二]?|[一二三四五六七八九])月(?!\s*\d|份?[0-9])"
)


def weekdays_written(text: str) -> list[tuple[str, int]]:
    """(as written, 0-6) for the weekdays ``text`` names ("dienstags", "Tuesday", "星期二")."""
    return [(w, _WEEKDAYS[c]) for w, c in day_words(text) if c in _WEEKDAYS]


def weekdays_of(text: str, *, ranges: bool = False) -> set[int]:
    """The weekdays ``text`` names; with ``ranges``, "montags bis donnerstags" names the days between too."""

    days = {d for _, d in weekdays_written(text)}
    if ranges:
        found = [(m, _WEEKDAYS.get(fold_day(m.group(0)))) for m in DAY_RE.finditer(text)]
        for (a, da), (b, db) in itertools.pairwise(found):
            if da is not None and db is not None and _DAY_RANGE_RE.match(text[a.end() : b.start()]):
                days.update(range(da, db + 1) if da <= db else (*range(da, 7), *range(db + 1)))
    return days


def fold_day(word: str) -> str:
    """A day word as the specifics module canonicalises it ("Montags" -> "montag")."""
    key = word.casefold()
    return DAY_CANON.get(key) or DAY_CANON.get(key.removesuffix("s")) or key


def month_names(text: str) -> list[tuple[str, int]]:
    """(as written, 1-12) for the months ``text`` names without a full date ("Mitte April", "三月")."""
    out = [(m.group(1), _MONTHS[m.group(1).casefold()]) for m in _MONTH_WORD_RE.finditer(text)]
    out.extend((m.group(1), _MONTHS[m.group(1).casefold()]) for m in _MONTH_COMPOUND_RE.finditer(text))
    for m in _ZH_MONTH_RE.finditer(text):
        raw = m.group(1)
        value = int(raw) if raw.isdigit() else _zh_number(raw)
        if value is not None and 1 <= value <= 12:
            out.append((m.group(0), int(value)))
    return out


def holiday_words(text: str) -> list[tuple[str, str]]:
    """(as written, key) for the holidays ``text`` names ("Herbstferien" -> "herbst", "fall break" ->
    "autumn", "暑假")."""
    out = []
    for m in _HOLIDAY_RE.finditer(text):
        key = (m.group("de") or m.group("en") or m.group("zh")).casefold()
        out.append((m.group(0), "autumn" if key == "fall" else key))
    return out
