"""A cheap language guess (de / en / zh) from script and stop words."""

from __future__ import annotations

import re

from bqas.offline.text.stopwords import STOPWORDS_DE, STOPWORDS_EN
from bqas.offline.text.tokens import CJK_RE, words


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
