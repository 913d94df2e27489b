"""Small helpers over result records (``JudgmentResult.to_record()`` plus what the runner adds)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bqas.store.db import Store

JUDGED_STATUSES: tuple[str, ...] = ("scored", "unscored")


def insert_for(store: Store) -> Any:
    """The dialect's INSERT construct (both support ``on_conflict_do_nothing``)."""
    return store.insert()


def is_judgment(record: Mapping[str, Any]) -> bool:
    """A record of a judge that judged (scored or unscored), not a refused/invalid sample."""
    return bool(record.get("judge")) and bool(record.get("response_id")) and record.get("status") in JUDGED_STATUSES


def record_source(record: Mapping[str, Any], default: str = "") -> str:
    """Where the judgment came from: ``source``, the run id or the job id (the idempotency key's part)."""
    for key in ("source", "run_id", "job_id"):
        value = record.get(key)
        if value:
            return str(value)[:200]
    return default[:200]


def record_time(record: Mapping[str, Any], default: float | None = None) -> float:
    """Epoch seconds of ``created_at`` when the record has one (ISO 8601), else ``default`` or now."""
    raw = record.get("created_at")
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw).timestamp()
        except ValueError:
            pass
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    return default if default is not None else time.time()


def dimension_values(record: Mapping[str, Any]) -> dict[str, Any]:
    """The measured dimension values of a record (unmeasured dimensions are left out)."""
    dims = record.get("dimensions")
    if not isinstance(dims, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name, prov in dims.items():
        if isinstance(prov, Mapping) and prov.get("measured", True) and prov.get("value") is not None:
            out[str(name)] = prov["value"]
    return out


def record_inputs(record: Mapping[str, Any], sample: Mapping[str, Any] | None, fields: list[str] | None) -> Any:
    """The judge's input values: the record's ``inputs`` (the runner adds them) or those of ``sample``."""
    inputs = record.get("inputs")
    if isinstance(inputs, Mapping) and inputs:
        return dict(inputs)
    if sample is None:
        return None
    if fields:
        return {name: sample[name] for name in fields if name in sample}
    return {k: v for k, v in sample.items() if k not in ("id", "expected", "judge", "language", "tags")}


def iso(epoch: float | None) -> str | None:
    """ISO 8601 (UTC, seconds) of an epoch time."""
    if epoch is None:
        return None
    from datetime import UTC

    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
