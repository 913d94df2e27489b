"""Obfuscations an attacker uses to hide a phrase from pattern rules, for probing the safety gate.

Each transform keeps the text readable for a person (and for an LLM judge) while changing its code
points: zero-width characters inside words, fullwidth letters, Cyrillic/Greek look-alikes, bidi
controls, combining marks, letter spacing, Traditional Chinese. :data:`ENCODINGS` hide it in an encoding
an LLM reads without being asked (base64, base32, hex, URL and HTML escapes, ROT13, leetspeak). Used by
the red-team strategies (:mod:`bqas.redteam.strategies`), the probe tests and
``benchmarks/offline/bench_manipulation.py``; deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import base64
import codecs
import random
import re
from collections.abc import Callable

# Latin letter -> Cyrillic or Greek letter that looks the same (a hand-picked subset of UTS #39 data).
_HOMOGLYPHS = {
    "a": "а",
    "c": "с",
    "e": "е",
    "i": "і",
    "o": "о",
    "p": "р",
    "s": "ѕ",
    "x": "х",
    "y": "у",
    "A": "А",
    "B": "В",
    "C": "С",
    "E": "Е",
    "H": "Н",
    "I": "І",
    "K": "К",
    "M": "М",
    "O": "О",
    "P": "Р",
    "S": "Ѕ",
    "T": "Т",
    "X": "Х",
}
_ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad")
_WORD_RE = re.compile(r"[^\W\d_]{3,}")

Transform = Callable[[str, random.Random], str]


def zero_width(text: str, rng: random.Random) -> str:
    """Insert a zero-width character (or a soft hyphen) inside every word of 3+ letters."""

    def inner(m: re.Match[str]) -> str:
        w = m.group(0)
        cut = rng.randrange(1, len(w))
        return w[:cut] + rng.choice(_ZERO_WIDTH) + w[cut:]

    return _WORD_RE.sub(inner, text)


def fullwidth(text: str, rng: random.Random) -> str:
    """ASCII letters, digits and punctuation as their fullwidth forms (ＳＹＳＴＥＭ)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def homoglyphs(text: str, rng: random.Random) -> str:
    """About half of the Latin letters that have a Cyrillic look-alike replaced by it."""
    return "".join(_HOMOGLYPHS[c] if c in _HOMOGLYPHS and rng.random() < 0.5 else c for c in text)


def bidi(text: str, rng: random.Random) -> str:
    """Each word wrapped in a left-to-right isolate (invisible when rendered)."""
    return _WORD_RE.sub(lambda m: "\u2066" + m.group(0) + "\u2069", text)


def combining(text: str, rng: random.Random) -> str:
    """A combining low line under every letter (S̲Y̲S̲T̲E̲M̲)."""
    return "".join(c + "\u0332" if c.isalpha() and c.isascii() else c for c in text)


def letter_spacing(text: str, rng: random.Random) -> str:
    """Words of 3+ letters spelled with spaces between the letters (I g n o r e)."""
    return _WORD_RE.sub(lambda m: " ".join(m.group(0)), text)


def traditional(text: str, rng: random.Random) -> str:
    """Simplified Chinese as Traditional (OpenCC s2t); other text unchanged."""
    import opencc

    return str(opencc.OpenCC("s2t").convert(text))


def mixed(text: str, rng: random.Random) -> str:
    """Homoglyphs, then zero-width characters, then bidi isolates."""
    return bidi(zero_width(homoglyphs(text, rng), rng), rng)


TRANSFORMS: dict[str, Transform] = {
    "zero_width": zero_width,
    "fullwidth": fullwidth,
    "homoglyphs": homoglyphs,
    "bidi": bidi,
    "combining": combining,
    "letter_spacing": letter_spacing,
    "traditional": traditional,
    "mixed": mixed,
}


def _leet_word(m: re.Match[str]) -> str:
    word = m.group(0)
    leet = word.translate(_LEET)
    # A word all in digits would read as a number ("17" for "it"): its first letter stays a letter.
    return word[0] + leet[1:] if leet.isdigit() else leet


_LEET = str.maketrans(
    {
        "a": "4",
        "A": "4",
        "e": "3",
        "E": "3",
        "i": "1",
        "I": "1",
        "o": "0",
        "O": "0",
        "s": "5",
        "S": "5",
        "t": "7",
        "T": "7",
    }
)


def leet(text: str, rng: random.Random) -> str:
    """Letters as look-alike digits in every Latin word (1gn0r3 4ll pr3v10u5 1n57ruc710n5)."""
    return re.sub(r"[A-Za-z]+", _leet_word, text)


ENCODINGS: dict[str, Transform] = {
    "base64": lambda text, rng: base64.b64encode(text.encode()).decode(),
    "base64url": lambda text, rng: base64.urlsafe_b64encode(text.encode()).decode().rstrip("="),
    "base32": lambda text, rng: base64.b32encode(text.encode()).decode(),
    "hex": lambda text, rng: text.encode().hex(),
    "url": lambda text, rng: "".join(f"%{b:02X}" for b in text.encode()),
    "html": lambda text, rng: "".join(f"&#{ord(ch)};" for ch in text),
    "rot13": lambda text, rng: codecs.encode(text, "rot13"),
    "leet": leet,
}
