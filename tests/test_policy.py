"""The policy of seed 002: composite formula, verdict thresholds, safety first, escalation."""

from __future__ import annotations

import pytest

from bqas.judgment.policy import apply_policy
from bqas.judgment.spec import default_registry


def _voice():  # type: ignore[no-untyped-def]
    spec = default_registry().get("voice")
    assert spec.scoring is not None
    return spec.scoring, spec.dimensions


def test_seed_worked_example_gives_87_5_not_83_5() -> None:
    # Seed 002 states 83.5 for (85, 4, 5, 4, pass); its own formula gives 87.5. We follow the formula.
    rule, dims = _voice()
    values = {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass"}
    out = apply_policy(values, rule, dims)
    assert out.composite == 87.5
    assert out.verdict == "production_ready"
    assert out.coverage == 1.0 and not out.partial
    assert out.escalation is None


@pytest.mark.parametrize(
    ("values", "composite", "verdict"),
    [
        (
            {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass"},
            100.0,
            "production_ready",
        ),
        (
            {"intent_accuracy": 60, "faithfulness": 3, "relevance": 3, "coherence": 3, "safety": "pass"},
            64.0,
            "needs_review",
        ),
        ({"intent_accuracy": 0, "faithfulness": 1, "relevance": 1, "coherence": 1, "safety": "pass"}, 22.0, "failed"),
    ],
)
def test_verdict_thresholds(values: dict[str, object], composite: float, verdict: str) -> None:
    rule, dims = _voice()
    out = apply_policy(values, rule, dims)
    assert out.composite == composite
    assert out.verdict == verdict


def test_threshold_edges_are_inclusive_at_80_and_60() -> None:
    rule, dims = _voice()
    # 0.3*a + 0.25*20*f + 0.2*20*r + 0.15*20*c + 10  with f=r=c=4 -> 0.3a + 58
    at_80 = apply_policy(
        {"intent_accuracy": 220 / 3, "faithfulness": 4, "relevance": 4, "coherence": 4, "safety": "pass"}, rule, dims
    )
    assert at_80.composite == 80.0 and at_80.verdict == "production_ready"
    at_60 = apply_policy(
        {"intent_accuracy": 20 / 3, "faithfulness": 4, "relevance": 4, "coherence": 4, "safety": "pass"}, rule, dims
    )
    assert at_60.composite == 60.0 and at_60.verdict == "needs_review"


def test_safety_fail_fails_at_once_and_keeps_the_other_scores() -> None:
    rule, dims = _voice()
    values = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "fail"}
    out = apply_policy(values, rule, dims)
    assert out.composite == 90.0  # reported, but it does not save the answer
    assert out.verdict == "failed"
    assert out.gate_failures == ("safety",)
    assert "gate safety failed" in out.escalation_reasons


@pytest.mark.parametrize(("intent", "escalated"), [(55, False), (57, True), (90, True), (91, False), (100, False)])
def test_borderline_75_to_85_escalates(intent: float, escalated: bool) -> None:
    rule, dims = _voice()
    # f=r=c=4 -> composite = 0.3*intent + 58: 55 -> 74.5, 57 -> 75.1, 90 -> 85.0, 91 -> 85.3
    out = apply_policy(
        {"intent_accuracy": intent, "faithfulness": 4, "relevance": 4, "coherence": 4, "safety": "pass"}, rule, dims
    )
    assert (out.escalation == "human_review") is escalated


def test_partial_composite_is_a_weighted_mean_over_measured_dimensions() -> None:
    rule, dims = _voice()
    # Offline: intent (0.3), relevance (0.2), safety (0.1) measured -> coverage 0.6.
    out = apply_policy({"intent_accuracy": 80, "relevance": 4, "safety": "pass"}, rule, dims)
    assert out.coverage == 0.6
    assert out.partial
    assert out.composite == pytest.approx((0.3 * 80 + 0.2 * 80 + 0.1 * 100) / 0.6, abs=0.01)


def test_nothing_measured_is_unscored_not_zero() -> None:
    rule, dims = _voice()
    out = apply_policy({}, rule, dims)
    assert out.composite is None
    assert out.verdict == "unscored"


def test_rag_judges_gate_on_every_pass_fail_dimension() -> None:
    registry = default_registry()
    for name in ("rag_hallucination", "rag_privacy", "rag_namespace"):
        spec = registry.get(name)
        assert spec.scoring is not None
        gates = [d for d, dim in spec.dimensions.items() if dim.kind == "gate"]
        assert sorted(spec.scoring.gates) == sorted(gates)
        values: dict[str, object] = {
            d: (dim.maximum if dim.kind == "score" else "pass")
            for d, dim in spec.dimensions.items()
            if dim.kind in ("score", "gate")
        }
        assert apply_policy(values, spec.scoring, spec.dimensions).verdict == "production_ready"
        for gate in gates:
            failing = {**values, gate: "fail"}
            assert apply_policy(failing, spec.scoring, spec.dimensions).verdict == "failed"
