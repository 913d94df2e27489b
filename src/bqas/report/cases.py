"""The samples the report shows one by one: the worst scored cases in full (inputs, every dimension with
its tiers, reasoning), and rows for the escalations, unscored and invalid samples (capped lists).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bqas.report.aggregate import as_float, clip, is_number, key_of, verdict_of
from bqas.report.junit import as_list


@dataclass
class DimCell:
    """One dimension of one case, with its provenance."""

    name: str
    value: str
    measured: bool
    backend: str
    model: str
    method: str
    note: str
    offline_value: str  # "" when the offline tier gave no separate value (then none is shown)
    llm_value: str = ""  # the LLM's own vote where the value is not the LLM's (e.g. a safety gate)


@dataclass
class CaseView:
    """A sample shown in full (worst cases) or as a row (escalations, unscored, invalid, changes)."""

    sample_id: str
    judge: str
    language: str
    intent: str
    line: str
    status: str
    verdict: str
    composite: float | None
    coverage: float | None
    partial: bool
    escalation: str
    escalation_reasons: list[str]
    reasoning: str
    reason: str
    failed_gates: list[str]
    inputs: list[tuple[str, str]]
    dims: list[DimCell]
    errors: list[str]
    warnings: list[str]
    truncated: list[str]
    prompt_id: str
    backend_info: str


def failed_gates(record: Mapping[str, Any]) -> list[str]:
    dims = record.get("dimensions")
    if not isinstance(dims, Mapping):
        return []
    return [str(k) for k, e in dims.items() if isinstance(e, Mapping) and e.get("value") == "fail"]


def fmt_issue(issue: Any) -> str:
    if isinstance(issue, Mapping):
        fld = issue.get("field") or issue.get("loc") or issue.get("path")
        msg = issue.get("message") or issue.get("msg") or issue.get("error") or ""
        return f"{fld}: {msg}" if fld is not None and msg else clip(msg or dict(issue), 500)
    return clip(str(issue), 500)


def dim_value(value: Any) -> str:
    if value is None:
        return "—"
    if is_number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "[]"
    return clip(str(value), 300)


def tier_value(entry: Mapping[str, Any], key: str) -> str:
    """A tier's own value of a dimension, "" when it has none or it equals the value shown
    (so an offline decision no longer reads "fail (offline —)")."""
    raw = entry.get(key)
    if raw is None or raw == entry.get("value"):
        return ""
    return dim_value(raw)


def case_view(record: Mapping[str, Any], *, full: bool) -> CaseView:
    """Project a record onto what the report shows; ``full`` adds inputs, dimensions and reasoning."""
    verdict = verdict_of(record)
    status = str(record.get("status") or "?")
    if status in ("invalid", "target_error", "judge_error"):
        reason = "; ".join(fmt_issue(e) for e in as_list(record.get("errors"))) or "(no error given)"
    elif status == "unscored":
        reason = str(record.get("unscored_reason") or "(no reason given)")
    else:
        reason = ""
    inputs: list[tuple[str, str]] = []
    dims: list[DimCell] = []
    if full:
        raw_inputs = record.get("inputs")
        if isinstance(raw_inputs, Mapping):
            inputs = [(str(k), clip(v)) for k, v in raw_inputs.items()]
        raw_dims = record.get("dimensions")
        if isinstance(raw_dims, Mapping):
            for name, e in raw_dims.items():
                if not isinstance(e, Mapping):
                    continue
                measured = e.get("measured")
                dims.append(
                    DimCell(
                        name=str(name),
                        value=dim_value(e.get("value")),
                        measured=bool(measured if measured is not None else e.get("value") is not None),
                        backend=str(e.get("backend") or ""),
                        model=str(e.get("model") or ""),
                        method=str(e.get("method") or ""),
                        note=str(e.get("note") or ""),
                        offline_value=tier_value(e, "offline_value"),
                        llm_value=tier_value(e, "llm_value"),
                    )
                )
    composite = record.get("composite_score")
    coverage = record.get("coverage")
    truncated = record.get("truncated")
    return CaseView(
        sample_id=key_of(record, "sample_id")
        if record.get("sample_id") not in (None, "")
        else f"line {record.get('line', '?')}",
        judge=key_of(record, "judge"),
        language=key_of(record, "language"),
        intent=str(record.get("intent") or ""),
        line=str(record.get("line") if record.get("line") is not None else ""),
        status=status,
        verdict=verdict,
        composite=as_float(composite),
        coverage=as_float(coverage),
        partial=bool(record.get("partial")),
        escalation=str(record.get("escalation") or ""),
        escalation_reasons=[clip(str(r), 500) for r in as_list(record.get("escalation_reasons"))],
        reasoning=clip(record.get("reasoning") or "") if full else "",
        reason=clip(reason, 1000),
        failed_gates=failed_gates(record),
        inputs=inputs,
        dims=dims,
        errors=[fmt_issue(e) for e in as_list(record.get("errors"))],
        warnings=[fmt_issue(w) for w in as_list(record.get("warnings"))],
        truncated=[str(k) for k in truncated] if isinstance(truncated, Mapping) else [],
        prompt_id=str(record.get("prompt_id") or ""),
        backend_info=f"{record.get('llm_calls') or 0} LLM calls" + (", cache hit" if record.get("cache_hit") else ""),
    )


class Worst:
    """The ``n`` worst scored records: lowest composite first, ties broken by a failed gate.

    A bounded heap holding the negated sort key, so its root is the least bad record kept and is the
    one evicted when a worse one arrives; a record's view is built only if it is kept.
    """

    def __init__(self, n: int) -> None:
        self.n = max(n, 0)
        self._heap: list[tuple[float, int, int, CaseView]] = []

    def offer(self, seq: int, record: Mapping[str, Any]) -> None:
        if not self.n:
            return
        composite = record.get("composite_score")
        c = as_float(composite)
        c = math.inf if c is None else c
        gate = 1 if failed_gates(record) else 0
        key = (-c, gate, -seq)  # larger key = worse record (lower composite, failed gate, earlier)
        if len(self._heap) < self.n:
            heapq.heappush(self._heap, (*key, case_view(record, full=True)))
        elif key > self._heap[0][:3]:
            heapq.heapreplace(self._heap, (*key, case_view(record, full=True)))

    def cases(self) -> list[CaseView]:
        return [item[3] for item in sorted(self._heap, key=lambda item: item[:3], reverse=True)]


class Capped:
    """A list of row views kept up to ``cap`` entries, with the total count."""

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 0)
        self.total = 0
        self.rows: list[CaseView] = []

    def add(self, record: Mapping[str, Any]) -> None:
        self.total += 1
        if len(self.rows) < self.cap:
            self.rows.append(case_view(record, full=False))
