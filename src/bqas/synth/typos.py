"""Realistic typing errors for German commands typed on a QWERTZ keyboard.

Kinds: ``neighbour`` (a letter replaced by a neighbouring key), ``drop`` (a letter left out), ``double``
(a letter typed twice), ``swap`` (two adjacent letters exchanged) and ``umlaut`` (ä/ö/ü/ß written as
ae/oe/ue/ss, as on a keyboard without them). Neighbours follow the staggered QWERTZ rows: a key's
neighbours are its left/right keys, the two keys above it (same column and one to the right) and the
two below (one to the left and the same column).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

_ROWS = ("1234567890ß", "qwertzuiopü", "asdfghjklöä", "yxcvbnm")
_FOLD = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ß": "ss"}
TYPO_KINDS: tuple[str, ...] = ("neighbour", "drop", "double", "swap", "umlaut")


def _neighbour_map() -> dict[str, str]:
    pos = {ch: (r, c) for r, row in enumerate(_ROWS) for c, ch in enumerate(row)}
    out: dict[str, str] = {}
    for ch, (r, c) in pos.items():
        cands = [(r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c)]
        near = [_ROWS[rr][cc] for rr, cc in cands if 0 <= rr < len(_ROWS) and 0 <= cc < len(_ROWS[rr])]
        out[ch] = "".join(n for n in near if n.isalpha())
    return out


NEIGHBOURS: dict[str, str] = _neighbour_map()


def fold_umlauts(text: str) -> str:
    """Write ä/ö/ü/ß as ae/oe/ue/ss (case kept)."""
    return "".join(_FOLD.get(ch, ch) for ch in text)


def neighbour_substitution(word: str, rng: random.Random) -> str:
    """Replace one letter of ``word`` by a neighbouring QWERTZ key (case kept); unchanged if none fits."""
    positions = [i for i, ch in enumerate(word) if ch.isalpha() and NEIGHBOURS.get(ch.lower())]
    if not positions:
        return word
    i = rng.choice(positions)
    new = rng.choice(NEIGHBOURS[word[i].lower()])
    return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1 :]


def drop_letter(word: str, rng: random.Random) -> str:
    """Leave out one letter (never the first, which people rarely miss); words under 3 letters stay."""
    if len(word) < 3:
        return word
    i = rng.randrange(1, len(word))
    return word[:i] + word[i + 1 :]


def double_letter(word: str, rng: random.Random) -> str:
    """Type one letter twice."""
    if not word:
        return word
    i = rng.randrange(len(word))
    return word[: i + 1] + word[i] + word[i + 1 :]


def swap_letters(word: str, rng: random.Random) -> str:
    """Exchange two adjacent letters (after the first); words under 4 letters stay."""
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


_WORD = re.compile(r"[^\W\d_]{3,}")
_WORD_KINDS = {
    "neighbour": neighbour_substitution,
    "drop": drop_letter,
    "double": double_letter,
    "swap": swap_letters,
}


def _protected_spans(text: str, protected: Sequence[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for value in protected:
        if value:
            spans.extend((m.start(), m.end()) for m in re.finditer(re.escape(value), text))
    return spans


def add_typos(
    text: str, rng: random.Random, *, count: int = 1, protected: Sequence[str] = (), kinds: Sequence[str] = TYPO_KINDS
) -> tuple[str, list[str]]:
    """Put ``count`` typing errors into ``text``; words inside ``protected`` values are left alone.

    Returns the new text and the kinds applied. ``umlaut`` folds the whole text (a keyboard without
    umlauts affects every word), so callers fold protected values the same way.
    """
    applied: list[str] = []
    for _ in range(count):
        usable = [k for k in kinds if k != "umlaut" or any(ch in _FOLD for ch in text)]
        if not usable:
            break
        kind = rng.choice(usable)
        if kind == "umlaut":
            text = fold_umlauts(text)
            applied.append(kind)
            continue
        spans = _protected_spans(text, protected)
        words = [m for m in _WORD.finditer(text) if not any(s < m.end() and m.start() < e for s, e in spans)]
        if not words:
            continue
        m = rng.choice(words)
        changed = _WORD_KINDS[kind](m.group(), rng)
        if changed != m.group():
            text = text[: m.start()] + changed + text[m.end() :]
            applied.append(kind)
    return text, applied
