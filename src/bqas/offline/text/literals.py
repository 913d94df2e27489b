"""Literals that a regular expression cannot match without: a cheap proof that a pattern will not match.

:func:`required_literals` reads a compiled pattern's parse tree (the ``re`` module's own parser) and
returns sets of strings such that every match of the pattern contains a member of each set: for
``\\b(?:ignore|disregard)\\b.{0,40}\\brules\\b`` that is ``{"ignore", "disregard"}`` and ``{"rules"}``.
When a text contains a member of none of one set, the pattern cannot match it, and the regex (which
scans every position with case-insensitive alternations) need not run. Patterns or parts the analysis
does not understand (back-references, wide character classes) only make the sets fewer, never wrong.

Case: literals of a pattern with ``re.IGNORECASE`` anywhere in it are compared on :func:`fold_case`'s
copy of both sides, which folds exactly as ``re`` compares characters case-insensitively (its simple
lower-case mapping plus its table of extra equivalences such as ``ſ``/``s`` and ``K``/``k``; tested
against ``re`` on every code point). Without the interpreter's tables (another Python) folded patterns
get no literals, so the regex always runs.
"""

from __future__ import annotations

import importlib
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

__all__ = ["FOLDING", "LiteralScan", "Prefilter", "Requirement", "fold_case", "required_literals"]

# Sets larger than this are given up: a class like [a-z] or an alternation of 100 words says little and
# makes the products below explode.
_MAX_STRINGS = 64
_MAX_CLASS = 16
# Requirements kept per pattern, most selective first: each costs a membership test per text.
_KEEP = 4

try:  # the interpreter's own parser and case tables (private, stable since 3.11; tests pin them against re)
    _parser: Any = importlib.import_module("re._parser")
    _constants: Any = importlib.import_module("re._constants")
    _tolower: Any = importlib.import_module("_sre").unicode_tolower
    _extra: dict[int, tuple[int, ...]] = dict(importlib.import_module("re._casefix")._EXTRA_CASES)
    FOLDING = True
except (ImportError, AttributeError):  # pragma: no cover - another interpreter: no literals at all
    FOLDING = False


class _FoldTable(dict[int, int]):
    """Code point -> the representative of its case class under ``re.IGNORECASE`` (filled on demand, up to
    ``_FOLD_MAX`` entries, so that text made of every Unicode character cannot grow it without limit)."""

    def __missing__(self, code: int) -> int:
        lower = int(_tolower(code))
        value = min((lower, *_extra.get(lower, ())))
        if len(self) < _FOLD_MAX:
            self[code] = value
        return value


_FOLD_MAX = 65536


_FOLD = _FoldTable()
# Characters for which str.lower() gives exactly their fold (one character, the same), collected as texts
# arrive: a text made only of them folds with lower() in C instead of a translate() look-up per character.
# U+03A3 (capital sigma) never counts: lower() reads its context (final sigma). Bounded, so that text
# made of every Unicode character cannot grow it without limit.
_LOWER_FOLDS: set[str] = set()
_LOWER_FOLDS_MAX = 65536


def _lower_folds(ch: str) -> bool:
    return ch != "\u03a3" and ch.lower() == chr(_FOLD[ord(ch)])


@lru_cache(maxsize=16)
def fold_case(text: str) -> str:
    """``text`` with every character replaced by the representative of the characters ``re.IGNORECASE``
    treats as equal to it (one character for one: offsets stay). ASCII text is just lower-cased.
    Remembered for a few texts: the PII families fold the same answer one after the other."""
    if text.isascii():
        return text.lower()  # ASCII's re case classes are a-z/A-Z (the extra equivalents lie outside ASCII)
    chars = set(text)
    if not chars <= _LOWER_FOLDS:
        for ch in chars - _LOWER_FOLDS:
            if not _lower_folds(ch):
                return text.translate(_FOLD)
            if len(_LOWER_FOLDS) < _LOWER_FOLDS_MAX:
                _LOWER_FOLDS.add(ch)
    return text.lower()


@dataclass(frozen=True)
class Requirement:
    """Sets of strings each of which has a member in every match; ``folded``: compare on
    :func:`fold_case` copies (the pattern ignores case somewhere)."""

    sets: tuple[frozenset[str], ...]
    folded: bool

    def allows(self, text: str) -> bool:
        """Whether ``text`` (already :func:`fold_case`-d when ``folded``) could hold a match."""
        return all(any(s in text for s in options) for options in self.sets)

    def allows_found(self, found: set[str]) -> bool:
        """:meth:`allows`, given the set of this requirement's strings that occur in the text."""
        return all(not options.isdisjoint(found) for options in self.sets)

    def strings(self) -> set[str]:
        """Every string of every set."""
        return set().union(*self.sets)

    @cached_property
    def _scan(self) -> LiteralScan | None:
        strings = self.strings()
        return LiteralScan(strings) if len(strings) > 8 else None  # a few `in` tests beat building a set

    def allows_text(self, text: str) -> bool:
        """:meth:`allows`, with one Aho-Corasick pass when the sets hold many strings."""
        scan = self._scan
        return self.allows(text) if scan is None else self.allows_found(scan.found(text))


