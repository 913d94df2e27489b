"""Turn judged gold samples into calibration figures: judge vs people, and judge A vs judge B."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from bqas.calibration.evaluate import Outcome
from bqas.calibration.gold import HUMAN_VERDICTS
from bqas.calibration.metrics import (
    Figure,
    agreement,
    cohen_kappa,
    correlation,
    krippendorff_alpha,
    label_matrix,
    latency_stats,
    mean_abs_diff,
    rate,
    reject_counts,
)
from bqas.judgment.spec import JudgeSpec

JUDGE_VERDICTS: tuple[str, ...] = (*HUMAN_VERDICTS, "unscored")

DEFINITION = (
    "positive = the response should be rejected: the human verdict is 'failed' or a human gate label is "
    "'fail'; the judge predicts positive when its verdict is 'failed'. "
    "FPR = judge rejects a response people accept / all responses people accept; "
    "FNR = judge accepts a response people reject / all responses people reject. "
    "Unscored results are left out of FPR, FNR, accuracy and agreement and counted as abstention."
)


def judge_verdict(record: dict[str, Any]) -> str:
    """The judge's verdict, with every result that has no verdict counted as ``unscored``."""
    verdict = record.get("verdict")
    if record.get("status") != "scored" or verdict not in HUMAN_VERDICTS:
        return "unscored"
    return str(verdict)


