"""Aggregate a run's records in one streaming pass: verdict counts, dimension statistics, totals; and
check the scenario's thresholds."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bqas.runner.scenario import Thresholds
from bqas.trust.summary import TrustStats


@dataclass
class RunningStats:
    """Mean and standard deviation without keeping the values (Welford)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    minimum: float = math.inf
    maximum: float = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)
        self.minimum = min(self.minimum, x)
        self.maximum = max(self.maximum, x)

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0

    def as_dict(self) -> dict[str, Any]:
        if self.n == 0:
            return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
        return {
            "n": self.n,
            "mean": round(self.mean, 4),
            "std": round(self.std, 4),
            "min": self.minimum,
            "max": self.maximum,
        }


_PARTIAL = re.compile(r";? ?partial composite [0-9.]+")


def reason_group(reason: Any) -> str:
    """An unscored reason without the parts that differ per sample (the partial composite's value), so
    that one cause reads as one sentence per run, however many results it left unscored."""
    text = _PARTIAL.sub("", str(reason or "no reason given")).replace("()", "").replace("( ", "(").replace(" ;", ";")
    return " ".join(text.split())[:300]


@dataclass
class UnscoredReasons:
    """Why results were left unscored, grouped by judge and cause (one line each, with its count)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    judged: Counter[str] = field(default_factory=Counter)

    def add(self, record: Mapping[str, Any]) -> None:
        judge = str(record.get("judge"))
        self.judged[judge] += 1
        if record.get("status") == "unscored":
            self.counts[(judge, reason_group(record.get("unscored_reason")))] += 1

    def as_list(self, limit: int = 10) -> list[dict[str, Any]]:
        return [
            {"judge": j, "reason": r, "count": n, "of": self.judged[j]} for (j, r), n in self.counts.most_common(limit)
        ]


def unscored_lines(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    """``rag_privacy: 4,329 of 5,093 results unscored: only 40% of the composite weight …``"""
    return [
        f"{g['judge']}: {g['count']:,} of {g['of']:,} results unscored: {g['reason']}"
        for g in groups
        if isinstance(g, Mapping) and g.get("count")
    ]


@dataclass
class TimingStats:
    """Judgment time of a run's records: end to end (``latency_ms``), the judgments' own work
    (``service_ms``) and their wait for a free worker or LLM slot (``queue_ms``; bqas.judgment.timing)."""

    latency: RunningStats = field(default_factory=RunningStats)
    service: RunningStats = field(default_factory=RunningStats)
    queue: RunningStats = field(default_factory=RunningStats)

    def add(self, record: Mapping[str, Any]) -> None:
        for key, stats in (("latency_ms", self.latency), ("service_ms", self.service), ("queue_ms", self.queue)):
            value = record.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                stats.add(float(value))

    def as_dict(self) -> dict[str, Any]:
        return {
            "latency_ms": self.latency.as_dict(),
            "service_ms": self.service.as_dict(),
            "queue_ms": self.queue.as_dict(),
        }


@dataclass
class DimensionAggregate:
    stats: RunningStats = field(default_factory=RunningStats)
    gates: Counter[str] = field(default_factory=Counter)
    not_measured: int = 0
    backends: Counter[str] = field(default_factory=Counter)


#: How many invalid records a summary keeps to show (the console, the CI summary); all are counted.
INVALID_EXAMPLES = 5


@dataclass
class RunSummary:
    """What a run amounted to."""

    samples: int = 0
    scored: int = 0
    unscored: int = 0
    invalid: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    composite: RunningStats = field(default_factory=RunningStats)
    dimensions: dict[str, DimensionAggregate] = field(default_factory=dict)
    escalations: int = 0
    partial: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    timing: TimingStats = field(default_factory=lambda: TimingStats())
    unscored_reasons: UnscoredReasons = field(default_factory=lambda: UnscoredReasons())
    trust: TrustStats = field(default_factory=TrustStats)
    # Results whose sample the assistant under test gave no usable answer for (bqas.targets).
    target_error_results: int = 0
    # Results whose judging failed for a reason outside the sample (``judge_error``; judged again on resume).
    judge_errors: int = 0
    target: TargetFigures = field(default_factory=lambda: TargetFigures())
    # The first invalid records (line, sample id, first error), for the console and the CI summary.
    invalid_examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, record: Mapping[str, Any]) -> None:
        self.samples += 1
        status = record.get("status")
        if isinstance(record.get("target"), Mapping) or status == "target_error":
            self.target.add(record)
        if status == "target_error":
            self.target_error_results += 1
            return
        if status == "judge_error":
            self.judge_errors += 1
            return
        if status == "invalid":
            self.invalid += 1
            if len(self.invalid_examples) < INVALID_EXAMPLES:
                errors = record.get("errors") or ["no reason given"]
                self.invalid_examples.append(
                    {"line": record.get("line"), "sample_id": record.get("sample_id"), "error": str(errors[0])}
                )
            return
        if status == "unscored":
            self.unscored += 1
        else:
            self.scored += 1
        self.unscored_reasons.add(record)
        verdict = record.get("verdict")
        if verdict:
            self.verdicts[str(verdict)] += 1
        if isinstance(record.get("composite_score"), int | float):
            self.composite.add(float(record["composite_score"]))
        if record.get("escalation"):
            self.escalations += 1
        self.trust.add(record)
        if record.get("partial"):
            self.partial += 1
        self.llm_calls += int(record.get("llm_calls") or 0)
        self.prompt_tokens += int(record.get("prompt_tokens") or 0)
        self.completion_tokens += int(record.get("completion_tokens") or 0)
        self.cache_hits += 1 if record.get("cache_hit") else 0
        self.timing.add(record)
        judge = str(record.get("judge"))
        for name, prov in (record.get("dimensions") or {}).items():
            agg = self.dimensions.setdefault(f"{judge}.{name}", DimensionAggregate())
            if not prov.get("measured", True) or prov.get("value") is None:
                agg.not_measured += 1
                continue
            agg.backends[str(prov.get("backend"))] += 1
            value = prov["value"]
            if value in ("pass", "fail"):
                agg.gates[value] += 1
            elif isinstance(value, int | float) and not isinstance(value, bool):
                agg.stats.add(float(value))

    @property
    def graded(self) -> int:
        """Results with a verdict of the policy (RAGAS metric records and classifiers have none)."""
        return sum(self.verdicts[v] for v in ("production_ready", "needs_review", "failed"))

    @property
    def pass_rate(self) -> float | None:
        """Share of graded results judged production_ready."""
        return self.verdicts["production_ready"] / self.graded if self.graded else None

    def dimension_mean(self, key: str) -> float | None:
        """Mean of ``judge.dimension`` or of ``dimension`` pooled over all judges that have it."""
        if "." in key:
            agg = self.dimensions.get(key)
            return agg.stats.mean if agg and agg.stats.n else None
        pooled = RunningStats()
        total = 0.0
        for name, agg in self.dimensions.items():
            if name.split(".", 1)[1] == key and agg.stats.n:
                total += agg.stats.mean * agg.stats.n
                pooled.n += agg.stats.n
        return total / pooled.n if pooled.n else None

    def as_dict(self, cost_usd: float | None = None) -> dict[str, Any]:
        data = self._as_dict(cost_usd)
        if self.judge_errors:
            data["judge_errors"] = self.judge_errors
        if self.invalid_examples:
            data["invalid_examples"] = list(self.invalid_examples)
        if self.target.asked:
            data["target_errors"] = self.target.errors
            data["target"] = self.target.as_dict()
        return data

    def _as_dict(self, cost_usd: float | None) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "scored": self.scored,
            "unscored": self.unscored,
            "invalid": self.invalid,
            "verdicts": dict(self.verdicts),
            "pass_rate": None if self.pass_rate is None else round(self.pass_rate, 4),
            "composite": self.composite.as_dict(),
            "escalations": self.escalations,
            "partial": self.partial,
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "cost_usd": cost_usd,
            **self.timing.as_dict(),
            "unscored_reasons": self.unscored_reasons.as_list(),
            "trust": self.trust.as_dict(),
            "dimensions": {
                k: {
                    **v.stats.as_dict(),
                    "not_measured": v.not_measured,
                    "pass": v.gates["pass"],
                    "fail": v.gates["fail"],
                    "backends": dict(v.backends),
                }
                for k, v in sorted(self.dimensions.items())
            },
        }


def invalid_lines(examples: Iterable[Mapping[str, Any]], source: str) -> list[str]:
    """Invalid records as ``file:line: problem`` (the readers name the file; the judges' checks say
    ``line N: field …``, which gets the dataset's name here)."""
    out = []
    for example in examples:
        error = str(example.get("error") or "")
        found = _LINE_PREFIX.match(error)
        if found:
            out.append(f"{source}:{found.group(1)}: {error[found.end() :]}")
        elif error.startswith(f"{source}:") or example.get("line") is None:
            out.append(error)
        else:
            out.append(f"{source}:{example['line']}: {error}")
    return out


_LINE_PREFIX = re.compile(r"line (\d+): ")


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of sorted ``values``, interpolated linearly (numpy's default)."""
    if not values:
        return None
    rank = (len(values) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


@dataclass
class TargetFigures:
    """The assistant's own figures over a run: answers, errors, latency and tokens per answer. A turn is
    counted once however many judges graded it (records name it by ``response_id``)."""

    seen: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    latencies: list[float] = field(default_factory=list)
    ttfts: list[float] = field(default_factory=list)  # streamed answers: time to first token
    reused: int = 0
    attempts: int = 0
    tokens: dict[str, list[int]] = field(
        default_factory=lambda: {"prompt_tokens": [], "completion_tokens": [], "total_tokens": []}
    )

    @property
    def asked(self) -> bool:
        return bool(self.seen or self.failed)

    @property
    def errors(self) -> int:
        return len(self.failed)

    def add(self, record: Mapping[str, Any]) -> None:
        key = str(record.get("response_id") or record.get("sample_id"))
        if record.get("status") == "target_error":
            self.failed.add(key)
            return
        if key in self.seen:
            return
        self.seen.add(key)
        info = record["target"]
        if info.get("reused_from"):
            self.reused += 1
        latency = info.get("latency_ms")
        if isinstance(latency, int | float) and not isinstance(latency, bool):
            self.latencies.append(float(latency))
        ttft = info.get("ttft_ms")
        if isinstance(ttft, int | float) and not isinstance(ttft, bool):
            self.ttfts.append(float(ttft))
        if isinstance(info.get("attempts"), int):
            self.attempts += info["attempts"]
        for name, values in self.tokens.items():
            value = info.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                values.append(value)

    def latency_percentile(self, q: float) -> float | None:
        value = percentile(sorted(self.latencies), q)
        return None if value is None else round(value, 1)

    def ttft_percentile(self, q: float) -> float | None:
        value = percentile(sorted(self.ttfts), q)
        return None if value is None else round(value, 1)

    def as_dict(self) -> dict[str, Any]:
        tokens = {
            name: {"answers": len(values), "total": sum(values), "per_answer": round(sum(values) / len(values), 1)}
            for name, values in self.tokens.items()
            if values
        }
        return {
            "answers": len(self.seen),
            "errors": len(self.failed),
            "reused": self.reused,
            "attempts": self.attempts,
            "latency_ms": {
                "n": len(self.latencies),
                "p50": self.latency_percentile(50),
                "p95": self.latency_percentile(95),
                "max": round(max(self.latencies), 1) if self.latencies else None,
            },
            "ttft_ms": {
                "n": len(self.ttfts),
                "p50": self.ttft_percentile(50),
                "p95": self.ttft_percentile(95),
                "max": round(max(self.ttfts), 1) if self.ttfts else None,
            },
            "tokens": tokens,
        }


def timing_text(summary: Mapping[str, Any]) -> str | None:
    """One line on where the judgments' time went: their own work (service time, what the judge policy's
    "mean evaluation time" means) and the wait for a free worker or LLM slot beside it; None without data."""
    service, queue, latency = (summary.get(k) or {} for k in ("service_ms", "queue_ms", "latency_ms"))
    if not service.get("n"):
        return None
    return (
        f"evaluation time per judgment: service (own work) mean {service['mean']:.1f} ms, max "
        f"{service['max']:.1f} · queue wait (worker, LLM slot) mean {queue.get('mean') or 0.0:.1f} ms · "
        f"end to end mean {latency.get('mean') or 0.0:.1f} ms (n={service['n']})"
    )


def summarize(records: Iterable[Mapping[str, Any]]) -> RunSummary:
    summary = RunSummary()
    for record in records:
        summary.add(record)
    return summary


@dataclass(frozen=True)
class ThresholdResult:
    name: str
    expected: float
    actual: float | None
    passed: bool
    # Why the gate could not be measured (it then counts as missed), e.g. NOT_EVALUATED.
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data = {"name": self.name, "expected": self.expected, "actual": self.actual, "passed": self.passed}
        if self.note:
            data["note"] = self.note
        return data


NOT_EVALUATED = "not evaluated: nothing was scored"
#: The gates that measure scored results: with none of them, they cannot be evaluated.
_SCORE_GATES = ("min_pass_rate", "min_mean_composite", "max_failed", "max_unscored", "dimension ")


def gate_result_text(gate: Mapping[str, Any]) -> str:
    """The result cell of a gate for people: met, MISSED, or why it could not be evaluated."""
    if gate.get("passed"):
        return "met"
    return str(gate.get("note") or "MISSED")


def check_thresholds(summary: RunSummary, thresholds: Thresholds) -> list[ThresholdResult]:
    """Each configured gate with the run's value. A gate with nothing to measure fails (no silent pass)."""
    out: list[ThresholdResult] = []

    def at_least(name: str, expected: float, actual: float | None) -> None:
        out.append(
            ThresholdResult(
                name, expected, None if actual is None else round(actual, 4), actual is not None and actual >= expected
            )
        )

    if thresholds.min_pass_rate is not None:
        at_least("min_pass_rate", thresholds.min_pass_rate, summary.pass_rate)
    if thresholds.min_mean_composite is not None:
        at_least(
            "min_mean_composite", thresholds.min_mean_composite, summary.composite.mean if summary.composite.n else None
        )
    if thresholds.max_failed is not None:
        failed = summary.verdicts["failed"]
        out.append(ThresholdResult("max_failed", thresholds.max_failed, failed, failed <= thresholds.max_failed))
    out.append(
        unscored_gate(
            summary.unscored,
            summary.samples - summary.invalid - summary.target_error_results - summary.judge_errors,
            thresholds.max_unscored,
        )
    )
    allowed_invalid = thresholds.max_invalid or 0
    out.append(ThresholdResult("max_invalid", allowed_invalid, summary.invalid, summary.invalid <= allowed_invalid))
    if summary.judge_errors or thresholds.max_judge_errors is not None:
        allowed = thresholds.max_judge_errors or 0
        errors = summary.judge_errors
        out.append(ThresholdResult("max_judge_errors", allowed, errors, errors <= allowed))
    if summary.target.asked or thresholds.max_target_errors is not None:
        allowed = thresholds.max_target_errors or 0
        errors = summary.target.errors
        out.append(ThresholdResult("max_target_errors", allowed, errors, errors <= allowed))
    if thresholds.max_target_p95_ms is not None:
        p95 = summary.target.latency_percentile(95)
        limit = thresholds.max_target_p95_ms
        out.append(ThresholdResult("max_target_p95_ms", limit, p95, p95 is not None and p95 <= limit))
    if thresholds.max_target_ttft_p95_ms is not None:  # missed too when no answer was streamed
        ttft = summary.target.ttft_percentile(95)
        limit = thresholds.max_target_ttft_p95_ms
        out.append(ThresholdResult("max_target_ttft_p95_ms", limit, ttft, ttft is not None and ttft <= limit))
    for key, minimum in thresholds.dimensions.items():
        at_least(f"dimension {key}", minimum, summary.dimension_mean(key))
    if summary.scored == 0:
        # Nothing scored: a gate that is missed only for that reason (no value to compare, no result
        # judged at all) says so instead of a bare MISSED.
        judged = summary.samples - summary.invalid - summary.target_error_results - summary.judge_errors
        out = [
            ThresholdResult(t.name, t.expected, t.actual, False, NOT_EVALUATED)
            if not t.passed
            and t.name.startswith(_SCORE_GATES)
            and (t.actual is None or (t.name == "max_unscored" and judged == 0))
            else t
            for t in out
        ]
    return out


def unscored_gate(unscored: int, judged: int, limit: float | None) -> ThresholdResult:
    """The ``max_unscored`` gate shared by ``bqas run``, ``bqas score`` and ``bqas calibrate``.

    ``limit`` is a count (0, 1, 2 …) or, below 1, a share of the judged results; None means 0. A run in
    which nothing was judged misses it too: no result is not a pass."""
    if limit is not None and 0 < limit < 1:
        share = unscored / judged if judged else 1.0
        return ThresholdResult("max_unscored", limit, round(share, 4), judged > 0 and share <= limit)
    allowed = int(limit or 0)
    return ThresholdResult("max_unscored", allowed, unscored, judged > 0 and unscored <= allowed)


def cost_estimate(summary: RunSummary, prompt_price: float | None, completion_price: float | None) -> float | None:
    """USD cost from token counts when both prices (per million tokens) are configured."""
    if prompt_price is None or completion_price is None:
        return None
    return round(summary.prompt_tokens / 1e6 * prompt_price + summary.completion_tokens / 1e6 * completion_price, 6)


def gate_state(summary: dict[str, Any] | None) -> str:
    """``met``, ``missed`` or ``–`` (a run that stored no gate results: older, failed or still running)."""
    gates = (summary or {}).get("gates")
    if not isinstance(gates, list):
        return "–"
    return "met" if all(g.get("passed") for g in gates if isinstance(g, dict)) else "missed"
