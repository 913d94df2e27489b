"""Stream a scenario's samples (JSONL, CSV or inline) with their line numbers, never all at once.

Every sample passes :func:`bqas.untrusted.check_value` (invalid Unicode, NaN, deep nesting become an
``invalid`` record naming line and field). CSV files may start with a UTF-8 BOM; their delimiter
(``,`` ``;`` tab or ``|``) is detected with :class:`csv.Sniffer` from the start of the file; a row
that cannot be read (an unclosed quote, too many cells) is an ``invalid`` record at its own first line
(:mod:`bqas.runner.csv_rows`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bqas.jsonl import iter_json_objects
from bqas.judgment.work import DatasetItem
from bqas.runner.csv_rows import csv_records
from bqas.runner.scenario import Scenario
from bqas.untrusted import FILE_ERRORS, UntrustedValueError, check_value, loads

CSV_DELIMITERS = ",;\t|"
_SNIFF_BYTES = 64 * 1024


def _cell(value: str) -> Any:
    """CSV cells holding a JSON list or object (e.g. contexts) are parsed; everything else stays text.
    A cell that is JSON but refused by :mod:`bqas.untrusted` (deep nesting …) raises its error."""
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return loads(text)
        except json.JSONDecodeError:
            return value
    return value


def _row_values(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row's values (JSON cells parsed); a refused cell raises naming its column."""
    data: dict[str, Any] = {}
    for key, cell in row.items():
        try:
            data[key] = _cell(cell)
        except UntrustedValueError as exc:
            raise UntrustedValueError(f"{key}.{exc.field}" if exc.field else key, exc.message) from None
    return data


def _checked(data: dict[str, Any]) -> str | None:
    """The problem of a sample that :mod:`bqas.untrusted` refuses (naming the field), else None."""
    try:
        check_value(data)
    except UntrustedValueError as exc:
        return str(exc)
    return None


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
            problem = _checked(sample)
            if problem:
                yield DatasetItem(i, f"sample-{i}", error=f"samples[{i - 1}]: {problem}")
                continue
            data = _apply_mapping(dict(sample), scenario.mapping)
            yield DatasetItem(i, _sample_id(data, i), data)
        return
    if path.suffix.lower() == ".csv":
        yield from _iter_csv(path, scenario.mapping)
    else:
        yield from _iter_jsonl(path, scenario.mapping)


def _iter_jsonl(path: Path, mapping: dict[str, str]) -> Iterator[DatasetItem]:
    with path.open(encoding="utf-8-sig", errors=FILE_ERRORS) as fh:
        for row in iter_json_objects(fh):
            if row.value is None:
                yield DatasetItem(row.line, f"line-{row.line}", error=row.error(path.name))
                continue
            data = _apply_mapping(row.value, mapping)
            yield DatasetItem(row.line, _sample_id(data, row.line), data)


def csv_dialect(path: Path) -> type[csv.Dialect] | csv.Dialect:
    """The dialect of a CSV file: :class:`csv.Sniffer` on its first whole lines (up to 64 KiB), checked
    against the header; else the candidate delimiter the header holds most often; else a comma."""
    lines: list[str] = []
    size = 0
    with path.open(encoding="utf-8-sig", errors=FILE_ERRORS, newline="") as fh:
        for line in fh:
            if lines and size + len(line) > _SNIFF_BYTES:
                break
            lines.append(line)
            size += len(line)
    header = lines[0] if lines else ""
    try:
        dialect = csv.Sniffer().sniff("".join(lines), delimiters=CSV_DELIMITERS)
        if dialect.delimiter in header:
            return dialect
    except csv.Error:
        pass
    counts = {d: header.count(d) for d in CSV_DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    if counts[best] == 0 or best == ",":
        return csv.excel
    return type("Sniffed", (csv.excel,), {"delimiter": best})


def _iter_csv(path: Path, mapping: dict[str, str]) -> Iterator[DatasetItem]:
    # utf-8-sig: a BOM written by spreadsheet programs would otherwise become part of the first header.
    with path.open(encoding="utf-8-sig", errors=FILE_ERRORS, newline="") as fh:
        header: list[str] | None = None
        for record in csv_records(fh, csv_dialect(path)):
            line_no = record.line
            if record.fields is None:
                yield DatasetItem(line_no, f"line-{line_no}", error=f"{path.name}:{line_no}: {record.error}")
                continue
            if header is None:
                header = record.fields
                continue
            try:
                data = _row_values(dict(zip(header, record.fields, strict=False)))
            except UntrustedValueError as exc:
                yield DatasetItem(line_no, f"line-{line_no}", error=f"{path.name}:{line_no}: {exc}")
                continue
            problem = _checked(data)
            if problem:
                yield DatasetItem(line_no, f"line-{line_no}", error=f"{path.name}:{line_no}: {problem}")
                continue
            data = _apply_mapping(data, mapping)
            yield DatasetItem(line_no, _sample_id(data, line_no), data)


def iter_csv(path: Path) -> Iterator[DatasetItem]:
    """A CSV file's samples as a scenario reads them, without a mapping (``bqas score`` reads CSV so)."""
    return _iter_csv(path, {})


def count_items(scenario: Scenario) -> int:
    """Number of samples (cheap streaming count, for the progress bar)."""
    path = scenario.dataset_path()
    if path is None:
        return len(scenario.samples or [])
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8-sig", errors=FILE_ERRORS, newline="") as fh:
            return max(0, sum(1 for _ in csv_records(fh, csv_dialect(path))) - 1)
    with path.open(encoding="utf-8", errors=FILE_ERRORS) as fh:
        return sum(1 for line in fh if line.strip())