def human_reject(labels: dict[str, Any], gates: Sequence[str]) -> bool | None:
    """True when people reject (verdict failed or a gate failed), False when they accept, None if unknown."""
    if labels.get("verdict") == "failed" or any(labels.get(g) == "fail" for g in gates):
        return True
    if labels.get("verdict") in ("production_ready", "needs_review"):
        return False
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _dimension_vs_human(spec: JudgeSpec, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    dims: dict[str, Any] = {}
    for name in spec.graded_dimensions:
        labelled = [o for o in outcomes if name in o.gold.labels]
        if not labelled:
            continue
        kind = spec.dimensions[name].kind
        pairs: list[tuple[Any, Any]] = []
        for o in labelled:
            value = o.record.get(name)
            ok = value in ("pass", "fail") if kind == "gate" else _number(value) is not None
            if ok:
                pairs.append((value, o.gold.labels[name]))
        entry: dict[str, Any] = {"kind": kind, "labelled": len(labelled), "not_measured": len(labelled) - len(pairs)}
        judge_vals = [p[0] for p in pairs]
        human_vals = [p[1] for p in pairs]
        if kind == "gate":
            counts = reject_counts([h == "fail" for h in human_vals], [j == "fail" for j in judge_vals])
            entry.update(
                n=len(pairs),
                agreement=agreement(judge_vals, human_vals).as_dict(),
                kappa=cohen_kappa(human_vals, judge_vals).as_dict(),
                fail_is_positive={"tp": counts.tp, "fp": counts.fp, "fn": counts.fn, "tn": counts.tn},
                fpr=counts.fpr().as_dict(),
                fnr=counts.fnr().as_dict(),
            )
        else:
            xs = [float(v) for v in judge_vals]
            ys = [float(v) for v in human_vals]
            entry.update(
                n=len(pairs),
                spearman=correlation(xs, ys, "spearman").as_dict(),
                pearson=correlation(xs, ys, "pearson").as_dict(),
                mean_abs_diff=mean_abs_diff(xs, ys).as_dict(),
            )
        dims[name] = entry
    return dims


def calibration_block(spec: JudgeSpec, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """All judge-vs-people figures for a group of samples."""
    gates = spec.scoring.gates if spec.scoring else ()
    verdicts = [judge_verdict(o.record) for o in outcomes]
    scored = [(o, v) for o, v in zip(outcomes, verdicts, strict=True) if v != "unscored"]
    unscored = len(outcomes) - len(scored)
    # Accept/reject: people's label vs the judge's verdict, abstentions left out.
    with_label = [(human_reject(o.gold.labels, gates), v) for o, v in scored]
    known = [(h, v == "failed") for h, v in with_label if h is not None]
    counts = reject_counts([h for h, _ in known], [j for _, j in known])
    abstained_labelled = sum(
        1
        for o, v in zip(outcomes, verdicts, strict=True)
        if v == "unscored" and human_reject(o.gold.labels, gates) is not None
    )
    # Verdicts: people's three-way verdict vs the judge's (the matrix shows unscored as a column).
    human_v = [o.gold.labels["verdict"] for o in outcomes if "verdict" in o.gold.labels]
    judge_v = [v for o, v in zip(outcomes, verdicts, strict=True) if "verdict" in o.gold.labels]
    pairs_v = [(h, j) for h, j in zip(human_v, judge_v, strict=True) if j != "unscored"]

    def said(fig: Figure) -> dict[str, Any]:
        # An empty denominator caused by abstentions must say so, not suggest the labels were missing.
        if fig.value is None and abstained_labelled:
            return Figure.undefined(
                fig.n, f"{fig.reason}; {abstained_labelled} labelled samples were unscored"
            ).as_dict()
        return fig.as_dict()

    from bqas.runner.summary import UnscoredReasons

    why = UnscoredReasons()
    for o in outcomes:
        why.add(o.record)
    return {
        "samples": len(outcomes),
        "scored": len(scored),
        "unscored": unscored,
        # Why, one line per cause (not one per sample).
        "unscored_reasons": why.as_list(),
        "abstention_rate": rate(unscored, len(outcomes), empty="no judged sample").as_dict(),
        "reject": {
            "tp": counts.tp,
            "fp": counts.fp,
            "fn": counts.fn,
            "tn": counts.tn,
            "human_reject": counts.tp + counts.fn,
            "human_accept": counts.fp + counts.tn,
            "no_human_label": len(with_label) - len(known),
            "abstained": abstained_labelled,
            "fpr": said(counts.fpr()),
            "fnr": said(counts.fnr()),
            "accuracy": said(counts.accuracy()),
            "kappa": cohen_kappa([h for h, _ in known], [j for _, j in known]).as_dict(),
        },
        "verdicts": {
            "rows": list(HUMAN_VERDICTS),
            "columns": list(JUDGE_VERDICTS),
            "matrix": label_matrix(human_v, judge_v, HUMAN_VERDICTS, JUDGE_VERDICTS),
            "agreement": agreement([h for h, _ in pairs_v], [j for _, j in pairs_v]).as_dict(),
            "kappa": cohen_kappa([h for h, _ in pairs_v], [j for _, j in pairs_v]).as_dict(),
        },
        "dimensions": _dimension_vs_human(spec, outcomes),
        "latency_ms": latency_stats([float(o.record.get("latency_ms") or 0.0) for o in outcomes]),
        # The judgment's own work (the judge policy's "mean evaluation time", what the target is judged on)
        # and the wait for a free worker or LLM slot beside it (bqas.judgment.timing).
        "service_ms": latency_stats(
            [float(o.record.get("service_ms", o.record.get("latency_ms")) or 0.0) for o in outcomes]
        ),
        "queue_ms": latency_stats([float(o.record.get("queue_ms") or 0.0) for o in outcomes]),
    }


def by_language(outcomes: Sequence[Outcome]) -> dict[str, list[Outcome]]:
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[o.gold.language].append(o)
    return dict(sorted(groups.items()))


def calibration_report(spec: JudgeSpec, outcomes: Sequence[Outcome], wall_s: float | None = None) -> dict[str, Any]:
    """Overall and per-language figures; ``wall_s`` (the judging's wall-clock seconds) adds the throughput
    time, wall / N, which is what concurrency buys and neither the service nor the queue time shows."""
    overall = calibration_block(spec, outcomes)
    if wall_s is not None and outcomes:
        overall["throughput_ms"] = {"wall_s": round(wall_s, 3), "per_sample": round(1000 * wall_s / len(outcomes), 3)}
    return {
        "definition": DEFINITION,
        "overall": overall,
        "by_language": {lang: calibration_block(spec, group) for lang, group in by_language(outcomes).items()},
    }


# -- two judge configurations ---------------------------------------------------------------------------


def _pair_block(spec: JudgeSpec, pairs: Sequence[tuple[Outcome, Outcome]]) -> dict[str, Any]:
    va = [judge_verdict(a.record) for a, _ in pairs]
    vb = [judge_verdict(b.record) for _, b in pairs]
    both = [(x, y) for x, y in zip(va, vb, strict=True) if x != "unscored" and y != "unscored"]
    xs, ys = [x for x, _ in both], [y for _, y in both]
    out: dict[str, Any] = {
        "samples": len(pairs),
        "both_scored": len(both),
        "unscored_a": va.count("unscored"),
        "unscored_b": vb.count("unscored"),
        "verdict": {
            "agreement": agreement(xs, ys).as_dict(),
            "kappa": cohen_kappa(xs, ys).as_dict(),
            "alpha_nominal": krippendorff_alpha(xs, ys, "nominal").as_dict(),
            "matrix": label_matrix(va, vb, JUDGE_VERDICTS, JUDGE_VERDICTS),
        },
        "dimensions": {},
    }
    for name in spec.graded_dimensions:
        kind = spec.dimensions[name].kind
        if kind == "gate":
            dp = [
                (a.record.get(name), b.record.get(name))
                for a, b in pairs
                if a.record.get(name) in ("pass", "fail") and b.record.get(name) in ("pass", "fail")
            ]
            if not dp:
                continue
            ga, gb = [p[0] for p in dp], [p[1] for p in dp]
            out["dimensions"][name] = {
                "kind": kind,
                "n": len(dp),
                "agreement": agreement(ga, gb).as_dict(),
                "kappa": cohen_kappa(ga, gb).as_dict(),
                "alpha": krippendorff_alpha(ga, gb, "nominal").as_dict(),
                "alpha_level": "nominal",
            }
        else:
            num = [(_number(a.record.get(name)), _number(b.record.get(name))) for a, b in pairs]
            np_ = [(x, y) for x, y in num if x is not None and y is not None]
            if not np_:
                continue
            fa, fb = [p[0] for p in np_], [p[1] for p in np_]
            out["dimensions"][name] = {
                "kind": kind,
                "n": len(np_),
                "agreement": agreement(fa, fb).as_dict(),  # exact equality of the values
                "alpha": krippendorff_alpha(fa, fb, "interval").as_dict(),
                "alpha_level": "interval",
                "spearman": correlation(fa, fb, "spearman").as_dict(),
                "pearson": correlation(fa, fb, "pearson").as_dict(),
                "mean_abs_diff": mean_abs_diff(fa, fb).as_dict(),
            }
    return out


def compare_report(spec: JudgeSpec, a: Sequence[Outcome], b: Sequence[Outcome]) -> dict[str, Any]:
    """Inter-judge agreement between two configurations on the same gold samples (paired by line)."""
    b_by_line = {o.gold.line: o for o in b}
    pairs = [(x, b_by_line[x.gold.line]) for x in a if x.gold.line in b_by_line]
    groups: dict[str, list[tuple[Outcome, Outcome]]] = defaultdict(list)
    for p in pairs:
        groups[p[0].gold.language].append(p)
    return {
        "overall": _pair_block(spec, pairs),
        "by_language": {lang: _pair_block(spec, g) for lang, g in sorted(groups.items())},
    }


def figure(data: dict[str, Any]) -> Figure:
    """A :class:`Figure` back from its ``as_dict`` form."""
    return Figure(data.get("value"), int(data.get("n") or 0), data.get("undefined"), data.get("p_value"))
