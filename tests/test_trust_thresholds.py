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


def _simulate_precision(
    seed: int, prevalence: float, precision: float | None, n_cal: int = 800
) -> tuple[float | None, float | None, float, float]:
    """Fit on draws from known score distributions; the true error share among the auto-accepted and the
    auto-rejected (None when the side decides nothing) and the true FNR / FPR, computed exactly."""
    rng = np.random.default_rng(seed)
    a_rej, b_rej, a_acc, b_acc = 6.0, 2.0, 2.0, 6.0
    y = rng.random(n_cal) < prevalence
    s = np.where(y, rng.beta(a_rej, b_rej, n_cal), rng.beta(a_acc, b_acc, n_cal))
    fit = fit_tier(
        list(s),
        list(y),
        fnr_max=0.05,
        fpr_max=0.05,
        delta=0.1,
        precision_accept_min=precision,
        precision_reject_min=precision,
    )
    a, r = fit.accept.threshold, fit.reject.threshold
    acc_err = rej_err = None
    fnr = fpr = 0.0
    if a is not None:  # people reject / all auto-accepted, from the two class distributions
        fnr, g = float(beta.cdf(a, a_rej, b_rej)), float(beta.cdf(a, a_acc, b_acc))
        acc_err = prevalence * fnr / (prevalence * fnr + (1 - prevalence) * g)
    if r is not None:
        fpr, g = float(beta.sf(r, a_acc, b_acc)), float(beta.sf(r, a_rej, b_rej))
        rej_err = (1 - prevalence) * fpr / ((1 - prevalence) * fpr + prevalence * g)
    return acc_err, rej_err, fnr, fpr


@pytest.mark.parametrize(("prevalence", "side"), [(0.15, "reject"), (0.85, "accept")])
def test_simulation_precision_bound_holds_where_the_class_rate_alone_misleads(prevalence: float, side: str) -> None:
    # Few rejects (0.15): an FPR of 5 % of the many accepts is most of the auto-rejects; few accepts (0.85):
    # an FNR of 5 % of the many rejects is most of the auto-accepts. The precision target 0.9 must hold on
    # the decided items at delta = 0.1, over runs (a side that decides nothing cannot be wrong).
    runs, delta, tolerance, target = 300, 0.1, 0.05, 0.9
    pick = 1 if side == "reject" else 0
    before = [_simulate_precision(seed, prevalence, None)[pick] for seed in range(60)]
    assert np.mean([e is not None and e > 1 - target for e in before]) > 0.5  # class rate alone: misleading
    results = [_simulate_precision(seed, prevalence, target) for seed in range(runs)]
    errs = [r[pick] for r in results]
    decided = [e for e in errs if e is not None]
    violated = sum(1 for e in decided if e > 1 - target)
    assert violated / runs <= delta + tolerance
    assert len(decided) > runs * 0.8  # the side still decides in most runs
    assert max(decided) > (1 - target) / 2  # and uses its error budget: the bound is not vacuous
    # The class rates still hold together with it.
    assert np.mean([r[2] > 0.05 for r in results]) <= delta + tolerance
    assert np.mean([r[3] > 0.05 for r in results]) <= delta + tolerance


def test_precision_reason_says_how_many_of_the_decisions_people_agree_with() -> None:
    # 400 accepts spread low, 40 rejects at the top, 30 accepts among them: the FPR target alone would
    # auto-reject them all; only 40 of 70 agree with people.
    scores = [i / 1000 for i in range(370)] + [0.9 + i / 10_000 for i in range(70)]
    rejected = [False] * 370 + [i % 7 < 4 for i in range(70)]
    fit = fit_side(scores, rejected, "reject", 0.1, 0.1, precision_min=0.9)
    p = fit.precision
    assert p is not None and p.class_decided == 70 and p.class_agree == 40
    assert fit.threshold is None and "of the 70 auto-rejects the class target alone allows, 40 agree" in (
        fit.reason or ""
    )
    assert "escalated" in (fit.reason or "")
    # Without the precision target the class rate alone certifies them (the old behaviour).
    old = fit_side(scores, rejected, "reject", 0.1, 0.1)
    assert old.threshold is not None and old.decided == 70 and old.precision is None


def test_a_few_disagreements_among_the_most_confident_do_not_end_the_precision_search() -> None:
    # 400 rejects scored high, three accepts among the ten highest scores, 300 accepts scored low: one
    # fixed sequence starting at the fewest decisions that can pass would stop at once; the later chains
    # certify the 400 (397 agree).
    top = [1.0 - i / 1000 for i in range(400)]
    scores = top + [0.3 - i / 1000 for i in range(297)]
    rejected = [i not in (1, 4, 8) for i in range(400)] + [False] * 297
    fit = fit_side(scores, rejected, "reject", 0.05, 0.1, precision_min=0.9)
    assert fit.precision is not None and fit.reason is None
    assert fit.decided == 400 and fit.precision.agree == 397 and (fit.precision.bound or 0) >= 0.9
