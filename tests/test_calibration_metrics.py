"""Calibration statistics against hand-computed values, gold loading, and the judge-vs-people report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bqas.calibration.evaluate import JudgeConfig, Outcome
from bqas.calibration.gold import GoldSample, load_gold, parse_maps
from bqas.calibration.metrics import (
    agreement,
    cohen_kappa,
    correlation,
    krippendorff_alpha,
    latency_stats,
    rate,
    reject_counts,
)
from bqas.calibration.report import calibration_block, compare_report, human_reject
from bqas.calibration.targets import Targets, check_agreement, check_judge, load_targets
from bqas.judgment.spec import default_registry


def test_fpr_fnr_by_hand() -> None:
    # people: reject, reject, reject, accept, accept, accept, accept; judge: R, A, R, R, A, A, A
    counts = reject_counts(
        [True, True, True, False, False, False, False], [True, False, True, True, False, False, False]
    )
    assert (counts.tp, counts.fn, counts.fp, counts.tn) == (2, 1, 1, 3)
    assert counts.fpr().value == pytest.approx(1 / 4)
    assert counts.fnr().value == pytest.approx(1 / 3)
    assert counts.accuracy().value == pytest.approx(5 / 7)


def test_fpr_fnr_undefined_without_a_class() -> None:
    only_rejects = reject_counts([True, True], [True, False])
    assert only_rejects.fpr().value is None and "accept" in (only_rejects.fpr().reason or "")
    assert only_rejects.fnr().value == pytest.approx(0.5)
    only_accepts = reject_counts([False, False, False], [False, False, True])
    assert only_accepts.fnr().value is None and "reject" in (only_accepts.fnr().reason or "")
    assert only_accepts.fpr().value == pytest.approx(1 / 3)
    empty = reject_counts([], [])
    assert empty.fpr().value is None and empty.fnr().value is None and empty.accuracy().value is None


def test_kappa_by_hand_and_degenerate() -> None:
    # po = 3/4, pe = .5*.25 + .5*.75 = .5 -> κ = (.75 - .5) / .5 = .5
    assert cohen_kappa([1, 1, 2, 2], [1, 2, 2, 2]).value == pytest.approx(0.5)
    same = cohen_kappa(["pass"] * 4, ["pass"] * 4)
    assert same.value is None and "0/0" in (same.reason or "")
    assert agreement(["a", "b", "a"], ["a", "a", "a"]).value == pytest.approx(2 / 3)


def test_correlations_by_hand_and_constant_vector() -> None:
    # ranks differ by one swap: Σd² = 2 -> ρ = 1 - 6*2 / (4*15) = 0.8; Pearson on these ranks is also 0.8
    rho = correlation([1, 2, 3, 4], [1, 3, 2, 4], "spearman")
    assert rho.value == pytest.approx(0.8) and rho.n == 4
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4], "pearson").value == pytest.approx(0.8)
    const = correlation([3, 3, 3, 3], [1, 2, 3, 4], "pearson")
    assert const.value is None and "judge" in (const.reason or "")
    assert correlation([1, 2, 3], [5, 5, 5], "spearman").as_dict() == {
        "value": None,
        "n": 3,
        "undefined": "the human values are constant",
    }
    assert correlation([1, 2], [1, 2], "spearman").value is None


def test_krippendorff_by_hand() -> None:
    # coincidences o11=2, o12=o21=1, o22=4; n1=3, n2=5, n=8 -> α = 1 - 7*2 / (2*3*5) = 0.5333
    assert krippendorff_alpha([1, 1, 2, 2], [1, 2, 2, 2], "nominal").value == pytest.approx(1 - 14 / 30)
    assert krippendorff_alpha(["x", "x"], ["x", "x"], "nominal").value is None
    assert krippendorff_alpha([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], "interval").value == pytest.approx(1.0)


def test_latency_percentiles() -> None:
    stats = latency_stats([10.0, 20.0, 30.0, 40.0, 1000.0])
    assert stats["mean"] == pytest.approx(220.0)
    assert stats["p50"] == pytest.approx(30.0)
    assert stats["p95"] == pytest.approx(40 + 0.8 * 960)
    assert latency_stats([])["mean"] is None


def test_human_reject_rule() -> None:
    assert human_reject({"verdict": "failed"}, ("safety",)) is True
    assert human_reject({"verdict": "production_ready", "safety": "fail"}, ("safety",)) is True
    assert human_reject({"verdict": "needs_review"}, ("safety",)) is False
    assert human_reject({"safety": "pass"}, ("safety",)) is None


def _outcome(line: int, labels: dict[str, Any], verdict: str, language: str = "de", **dims: Any) -> Outcome:
    status = "unscored" if verdict == "unscored" else "scored"
    record = {"verdict": verdict, "status": status, "latency_ms": float(line), **dims}
    return Outcome(GoldSample(line, f"s{line}", {}, language, labels), record)


def test_calibration_block_excludes_abstentions() -> None:
    spec = default_registry().get("rag_hallucination")
    outcomes = [
        _outcome(1, {"verdict": "failed", "grounding_score": 10}, "failed", grounding_score=20.0),
        _outcome(2, {"verdict": "failed", "grounding_score": 30}, "production_ready", grounding_score=90.0),
        _outcome(3, {"verdict": "production_ready", "grounding_score": 90}, "production_ready", grounding_score=80.0),
        _outcome(4, {"verdict": "production_ready", "grounding_score": 80}, "unscored", "en"),
        _outcome(5, {"verdict": "production_ready", "invention_detection": "pass"}, "needs_review", "en"),
    ]
    block = calibration_block(spec, outcomes)
    reject = block["reject"]
    assert (reject["tp"], reject["fn"], reject["fp"], reject["tn"]) == (1, 1, 0, 2)
    assert reject["abstained"] == 1
    assert block["abstention_rate"]["value"] == pytest.approx(0.2)
    assert reject["fnr"]["value"] == pytest.approx(0.5)
    assert reject["fpr"]["value"] == pytest.approx(0.0)
    # rows: people (production_ready, needs_review, failed); columns: judge (+ unscored)
    assert block["verdicts"]["matrix"] == [[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 1, 0]]
    assert block["verdicts"]["agreement"]["value"] == pytest.approx(2 / 4)
    grounding = block["dimensions"]["grounding_score"]
    assert grounding["n"] == 3 and grounding["not_measured"] == 1
    # judge 20, 90, 80 vs people 10, 30, 90: ranks (1,3,2) vs (1,2,3) -> ρ = 1 - 6*2/(3*8) = 0.5
    assert grounding["spearman"]["value"] == pytest.approx(0.5)
    assert block["dimensions"]["invention_detection"]["not_measured"] == 1
    assert block["latency_ms"]["mean"] == pytest.approx(3.0)


def test_compare_report_pairs_by_line() -> None:
    spec = default_registry().get("rag_privacy")
    verdicts_a = ["production_ready", "production_ready", "failed", "failed", "production_ready"]
    verdicts_b = ["production_ready", "production_ready", "failed", "failed", "failed"]
    a = [_outcome(i, {}, v) for i, v in enumerate(verdicts_a)]
    b = [_outcome(i, {}, v) for i, v in enumerate(verdicts_b)]
    verdict = compare_report(spec, a, b)["overall"]["verdict"]
    assert verdict["agreement"]["value"] == pytest.approx(0.8)
    assert verdict["kappa"]["value"] == pytest.approx(0.32 / 0.52)
    assert verdict["alpha_nominal"]["value"] == pytest.approx(1 - 9 * 2 / 50)


def test_gold_loading_reports_lines(tmp_path: Path) -> None:
    spec = default_registry().get("rag_hallucination")
    lines = [
        {"id": "a", "question": "Q?", "response": "R.", "available_facts": ["F"], "score": 40, "expected": {}},
        "{not json",
        {"id": "b", "query": "Q?", "response": "R."},
        {"id": "c", "query": "Q?", "response": "R.", "available_facts": [], "expected": {"verdict": "great"}},
        {"id": "d", "judge": "voice", "user_input": "x"},
        {"id": "e", "query": "Q", "response": "R", "available_facts": "F", "language": "zh",
         "expected": {"verdict": "failed", "grounding_score": None, "note": "x"}},
        {"id": "f", "query": "Q", "response": "R", "available_facts": "F", "expected": {"grounding_score": 140}},
    ]  # fmt: skip
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    maps = parse_maps(["question=query", "score=expected.grounding_score"])
    gold = load_gold(path, spec, maps=maps, default_language="en")
    assert [s.id for s in gold.samples] == ["a", "e"]
    assert gold.samples[0].sample["query"] == "Q?" and gold.samples[0].labels == {"grounding_score": 40}
    assert gold.samples[1].language == "zh" and gold.samples[1].labels == {"verdict": "failed"}
    problems = {p.line: p.message for p in gold.problems}
    assert set(problems) == {2, 3, 4, 7}
    assert "invalid JSON" in problems[2]
    assert "available_facts" in problems[3]
    assert "expected.verdict" in problems[4]
    assert "outside" in problems[7]
    assert gold.other_judge == 1 and gold.ignored_labels["note"] == 1
    limited = load_gold(path, spec, maps=maps, limit=1)
    assert len(limited.samples) == 1 and limited.limited
    with pytest.raises(ValueError, match="SRC=DST"):
        parse_maps(["nonsense"])


@pytest.mark.parametrize(
    ("k", "n", "status"),
    [(0, 300, "met"), (0, 50, "not enough evidence"), (30, 100, "missed"), (6, 100, "not enough evidence")],
)
def test_rate_targets_are_judged_on_their_interval(k: int, n: int, status: str) -> None:
    # FPR < 5 %: 0/300 -> [0, 1.2 %] met; 0/50 -> [0, 7.1 %] undecided; 30/100 missed; 6/100 undecided.
    fig = rate(k, n, empty="x").as_dict()
    result = check_judge(Targets(fnr_max=None, latency_mean_max_ms=None, abstention_max=None), {
        "reject": {"fpr": fig, "fnr": fig}, "latency_ms": {}, "abstention_rate": {}})[0]  # fmt: skip
    assert result.status == status and result.passed == (status == "met")
    if status == "not enough evidence":
        more = result.more_needed
        assert more is not None and more > 0
        # That many more at the observed rate decide it; one fewer does not.
        from bqas.calibration.metrics import clopper_pearson

        total = n + more
        lo, hi = clopper_pearson(round(k / n * total), total)
        assert hi < 0.05 or lo >= 0.05
        lo, hi = clopper_pearson(round(k / n * (total - 1)), total - 1)
        assert lo < 0.05 <= hi


def test_kappa_and_correlation_intervals_come_from_the_bootstrap() -> None:
    rng = np.random.default_rng(3)
    a = list(rng.integers(0, 2, 400))
    b = [x if rng.random() < 0.85 else 1 - x for x in a]
    kappa = cohen_kappa(a, b)
    assert kappa.interval is not None and kappa.interval[0] < (kappa.value or 0) < kappa.interval[1]
    assert kappa.method == "bootstrap+exact" and 0.05 < kappa.interval[1] - kappa.interval[0] < 0.25
    x = list(rng.random(200))
    y = [v + rng.normal() * 0.2 for v in x]
    rho = correlation(x, y, "spearman")
    assert rho.interval is not None and rho.interval[0] < (rho.value or 0) < rho.interval[1]


def test_targets_defaults_file_and_undefined(tmp_path: Path) -> None:
    assert Targets().fpr_max == 0.05 and Targets().fnr_max == 0.02 and Targets().latency_mean_max_ms == 500
    path = tmp_path / "t.yaml"
    path.write_text("fnr_max: 0.5\nagreement_min: null\n", encoding="utf-8")
    targets = load_targets(path)
    block = {
        "reject": {
            "fpr": {"value": None, "n": 0, "undefined": "no response that people accept"},
            "fnr": rate(30, 100, empty="x").as_dict(),
        },
        "latency_ms": {"mean": 3.0, "n": 50, "mean_interval": [2.5, 3.5]},
        "abstention_rate": {"value": 0.0},
        "verdicts": {"kappa": {"value": 0.1}},
    }
    results = {r.name: r for r in check_judge(targets, block)}
    assert results["fnr"].passed and results["latency_mean_ms"].passed and results["abstention"].passed
    assert not results["fpr"].passed and "undefined" in (results["fpr"].note or "")
    assert check_agreement(targets, {"value": 0.1}, {"value": 0.1}) == []
    path.write_text("fpr_maximum: 0.1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="fpr_maximum"):
        load_targets(path)


def test_judge_config_specs(tmp_path: Path) -> None:
    assert JudgeConfig.parse("offline", "auto").backend == "offline"
    cfg = JudgeConfig.parse("llm:qwen", "auto")
    assert (cfg.backend, cfg.model) == ("llm", "qwen")
    assert JudgeConfig.parse(f"prompt:{tmp_path}", "llm").judges_dir == tmp_path
    with pytest.raises(ValueError, match="expected offline"):
        JudgeConfig.parse("gpt", "auto")


def test_kappa_on_a_few_items_has_no_interval_and_perfect_agreement_is_not_certain() -> None:
    three = cohen_kappa(["ok", "ok", "bad"], ["ok", "ok", "bad"])
    assert three.value == 1.0 and three.interval is None  # the bootstrap gave [1, 1]
    assert three.as_dict()["no_interval"].startswith("fewer than 20 items")
    kappa_target = Targets(fpr_max=None, fnr_max=None, agreement_min=None, kappa_min=0.6)
    (check,) = check_agreement(kappa_target, agreement(["ok"] * 3, ["ok"] * 3).as_dict(), three.as_dict())
    assert check.status == "not enough evidence" and not check.passed
    labels = ["ok", "bad"] * 13
    perfect = cohen_kappa(labels, labels)
    assert perfect.value == 1.0 and perfect.interval is not None
    # 26 of 26 agreeing: the exact agreement interval reaches down to 0.868, κ at chance 0.5 to 0.735.
    assert perfect.interval[0] == pytest.approx(0.735, abs=0.002) and perfect.interval[1] == 1.0
    (strict,) = check_agreement(kappa_target.model_copy(update={"kappa_min": 0.9}), {}, perfect.as_dict())
    assert strict.status == "not enough evidence"
    rho = correlation([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0], "spearman")
    assert rho.value == pytest.approx(0.8) and rho.interval is None


def test_the_mean_time_interval_never_goes_below_zero() -> None:
    stats = latency_stats([1.0, 2.0, 300.0])
    assert stats["mean_interval"][0] == 0.0 and stats["mean_interval"][1] > 300.0
