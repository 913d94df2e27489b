"""Text hidden in a cheap encoding, decoded for the judge-manipulation rules.

An LLM judge reads base64, ROT13 or leetspeak as easily as plain text, so "aWdub3JlIGFsbCBwcmV2aW91cyBp…"
steers it as well as "ignore all previous instructions" would. :func:`decoded_views` returns what such
an answer says in plain text, one view per encoding found, for the rules to read like the answer itself:

- ``base64`` (also URL-safe), ``base32`` and ``hex``: runs of at least :data:`MIN_RUN` characters of the
  encoding's alphabet that decode to UTF-8 text (letters, no control characters); random identifiers,
  hashes, IBANs and long words decode to bytes that are not such text and are dropped;
- ``url`` (``%49%67``) and ``html`` (``&#73;&amp;``): the whole text unescaped, where it holds an escape;
- ``leet``: words that mix letters with ``0 1 3 4 5 7 @ $`` read as letters (``1gn0r3`` → ``ignore``),
  where two or more words of three characters or more do; numbers stay numbers (``give 100``).

ROT13 (:func:`rot13`) turns any Latin text into another one, so the caller decides when it is worth
reading (:mod:`bqas.offline.manipulation` asks only where a rule's literal occurs rotated). Nothing is
decoded twice (a base64 text of ROT13 stays hidden); every view is plain data, never executed.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
from collections.abc import Callable
from urllib.parse import unquote

#: The shortest run worth decoding: 12 bytes of base64, 10 of base32, 8 of hex, about two words.
MIN_RUN = 16

_BASE64_RUN = re.compile(rf"[A-Za-z0-9+/_-]{{{MIN_RUN},}}={{0,2}}")
_BASE32_RUN = re.compile(rf"[A-Z2-7]{{{MIN_RUN},}}={{0,6}}")
_HEX_RUN = re.compile(rf"(?:\\x)?[0-9A-Fa-f]{{2}}(?:(?:\\x)?[0-9A-Fa-f]{{2}}){{{MIN_RUN // 2 - 1},}}")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_HTML_ESCAPE = re.compile(r"&(?:#\d+|#[xX][0-9A-Fa-f]+|[A-Za-z]+);")
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
# A letter beside a leet character (the cheap test), and the words leet decoding applies to.
_LEET_PAIR = re.compile(r"[A-Za-z][013457@$]|[013457@$][A-Za-z]")
_WORD = re.compile(r"[A-Za-z0-9@$]+")
_LETTER = re.compile(r"[A-Za-z]")
_LEET_CHAR = re.compile(r"[013457@$]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _as_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 that reads as words: mostly letters, no control characters."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 6 or _CONTROL.search(text):
        return None
    letters = sum(ch.isalpha() for ch in text)
    return text if letters * 2 >= len(text) else None


def _base64(run: str) -> str | None:
    body = run.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    for altchars in (b"+/", b"-_"):
        try:
            return _as_text(base64.b64decode(padded, altchars=altchars, validate=True))
        except (binascii.Error, ValueError):
            continue
    return None


def _base32(run: str) -> str | None:
    body = run.rstrip("=")
    try:
        return _as_text(base64.b32decode(body + "=" * (-len(body) % 8)))
    except (binascii.Error, ValueError):
        return None


def _hex(run: str) -> str | None:
    digits = run.replace("\\x", "")
    try:
        return _as_text(bytes.fromhex(digits))
    except ValueError:
        return None


def _runs(pattern: re.Pattern[str], decode: Callable[[str], str | None], text: str) -> str | None:
    found = [decoded for m in pattern.finditer(text) if (decoded := decode(m.group()))]
    return "\n".join(found) if found else None


_RUNS: tuple[tuple[str, re.Pattern[str], Callable[[str], str | None]], ...] = (
    ("base64", _BASE64_RUN, _base64),
    ("base32", _BASE32_RUN, _base32),
    ("hex", _HEX_RUN, _hex),
)


def _leet_word(m: re.Match[str]) -> str:
    word = m.group()
    return word.translate(_LEET) if _LETTER.search(word) and _LEET_CHAR.search(word) else word


def _is_leet(word: str) -> bool:
    return len(word) >= 3 and _LETTER.search(word) is not None and _LEET_CHAR.search(word) is not None


def decoded_views(text: str) -> list[tuple[str, str]]:
    """``(encoding, plain text)`` for each encoding ``text`` holds something in (module docstring)."""
    views: list[tuple[str, str]] = []
    # An encoded run has no spaces: only words of MIN_RUN characters or more are looked into.
    long_words = " ".join(word for word in text.split() if len(word) >= MIN_RUN)
    if long_words:
        for name, pattern, decode in _RUNS:
            decoded = _runs(pattern, decode, long_words)
            if decoded:
                views.append((name, decoded))
    if "%" in text and _URL_ESCAPE.search(text):
        views.append(("url", unquote(text)))
    if "&" in text and _HTML_ESCAPE.search(text):
        views.append(("html", html.unescape(text)))
    if _LEET_PAIR.search(text) and sum(map(_is_leet, _WORD.findall(text))) >= 2:
        views.append(("leet", _WORD.sub(_leet_word, text)))
    return views


def rot13(text: str) -> str:
    """``text`` with its ASCII letters rotated by 13 (ROT13 is its own inverse)."""
    return codecs.encode(text, "rot13")
