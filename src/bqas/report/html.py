"""Self-contained HTML report of a BQAS run.

The report opens offline: CSS is inline, charts are inline SVG computed here, there is no JavaScript
and no external reference. Record texts are untrusted (they come from the system under test), so the
Jinja environment autoescapes everything, and the SVG charts are handed to the template as geometry
(rectangles and labels), never as pre-rendered markup, so their labels are escaped like the rest.

Records are aggregated in a single pass (the runner streams them from its store): accumulators keep
only what the report shows — moments and fixed-bin histogram counts, per-group sums, the ``worst_n``
worst cases in a bounded heap and the listed escalations/unscored/invalid samples up to a cap.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from bqas.report.charts import (
    SCALE_5,
    SCALE_100,
    Svg,
    gate_chart,
    histogram_chart,
    risk_coverage_chart,
    verdict_chart,
    verdict_css,
)
from bqas.report.junit import as_list, clean_text

__all__ = ["write_html_report"]

_TEMPLATE = "report.html.j2"

# Display order of verdicts; unknown verdicts follow in order of appearance.
# The verdicts of the judge policy; a pass is ``production_ready``.
_VERDICT_ORDER = ("production_ready", "needs_review", "failed", "unscored", "invalid")
_PASS_VERDICTS = frozenset({"production_ready"})

# Long untrusted texts are clipped so one runaway response cannot bloat the report.
_MAX_TEXT = 4000
# Distinct labels/list items/notes kept per dimension; further ones are pooled as "(other)".
_MAX_DISTINCT = 200
_TOP_K = 8


def _trust_view(run: Mapping[str, Any], trust: dict[str, Any] | None) -> dict[str, Any] | None:
    """The report's trust-or-escalate section: coverage per tier and language, bounds, charts."""
    profiles = [p for p in as_list(run.get("profiles")) if isinstance(p, Mapping)]
    if trust is None and not profiles:
        return None
    charts = [
        {"judge": p.get("judge"), "id": p.get("id"), "tier": t, "chart": risk_coverage_chart(str(p.get("judge")), t)}
        for p in profiles
        for t in as_list(p.get("tiers"))
        if isinstance(t, Mapping)
    ]
    return {"stats": trust, "profiles": profiles, "charts": charts}


# --------------------------------------------------------------------------------------------------
# Accumulators


