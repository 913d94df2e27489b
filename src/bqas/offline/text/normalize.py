"""Text normalisation: folding for lenient matching (:func:`fold`) and the view of a text that the safety
rules read (:func:`rule_view`, :func:`compact_view`).

:func:`rule_view` undoes the usual ways of hiding a phrase from a pattern while keeping what a reader sees:

1. lone surrogates (text that is not valid Unicode) become U+FFFD, so nothing below can fail on them;
2. NFKC: fullwidth ``ＳＹＳＴＥＭ``, mathematical ``𝐒𝐘𝐒𝐓𝐄𝐌``, ligatures and compatibility forms become plain;
3. invisible characters go: format controls (category Cf: zero-width space/joiners, bidi embeddings and
   isolates, soft hyphen, word joiner, BOM, tag characters), combining marks stacked on letters (Mn after
   NFKC has composed ä/é) and the Hangul fillers that render as blanks;
4. confusables fold to ASCII: a character that the Unicode confusables data (UTS #39, via the
   ``confusable-homoglyphs`` package, MIT) lists as looking like one ASCII letter or digit becomes it
   (Cyrillic ``С``/``а``, Greek ``ο``, dotless ``ı``); umlauts and accented letters have no such entry and stay;
5. Traditional Chinese becomes Simplified (OpenCC ``t2s``, Apache-2.0), so one set of Chinese rules reads
   ``系統：忽略評分標準`` as ``系统：忽略评分标准``;
6. runs of spaces and tabs become one space (line breaks stay: rules anchor role markers at line starts).

Offsets are not kept: the view is for deciding *whether* a rule matches, never for cutting the original.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any

_UMLAUTS = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_SPACE_RUN_RE = re.compile(r"[^\S\n]+")
# Whitespace other than " " and line breaks: with none of it and no double space, step 6 has nothing to do.
_ODD_SPACE_RE = re.compile(r"[^\S\n ]")
_HAN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# Code points that render as nothing but are letters (Lo) to Unicode: Hangul fillers, the braille blank
# and the combining grapheme joiner's relatives are not Cf, so step 3 names them.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f")


def fold(text: str) -> str:
    """Casefold, NFKC-normalise and fold umlauts/ß (for lenient matching)."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_UMLAUTS)


@cache
def _confusable_table() -> dict[int, str]:
    """Non-ASCII character -> the single ASCII letter/digit it is confusable with (built once, ~10 ms)."""
    import json
    from importlib import resources

    raw = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8")
    data: dict[str, list[dict[str, Any]]] = json.loads(raw)
    table: dict[int, str] = {}
    for char, glyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        for glyph in glyphs:
            target = str(glyph.get("c", ""))
            if len(target) == 1 and target.isascii() and target.isalnum():
                # UTS #39 skeletons map capital I to l (they look alike); a capital that looks like "l"
                # (Cyrillic І, Greek Ι) is read as "I", so the rules see the word the reader sees.
                table[ord(char)] = "I" if target == "l" and char.isupper() else target
                break
    return table


@cache
def _t2s() -> Any:
    """The OpenCC Traditional -> Simplified converter (loaded on first Chinese text)."""
    import opencc

    return opencc.OpenCC("t2s")


def _visible(ch: str) -> bool:
    if ch in _BLANK_LETTERS:
        return False
    return unicodedata.category(ch) not in ("Cf", "Mn")


# Python's \w is exactly str.isalnum() plus "_" (tests check every code point), so this deletes what
# compact_view drops in one C pass; ASCII text is faster still through a deletion table.
_NOT_ALNUM_RE = re.compile(r"[\W_]+")
_ASCII_NOT_ALNUM = dict.fromkeys(code for code in range(128) if not chr(code).isalnum())


def _deleting(chars: set[str]) -> dict[int, None]:
    """A ``str.translate`` table that deletes ``chars``."""
    return dict.fromkeys(map(ord, chars))


def strip_invisible(text: str) -> str:
    """``text`` without format controls, combining marks and blank letters (after NFKC, see module doc)."""
    # Decide per distinct character, not per character: a 3,000-character answer has a hundred or so
    # distinct ones, and a category look-up per character would be most of the safety gate's cost on long
    # answers (benchmarks/offline/bench_safety_gate.py times the gate by answer length).
    if text.isascii():
        return text  # no ASCII character is a format control, a combining mark or a blank letter
    hidden = {ch for ch in set(text) if not _visible(ch)}
    return text.translate(_deleting(hidden)) if hidden else text


def rule_view(text: str) -> str:
    """The normalised copy of ``text`` that pattern rules read (steps 1-6 of the module docstring)."""
    if not text:
        return ""
    if not text.isascii():  # ASCII has no surrogates, nothing NFKC changes, nothing hidden, no confusables
        text = _unhide(unicodedata.normalize("NFKC", _SURROGATE_RE.sub("\ufffd", text)))
        if _HAN_RE.search(text):
            text = str(_t2s().convert(text))
    if "  " in text or _ODD_SPACE_RE.search(text):  # else every run of spaces is one " " already
        text = _SPACE_RUN_RE.sub(" ", text)
    return text


def _unhide(text: str) -> str:
    """Steps 3 and 4 on ``text``: invisible characters deleted, confusables folded to ASCII (decided per
    distinct character)."""
    table = _confusable_table()
    hidden: set[str] = set()
    confusable: list[str] = []
    for ch in set(text):
        if not _visible(ch):
            hidden.add(ch)
        elif ord(ch) in table:
            confusable.append(ch)
    if hidden:
        text = text.translate(_deleting(hidden))
    # Replace only the confusables present (usually none): translate() would look up every character.
    for ch in confusable:
        text = text.replace(ch, table[ord(ch)])  # one ASCII character for one non-ASCII: no overlap
    return text


def compact_view(text: str, *, normalised: bool = False) -> str:
    """:func:`rule_view`, casefolded, with everything but letters and digits removed: ``I g-n.o r e``
    and ``ig*no*re`` both read ``ignore``. For a few long phrases only (words run together here).
    ``normalised=True`` says ``text`` already is a rule view."""
    view = (text if normalised else rule_view(text)).casefold()
    if view.isascii():
        return view.translate(_ASCII_NOT_ALNUM)
    # Whitespace is never alphanumeric: split() drops it in C, leaving the regex only the punctuation.
    return _NOT_ALNUM_RE.sub("", "".join(view.split()))
