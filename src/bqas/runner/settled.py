"""The settled samples of a run judged with ``--repeats``: one row per (sample, judge) with its canonical
record (``bqas.runner.repeats.settle_group``), repeat count, straddle and tie flags and the composite's
spread, so that the viewer lists, filters, counts and pages per sample. Written when the run finishes
(and by the viewer for a finished run that has none yet); streamed, one sample's repeats at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bqas.store.db import Store
from bqas.store.models import filter_columns


def _rows(store: Store, run_id: str) -> Iterator[dict[str, Any]]:
    from bqas.runner.repeats import settle_group

    # Every repeat of a work item shares its seq; a seq holds several keys only for RAGAS metrics.
    current: int | None = None
    groups: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}

    def flush() -> Iterator[dict[str, Any]]:
        for key, members in groups.items():
            record = settle_group([m[2] for m in members])
            found = record.get("repeats")
            info: dict[str, Any] = found if isinstance(found, dict) else {}
            canonical = info.get("canonical_repeat") or members[0][1]
            result_id = next((i for i, r, _ in members if r == canonical), members[0][0])
            spread = (info.get("composite") or {}).get("std")
            yield {
                "sample_key": key,
                "seq": current,
                "result_id": result_id,
                "sample_id": str(record.get("sample_id") or record.get("response_id")),
                "judge": str(record.get("judge")),
                "status": str(record.get("status")),
                "verdict": record.get("verdict"),
                "composite": record.get("composite_score"),
                "language": record.get("language"),
                **filter_columns(record),
                "repeats": len(members),
                "straddles": bool(info.get("straddles")),
                "tie": bool(info.get("tie")),
                "spread": float(spread) if isinstance(spread, int | float) else None,
                "record": record,
            }

    for seq, id_, key, repeat, record in store.iter_rows(run_id):
        if seq != current:
            yield from flush()
            current, groups = seq, {}
        groups.setdefault(key, []).append((id_, repeat, record))
    yield from flush()


def write_settled(store: Store, run_id: str) -> int:
    """(Re)write the run's settled samples; returns how many."""
    return store.replace_settled(run_id, _rows(store, run_id))