class _Moments:
    """Running count, mean and variance (Welford), numerically stable in one pass."""

    __slots__ = ("_m2", "mean", "n")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (x - self.mean)

    @property
    def mean_or_none(self) -> float | None:
        return self.mean if self.n else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (n − 1); undefined below two values."""
        return math.sqrt(self._m2 / (self.n - 1)) if self.n > 1 else None


def _bump(counter: Counter[str], key: str, cap: int = _MAX_DISTINCT) -> None:
    """Count ``key``, pooling new keys as "(other)" once ``cap`` distinct ones are held."""
    if key in counter or len(counter) < cap:
        counter[key] += 1
    else:
        counter["(other)"] += 1


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _as_float(value: Any) -> float | None:
    return float(value) if _is_number(value) else None


def _kind_of(value: Any) -> str:
    if _is_number(value):
        return "score"
    if value in ("pass", "fail"):
        return "gate"
    if isinstance(value, list | tuple):
        return "list"
    return "label"


def _clip(value: Any, limit: int = _MAX_TEXT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1, default=str)
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [clipped, {len(text)} chars in all]"


@dataclass
class DimView:
    """What the template shows of one dimension of one judge."""

    name: str
    kind: str
    n_measured: int
    n_not_measured: int
    mean: float | None
    std: float | None
    vmin: float | None
    vmax: float | None
    scale: str
    chart: Svg | None
    backends: list[tuple[str, int]]
    methods: list[tuple[str, int]]
    notes: list[tuple[str, int]]
    top: list[tuple[str, int]]
    gate_pass: int
    gate_fail: int
    list_nonempty: int
    list_items: int
    llm_minus_offline: float | None
    n_offline_pairs: int


class _DimAcc:
    """One dimension of one judge: counts, moments, histograms, provenance."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kinds: Counter[str] = Counter()
        self.moments = _Moments()
        self.hist5 = [0] * SCALE_5.bins
        self.hist100 = [0] * SCALE_100.bins
        self.vmin = math.inf
        self.vmax = -math.inf
        self.gates: Counter[str] = Counter()
        self.values: Counter[str] = Counter()  # labels, or list items for list dimensions
        self.list_nonempty = 0
        self.list_items = 0
        self.measured = 0
        self.not_measured = 0
        self.backends: Counter[str] = Counter()
        self.methods: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.offline_diff = _Moments()  # value − offline_value where an LLM overrode an offline value

    def add(self, entry: Mapping[str, Any]) -> None:
        value = entry.get("value")
        measured = entry.get("measured")
        if measured is None:
            measured = value is not None
        if not measured or value is None:
            self.not_measured += 1
            if entry.get("note"):
                _bump(self.notes, str(entry["note"])[:160])
            return
        self.measured += 1
        backend = str(entry.get("backend") or "?")
        if entry.get("model"):
            backend += f" / {entry['model']}"
        _bump(self.backends, backend)
        if entry.get("method"):
            _bump(self.methods, str(entry["method"])[:120])
        kind = _kind_of(value)
        self.kinds[kind] += 1
        if kind == "score":
            x = float(value)
            self.moments.add(x)
            self.hist5[SCALE_5.index(x)] += 1
            self.hist100[SCALE_100.index(x)] += 1
            self.vmin, self.vmax = min(self.vmin, x), max(self.vmax, x)
            offline = _as_float(entry.get("offline_value"))
            if offline is not None:
                self.offline_diff.add(x - offline)
        elif kind == "gate":
            self.gates[str(value)] += 1
        elif kind == "list":
            self.list_nonempty += bool(value)
            self.list_items += len(value)
            for item in value:
                _bump(self.values, str(item)[:120])
        else:
            _bump(self.values, str(value)[:120])

    @property
    def kind(self) -> str:
        return self.kinds.most_common(1)[0][0] if self.kinds else "unmeasured"

    def view(self, judge: str) -> DimView:
        kind = self.kind
        chart: Svg | None = None
        scale = ""
        if kind == "score" and self.moments.n:
            # The unit is not in the record, so it is inferred: all values within [1, 5] read as a
            # 1–5 rating, anything else as a 0–100 score (the two scales judges use).
            sc = SCALE_5 if self.vmin >= 1.0 and self.vmax <= 5.0 else SCALE_100
            scale = sc.name
            counts = self.hist5 if sc is SCALE_5 else self.hist100
            chart = histogram_chart(counts, sc, f"{judge}: {self.name} distribution", x_title=self.name)
        elif kind == "gate":
            other = sum(c for k, c in self.gates.items() if k not in ("pass", "fail"))
            chart = gate_chart(self.gates["pass"], self.gates["fail"], other)
        return DimView(
            name=self.name,
            kind=kind,
            n_measured=self.measured,
            n_not_measured=self.not_measured,
            mean=self.moments.mean_or_none,
            std=self.moments.std,
            vmin=self.vmin if self.moments.n else None,
            vmax=self.vmax if self.moments.n else None,
            scale=scale,
            chart=chart,
            backends=self.backends.most_common(),
            methods=self.methods.most_common(_TOP_K),
            notes=self.notes.most_common(3),
            top=self.values.most_common(_TOP_K),
            gate_pass=self.gates["pass"],
            gate_fail=self.gates["fail"],
            list_nonempty=self.list_nonempty,
            list_items=self.list_items,
            llm_minus_offline=self.offline_diff.mean_or_none,
            n_offline_pairs=self.offline_diff.n,
        )


@dataclass
class GroupView:
    """One row of a breakdown table."""

    key: str
    n: int
    n_scored: int
    mean_composite: float | None
    verdicts: Counter[str]
    pass_rate: float | None


