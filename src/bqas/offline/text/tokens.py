"""Word tokens, crude ("lemma-ish") German/English stems, content stems and CJK character bigrams.

Deliberately simple and deterministic: no model, no dictionary.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from bqas.offline.text.normalize import fold
from bqas.offline.text.stopwords import STOPWORDS

CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

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


def words(text: str) -> list[str]:
    """Word tokens (letters/digits runs), casefolded."""
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


@functools.lru_cache(maxsize=1 << 16)  # words repeat across sentences and samples; a stem is pure
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