_second = operator.itemgetter(1)


class LiteralScan:
    """Which of many strings occur in a text, in one Aho-Corasick pass (``pyahocorasick``): the strings of
    all the requirements of a rule set, tested together instead of one ``in`` per string and rule."""

    def __init__(self, strings: Iterable[str]) -> None:
        import ahocorasick  # lazy: only the safety rules need it

        self._automaton = ahocorasick.Automaton()
        for s in sorted(set(strings)):
            self._automaton.add_word(s, s)
        self._empty = len(self._automaton) == 0
        if not self._empty:
            self._automaton.make_automaton()

    def found(self, text: str) -> set[str]:
        """The strings that occur in ``text`` (overlapping occurrences included)."""
        if self._empty or not text:
            return set()
        return set(map(_second, self._automaton.iter(text)))

    def occurrences(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every occurrence in ``text`` (end exclusive), ordered by end."""
        if self._empty or not text:
            return []
        return [(end + 1 - len(s), end + 1) for end, s in self._automaton.iter(text)]


class Prefilter:
    """Which of a list of patterns could match a text: one :class:`LiteralScan` per form of the text the
    patterns read (the rule view, the compact view, folded or not) instead of a test per pattern."""

    def __init__(self, needs: Sequence[tuple[str, Requirement | None]]) -> None:
        """``needs[i]``: the form of the text pattern ``i`` reads and its requirement (None: always run)."""
        self._always = [i for i, (_, need) in enumerate(needs) if need is None]
        # Pattern i may match once a found string has set each of the bits of its requirement's sets.
        self._full = [0 if need is None else (1 << len(need.sets)) - 1 for _, need in needs]
        index: dict[tuple[str, bool], dict[str, list[tuple[int, int]]]] = {}
        for i, (form, need) in enumerate(needs):
            if need is None:
                continue
            by_string = index.setdefault((form, need.folded), {})
            for k, options in enumerate(need.sets):
                for s in options:
                    by_string.setdefault(s, []).append((i, 1 << k))
        self._groups = [
            (form, folded, LiteralScan(by), {s: tuple(v) for s, v in by.items()})
            for (form, folded), by in index.items()
        ]

    def candidates(self, text_for: Callable[[str], str]) -> list[int]:
        """Positions (ascending) of the patterns that could match; ``text_for(form)`` gives the text."""
        out = list(self._always)
        full = self._full
        for form, folded, scan, by_string in self._groups:
            text = text_for(form)
            found = scan.found(fold_case(text) if folded else text)
            if not found:
                continue
            bits: dict[int, int] = {}
            for s in found:
                for i, bit in by_string[s]:
                    bits[i] = bits.get(i, 0) | bit
            out += [i for i, got in bits.items() if got == full[i]]
        return sorted(out)


@dataclass(frozen=True)
class _Info:
    exact: frozenset[str] | None  # all the strings the node matches, when few and known
    needs: tuple[frozenset[str], ...]  # sets each of which has a member inside every match


_NOTHING = _Info(None, ())
_EMPTY = _Info(frozenset({""}), ())


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str] | None:
    if len(left) * len(right) > _MAX_STRINGS:
        return None
    return frozenset(a + b for a, b in itertools.product(left, right))


def _minimal(strings: Iterable[str]) -> frozenset[str] | None:
    """The strings without those that contain another (finding the shorter one is implied); None when
    the empty string is among them (then nothing is required)."""
    ordered = sorted(set(strings), key=len)
    if not ordered or ordered[0] == "":
        return None
    kept: list[str] = []
    for s in ordered:
        if not any(k in s for k in kept):
            kept.append(s)
    return frozenset(kept)


def _score(options: frozenset[str]) -> tuple[int, int]:
    # Longer shortest member, then fewer members: rarer in ordinary text, cheaper to test.
    return (min(map(len, options)), -len(options))


class _Walker:
    def __init__(self, fold: bool) -> None:
        self.fold = fold

    def char(self, code: int) -> str:
        return chr(_FOLD[code]) if self.fold else chr(code)

    def seq(self, items: Any) -> _Info:
        exact: frozenset[str] | None = frozenset({""})
        run: frozenset[str] = frozenset({""})
        needs: list[frozenset[str]] = []

        def close(strings: frozenset[str]) -> None:
            minimal = _minimal(strings)
            if minimal is not None:
                needs.append(minimal)

        for op, av in items:
            info = self.node(op, av)
            needs.extend(info.needs)
            if info.exact is None:
                exact = None
                close(run)
                run = frozenset({""})
                continue
            exact = _product(exact, info.exact) if exact is not None else None
            joined = _product(run, info.exact)
            if joined is None:  # too many combinations: what came so far is one requirement
                close(run)
                run = info.exact
            else:
                run = joined
        close(run)
        return _Info(exact, tuple(needs))

    def best(self, info: _Info) -> frozenset[str] | None:
        candidates = list(info.needs)
        if info.exact is not None and (minimal := _minimal(info.exact)) is not None:
            candidates.append(minimal)
        return max(candidates, key=_score) if candidates else None

    def node(self, op: Any, av: Any) -> _Info:
        c = _constants
        if op is c.LITERAL:
            return _Info(frozenset({self.char(av)}), ())
        if op is c.IN:
            return self.char_class(av)
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            return _EMPTY  # zero width: nothing of the match comes from a look-around or an anchor
        if op is c.SUBPATTERN:
            return self.seq(av[3])
        if op is c.ATOMIC_GROUP:
            return self.seq(av)
        if op is c.BRANCH:
            return self.branch(av[1])
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            return self.repeat(*av)
        return _NOTHING  # any character, negated or wide classes, back-references, conditionals

    def char_class(self, members: Any) -> _Info:
        c = _constants
        chars: set[str] = set()
        for op, av in members:
            if op is c.LITERAL:
                chars.add(self.char(av))
            elif op is c.RANGE and av[1] - av[0] < _MAX_CLASS:
                chars.update(self.char(code) for code in range(av[0], av[1] + 1))
            else:
                return _NOTHING  # NEGATE, CATEGORY (\d, \s, \w), wide ranges
        return _Info(frozenset(chars), ()) if 0 < len(chars) <= _MAX_CLASS else _NOTHING

    def branch(self, alternatives: Any) -> _Info:
        infos = [self.seq(alt) for alt in alternatives]
        exact: frozenset[str] | None = None
        if all(i.exact is not None for i in infos):
            union = frozenset().union(*(i.exact for i in infos if i.exact is not None))
            exact = union if len(union) <= _MAX_STRINGS else None
        bests = [self.best(i) for i in infos]
        if any(b is None for b in bests):
            return _Info(exact, ())
        need = _minimal(s for b in bests if b is not None for s in b)
        return _Info(exact, (need,) if need is not None else ())

    def repeat(self, low: int, high: int, item: Any) -> _Info:
        info = self.seq(item)
        if low == 0:
            if high == 1 and info.exact is not None:
                return _Info(info.exact | {""}, ())
            return _NOTHING
        needs = list(info.needs)
        if info.exact is not None and (minimal := _minimal(info.exact)) is not None:
            needs.append(minimal)
        exact: frozenset[str] | None = None
        if low == high and info.exact is not None:
            exact = frozenset({""})
            for _ in range(low):
                exact = _product(exact, info.exact) if exact is not None else None
        return _Info(exact, tuple(needs))


def _ignores_case(tree: Any, flags: int) -> bool:
    if flags & re.IGNORECASE:
        return True
    for op, av in tree:
        if op is _constants.SUBPATTERN and (av[1] & re.IGNORECASE or _ignores_case(av[3], 0)):
            return True
        if op is _constants.BRANCH and any(_ignores_case(alt, 0) for alt in av[1]):
            return True
        repeats = (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT)
        if op in repeats and _ignores_case(av[2], 0):
            return True
        if op in (_constants.ASSERT, _constants.ASSERT_NOT) and _ignores_case(av[1], 0):
            return True
        if op is _constants.ATOMIC_GROUP and _ignores_case(av, 0):
            return True
    return False


def required_literals(pattern: re.Pattern[str]) -> Requirement | None:
    """What every match of ``pattern`` contains (see the module docstring), or None when nothing was
    found (then the pattern must simply run)."""
    if not FOLDING:
        return None
    tree = _parser.parse(pattern.pattern, pattern.flags)
    folded = _ignores_case(tree, pattern.flags)
    walker = _Walker(folded)
    info = walker.seq(tree)
    candidates = set(info.needs)
    if info.exact is not None and (minimal := _minimal(info.exact)) is not None:
        candidates.add(minimal)
    ranked = sorted(candidates, key=lambda s: (_score(s), sorted(s)), reverse=True)[:_KEEP]
    return Requirement(tuple(ranked), folded) if ranked else None
