"""Small text helpers shared by the offline methods (no models, no heavy imports).

Sentence splitting for German, English and Chinese, coercion of list-valued inputs, crude
("lemma-ish") stemming and content tokens. Deliberately simple and deterministic.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_BULLET_RE = re.compile(r"^\s*(?:[-*•·–>]+|\(?\d{1,2}[.)]|\(?[a-zA-Z][.)](?=\s))\s*")

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

STOPWORDS_DE = frozenset(
    [
        "der",
        "die",
        "das",
        "den",
        "dem",
        "des",
        "ein",
        "eine",
        "einer",
        "eines",
        "einem",
        "einen",
        "und",
        "oder",
        "aber",
        "doch",
        "sondern",
        "denn",
        "weil",
        "dass",
        "ob",
        "wenn",
        "als",
        "wie",
        "so",
        "zu",
        "zum",
        "zur",
        "im",
        "in",
        "an",
        "am",
        "auf",
        "aus",
        "bei",
        "mit",
        "nach",
        "von",
        "vor",
        "für",
        "fur",
        "über",
        "uber",
        "unter",
        "um",
        "durch",
        "gegen",
        "ohne",
        "bis",
        "seit",
        "ist",
        "sind",
        "war",
        "waren",
        "wird",
        "werden",
        "wurde",
        "wurden",
        "sein",
        "hat",
        "haben",
        "hatte",
        "hatten",
        "kann",
        "können",
        "konnen",
        "soll",
        "sollen",
        "muss",
        "müssen",
        "mussen",
        "darf",
        "dürfen",
        "mag",
        "möchte",
        "es",
        "er",
        "sie",
        "wir",
        "ihr",
        "ich",
        "du",
        "man",
        "sich",
        "nicht",
        "kein",
        "keine",
        "auch",
        "noch",
        "nur",
        "schon",
        "sehr",
        "mehr",
        "dies",
        "diese",
        "dieser",
        "dieses",
        "diesem",
        "diesen",
        "jede",
        "jeder",
        "jedes",
        "alle",
        "allem",
        "allen",
        "aller",
        "was",
        "wer",
        "wo",
        "hier",
        "dort",
        "da",
        "dann",
        "also",
        "etwa",
        "bitte",
        "mal",
        "ja",
        "nein",
        "sein",
        "seine",
        "ihre",
        "ihren",
        "ihrem",
        "mein",
        "meine",
        "dein",
        "deine",
        "unser",
        "unsere",
        "euer",
        "eure",
    ]
)
STOPWORDS_EN = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "about",
        "as",
        "into",
        "over",
        "after",
        "before",
        "under",
        "between",
        "through",
        "during",
        "it",
        "its",
        "they",
        "them",
        "their",
        "there",
        "here",
        "he",
        "she",
        "his",
        "her",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "not",
        "no",
        "yes",
        "so",
        "such",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "also",
        "very",
        "more",
        "most",
        "much",
        "many",
        "some",
        "any",
        "all",
        "each",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "why",
        "how",
        "just",
        "only",
        "other",
        "same",
        "too",
        "both",
        "either",
        "neither",
        "one",
    ]
)
STOPWORDS = STOPWORDS_DE | STOPWORDS_EN

_DE_SUFFIXES = (
    "ungen",
    "heiten",
    "keiten",
    "ationen",
    "ation",
    "ieren",
    "ierte",
    "iert",
    "ung",
    "heit",
    "keit",
    "lich",
    "isch",
    "ern",
    "end",
    "est",
    "ten",
    "te",
    "en",
    "er",
    "es",
    "em",
    "st",
    "e",
    "n",
    "s",
    "t",
)
_ZU_INFIX_RE = re.compile(
    r"^(ab|an|auf|aus|bei|dar|ein|fest|her|heraus|hin|mit|nach|vor|weg|wieder|zuruck|zusammen)zu(\w{3,})$"
)
_UMLAUTS = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


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
        part = _BULLET_RE.sub("", part).strip()
        if part:
            out.append(part)
    return out


def fold(text: str) -> str:
    """Casefold, NFKC-normalise and fold umlauts/ß (for lenient matching)."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_UMLAUTS)


def words(text: str) -> list[str]:
    """Word tokens (letters/digits runs), casefolded."""
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def stem(token: str) -> str:
    """A crude German/English stem: folded, with one common suffix stripped (stem kept >= 4 chars)."""
    t = fold(token)
    if CJK_RE.search(t):
        return t
    t = _ZU_INFIX_RE.sub(r"\1\2", t)  # abzuwagen -> abwagen (German zu-infinitive of separable verbs)
    for suf in _DE_SUFFIXES:
        if t.endswith(suf) and len(t) - len(suf) >= 4:
            return t[: -len(suf)]
    return t


def content_stems(text: str) -> list[str]:
    """Stems of the non-stopword Latin tokens plus character bigrams of CJK runs."""
    out: list[str] = []
    for w in words(text):
        if CJK_RE.search(w):
            continue
        if w in STOPWORDS or len(w) < 2:
            continue
        out.append(stem(w))
    out.extend(cjk_bigrams(text))
    return out


def cjk_bigrams(text: str) -> list[str]:
    """Character bigrams of the CJK runs in ``text`` (a single-character run counts as itself)."""
    grams: list[str] = []
    for run in _CJK_RUN_RE.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def stems_found(needles: Iterable[str], haystack: set[str]) -> list[bool]:
    """For each needle stem: whether it occurs in ``haystack`` (exact, or prefix match of >= 5 chars)."""
    found = []
    for n in needles:
        if n in haystack:
            found.append(True)
            continue
        ok = False
        if len(n) >= 5:
            for h in haystack:
                if len(h) >= 5 and (h.startswith(n) or n.startswith(h)):
                    ok = True
                    break
        found.append(ok)
    return found


def detect_language(text: str, default: str = "en") -> str:
    """``zh`` if CJK dominates, else ``de`` / ``en`` by stopword counts (``default`` on a tie)."""
    cjk = len(CJK_RE.findall(text))
    latin = len(re.findall(r"[A-Za-zÄÖÜäöüß]", text))
    if cjk and cjk >= 0.2 * (cjk + latin):
        return "zh"
    toks = words(text)
    de = sum(1 for t in toks if t in STOPWORDS_DE and t not in STOPWORDS_EN)
    en = sum(1 for t in toks if t in STOPWORDS_EN and t not in STOPWORDS_DE)
    if re.search(r"[äöüßÄÖÜ]", text):
        de += 2
    if de > en:
        return "de"
    if en > de:
        return "en"
    return default if default in ("de", "en", "zh") else "en"


_BOUNDARY_RE = re.compile(r"[.!?;]+[\"'”“»«)\]]*\s+|[。！？；!?]+[”」』）)]*")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences: newlines, ``. ! ? ;`` followed by whitespace, and ``。！？；``.

    A period after a known abbreviation (z. B., Dr., e.g.), a single letter (J. K.) or a one/two-digit
    number followed by a capitalised month-like word (German ordinals: "12. März") does not split.
    Leading list bullets are removed.
    """
    sentences: list[str] = []
    for raw_line in text.splitlines():
        line = _BULLET_RE.sub("", raw_line).strip()
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
    cleaned = (_BULLET_RE.sub("", s).strip() for s in sentences)
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
