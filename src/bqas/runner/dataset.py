"""Stream a scenario's samples (JSONL, CSV or inline) with their line numbers, never all at once."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.jsonl import iter_json_objects
from bqas.runner.scenario import Scenario


@dataclass
class DatasetItem:
    """One sample of the dataset; ``error`` is set when the line itself is unusable."""

    line: int
    sample_id: str
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _cell(value: str) -> Any:
    """CSV cells holding a JSON list or object (e.g. contexts) are parsed; everything else stays text."""
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value


def _apply_mapping(data: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    if not mapping:
        return data
    out = {k: v for k, v in data.items() if k not in mapping}
    for source, target in mapping.items():
        if source in data:
            out[target] = data[source]
    return out


def _sample_id(data: dict[str, Any], line: int) -> str:
    for key in ("id", "response_id", "sample_id"):
        if data.get(key) not in (None, ""):
            return str(data[key])
    return f"line-{line}"


def iter_dataset(scenario: Scenario) -> Iterator[DatasetItem]:
    """Yield the scenario's samples in file order with 1-based line numbers (CSV: the header is line 1)."""
    path = scenario.dataset_path()
    if path is None:
        for i, sample in enumerate(scenario.samples or [], start=1):
            if not isinstance(sample, dict):
                yield DatasetItem(i, f"sample-{i}", error=f"samples[{i - 1}]: expected a mapping")
                continue
            data = _apply_mapping(dict(sample), scenario.mapping)
            yield DatasetItem(i, _sample_id(data, i), data)
        return
    if path.suffix.lower() == ".csv":
        yield from _iter_csv(path, scenario.mapping)
    else:
        yield from _iter_jsonl(path, scenario.mapping)


def _iter_jsonl(path: Path, mapping: dict[str, str]) -> Iterator[DatasetItem]:
    with path.open(encoding="utf-8") as fh:
        for row in iter_json_objects(fh):
            if row.value is None:
                yield DatasetItem(row.line, f"line-{row.line}", error=row.error(path.name))
                continue
            data = _apply_mapping(row.value, mapping)
            yield DatasetItem(row.line, _sample_id(data, row.line), data)


def _iter_csv(path: Path, mapping: dict[str, str]) -> Iterator[DatasetItem]:
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        for row in reader:
            line_no = reader.line_num
            data = {k: _cell(v) for k, v in row.items() if k is not None and v is not None}
            data = _apply_mapping(data, mapping)
            yield DatasetItem(line_no, _sample_id(data, line_no), data)


def count_items(scenario: Scenario) -> int:
    """Number of samples (cheap streaming count, for the progress bar)."""
    path = scenario.dataset_path()
    if path is None:
        return len(scenario.samples or [])
    with path.open(encoding="utf-8") as fh:
        if path.suffix.lower() == ".csv":
            return max(0, sum(1 for _ in csv.reader(fh)) - 1)
        return sum(1 for line in fh if line.strip())
