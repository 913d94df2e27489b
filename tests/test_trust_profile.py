"""Calibration profiles: fitting (single tier and cascade), checking on new labels, refusing a mismatch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bqas.judgment.spec import default_registry
from bqas.trust.fit import LabelledItem, Targets, check_on, fit_profile, profile_outcome, realised
from bqas.trust.profile import ProfileConfig, ProfileError, check_profile, judge_hash, load_profile, prompt_hashes


def _items(n: int, seed: int, llm: bool = False) -> list[LabelledItem]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    off = np.where(y, rng.beta(5, 2, n), rng.beta(2, 5, n))
    llm_s = np.where(y, rng.beta(8, 2, n), rng.beta(2, 8, n))
    langs = ["de", "en", "zh"]
    return [
        LabelledItem(f"i{k}", langs[k % 3], bool(y[k]), float(off[k]), float(llm_s[k]) if llm else None)
        for k in range(n)
    ]


def _config() -> ProfileConfig:
    spec = default_registry().get("rag_hallucination")
    from bqas.offline.methods import load_builtin_methods
    from bqas.offline.p_reject import offline_model_id

    load_builtin_methods()
    return ProfileConfig(
        backend="auto",
        model="judge-1",
        judge_hash=judge_hash(spec),
        prompt_hashes=prompt_hashes(spec),
        offline_model=offline_model_id(spec),
    )


def test_single_tier_profile_round_trip_and_check(tmp_path: Path) -> None:
    profile = fit_profile(
        _items(3000, 1), judge="rag_hallucination", config=_config(), targets=Targets(fnr_max=0.05), source="t"
    )
    tier = profile.tier("offline")
    assert tier is not None and tier.accept_threshold is not None and tier.reject_threshold is not None
    assert profile.cascade["method"] == "single tier"
    assert 0 < profile.coverage["decided"] < 1
    assert set(profile.coverage["by_language"]) == {"de", "en", "zh"}
    assert len(profile.data["sha256"]) == 64
    for suffix in (".json", ".yaml"):
        path = tmp_path / f"p{suffix}"
        profile.dump(path)
        assert load_profile(path) == profile
    report = check_on(_items(3000, 2), profile)
    pipe = report["tiers"]["pipeline"]
    # The fit spends its FNR budget: on 3,000 fresh items the realised FNR sits near 5 %, and its interval
    # can neither show the bound held nor that it failed.
    lo, hi = pipe["fnr_interval"]
    assert lo < 0.05 < hi and pipe["fnr_status"] == "not enough evidence" and pipe["fnr_held"] is None
    assert pipe["accept_precision"]["status"] == "held"  # 1,447 of 1,505 auto-accepts right: [95.2, 96.9 %]
    assert profile_outcome(report) == "not enough evidence"
    assert pipe["coverage"] > 0


def test_cascade_splits_the_budget_and_the_llm_tier_sees_only_escalations() -> None:
    profile = fit_profile(
        _items(4000, 3, llm=True),
        judge="rag_hallucination",
        config=_config(),
        targets=Targets(fnr_max=0.1, fpr_max=0.1),
        source="t",
    )
    off, llm = profile.tier("offline"), profile.tier("llm")
    assert off is not None and llm is not None
    assert off.fnr_max == pytest.approx(0.05) and llm.fnr_max == pytest.approx(0.05)
    assert off.delta == pytest.approx(0.05) and llm.delta == pytest.approx(0.05)
    assert profile.coverage["llm"] > 0
    assert profile.coverage["decided"] == pytest.approx(profile.coverage["offline"] + profile.coverage["llm"])


def test_too_little_data_certifies_nothing_with_the_reason() -> None:
    profile = fit_profile(_items(40, 4), judge="rag_hallucination", config=_config(), targets=Targets(), source="t")
    tier = profile.tier("offline")
    assert tier is not None and tier.accept_threshold is None
    assert profile.coverage["decided"] == 0.0
    assert "needed to certify" in tier.fit["accept"]["reason"]
    assert tier.fit["accept"]["min_n_zero_errors"] == 114


def test_a_profile_for_another_judge_or_prompt_is_refused(tmp_path: Path) -> None:
    spec = default_registry().get("rag_hallucination")
    profile = fit_profile(
        _items(300, 5, llm=True), judge="rag_hallucination", config=_config(), targets=Targets(), source="t"
    )
    check_profile(profile, spec, backend="auto", model="judge-1")  # fits: no error
    with pytest.raises(ProfileError, match="fitted for judge 'rag_hallucination', not 'rag_privacy'"):
        check_profile(profile, default_registry().get("rag_privacy"), backend="auto", model="judge-1")
    with pytest.raises(ProfileError, match="model 'judge-1', not 'other'"):
        check_profile(profile, spec, backend="auto", model="other")
    changed = profile.model_copy(deep=True)
    changed.configuration.prompt_hashes["de"] = "0" * 16
    with pytest.raises(ProfileError, match=r"other prompts .*changed: de"):
        check_profile(changed, spec, backend="auto", model="judge-1")
    changed.configuration.judge_hash = "x"
    with pytest.raises(ProfileError, match="another configuration"):
        check_profile(changed, spec, backend="auto", model="judge-1")
    other = profile.model_copy(deep=True)
    other.configuration.offline_model = "grounding-lr-older+rag_hallucination-offline-old"
    with pytest.raises(ProfileError, match="fitted with offline p_reject model"):
        check_profile(other, spec, backend="auto", model="judge-1")


def test_broken_profile_file_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("format: other\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"p\.yaml: format"):
        load_profile(path)
    path.write_text("format: bqas-calibration-profile/1\nid: x\n", encoding="utf-8")
    with pytest.raises(ProfileError, match=r"p\.yaml: judge: Field required"):
        load_profile(path)


def test_profile_carries_precision_targets_and_the_check_reports_agreement() -> None:
    profile = fit_profile(
        _items(3000, 6), judge="rag_hallucination", config=_config(), targets=Targets(fnr_max=0.05), source="t"
    )
    assert profile.targets["precision_accept_min"] == 0.9 and profile.targets["precision_reject_min"] == 0.9
    tier = profile.tier("offline")
    assert tier is not None and tier.precision_reject_min == 0.9
    prec = tier.fit["reject"]["precision"]
    assert prec["bound"] >= 0.9 and prec["agree"] <= prec["decided"]
    report = check_on(_items(3000, 7), profile)
    row = report["tiers"]["pipeline"]["reject_precision"]
    assert row["decided"] > 0 and row["target"] == 0.9
    lo, hi = row["interval"]
    assert 0.9 <= lo <= row["precision"] <= hi  # the fit's precision bound holds on fresh draws
    assert row["status"] == "held" and row["held"] is True


def test_realised_precision_counts_the_decisions_people_agree_with() -> None:
    profile = fit_profile(_items(600, 8), judge="rag_hallucination", config=_config(), targets=Targets(), source="t")
    # 16 auto-rejects of which 7 are answers people accept: the example.
    decisions = [("reject", "offline")] * 16 + [("escalate", "human")] * 84
    labels = [True] * 7 + [False] * 9 + [True] * 40 + [False] * 44
    row = realised(decisions, labels, profile)["tiers"]["offline"]["reject_precision"]
    assert (row["decided"], row["agree"], row["held"]) == (16, 7, False)
    assert row["precision"] == pytest.approx(7 / 16)
    # Old profiles without a precision target report the counts but hold nothing against them.
    old = profile.model_copy(deep=True)
    for t in old.tiers:
        t.precision_accept_min = t.precision_reject_min = None
    old.targets.pop("precision_reject_min")
    row = realised(decisions, labels, old)["tiers"]["pipeline"]["reject_precision"]
    assert row["target"] is None and row["held"] is None and row["agree"] == 7


def test_one_agreeing_decision_holds_nothing() -> None:
    profile = fit_profile(_items(600, 8), judge="rag_hallucination", config=_config(), targets=Targets(), source="t")
    # One auto-reject people agree with, one auto-accept of an answer people accept: the points say FNR 0,
    # FPR 0, precision 1 on both sides (all "held" before); the intervals say nothing is shown.
    report = realised([("reject", "offline"), ("accept", "offline")], [True, False], profile)
    pipe = report["tiers"]["pipeline"]
    assert (pipe["fnr"], pipe["fpr"]) == (0.0, 0.0)
    assert pipe["fnr_status"] == pipe["fpr_status"] == "not enough evidence"
    assert pipe["reject_precision"]["precision"] == 1.0 and pipe["reject_precision"]["status"] == "not enough evidence"
    assert profile_outcome(report) == "not enough evidence"
    # A set without people-rejected items cannot show an FNR bound held.
    none_rejected = realised([("accept", "offline")] * 50, [False] * 50, profile)
    assert none_rejected["tiers"]["pipeline"]["fnr_status"] == "undefined"
    assert profile_outcome(none_rejected) == "not enough evidence"
    # Many misses are a failure the interval shows.
    misses = realised([("accept", "offline")] * 40 + [("reject", "offline")] * 60, [True] * 40 + [True] * 60, profile)
    assert misses["tiers"]["pipeline"]["fnr_status"] == "not held" and profile_outcome(misses) == "not held"


# Score distributions of the two tiers (independent given the label): rejects, accepts.
_OFFLINE_DIST = ((4.0, 2.0), (2.0, 4.0))
_LLM_DIST = ((6.0, 2.0), (2.0, 6.0))


def _true_cascade_rates(seed: int, n_cal: int = 800) -> tuple[float, float, float]:
    """Fit a two-tier profile on draws from known distributions; its pipeline's true FNR and FPR (exact, from
    the distributions: offline decides, the LLM tier decides what offline escalates) and its coverage."""
    from scipy.stats import beta

    rng = np.random.default_rng(seed)
    y = rng.random(n_cal) < 0.35
    off = np.where(y, rng.beta(*_OFFLINE_DIST[0], n_cal), rng.beta(*_OFFLINE_DIST[1], n_cal))
    llm = np.where(y, rng.beta(*_LLM_DIST[0], n_cal), rng.beta(*_LLM_DIST[1], n_cal))
    items = [LabelledItem(f"i{k}", "de", bool(y[k]), float(off[k]), float(llm[k])) for k in range(n_cal)]
    targets = Targets(fnr_max=0.1, fpr_max=0.1, delta=0.1)
    profile = fit_profile(items, judge="rag_hallucination", config=_config(), targets=targets, source="t")
    first, second = profile.tier("offline"), profile.tier("llm")
    assert first is not None and second is not None

    def cdf(dist: tuple[float, float], t: float | None, none: float) -> float:
        return none if t is None else float(beta.cdf(t, *dist))

    a1, r1, a2, r2 = first.accept_threshold, first.reject_threshold, second.accept_threshold, second.reject_threshold
    rej, acc = 0, 1
    escalated_rej = cdf(_OFFLINE_DIST[rej], r1, 1.0) - cdf(_OFFLINE_DIST[rej], a1, 0.0)
    fnr = cdf(_OFFLINE_DIST[rej], a1, 0.0) + escalated_rej * cdf(_LLM_DIST[rej], a2, 0.0)
    escalated_acc = cdf(_OFFLINE_DIST[acc], r1, 1.0) - cdf(_OFFLINE_DIST[acc], a1, 0.0)
    fpr = 1 - cdf(_OFFLINE_DIST[acc], r1, 1.0) + escalated_acc * (1 - cdf(_LLM_DIST[acc], r2, 1.0))
    return fnr, fpr, profile.coverage["decided"]


def test_the_cascade_guarantee_holds_in_simulation() -> None:
    """A profile promises: the whole pipeline's FNR and FPR exceed their targets with probability at most δ
    (each tier gets a share of the error budget and δ/2). Over 100 calibration sets drawn from known score
    distributions, the share of fits whose true pipeline rate misses the target stays within δ."""
    delta, tolerance, runs = 0.1, 0.03, 100
    rates = [_true_cascade_rates(seed) for seed in range(runs)]
    fnr_viol = sum(fnr > 0.1 for fnr, _, _ in rates)
    fpr_viol = sum(fpr > 0.1 for _, fpr, _ in rates)
    assert fnr_viol / runs <= delta + tolerance and fpr_viol / runs <= delta + tolerance
    # Not vacuous: the pipeline decides most items and spends a real part of its FNR budget (a split that
    # gave each tier the whole budget would add the two tiers' errors and miss the target).
    assert np.mean([cover for _, _, cover in rates]) > 0.5
    assert max(fnr for fnr, _, _ in rates) > 0.05