class _GroupAcc:
    """Per judge / language / intent: n, composite mean, verdict counts, pass rate."""

    def __init__(self) -> None:
        self.n = 0
        self.n_scored = 0
        self.n_pass = 0
        self.verdicts: Counter[str] = Counter()
        self.composite = _Moments()

    def add(self, record: Mapping[str, Any], verdict: str) -> None:
        self.n += 1
        self.verdicts[verdict] += 1
        if record.get("status") == "scored":
            self.n_scored += 1
            self.n_pass += verdict in _PASS_VERDICTS
        composite = _as_float(record.get("composite_score"))
        if composite is not None:
            self.composite.add(composite)

    @property
    def pass_rate(self) -> float | None:
        # Pass rate over scored samples: unscored and invalid ones are reported on their own.
        return self.n_pass / self.n_scored if self.n_scored else None

    def view(self, key: str) -> GroupView:
        return GroupView(key, self.n, self.n_scored, self.composite.mean_or_none, self.verdicts, self.pass_rate)


class _JudgeAcc:
    def __init__(self) -> None:
        self.group = _GroupAcc()
        self.dims: dict[str, _DimAcc] = {}
        self.hist_composite = [0] * SCALE_100.bins

    def add(self, record: Mapping[str, Any], verdict: str) -> None:
        self.group.add(record, verdict)
        composite = _as_float(record.get("composite_score"))
        if composite is not None:
            self.hist_composite[SCALE_100.index(composite)] += 1
        dims = record.get("dimensions")
        if isinstance(dims, Mapping):
            for name, entry in dims.items():
                if isinstance(entry, Mapping):
                    acc = self.dims.get(str(name))
                    if acc is None:
                        acc = self.dims[str(name)] = _DimAcc(str(name))
                    acc.add(entry)


def _verdict_of(record: Mapping[str, Any]) -> str:
    status = record.get("status")
    if status in ("invalid", "unscored"):
        return str(status)
    verdict = record.get("verdict")
    return str(verdict) if verdict else "unknown"


def _key_of(record: Mapping[str, Any], field_name: str) -> str:
    value = record.get(field_name)
    return str(value) if value not in (None, "") else "(none)"


def _failed_gates(record: Mapping[str, Any]) -> list[str]:
    dims = record.get("dimensions")
    if not isinstance(dims, Mapping):
        return []
    return [str(k) for k, e in dims.items() if isinstance(e, Mapping) and e.get("value") == "fail"]


def _fmt_issue(issue: Any) -> str:
    if isinstance(issue, Mapping):
        fld = issue.get("field") or issue.get("loc") or issue.get("path")
        msg = issue.get("message") or issue.get("msg") or issue.get("error") or ""
        return f"{fld}: {msg}" if fld is not None and msg else _clip(msg or dict(issue), 500)
    return _clip(str(issue), 500)


# --------------------------------------------------------------------------------------------------
# Cases shown individually


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


def _dim_value(value: Any) -> str:
    if value is None:
        return "—"
    if _is_number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "[]"
    return _clip(str(value), 300)


# Han, kana and hangul: text that shows as boxes on a system without a CJK font.
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_CJK_MARK = "<!--bqas:cjk-note-->"
CJK_NOTE = (
    '<p class="notice cjk-note">This report contains Chinese, Japanese or Korean text. Where it shows as '
    "boxes, the system lacks a CJK font: install Noto Sans CJK SC (Debian/Ubuntu: fonts-noto-cjk) or "
    "Source Han Sans SC; the report names them first in its font list.</p>"
)


def _cjk_note(html: str) -> str:
    """Put the missing-font note at the template's mark when the report holds CJK text (record texts
    are escaped, so no record can contain the mark itself)."""
    return html.replace(_CJK_MARK, CJK_NOTE if CJK_RE.search(html) else "", 1)


