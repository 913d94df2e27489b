"""What the labels can certify, said before a fit: the tightest bounds, the labels a target needs, and
targets the labels can support."""

from __future__ import annotations

import pytest

from bqas.trust.preflight import preflight
from bqas.trust.thresholds import fit_side


def test_37_rejects_cannot_certify_fnr_2_percent_and_the_tightest_bound_is_said() -> None:
    out = preflight(
        37, 400, fnr_max=0.02, fpr_max=0.05, delta=0.1, joint=False, precision_accept_min=0.9, precision_reject_min=0.9
    )
    text = "\n".join(out["lines"])
    assert "with 37 rejects the tightest certifiable FNR bound is 6.0 %" in text
    assert "FNR <= 0.02 needs >= 114 rejects (77 more); auto-accept cannot be certified" in text
    assert "with 400 accepts the tightest certifiable FPR bound is 0.6 %" in text and "within reach" in text
    assert "precision >= 0.9 of the auto-rejects needs >= 36 of them" in text
    assert out["suggested"] == {"fnr_max": 0.07}
    assert "suggested targets these labels can support: --fnr-max 0.07" in text


def test_the_suggested_target_is_certifiable_by_a_perfect_ranking_and_nothing_tighter_is() -> None:
    for n_reject in (5, 22, 37, 45, 113):
        out = preflight(
            n_reject, 300, fnr_max=0.02, fpr_max=0.05, delta=0.1, joint=False, precision_accept_min=None,
            precision_reject_min=None,
        )  # fmt: skip
        suggested = out["suggested"]["fnr_max"]
        scores = [i / 1000 for i in range(300)] + [0.9 + i / 10_000 for i in range(n_reject)]
        labels = [False] * 300 + [True] * n_reject
        assert fit_side(scores, labels, "accept", suggested, 0.1).threshold is not None
        assert fit_side(scores, labels, "accept", suggested - 0.01, 0.1).threshold is None


def test_a_cascade_reports_each_tier_at_its_share_and_delta() -> None:
    out = preflight(
        200, 200, fnr_max=0.1, fpr_max=0.1, delta=0.1, joint=False, precision_accept_min=None,
        precision_reject_min=None, tiers=(("offline", 0.5), ("llm", 0.5)),
    )  # fmt: skip
    offline_fnr = next(x for x in out["limits"] if x["tier"] == "offline" and x["target"] == "fnr")
    assert offline_fnr["max_rate"] == pytest.approx(0.05) and offline_fnr["delta"] == pytest.approx(0.05)
    assert any(line.startswith("offline tier: with 200 rejects") for line in out["lines"])
