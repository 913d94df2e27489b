"""Sentence splitting for German, English and Chinese (newlines, ``. ! ? ;``, ``。！？；``), aware of
abbreviations, initials and German ordinals."""

from __future__ import annotations

import re

from bqas.offline.text.inputs import BULLET_RE

# Abbreviations after which a period does not end a sentence (casefolded, without the period).
_ABBREVIATIONS = frozenset(
    [
        "z.b",
        "d.h",
        "u.a",
        "usw",
        "bzw",
        "ca",
        "vgl",
        "ggf",
        "evtl",
        "inkl",
        "bspw",
        "sog",
        "nr",
        "dr",
        "prof",
        "hr",
        "fr",
        "st",
        "str",
        "abs",
        "abb",
        "bd",
        "jh",
        "jhd",
        "mio",
        "mrd",
        "etc",
        "e.g",
        "i.e",
        "vs",
        "mr",
        "mrs",
        "ms",
        "jr",
        "sr",
        "no",
        "fig",
        "approx",
        "dept",
        "est",
        "inc",
        "ltd",
        "co",
        "u.s",
        "u.k",
    ]
)


_BOUNDARY_RE = re.compile(r"[.!?;]+[\"'”“»«)\]]*\s+|[。！？；!?]+[”」』）)]*")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences: newlines, ``. ! ? ;`` followed by whitespace, and ``。！？；``.

    A period after a known abbreviation (z. B., Dr., e.g.), a single letter (J. K.) or a one/two-digit
    number followed by a capitalised month-like word (German ordinals: "12. März") does not split.
    Leading list bullets are removed.
    """
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = BULLET_RE.sub("", raw_line).strip()
        if not line:
            continue
        start = 0
        buf = ""
        for m in _BOUNDARY_RE.finditer(line):
            piece = line[start : m.end()]
            start = m.end()
            candidate = buf + piece
            if _is_false_boundary(candidate, line[start:]):
                buf = candidate
                continue
            if candidate.strip():
                sentences.append(candidate.strip())
            buf = ""
        rest = (buf + line[start:]).strip()
        if rest:
            sentences.append(rest)
    cleaned = (BULLET_RE.sub("", s).strip() for s in sentences)
    return [s for s in cleaned if re.search(r"\w", s)]


_ORDINAL_NEXT_RE = re.compile(
    r"^(?:jan|feb|mär|mar|apr|mai|jun|jul|aug|sep|okt|nov|dez|jahrhundert|klasse|stunde|kapitel|"
    r"auflage|platz|mal|\d)",
    re.IGNORECASE,
)


def _is_false_boundary(candidate: str, following: str) -> bool:
    stripped = candidate.rstrip()
    if not stripped.endswith("."):
        return False
    m = re.search(r"(\S+)\.$", stripped)
    if not m:
        return False
    last = m.group(1).casefold()
    if last in _ABBREVIATIONS or last.rstrip(".") in _ABBREVIATIONS:
        return True
    if re.fullmatch(r"[a-zäöü]", last):
        return True
    if re.fullmatch(r"\d{1,2}", last) and _ORDINAL_NEXT_RE.match(following.strip()):
        return True
    return following.strip() != "" and following.strip()[:1].islower()