def _tier_value(entry: Mapping[str, Any], key: str) -> str:
    """A tier's own value of a dimension, "" when it has none or it equals the value shown
    (so an offline decision no longer reads "fail (offline —)")."""
    raw = entry.get(key)
    if raw is None or raw == entry.get("value"):
        return ""
    return _dim_value(raw)


def _case_view(record: Mapping[str, Any], *, full: bool) -> CaseView:
    """Project a record onto what the report shows; ``full`` adds inputs, dimensions and reasoning."""
    verdict = _verdict_of(record)
    status = str(record.get("status") or "?")
    if status == "invalid":
        reason = "; ".join(_fmt_issue(e) for e in as_list(record.get("errors"))) or "(no error given)"
    elif status == "unscored":
        reason = str(record.get("unscored_reason") or "(no reason given)")
    else:
        reason = ""
    inputs: list[tuple[str, str]] = []
    dims: list[DimCell] = []
    if full:
        raw_inputs = record.get("inputs")
        if isinstance(raw_inputs, Mapping):
            inputs = [(str(k), _clip(v)) for k, v in raw_inputs.items()]
        raw_dims = record.get("dimensions")
        if isinstance(raw_dims, Mapping):
            for name, e in raw_dims.items():
                if not isinstance(e, Mapping):
                    continue
                measured = e.get("measured")
                dims.append(
                    DimCell(
                        name=str(name),
                        value=_dim_value(e.get("value")),
                        measured=bool(measured if measured is not None else e.get("value") is not None),
                        backend=str(e.get("backend") or ""),
                        model=str(e.get("model") or ""),
                        method=str(e.get("method") or ""),
                        note=str(e.get("note") or ""),
                        offline_value=_tier_value(e, "offline_value"),
                        llm_value=_tier_value(e, "llm_value"),
                    )
                )
    composite = record.get("composite_score")
    coverage = record.get("coverage")
    truncated = record.get("truncated")
    return CaseView(
        sample_id=_key_of(record, "sample_id")
        if record.get("sample_id") not in (None, "")
        else f"line {record.get('line', '?')}",
        judge=_key_of(record, "judge"),
        language=_key_of(record, "language"),
        intent=str(record.get("intent") or ""),
        line=str(record.get("line") if record.get("line") is not None else ""),
        status=status,
        verdict=verdict,
        composite=_as_float(composite),
        coverage=_as_float(coverage),
        partial=bool(record.get("partial")),
        escalation=str(record.get("escalation") or ""),
        escalation_reasons=[_clip(str(r), 500) for r in as_list(record.get("escalation_reasons"))],
        reasoning=_clip(record.get("reasoning") or "") if full else "",
        reason=_clip(reason, 1000),
        failed_gates=_failed_gates(record),
        inputs=inputs,
        dims=dims,
        errors=[_fmt_issue(e) for e in as_list(record.get("errors"))],
        warnings=[_fmt_issue(w) for w in as_list(record.get("warnings"))],
        truncated=[str(k) for k in truncated] if isinstance(truncated, Mapping) else [],
        prompt_id=str(record.get("prompt_id") or ""),
        backend_info=f"{record.get('llm_calls') or 0} LLM calls" + (", cache hit" if record.get("cache_hit") else ""),
    )


class _Worst:
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
        c = _as_float(composite)
        c = math.inf if c is None else c
        gate = 1 if _failed_gates(record) else 0
        key = (-c, gate, -seq)  # larger key = worse record (lower composite, failed gate, earlier)
        if len(self._heap) < self.n:
            heapq.heappush(self._heap, (*key, _case_view(record, full=True)))
        elif key > self._heap[0][:3]:
            heapq.heapreplace(self._heap, (*key, _case_view(record, full=True)))

    def cases(self) -> list[CaseView]:
        return [item[3] for item in sorted(self._heap, key=lambda item: item[:3], reverse=True)]


class _Capped:
    """A list of row views kept up to ``cap`` entries, with the total count."""

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 0)
        self.total = 0
        self.rows: list[CaseView] = []

    def add(self, record: Mapping[str, Any]) -> None:
        self.total += 1
        if len(self.rows) < self.cap:
            self.rows.append(_case_view(record, full=False))


