"""The trust-or-escalate statistics: exact bounds, fixed-sequence thresholds, degenerate inputs, simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta

from bqas.trust.bounds import cp_upper, max_errors_allowed, min_n_for_zero_errors
from bqas.trust.thresholds import decide, fit_side, fit_tier


def test_clopper_pearson_matches_the_binomial_tail() -> None:
    from scipy.stats import binom

    for k, n in [(0, 10), (3, 50), (20, 200)]:
        ub = float(cp_upper(k, n, 0.1))
        # At the upper bound the chance of seeing <= k errors is exactly delta.
        assert binom.cdf(k, n, ub) == pytest.approx(0.1, abs=1e-9)
    assert float(cp_upper(5, 5, 0.1)) == 1.0
    assert float(cp_upper(0, 0, 0.1)) == 1.0


def test_sample_size_floor() -> None:
    assert min_n_for_zero_errors(0.02, 0.1) == 114  # 0.98**114 ≈ 0.1
    assert 0.98**114 <= 0.1 < 0.98**113
    assert min_n_for_zero_errors(0.05, 0.1) == 45
    assert max_errors_allowed(113, 0.02, 0.1) == -1
    assert max_errors_allowed(114, 0.02, 0.1) == 0


def test_decide_regions_and_overlap() -> None:
    assert decide(0.01, 0.1, 0.9) == "accept"
    assert decide(0.95, 0.1, 0.9) == "reject"
    assert decide(0.5, 0.1, 0.9) == "escalate"
    assert decide(None, 0.1, 0.9) == "escalate"
    assert decide(0.5, 0.6, 0.4) == "escalate"  # overlapping regions escalate
    assert decide(0.5, None, None) == "escalate"


@pytest.mark.parametrize(
    ("scores", "labels", "needle"),
    [
        ([0.1, 0.2, 0.3, 0.4, 0.5], [False] * 5, "no response that people reject"),
        ([0.1, 0.2, 0.3, 0.4, 0.5], [True, False, True, False, True], "needed to certify"),
        ([0.5] * 400, [True] * 200 + [False] * 200, "tied scores"),
        ([], [], "no calibration data"),
        ([None] * 300, [True] * 150 + [False] * 150, "no scored response"),
    ],
)
def test_degenerate_inputs_certify_nothing_with_a_reason(
    scores: list[float | None], labels: list[bool], needle: str
) -> None:
    fit = fit_tier(scores, labels)
    assert fit.coverage == 0.0
    assert fit.accept.threshold is None and fit.accept.coverage == 0.0
    assert needle in (fit.accept.reason or "")
    assert fit.reject.threshold is None
    assert fit.reject.reason


def test_coarse_scores_with_ties_at_the_confident_end() -> None:
    # A perfectly ranking score with enough rejects certifies...
    rej = [True] * 200 + [False] * 200
    fine = [0.9 + i / 10_000 for i in range(200)] + [i / 10_000 for i in range(200)]
    assert fit_side(fine, rej, "accept", 0.02, 0.1).coverage == pytest.approx(0.5)
    # ... but ties at the confident end (rejects scored 0 like the accepts) certify nothing.
    coarse = [0.0] * 20 + [1.0] * 180 + [0.0] * 200
    fit = fit_side(coarse, rej, "accept", 0.02, 0.1)
    assert fit.threshold is None and fit.coverage == 0.0
    assert "20 of 200" in (fit.reason or "")


def test_more_data_advice_names_the_floor() -> None:
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(60, bool), np.zeros(300, bool)]
    s = np.where(y, rng.beta(6, 2, y.size), rng.beta(2, 6, y.size))
    fit = fit_side(list(s), list(y), "accept", 0.02, 0.1)
    assert fit.threshold is None and "60 responses that people reject < 114" in (fit.reason or "")
    first = fit.more_data[0]
    assert first.needed is not None and first.needed >= 114 and first.more == first.needed - 60


def _simulate(separation: float, seed: int, n_cal: int = 800) -> tuple[float, float, float, float, float]:
    """Draw a calibration set from known score distributions; return (coverage, true FNR, true FPR, a, r)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n_cal) < 0.35
    a_rej, b_rej = 2 + separation, 2.0
    a_acc, b_acc = 2.0, 2 + separation
    s = np.where(y, rng.beta(a_rej, b_rej, n_cal), rng.beta(a_acc, b_acc, n_cal))
    fit = fit_tier(list(s), list(y), fnr_max=0.05, fpr_max=0.05, delta=0.1)
    a, r = fit.accept.threshold, fit.reject.threshold
    # The true rates from the known distributions (not from a finite test set).
    true_fnr = float(beta.cdf(a, a_rej, b_rej)) if a is not None else 0.0
    true_fpr = float(beta.sf(r, a_acc, b_acc)) if r is not None else 0.0
    # Coverage on a fresh test split from the same distributions.
    yt = rng.random(4000) < 0.35
    st = np.where(yt, rng.beta(a_rej, b_rej, 4000), rng.beta(a_acc, b_acc, 4000))
    cover = float(np.mean([fit.decide(v) != "escalate" for v in st]))
    return cover, true_fnr, true_fpr, a or -1.0, r or 2.0


def test_simulation_bound_holds_and_coverage_grows_with_separation() -> None:
    delta, tolerance, runs = 0.1, 0.03, 1000
    fnr_viol = fpr_viol = 0
    for seed in range(runs):
        _, fnr, fpr, _, _ = _simulate(3.0, seed)
        fnr_viol += fnr > 0.05
        fpr_viol += fpr > 0.05
    assert fnr_viol / runs <= delta + tolerance
    assert fpr_viol / runs <= delta + tolerance
    # The bound is not vacuous: the fit uses its error budget (some runs land just above the target).
    assert fnr_viol > 0 or fpr_viol > 0
    covers = [np.mean([_simulate(sep, 10_000 + i)[0] for i in range(40)]) for sep in (0.5, 3.0, 10.0)]
    assert covers[0] < covers[1] < covers[2]
    assert covers[2] > 0.5
