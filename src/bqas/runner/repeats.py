"""Repeated runs (``--repeats N``): settle each sample's N judgments into one canonical record, and the
run-level figures of each repeat into their spread.

The canonical verdict is the majority of the repeats' verdicts; a tie (no verdict has more votes than every
other) is escalated to a human and reads ``needs_review``: neither side of the threshold wins by a coin
flip. A sample whose repeats disagree straddles a verdict threshold of the policy and is flagged
``straddles``. The canonical record is the repeat closest to the median composite among those with the
canonical verdict (a real judgment, not an average of several); its cost figures are the sum of all repeats.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from bqas.runner.scenario import Thresholds
from bqas.runner.summary import RunSummary, check_thresholds

TIE_REASON = "repeats tie: {counts}; a human decides"
_COSTS = ("llm_calls", "prompt_tokens", "completion_tokens")


def _group_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record.get("sample_id"), record.get("judge"), record.get("metric"), record.get("line"))


def _spread(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    return {
        "n": len(values),
        "mean": round(statistics.fmean(values), 4),
        "std": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def settle_group(group: list[dict[str, Any]]) -> dict[str, Any]:
    """One canonical record for the repeats of one (sample, judge)."""
    if len(group) == 1 and "repeat" not in group[0]:
        return group[0]
    group = sorted(group, key=lambda r: int(r.get("repeat") or 1))
    verdicts = [str(r.get("verdict") or r.get("status")) for r in group]
    counts = Counter(verdicts).most_common()
    tie = len(counts) > 1 and counts[0][1] == counts[1][1]
    winner = counts[0][0]
    composites = [float(r["composite_score"]) for r in group if isinstance(r.get("composite_score"), int | float)]
    candidates = [r for r, v in zip(group, verdicts, strict=True) if tie or v == winner]
    scored = [r for r in candidates if isinstance(r.get("composite_score"), int | float)]
    if scored:
        median = statistics.median(float(r["composite_score"]) for r in scored)
        chosen = min(scored, key=lambda r: abs(float(r["composite_score"]) - median))
    else:
        chosen = candidates[0]
    record = dict(chosen)
    for name in _COSTS:
        record[name] = sum(int(r.get(name) or 0) for r in group)
    if tie:
        reason = TIE_REASON.format(counts=", ".join(f"{v} {n}" for v, n in counts))
        record["verdict"] = "needs_review"
        record["escalation"] = "human_review"
        record["escalation_reasons"] = [*(record.get("escalation_reasons") or []), reason]
    record["repeats"] = {
        "n": len(group),
        "rule": "majority; ties escalated",
        "canonical_verdict": record.get("verdict"),
        "canonical_repeat": chosen.get("repeat"),
        "tie": tie,
        "straddles": len(counts) > 1,
        "verdicts": verdicts,
        "composites": [r.get("composite_score") for r in group],
        "composite": _spread(composites),
        "agreement": round(counts[0][1] / len(group), 4),
    }
    return record


def settle(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The canonical record per (sample, judge), streaming: a sample's repeats come one after another
    (the store orders by sample sequence), so only one sample's repeats are held at a time."""
    group: list[dict[str, Any]] = []
    for record in records:
        if group and _group_key(record) != _group_key(group[0]):
            yield settle_group(group)
            group = []
        group.append(record)
    if group:
        yield settle_group(group)


def repeat_figures(records: Iterable[Mapping[str, Any]], thresholds: Thresholds, repeats: int) -> dict[str, Any]:
    """The run-level figures of each repeat and their spread (mean, std, min, max over the repeats).

    Records judged once (invalid samples, RAGAS metrics) count in every repeat, so that each repeat is a
    whole run. A gate ``straddles`` when some repeats meet it and others miss it."""
    per = {r: RunSummary() for r in range(1, repeats + 1)}
    for record in records:
        if "repeat" in record:
            per[int(record["repeat"])].add(record)
        else:
            for summary in per.values():
                summary.add(record)
    figures: dict[str, list[float]] = {"pass_rate": [], "mean_composite": [], "failed": [], "escalations": []}
    gates: dict[str, list[tuple[float | None, bool]]] = {}
    for summary in per.values():
        if summary.pass_rate is not None:
            figures["pass_rate"].append(summary.pass_rate)
        if summary.composite.n:
            figures["mean_composite"].append(summary.composite.mean)
        figures["failed"].append(float(summary.verdicts["failed"]))
        figures["escalations"].append(float(summary.escalations))
        for gate in check_thresholds(summary, thresholds):
            gates.setdefault(gate.name, []).append((gate.actual, gate.passed))
    return {
        "n": repeats,
        "figures": {
            name: {**_spread(values), "values": [round(v, 4) for v in values]} for name, values in figures.items()
        },
        "gates": {
            name: {
                "actual": [a for a, _ in results],
                "met": sum(1 for _, ok in results if ok),
                "straddles": len({ok for _, ok in results}) > 1,
            }
            for name, results in gates.items()
        },
    }


def flaky_count(records: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(samples whose repeats straddle a verdict threshold, of those the ties escalated) in settled records."""
    straddles = ties = 0
    for record in records:
        info = record.get("repeats") or {}
        straddles += 1 if info.get("straddles") else 0
        ties += 1 if info.get("tie") else 0
    return straddles, ties
