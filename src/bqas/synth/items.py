"""Generated items: validation of raw (LLM) items, the collector that keeps or drops them, JSONL records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bqas.synth.dedup import NearDuplicateFilter

#: Why an item was dropped (counted per reason in the report).
DROP_REASONS: dict[str, str] = {
    "wrong_intent": "expected_intent is another intent",
    "empty_input": "input is empty",
    "bad_structure": "not an object with input (text), expected_intent (text) and slots (object of scalars)",
    "duplicate": "same text after normalisation as a kept item",
    "near_duplicate": "embedding too similar to a kept item",
    "over_count": "more items than asked for",
}


@dataclass(frozen=True)
class Candidate:
    """One generated command before deduplication."""

    text: str
    slots: dict[str, Any]
    tags: tuple[str, ...] = ()


def validate_item(raw: Any, intent: str) -> tuple[Candidate | None, str | None]:
    """Check one item of the synthetic judge's array; returns (candidate, None) or (None, drop reason)."""
    if not isinstance(raw, Mapping):
        return None, "bad_structure"
    text, label, slots = raw.get("input"), raw.get("expected_intent"), raw.get("slots")
    if not isinstance(text, str) or not isinstance(label, str):
        return None, "bad_structure"
    if not isinstance(slots, Mapping) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool)) for k, v in slots.items()
    ):
        return None, "bad_structure"
    if label.strip() != intent:
        return None, "wrong_intent"
    if not text.strip():
        return None, "empty_input"
    return Candidate(" ".join(text.split()), dict(slots)), None


@dataclass
class Collector:
    """Keeps candidates until ``count`` are kept; counts the dropped ones by reason."""

    intent: str
    count: int
    dedup: NearDuplicateFilter
    kept: list[Candidate] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    on_keep: Callable[[int], None] | None = None

    @property
    def need(self) -> int:
        return max(0, self.count - len(self.kept))

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] += n

    def offer(self, candidates: list[Candidate], *, count_surplus: bool = True) -> int:
        """Deduplicate and keep candidates (up to ``count``); returns how many were kept.

        Candidates beyond ``count`` are dropped as ``over_count`` unless ``count_surplus`` is False (the
        offline generator draws more than it needs; its surplus was never asked for)."""
        before = len(self.kept)
        if not candidates:
            return 0
        if self.need == 0:
            if count_surplus:
                self.drop("over_count", len(candidates))
            return 0
        reasons = self.dedup.check([c.text for c in candidates])
        for cand, reason in zip(candidates, reasons, strict=True):
            if self.need == 0:
                if count_surplus:
                    self.drop("over_count")
            elif reason is not None:
                self.drop(reason)
            else:
                self.kept.append(cand)
        added = len(self.kept) - before
        if added and self.on_keep is not None:
            self.on_keep(added)
        return added


def to_records(intent: str, kept: list[Candidate], tags: list[str], source: str) -> list[dict[str, Any]]:
    """JSONL records in the synthetic-generation prompt's item format (``input``, ``expected_intent``, ``slots``),
    with the same text as ``user_input`` (the ``voice`` judge) and ``text`` (the ``intent`` judge)."""
    records: list[dict[str, Any]] = []
    for i, cand in enumerate(kept, start=1):
        all_tags = list(dict.fromkeys(["synthetic", *tags, *cand.tags]))
        records.append(
            {
                "id": f"synth-{intent}-{i:04d}",
                "input": cand.text,
                "text": cand.text,
                "user_input": cand.text,
                "expected_intent": intent,
                "slots": cand.slots,
                "tags": all_tags,
                "source": source,
            }
        )
    return records