@dataclass
class ChangeRow:
    """A sample whose verdict differs from the baseline's."""

    sample_id: str
    judge: str
    before: str
    after: str
    composite_before: float | None
    composite_after: float | None


@dataclass
class DiffRow:
    """Mean of one dimension (or composite/pass rate) of one judge, baseline against current."""

    judge: str
    name: str
    kind: str
    baseline: float | None
    current: float | None
    n_baseline: int
    n_current: int

    @property
    def diff(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


class _Stats:
    """Everything aggregated over one stream of records (used for the run and for its baseline)."""

    def __init__(self) -> None:
        self.total = 0
        self.verdicts: Counter[str] = Counter()
        self.judges: dict[str, _JudgeAcc] = {}
        self.languages: dict[str, _GroupAcc] = {}
        self.intents: dict[str, _GroupAcc] = {}

    def add(self, record: Mapping[str, Any]) -> str:
        verdict = _verdict_of(record)
        self.total += 1
        self.verdicts[verdict] += 1
        judge = _key_of(record, "judge")
        if judge not in self.judges:
            self.judges[judge] = _JudgeAcc()
        self.judges[judge].add(record, verdict)
        for table, fld in ((self.languages, "language"), (self.intents, "intent")):
            key = _key_of(record, fld)
            if key not in table:
                table[key] = _GroupAcc()
            table[key].add(record, verdict)
        return verdict


def _order_verdicts(keys: Iterable[str]) -> list[str]:
    rank = {v: i for i, v in enumerate(_VERDICT_ORDER)}
    return sorted(set(keys), key=lambda v: (rank.get(v, len(rank)), v))


def _gate_pass_share(acc: _DimAcc) -> float | None:
    n = acc.gates["pass"] + acc.gates["fail"]
    return acc.gates["pass"] / n if n else None


def _diff_rows(current: _Stats, baseline: _Stats) -> list[DiffRow]:
    rows: list[DiffRow] = []
    for judge in [*current.judges, *(j for j in baseline.judges if j not in current.judges)]:
        cur, base = current.judges.get(judge), baseline.judges.get(judge)
        cg, bg = (cur.group if cur else None), (base.group if base else None)
        rows.append(
            DiffRow(
                judge,
                "composite",
                "score",
                bg.composite.mean_or_none if bg else None,
                cg.composite.mean_or_none if cg else None,
                bg.composite.n if bg else 0,
                cg.composite.n if cg else 0,
            )
        )
        rows.append(
            DiffRow(
                judge,
                "pass rate",
                "rate",
                bg.pass_rate if bg else None,
                cg.pass_rate if cg else None,
                bg.n_scored if bg else 0,
                cg.n_scored if cg else 0,
            )
        )
        names = [
            *(cur.dims if cur else {}),
            *(n for n in (base.dims if base else {}) if not cur or n not in cur.dims),
        ]
        for name in names:
            cd = cur.dims.get(name) if cur else None
            bd = base.dims.get(name) if base else None
            either = cd or bd
            kind = either.kind if either is not None else "unmeasured"
            if kind == "score":
                rows.append(
                    DiffRow(
                        judge,
                        name,
                        "score",
                        bd.moments.mean_or_none if bd else None,
                        cd.moments.mean_or_none if cd else None,
                        bd.moments.n if bd else 0,
                        cd.moments.n if cd else 0,
                    )
                )
            elif kind == "gate":
                rows.append(
                    DiffRow(
                        judge,
                        f"{name} (pass share)",
                        "rate",
                        _gate_pass_share(bd) if bd else None,
                        _gate_pass_share(cd) if cd else None,
                        (bd.gates["pass"] + bd.gates["fail"]) if bd else 0,
                        (cd.gates["pass"] + cd.gates["fail"]) if cd else 0,
                    )
                )
    return rows


# --------------------------------------------------------------------------------------------------
# Template environment


def _finalize(value: Any) -> Any:
    # Applied to every {{ }} output before escaping: strip characters HTML cannot carry (NUL etc.).
    if isinstance(value, str) and not isinstance(value, Markup):
        return clean_text(value)
    return value


def _num(value: Any, digits: int = 1) -> str:
    if value is None or isinstance(value, bool):
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "—"
    return str(value)


def _val(value: Any) -> str:
    """Threshold values: ratios and counts shown compactly (0.6, 0.71, 85)."""
    if _is_number(value):
        return f"{value:.4g}"
    return "—" if value is None else str(value)


def _pct(value: Any, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f} %" if _is_number(value) else "—"


def _signed(value: Any, digits: int = 2) -> str:
    return f"{value:+.{digits}f}" if _is_number(value) else "—"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        autoescape=True,  # record texts are untrusted: every output is escaped
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, val=_val, pct=_pct, signed=_signed, when=_when, verdict_css=verdict_css)
    return env


