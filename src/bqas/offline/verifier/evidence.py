"""Which context sentences the verifier reads for a claim (the same function in training and at run time).

The verifier's input is short (a claim and ~100 tokens of evidence), so for each claim the context is cut
into sentences and the ones sharing the most words with the claim (character bigrams for Chinese) are kept,
in their original order, until the character budget is spent. Lexical, deterministic and cheap: the
training pairs were built with exactly this selection, so the model learns on what it will see.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bqas.offline.text.sentences import split_sentences
from bqas.offline.text.tokens import CJK_RE

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
#: Evidence budget in characters (Chinese characters count 2.5: one token covers ~1.5 of them against
#: ~4 Latin characters), about what fits beside a claim in the model's 128 tokens.
BUDGET = 360
MAX_SENTENCES = 3


def terms(text: str) -> set[str]:
    """Casefolded words (Latin etc.) and character bigrams of Chinese runs."""
    out = {w.casefold() for w in _WORD.findall(_CJK_RUN.sub(" ", text)) if len(w) > 1 or w.isdigit()}
    for run in _CJK_RUN.findall(text):
        out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return out


def _cost(sentence: str) -> float:
    cjk = len(CJK_RE.findall(sentence))
    return len(sentence) - cjk + 2.5 * cjk


def context_sentences(facts: Sequence[str]) -> list[str]:
    """The facts cut into sentences (a very long one stays whole; the budget cuts it)."""
    out: list[str] = []
    for fact in facts:
        out.extend(split_sentences(fact))
    return out


def select(claim: str, sentences: Sequence[str], budget: float = BUDGET) -> str:
    """The evidence for ``claim``: the context sentences with the most claim terms, in context order."""
    if not sentences:
        return ""
    want = terms(claim)
    scored = []
    for i, s in enumerate(sentences):
        have = terms(s)
        overlap = len(want & have) / (len(want) or 1)
        scored.append((-overlap, i))
    scored.sort()
    chosen: list[int] = []
    spent = 0.0
    for _neg, i in scored:
        c = _cost(sentences[i])
        if chosen and spent + c > budget:
            continue
        chosen.append(i)
        spent += c
        if len(chosen) >= MAX_SENTENCES or spent >= budget:
            break
    return " ".join(sentences[i] for i in sorted(chosen))
