"""Retrieval diagnosis of a run over a ``synth-rag`` set: context recall per kind.

For every answered item the passages the assistant retrieved (``available_facts`` mapped from its reply,
as the demo assistant's and Dify targets give them) are compared with the item's ``reference_contexts``,
the passages its question was made from. Context recall is the share of those passages retrieved; set
beside the judged verdicts per kind, it tells "retrieval misses the second passage" (low recall) apart
from "the answer invents" (recall high, verdict failed).

A reference passage counts as retrieved when a retrieved text holds it, lies inside it, or shares at least
:data:`MIN_SHARED` of its words (characters for Chinese): assistants return chunks cut their own way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.offline.text.tokens import CJK_RE, words
from bqas.synth.dedup import normalise

MIN_SHARED = 0.8


def _units(text: str) -> list[str]:
    if CJK_RE.search(text):
        return [ch for ch in normalise(text) if not ch.isspace()]
    return words(text)


def passage_retrieved(reference: str, retrieved: Sequence[str]) -> bool:
    """Whether ``reference`` is among the ``retrieved`` texts (held, inside one, or mostly shared)."""
    ref = normalise(reference)
    if not ref:
        return False
    ref_units = _units(reference)
    for text in retrieved:
        got = normalise(text)
        if not got:
            continue
        if ref in got or got in ref:
            return True
        have = set(_units(text))
        if ref_units and sum(1 for u in ref_units if u in have) / len(ref_units) >= MIN_SHARED:
            return True
    return False


def context_recall(references: Sequence[str], retrieved: Sequence[str]) -> float | None:
    """Share of ``references`` retrieved; None when the item has none (unanswerable items)."""
    if not references:
        return None
    return sum(passage_retrieved(r, retrieved) for r in references) / len(references)


@dataclass
class KindDiagnosis:
    """Figures of one kind."""

    kind: str
    items: int = 0
    answered: int = 0
    recall: list[float] = field(default_factory=list)
    full_recall: int = 0
    passed: int = 0
    failed: int = 0
    failed_with_full_recall: int = 0
    failed_with_missing_context: int = 0
    #: Answers that retrieved nothing (for unanswerable items: the assistant found nothing to answer from).
    nothing_retrieved: int = 0

    def as_dict(self) -> dict[str, Any]:
        mean = round(sum(self.recall) / len(self.recall), 3) if self.recall else None
        return {
            "kind": self.kind,
            "items": self.items,
            "answered": self.answered,
            "context_recall": mean,
            "all_contexts_retrieved": self.full_recall,
            "passed": self.passed,
            "failed": self.failed,
            "failed_although_retrieved": self.failed_with_full_recall,
            "failed_with_missing_context": self.failed_with_missing_context,
            "nothing_retrieved": self.nothing_retrieved,
        }


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object")
        rows.append(value)
    return rows


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, Iterable):
        return [str(v.get("content") or v.get("text") or "") if isinstance(v, Mapping) else str(v) for v in value]
    return []


def diagnose(results: Iterable[Mapping[str, Any]], testset: Iterable[Mapping[str, Any]]) -> list[KindDiagnosis]:
    """Context recall and verdicts per kind, joining run results to the set by ``sample_id`` = ``id``."""
    items = {str(r.get("id")): r for r in testset}
    per_kind: dict[str, KindDiagnosis] = {}
    seen: dict[str, set[str]] = defaultdict(set)
    for result in results:
        sample_id = str(result.get("sample_id"))
        item = items.get(sample_id)
        if item is None:
            continue
        kind = str(item.get("kind") or "unknown")
        diag = per_kind.setdefault(kind, KindDiagnosis(kind))
        if sample_id in seen[kind]:
            continue  # several judges grade one answer: count the item once
        seen[kind].add(sample_id)
        diag.items += 1
        inputs = result.get("inputs") if isinstance(result.get("inputs"), Mapping) else {}
        assert isinstance(inputs, Mapping)
        if not str(inputs.get("response") or "").strip():
            continue
        diag.answered += 1
        retrieved = [t for t in _texts(inputs.get("available_facts")) if t.strip()]
        diag.nothing_retrieved += not retrieved
        recall = context_recall(_texts(item.get("reference_contexts")), retrieved)
        verdict = str(result.get("verdict") or "")
        failed = verdict == "failed"
        diag.passed += verdict == "production_ready"
        diag.failed += failed
        if recall is None:
            continue
        diag.recall.append(recall)
        diag.full_recall += recall == 1.0
        if failed:
            if recall == 1.0:
                diag.failed_with_full_recall += 1
            else:
                diag.failed_with_missing_context += 1
    return sorted(per_kind.values(), key=lambda d: d.kind)


def diagnose_files(results: Path, testset: Path) -> list[KindDiagnosis]:
    """:func:`diagnose` over a run's ``results.jsonl`` and the ``synth-rag`` set; ValueError on bad files."""
    return diagnose(_read_jsonl(results), _read_jsonl(testset))


def format_table(rows: Sequence[KindDiagnosis]) -> str:
    """A plain table: one line per kind."""
    head = (
        f"{'kind':<14} {'items':>5} {'answered':>8} {'recall':>7} {'all ctx':>7} {'none':>5} {'passed':>6} "
        f"{'failed':>6}  why failed"
    )
    lines = [head]
    for d in rows:
        r = d.as_dict()
        recall = "–" if r["context_recall"] is None else f"{r['context_recall']:.2f}"
        why = (
            f"{d.failed_with_missing_context} missing context, {d.failed_with_full_recall} despite all contexts"
            if d.failed
            else ""
        )
        lines.append(
            f"{d.kind:<14} {d.items:>5} {d.answered:>8} {recall:>7} {d.full_recall:>7} {d.nothing_retrieved:>5} "
            f"{d.passed:>6} {d.failed:>6}  {why}".rstrip()
        )
    lines.append(
        "recall: mean share of the reference passages retrieved; all ctx: items with every one retrieved; "
        "none: answers that retrieved nothing"
    )
    return "\n".join(lines)