def _load_template() -> jinja2.Template:
    source = resources.files("bqas.report").joinpath("templates", _TEMPLATE).read_text(encoding="utf-8")
    return _environment().from_string(source)


def _when(value: Any) -> str:
    """An ISO timestamp shown as ``2026-11-29 10:00:05 UTC`` (narrower than the ISO form)."""
    if value is None:
        return "—"
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    text = when.strftime("%Y-%m-%d %H:%M:%S")
    offset = when.utcoffset()
    if offset is None:
        return text
    return f"{text} UTC" if not offset else f"{text} {when.strftime('%z')}"


def _duration(run: Mapping[str, Any]) -> str:
    try:
        start = datetime.fromisoformat(str(run["started_at"]))
        end = datetime.fromisoformat(str(run["finished_at"]))
    except (KeyError, TypeError, ValueError):
        return ""
    seconds = (end - start).total_seconds()
    if seconds < 0:
        return ""
    minutes, sec = divmod(seconds, 60)
    return f"{int(minutes)} min {sec:.0f} s" if minutes else f"{sec:.1f} s"


# --------------------------------------------------------------------------------------------------


def write_html_report(
    path: Path,
    run: Mapping[str, Any],
    records: Iterable[Mapping[str, Any]],
    *,
    baseline: tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]] | None = None,
    worst_n: int = 20,
    max_escalations: int = 200,
) -> None:
    """Write a self-contained HTML report of a run to ``path``.

    ``records`` (and the baseline's records) are consumed once each. The report shows the run header
    and threshold results, verdict counts, per-dimension distributions with provenance, breakdowns per
    judge/language/intent, the ``worst_n`` worst scored cases, the escalations, the unscored and the
    invalid samples (each list capped at ``max_escalations`` rows, with the total count), and — given
    a ``baseline`` (run metadata, records) — mean differences and the samples whose verdict changed
    (matched by ``sample_id`` + ``judge``).
    """
    path = Path(path)
    template = _load_template()  # fail before consuming the stream if the package data is missing

    base_stats: _Stats | None = None
    base_verdicts: dict[tuple[str, str], tuple[str, float | None]] = {}
    base_run: Mapping[str, Any] | None = None
    if baseline is not None:
        base_run, base_records = baseline
        base_stats = _Stats()
        for record in base_records:
            verdict = base_stats.add(record)
            composite = record.get("composite_score")
            # Only the verdict and composite per sample are kept, to match the current run against.
            base_verdicts[(_key_of(record, "sample_id"), _key_of(record, "judge"))] = (
                verdict,
                _as_float(composite),
            )

    stats = _Stats()
    worst = _Worst(worst_n)
    escalations, unscored, invalid = (
        _Capped(max_escalations),
        _Capped(max_escalations),
        _Capped(max_escalations),
    )
    # Samples whose --repeats straddle a verdict threshold (their records, capped like the other lists).
    flaky: dict[str, Any] = {"total": 0, "rows": []}
    changes: list[ChangeRow] = []
    n_changes = n_matched = n_new = 0
    from bqas.trust.summary import TrustStats

    trust = TrustStats()
    for seq, record in enumerate(records):
        verdict = stats.add(record)
        trust.add(record)
        status = record.get("status")
        if status == "invalid":
            invalid.add(record)
        elif status == "unscored":
            unscored.add(record)
        else:
            worst.offer(seq, record)
        if record.get("escalation") not in (None, "", "none"):
            escalations.add(record)
        if isinstance(record.get("repeats"), Mapping) and record["repeats"].get("straddles"):
            flaky["total"] += 1
            if len(flaky["rows"]) < max_escalations:
                flaky["rows"].append(record)
        if baseline is not None:
            key = (_key_of(record, "sample_id"), _key_of(record, "judge"))
            before = base_verdicts.pop(key, None)
            if before is None:
                n_new += 1
                continue
            n_matched += 1
            if before[0] != verdict:
                n_changes += 1
                if len(changes) < max_escalations:
                    composite = record.get("composite_score")
                    changes.append(
                        ChangeRow(
                            key[0],
                            key[1],
                            before[0],
                            verdict,
                            before[1],
                            _as_float(composite),
                        )
                    )

    verdict_rows = [(v, stats.verdicts[v]) for v in _order_verdicts(stats.verdicts)]
    all_verdicts = _order_verdicts([*stats.verdicts, *(base_stats.verdicts if base_stats else ())])
    judges = []
    for name, acc in stats.judges.items():
        judges.append(
            {
                "name": name,
                "group": acc.group.view(name),
                "composite_chart": histogram_chart(
                    acc.hist_composite, SCALE_100, f"{name}: composite", x_title="composite score"
                )
                if acc.group.composite.n
                else None,
                "dims": [d.view(name) for d in acc.dims.values()],
            }
        )
    threshold_results = [t for t in as_list(run.get("threshold_results")) if isinstance(t, Mapping)]
    totals = run.get("totals") if isinstance(run.get("totals"), Mapping) else {}
    counted = {
        "samples": stats.total,
        "scored": sum(j.group.n_scored for j in stats.judges.values()),
        "unscored": stats.verdicts["unscored"],
        "invalid": stats.verdicts["invalid"],
    }
    mismatch = [
        f"{k}: run metadata says {totals[k]}, the records hold {v}"
        for k, v in counted.items()
        if isinstance(totals, Mapping) and _is_number(totals.get(k)) and totals[k] != v
    ]

    context: dict[str, Any] = {
        "run": run,
        "duration": _duration(run),
        "judges_meta": ", ".join(str(j) for j in as_list(run.get("judges"))),
        "thresholds": threshold_results,
        "thresholds_ok": all(t.get("passed") is True for t in threshold_results),
        "totals": totals or {},
        "counted": counted,
        "mismatch": mismatch,
        "verdict_counts": stats.verdicts,
        "verdict_chart": verdict_chart(verdict_rows, stats.total),
        "all_verdicts": all_verdicts,
        "n_records": stats.total,
        "judges": judges,
        "by_judge": [acc.group.view(name) for name, acc in stats.judges.items()],
        "by_language": [g.view(k) for k, g in sorted(stats.languages.items())],
        "by_intent": [g.view(k) for k, g in sorted(stats.intents.items())],
        "worst": worst.cases(),
        "worst_n": worst_n,
        "escalations": escalations,
        "unscored": unscored,
        "invalid": invalid,
        "baseline": None,
        "trust": _trust_view(run, trust.as_dict()),
        "repeats": run.get("repeats") if isinstance(run.get("repeats"), Mapping) else None,
        "flaky": flaky,
    }
    if base_stats is not None and base_run is not None:
        context["baseline"] = {
            "run": base_run,
            "total": base_stats.total,
            "verdicts": base_stats.verdicts,
            "diffs": _diff_rows(stats, base_stats),
            "changes": changes,
            "n_changes": n_changes,
            "n_matched": n_matched,
            "n_new": n_new,
            "n_missing": len(base_verdicts),
        }

    html = _cjk_note(template.render(context))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
