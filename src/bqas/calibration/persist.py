"""Store a calibration as a run of kind ``calibration`` (so it shows in ``bqas runs``), with its results."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bqas.calibration.evaluate import Outcome
from bqas.store.db import Store


def store_calibration(
    store: Store,
    name: str,
    config: dict[str, Any],
    outcomes: Sequence[Outcome],
    summary: dict[str, Any],
) -> str:
    """Create the run, add one result per judged gold sample (with the human labels), finish it; the run id."""
    from bqas.runner.execute import new_run_id
    from bqas.runner.summary import summarize

    run_id = new_run_id()
    store.create_run(run_id, name, config, kind="calibration", total=len(outcomes))
    rows = []
    for seq, o in enumerate(outcomes):
        record = {**o.record, "sample_id": o.gold.id, "gold_line": o.gold.line, "human": o.gold.labels}
        rows.append((f"{o.gold.line}:{o.gold.id}", seq, record))
    for start in range(0, len(rows), 500):
        store.add_results(run_id, rows[start : start + 500])
    # The run summary carries the usual verdict counts (for `bqas runs`) plus the calibration figures.
    base = summarize(r for _, _, r in rows).as_dict(None)
    store.update_run(run_id, status="done", finished_at=datetime.now(UTC), summary={**base, "calibration": summary})
    return run_id
