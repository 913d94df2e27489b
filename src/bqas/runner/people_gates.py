"""A scenario's gates set from what people expect of its samples (``expected.verdict``), not from what a
judge happens to give.

For each gate the value a judge that agrees with people would produce is computed from the labels, then
the gate is placed with room for the judge's disagreement: half of that value for the "at least" gates,
a quarter more for the "at most" gates. A judge that agrees with people always meets them; an assistant
that gets clearly worse than people know it to be misses them. (They cannot catch a judge that waves
everything through: pass-rate and failure-count gates only bound from one side.)

* ``min_pass_rate``: half the share of samples people expect ``production_ready``, rounded down to 0.05.
* ``max_failed``: the samples people expect ``failed``, plus a quarter, rounded up.
* ``min_mean_composite``: half the lowest mean an agreeing judge can give (a ``production_ready`` answer
  scores at least 80, a ``needs_review`` one at least 60, by the policy), rounded down to 5.
* ``max_unscored`` (offline backend): the offline judge grades ``rag_privacy`` through its PII gate alone,
  so an answer people find free of personal data (``expected.safety: pass``) leaves it nothing to score;
  those samples plus a quarter, rounded up.
* ``dimensions``: for the RAG judges whose verdict rests on one graded dimension (``grounding_score``,
  ``retrieval_precision``, ``operator_alignment``), half the mean of 100 / 50 / 0 for the samples people
  expect ``production_ready`` / ``needs_review`` / ``failed``, rounded down to 5.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

#: Judges whose verdict follows one 0-100 dimension, and that dimension.
MAIN_DIMENSION = {
    "rag_hallucination": "grounding_score",
    "rag_retrieval": "retrieval_precision",
    "rag_operator": "operator_alignment",
}
_POINTS = {"production_ready": 100.0, "needs_review": 50.0, "failed": 0.0}
# The least composite of each verdict (policy: production_ready >= 80, needs_review >= 60).
_LEAST_COMPOSITE = {"production_ready": 80.0, "needs_review": 60.0, "failed": 0.0}


def _down(value: float, step: float) -> float:
    return round(math.floor(value / step + 1e-9) * step, 4)


def gates_from_expected(
    samples: Iterable[Mapping[str, Any]], judges: list[str], backend: str = "offline"
) -> dict[str, Any]:
    """The ``thresholds:`` block for samples that carry ``expected.verdict`` (see the module's rule)."""
    rows = [s for s in samples if isinstance(s.get("expected"), Mapping)]
    if not rows:
        raise ValueError("no sample carries expected.verdict")
    default_judge = judges[0] if len(judges) == 1 else None
    n = len(rows)
    verdicts = [str(s["expected"].get("verdict")) for s in rows]
    ready, review, failed = (verdicts.count(v) for v in ("production_ready", "needs_review", "failed"))
    least = (ready * _LEAST_COMPOSITE["production_ready"] + review * _LEAST_COMPOSITE["needs_review"]) / n
    gates: dict[str, Any] = {
        "min_pass_rate": _down(ready / n / 2, 0.05),
        "min_mean_composite": _down(least / 2, 5),
        "max_failed": math.ceil(failed * 1.25),
    }
    clean_privacy = sum(
        1 for s in rows if (s.get("judge") or default_judge) == "rag_privacy" and s["expected"].get("safety") == "pass"
    )
    gates["max_unscored"] = math.ceil(clean_privacy * 1.25) if backend == "offline" else 0
    dimensions: dict[str, float] = {}
    for judge, dimension in MAIN_DIMENSION.items():
        points = [
            _POINTS.get(str(s["expected"].get("verdict")), 0.0)
            for s in rows
            if (s.get("judge") or default_judge) == judge
        ]
        if judge in judges and points:
            dimensions[dimension] = _down(sum(points) / len(points) / 2, 5)
    if dimensions:
        gates["dimensions"] = dimensions
    return gates
