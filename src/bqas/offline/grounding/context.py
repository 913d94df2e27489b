"""The facts prepared once for checking claims against them (units, words, stems, numbers, dates, weekdays,
months), cached per process, and the units worth embedding for a set of claims."""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from bqas.offline._textutil import cjk_bigrams, content_stems, split_sentences
from bqas.offline.grounding.dates import DateFact, extract_dates, holiday_words, month_names, weekdays_of
from bqas.offline.grounding.names import _norm_words
from bqas.offline.grounding.numbers import NumberFact, extract_numbers
from bqas.offline.grounding.slots import slot_values

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
    #: Ranges the facts give ("between 1599 and 1601", "12 bis 15 Seiten"), as (low, high).
    ranges: tuple[tuple[float, float], ...] = ()
    #: Holidays the facts name ("Herbstferien", "暑假"), folded.
    holidays: frozenset[str] = frozenset()
    #: Colours, seasons, ordinals and school subjects the facts name, as (class, value).
    slots: frozenset[tuple[str, str]] = frozenset()
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


def _normalise_spacing(text: str) -> str:
    # "7 , 370" / "3 . 5" (tokenised corpora) -> "7,370" / "3.5"; "February 3 , 1984" -> "February 3, 1984"
    text = re.sub(r"(?<=\d) , (?=\d{4}(?!\d))", ", ", text)
    return re.sub(r"(?<=\d) ([.,]) (?=\d)", r"\1", text)


_MAX_YEARS = 12
_RANGE_RE = re.compile(
    r"(?<![\d.,])(\d+(?:[.,]\d+)?)\s*(?:and|und|to|bis|-|–|至|到)\s*(\d+(?:[.,]\d+)?)(?![\d.,]*\d)", re.IGNORECASE
)


def _years(dates: list[DateFact], numbers: list[NumberFact]) -> set[int]:
    years = {d.year for d in dates if d.year is not None}
    return years | {
        int(v)
        for n in numbers
        if n.dim is None and n.mult == 1.0
        for v, d in n.readings[:1]
        if d == 0 and 1000 <= v <= 2100
    }


def _years_apart(years: set[int]) -> list[NumberFact]:
    """The spans between the years the facts name (a list input splits one text into several facts at
    semicolons and lines): "1912 ... 1915" supports "drei Jahre später", "1998 ... 2003" "five years later"."""
    ordered = sorted(years)[:_MAX_YEARS]
    return [NumberFact(f"{b}-{a}", ((float(b - a), 0),)) for a, b in itertools.combinations(ordered, 2)]


def _ranges(text: str) -> list[tuple[float, float]]:
    out = []
    for m in _RANGE_RE.finditer(text):
        lo, hi = (float(g.replace(",", ".")) for g in m.groups())
        if lo < hi:
            out.append((lo, hi))
    return out


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
    ranges: list[tuple[float, float]] = []
    years: set[int] = set()
    for fact in facts:
        fact = _normalise_spacing(fact)
        sents = split_sentences(fact)
        units.extend(sents)
        if len(sents) > 1 and len(fact) <= 600:
            units.append(fact)
        ds, masked = extract_dates(fact)
        dates.extend(ds)
        found = extract_numbers(masked, context=True)
        numbers.extend(found)
        # "1961" in a claim is supported by "13. August 1961" in the facts.
        numbers.extend(NumberFact(str(d.year), ((float(d.year), 0),)) for d in ds if d.year is not None)
        years.update(_years(ds, found))
        ranges.extend(_ranges(masked))
    numbers.extend(_years_apart(years))
    joined = "\n".join(facts)
    norm = _norm_words(joined)
    months = {d.month for d in dates if d.month is not None} | {m for _, m in month_names(joined)}
    return _Context(
        weekdays=frozenset(weekdays_of(joined, ranges=True)),
        ranges=tuple(ranges),
        holidays=frozenset(key for _, key in holiday_words(joined)),
        slots=slot_values(joined),
        months=frozenset(months),
        units=list(dict.fromkeys(units))[:_MAX_CONTEXT_UNITS],
        norm=norm,
        word_set=set(norm.split()),
        stems=set(content_stems(joined)),
        bigrams=set(cjk_bigrams(joined)),
        numbers=numbers,
        dates=dates,
    )
