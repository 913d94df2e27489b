"""One pass over a run's records: running moments, fixed-bin histograms, provenance and verdict counts
per judge, dimension, language and intent (what the report's charts and breakdowns show). Bounded
memory: distinct labels are capped and pooled as "(other)".
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bqas.report.charts import SCALE_5, SCALE_100, Svg, gate_chart, histogram_chart

# Display order of verdicts; unknown verdicts follow in order of appearance.
# The verdicts of the judge policy; a pass is ``production_ready``.
VERDICT_ORDER = ("production_ready", "needs_review", "failed", "unscored", "invalid", "judge_error")


PASS_VERDICTS = frozenset({"production_ready"})


# Long untrusted texts are clipped so one runaway response cannot bloat the report.
MAX_TEXT = 4000


# Distinct labels/list items/notes kept per dimension; further ones are pooled as "(other)".
MAX_DISTINCT = 200


TOP_K = 8


class Moments:
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


def bump(counter: Counter[str], key: str, cap: int = MAX_DISTINCT) -> None:
    """Count ``key``, pooling new keys as "(other)" once ``cap`` distinct ones are held."""
    if key in counter or len(counter) < cap:
        counter[key] += 1
    else:
        counter["(other)"] += 1


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def as_float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def kind_of(value: Any) -> str:
    if is_number(value):
        return "score"
    if value in ("pass", "fail"):
        return "gate"
    if isinstance(value, list | tuple):
        return "list"
    return "label"


def clip(value: Any, limit: int = MAX_TEXT) -> str:
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


class DimAcc:
    """One dimension of one judge: counts, moments, histograms, provenance."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kinds: Counter[str] = Counter()
        self.moments = Moments()
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
        self.offline_diff = Moments()  # value − offline_value where an LLM overrode an offline value

    def add(self, entry: Mapping[str, Any]) -> None:
        value = entry.get("value")
        measured = entry.get("measured")
        if measured is None:
            measured = value is not None
        if not measured or value is None:
            self.not_measured += 1
            if entry.get("note"):
                bump(self.notes, str(entry["note"])[:160])
            return
        self.measured += 1
        backend = str(entry.get("backend") or "?")
        if entry.get("model"):
            backend += f" / {entry['model']}"
        bump(self.backends, backend)
        if entry.get("method"):
            bump(self.methods, str(entry["method"])[:120])
        kind = kind_of(value)
        self.kinds[kind] += 1
        if kind == "score":
            x = float(value)
            self.moments.add(x)
            self.hist5[SCALE_5.index(x)] += 1
            self.hist100[SCALE_100.index(x)] += 1
            self.vmin, self.vmax = min(self.vmin, x), max(self.vmax, x)
            offline = as_float(entry.get("offline_value"))
            if offline is not None:
                self.offline_diff.add(x - offline)
        elif kind == "gate":
            self.gates[str(value)] += 1
        elif kind == "list":
            self.list_nonempty += bool(value)
            self.list_items += len(value)
            for item in value:
                bump(self.values, str(item)[:120])
        else:
            bump(self.values, str(value)[:120])

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
            methods=self.methods.most_common(TOP_K),
            notes=self.notes.most_common(3),
            top=self.values.most_common(TOP_K),
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


class GroupAcc:
    """Per judge / language / intent: n, composite mean, verdict counts, pass rate."""

    def __init__(self) -> None:
        self.n = 0
        self.n_scored = 0
        self.n_pass = 0
        self.verdicts: Counter[str] = Counter()
        self.composite = Moments()

    def add(self, record: Mapping[str, Any], verdict: str) -> None:
        self.n += 1
        self.verdicts[verdict] += 1
        if record.get("status") == "scored":
            self.n_scored += 1
            self.n_pass += verdict in PASS_VERDICTS
        composite = as_float(record.get("composite_score"))
        if composite is not None:
            self.composite.add(composite)

    @property
    def pass_rate(self) -> float | None:
        # Pass rate over scored samples: unscored and invalid ones are reported on their own.
        return self.n_pass / self.n_scored if self.n_scored else None

    def view(self, key: str) -> GroupView:
        return GroupView(key, self.n, self.n_scored, self.composite.mean_or_none, self.verdicts, self.pass_rate)


class JudgeAcc:
    def __init__(self) -> None:
        self.group = GroupAcc()
        self.dims: dict[str, DimAcc] = {}
        self.hist_composite = [0] * SCALE_100.bins

    def add(self, record: Mapping[str, Any], verdict: str) -> None:
        self.group.add(record, verdict)
        composite = as_float(record.get("composite_score"))
        if composite is not None:
            self.hist_composite[SCALE_100.index(composite)] += 1
        dims = record.get("dimensions")
        if isinstance(dims, Mapping):
            for name, entry in dims.items():
                if isinstance(entry, Mapping):
                    acc = self.dims.get(str(name))
                    if acc is None:
                        acc = self.dims[str(name)] = DimAcc(str(name))
                    acc.add(entry)


def verdict_of(record: Mapping[str, Any]) -> str:
    status = record.get("status")
    if status in ("invalid", "unscored", "target_error", "judge_error"):
        return str(status)
    verdict = record.get("verdict")
    return str(verdict) if verdict else "unknown"


def key_of(record: Mapping[str, Any], field_name: str) -> str:
    value = record.get(field_name)
    return str(value) if value not in (None, "") else "(none)"


class Stats:
    """Everything aggregated over one stream of records (used for the run and for its baseline)."""

    def __init__(self) -> None:
        self.total = 0
        self.verdicts: Counter[str] = Counter()
        self.judges: dict[str, JudgeAcc] = {}
        self.languages: dict[str, GroupAcc] = {}
        self.intents: dict[str, GroupAcc] = {}

    def add(self, record: Mapping[str, Any]) -> str:
        verdict = verdict_of(record)
        self.total += 1
        self.verdicts[verdict] += 1
        judge = key_of(record, "judge")
        if judge not in self.judges:
            self.judges[judge] = JudgeAcc()
        self.judges[judge].add(record, verdict)
        for table, fld in ((self.languages, "language"), (self.intents, "intent")):
            key = key_of(record, fld)
            if key not in table:
                table[key] = GroupAcc()
            table[key].add(record, verdict)
        return verdict


def order_verdicts(keys: Iterable[str]) -> list[str]:
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(set(keys), key=lambda v: (rank.get(v, len(rank)), v))
