"""Coercion of judge inputs: blank checks, text values and list values (lists, or one string split on
newlines, semicolons and commas)."""

from __future__ import annotations

import re
from typing import Any

from bqas.offline.text.tokens import CJK_RE

BULLET_RE = re.compile(r"^\s*(?:[-*•·–>]+|\(?\d{1,2}[.)]|\(?[a-zA-Z][.)](?=\s))\s*")


def is_blank(value: Any) -> bool:
    """True for None, empty / whitespace strings and empty (or all-blank) lists."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return all(is_blank(v) for v in value)
    return False


def as_text(value: Any) -> str:
    """A string input (lists joined by newlines; None -> "")."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return "\n".join(as_text(v) for v in value if not is_blank(v))
    return str(value).strip()


def as_list(value: Any, *, split_commas: bool = True) -> list[str]:
    """A list input: a list of strings as is, or one string split on newlines, semicolons and
    (if ``split_commas`` and there is no newline/semicolon) commas. Bullets are stripped."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items: list[str] = []
        for v in value:
            items.extend(as_list(v, split_commas=False) if isinstance(v, str) else as_list(v))
        return items
    text = str(value).strip()
    if not text:
        return []
    if "\n" in text or ";" in text or "；" in text:
        parts = re.split(r"[\n;；]+", text)
    elif split_commas:
        parts = re.split(r"[,，、]+", text)
    else:
        parts = [text]
    out = []
    for part in parts:
        part = BULLET_RE.sub("", part).strip()
        if part:
            out.append(part)
    return out


_WORD_RE = re.compile(r"[^\W\d_]{2,}|\d")


def is_non_answer(text: str) -> bool:
    """True for an empty or trivially short answer ("Ok.", "Ja", "好的"): fewer than two words of two or
    more letters (two CJK characters count as one word) and no digit. Such a reply answers no question:
    the offline tier scores it as irrelevant and ungrounded rather than leaving those unmeasured."""
    cjk = len(CJK_RE.findall(text))
    rest = CJK_RE.sub(" ", text)
    tokens = _WORD_RE.findall(rest)
    if any(t.isdigit() for t in tokens):
        return False
    return len(tokens) + cjk // 2 < 2
