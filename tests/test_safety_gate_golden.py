"""The safety gate's results are those recorded before it was sped up: the same PII spans, kinds,
methods and confidences and the same manipulation rules on a varied synthetic corpus (test examples, the
probe suite obfuscated, generated German/Chinese/English voice and RAG texts of 30-3,000 characters, hostile
variants with braces, markup, control characters and lone surrogates, a 20,000-character answer).

The golden file comes from ``scripts/build_safety_golden.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bqas.offline.manipulation import _manipulation_hits, judge_manipulation
from bqas.offline.pii import detect_pii

GOLDEN = Path(__file__).parent / "fixtures" / "safety_gate_golden.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def test_golden_corpus_is_varied() -> None:
    rows = _rows()
    assert len(rows) >= 2000
    assert {r["language"] for r in rows} == {"de", "en", "zh"}
    assert any(any("\ud800" <= ch <= "\udfff" for ch in r["text"]) for r in rows)  # lone surrogates
    assert max(len(r["text"]) for r in rows) >= 20000
    assert sum(bool(r["pii"]) for r in rows) >= 500 and sum(bool(r["manipulation"]) for r in rows) >= 300
    kinds = {f[0] for r in rows for f in r["pii"]}
    assert kinds == {"email", "phone", "iban", "address", "person"}


@pytest.mark.parametrize("chunk", range(4))
def test_pii_findings_are_unchanged(chunk: int) -> None:
    mismatches = []
    for row in _rows()[chunk::4]:
        found = [
            [f.kind, f.text, f.start, f.end, f.method, f.confidence] for f in detect_pii(row["text"], row["language"])
        ]
        if found != row["pii"]:
            mismatches.append((row["text"][:80], row["language"], row["pii"], found))
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]}"


def test_manipulation_hits_are_unchanged() -> None:
    _manipulation_hits.cache_clear()  # compute every text afresh, not from another test's cache
    mismatches = [
        (row["text"][:80], row["manipulation"], hits)
        for row in _rows()
        if (hits := judge_manipulation(row["text"])) != row["manipulation"]
    ]
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]}"


def test_context_prefilter_agrees_with_the_phrases() -> None:
    """The cheap pre-check before the context phrases ("Liebe Lea", "NAME: Lea") rules out only words that
    the phrases cannot precede: upper case, ß/ẞ, a colon, several spaces and line breaks still reach them."""
    import re

    from bqas.offline.pii.person_latin import _CONTEXT_LAST_RE, _may_end_context, _person_patterns

    _, context, _ = _person_patterns()
    for phrase in ("Notiz zu", "ELTERNBRIEF AN", "liebe", "HIEẞ", "Name:", "Schülerin :", "my name is", "Dear"):
        for gap in (" ", "  \n", "\t"):
            text = f"x {phrase}{gap}Lea"
            start = text.index("Lea")
            assert context.search(text[max(0, start - 30) : start]) is not None
            assert _may_end_context(text, start), text
    assert not _may_end_context("Lea", 0) and not _may_end_context("liebeLea", 5)
    # The character class matches exactly what the phrases' last letters match case-insensitively.
    singles = [re.compile("(?i)" + re.escape(ch)) for ch in "urnsetß:odf"]
    for code in range(0x10000):
        ch = chr(code)
        assert (_CONTEXT_LAST_RE.match(ch) is not None) == any(p.match(ch) for p in singles), hex(code)
