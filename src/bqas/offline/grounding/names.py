"""Names and quotations in a claim (acronyms, alphanumeric tokens, titled names, capitalised phrases,
quoted strings) and whether the facts contain them as text."""

from __future__ import annotations

import re

from bqas.offline._textutil import CJK_RE, STOPWORDS, fold
from bqas.offline.grounding.dates import _MONTHS
from bqas.offline.grounding.numbers import _MULTIPLIERS, _NUM_RE, _UNIT_INDEX

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
#: Dimensions and resolutions ("2D", "3D", "4K"): words of the trade, not names.
_DIMENSIONS_RE = re.compile(r"^\d[DK]$")
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
        if _ORDINAL_RE.match(tok) or _NUM_RE.fullmatch(tok) or _DIMENSIONS_RE.match(tok) or tok in found:
            continue
        measure = _NUM_RE.match(tok)
        if measure and (measure.group("unit") or measure.group("mult")):
            continue  # a measure joined by hyphens ("315-mile-long"): a number, read as one
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
