"""Fit the cascade (``cascade.json``) on the calibration part of the permitted datasets.

The calibration part (:func:`bqas.training.verifier.datasets.is_calibration`: ~30 % of the groups of MTRAG,
BEGIN and HalluQA DEV) is never in the verifier's training pairs. On it:

* **band**: below ``low`` the first stage's faithful verdicts are at least 95 % right, at and above
  ``high`` its unfaithful ones are; between them the verifier runs;
* **combination**: a logistic regression on (logit stage 1, logit verifier) over the rows in the band,
  every dataset with the same total weight and its classes balanced;
* **threshold**: the best mean balanced accuracy over the datasets (each weighted equally) of the
  cascade's probability; **claim threshold**: the same for the verifier's answer score alone.

MEMERAG, XNLI and OCNLI are never read here, and :func:`fit_cascade` refuses rows of theirs
(:mod:`bqas.training.licences`).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bqas.mathx import logit
from bqas.offline.verifier.cascade import FORMAT, Cascade, claims_to_verify
from bqas.training.grounding.datasets import Example, load_begin, load_halluqa, load_mtrag
from bqas.training.licences import check_sources, check_use
from bqas.training.verifier.datasets import group_key, is_calibration

#: How many claims of one answer are scored for fitting and measuring (the least supported ones first).
SCORED_CLAIMS = 4
#: How many of them the shipped cascade's verifier reads: the fewest whose out-of-fold ROC-AUC on the
#: calibration part is within 0.005 of the best (benchmarks/offline/choose_max_claims.py: 1 claim was the best
#: there); each further claim costs ~11 ms CPU on an MTRAG answer's long sentences.
MAX_CLAIMS = 1
#: Error the first stage may make outside the band (share of wrong verdicts on either side).
BAND_ERROR = 0.05


def calibration_examples(data: Path) -> list[Example]:
    """The calibration part of MTRAG, BEGIN and HalluQA (grouped as the verifier's training split)."""
    out: list[Example] = []
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, file in (("mtrag", "rag_faithfulness_en.jsonl"), ("begin", "attribution_en.jsonl"),
                       ("halluqa", "hallucination_zh.jsonl")):  # fmt: skip
        path = data / file
        if path.is_file():
            check_use(path, "fit")
            rows[name] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    for name, loader, file in (("mtrag", load_mtrag, "rag_faithfulness_en.jsonl"),
                               ("begin", load_begin, "attribution_en.jsonl"),
                               ("halluqa", load_halluqa, "hallucination_zh.jsonl")):  # fmt: skip
        if name not in rows:
            continue
        keep: set[str] = set()
        for r in rows[name]:
            if is_calibration(group_key(name, r)):
                keep.add(_example_key(name, r))
        out += [ex for ex in loader(data / file, use="fit") if _ex_key(name, ex) in keep]
    return out


def _example_key(name: str, r: dict[str, Any]) -> str:
    if name == "mtrag":
        return str(r["answer"]) + "\x00" + str(r["question"])
    if name == "begin":
        return str(r["response"]) + "\x00" + str(r["knowledge"])
    return str(r["question"])


def _ex_key(name: str, ex: Example) -> str:
    if name == "mtrag":
        return ex.answer + "\x00" + ex.query
    if name == "begin":
        return ex.answer + "\x00" + ex.facts[0]
    return ex.query


def score_examples(
    examples: Sequence[Example],
    verifier_folder: Path | None = None,
    max_claims: int = SCORED_CLAIMS,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Per example: stage 1's probability (the shipped grounding model, default embedder), the claims the
    verifier reads, and the verifier's answer score (for *every* example, so any band can be evaluated);
    unscored examples carry the reason."""
    from bqas.offline.grounding import analyse_grounding
    from bqas.offline.grounding_model import _stage1
    from bqas.offline.methods import OfflineContext

    out: list[dict[str, Any]] = []
    for i, ex in enumerate(examples):
        ctx = OfflineContext(language=ex.language if ex.language in ("de", "en", "zh") else "en")
        first = _stage1(ex.answer, list(ex.facts), ctx, ex.query, None)
        row: dict[str, Any] = {"source": ex.source, "language": ex.language, "label": ex.label}
        if isinstance(first, str):
            row["unscored"] = first
        else:
            analysis = analyse_grounding(ex.answer, list(ex.facts), ctx, ex.query)
            row |= {"p1": first.p_unfaithful, "claims": claims_to_verify(analysis.claims, max_claims)}
        out.append(row)
        if progress is not None and (i + 1) % 50 == 0:
            progress(i + 1, len(examples))
    return add_verifier(out, examples, verifier_folder)


def add_verifier(
    rows: list[dict[str, Any]], examples: Sequence[Example], verifier_folder: Path | None = None
) -> list[dict[str, Any]]:
    """(Re)compute the verifier's scores of scored rows (``v``: the highest claim probability) with the
    verifier in ``verifier_folder`` (default: the shipped one); stage 1 is kept."""
    from bqas.offline.verifier.runtime import claim_probabilities, load_verifier

    v = load_verifier(verifier_folder)
    for row, ex in zip(rows, examples, strict=True):
        if "p1" not in row:
            continue
        probs = claim_probabilities(row["claims"], list(ex.facts), v) if row["claims"] else []
        row["v"] = max(probs) if probs else None
        row["claim_probabilities"] = [round(p, 4) for p in probs]
        row["verifier"] = v.model_id
    return rows


def verifier_score(row: dict[str, Any], max_claims: int) -> float | None:
    """The verifier's answer score when it reads the first ``max_claims`` of the row's scored claims."""
    probs = row.get("claim_probabilities")
    if probs is None:
        return row.get("v")
    return max(probs[:max_claims]) if probs[:max_claims] else None


def cascade_probability(row: dict[str, Any], cascade: Cascade) -> float | None:
    """What the cascade gives for a scored row (None when unscored)."""
    if "p1" not in row:
        return None
    v = verifier_score(row, cascade.max_claims)
    if v is None or not cascade.in_band(row["p1"]):
        return float(row["p1"])
    return cascade.combine(row["p1"], v)


def _band(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    ps = sorted({r["p1"] for r in rows})
    low = 0.0
    for t in ps:
        below = [r for r in rows if r["p1"] < t]
        if below and sum(r["label"] for r in below) / len(below) > BAND_ERROR:
            break
        low = t
    high = 1.0
    for t in reversed(ps):
        above = [r for r in rows if r["p1"] >= t]
        if above and sum(1 - r["label"] for r in above) / len(above) > BAND_ERROR:
            break
        high = t
    return low, max(low, high)


def _weights(rows: Sequence[dict[str, Any]]) -> list[float]:
    counts: dict[tuple[str, int], int] = {}
    for r in rows:
        counts[(r["source"], r["label"])] = counts.get((r["source"], r["label"]), 0) + 1
    sources = {s for s, _ in counts}
    return [len(rows) / len(sources) / 2 / counts[(r["source"], r["label"])] for r in rows]


def fit_cascade(rows: Sequence[dict[str, Any]], verifier_id: str, max_claims: int = MAX_CLAIMS,
                stage1_id: str = "") -> dict[str, Any]:  # fmt: skip
    """The cascade JSON fitted on scored calibration rows (:func:`score_examples`)."""
    from sklearn.linear_model import LogisticRegression

    from bqas.training.grounding.train import _best_threshold, metrics

    check_sources((r["source"] for r in rows), "fit")
    scored = [r | {"v": verifier_score(r, max_claims)} for r in rows if "p1" in r]
    low, high = _band(scored)
    band = [r for r in scored if r.get("v") is not None and low <= r["p1"] < high]
    if len({r["label"] for r in band}) < 2:
        raise ValueError("the calibration rows in the band have one class only: cannot fit the combination")
    x = [[logit(r["p1"]), logit(r["v"])] for r in band]
    lr = LogisticRegression(C=1.0).fit(x, [r["label"] for r in band], sample_weight=_weights(band))
    date = _dt.date.today().isoformat()
    data: dict[str, Any] = {
        "format": FORMAT,
        "cascade_id": f"{verifier_id}-cascade",
        "band": [round(low, 4), round(high, 4)],
        "combine": {
            "w_stage1": float(lr.coef_[0][0]),
            "w_verifier": float(lr.coef_[0][1]),
            "bias": float(lr.intercept_[0]),
        },
        "threshold": 0.5,
        "claim_threshold": 0.5,
        "max_claims": max_claims,
    }
    cascade = Cascade.from_json(data)
    groups: dict[str, tuple[list[int], list[float]]] = {}
    vgroups: dict[str, tuple[list[int], list[float]]] = {}
    for r in scored:
        p = cascade_probability(r, cascade)
        assert p is not None
        groups.setdefault(r["source"], ([], []))[0].append(r["label"])
        groups[r["source"]][1].append(p)
        if r.get("v") is not None:
            vgroups.setdefault(r["source"], ([], []))[0].append(r["label"])
            vgroups[r["source"]][1].append(r["v"])
    data["threshold"] = _best_threshold(groups)
    data["claim_threshold"] = _best_threshold(vgroups)
    cascade = Cascade.from_json(data)
    figures = {}
    for source, (ys, ps) in groups.items():
        p1 = [r["p1"] for r in scored if r["source"] == source]
        figures[source] = {
            "n": len(ys),
            "in_band": sum(1 for r in scored if r["source"] == source and cascade.in_band(r["p1"])),
            "stage1": metrics(ys, p1, 0.5),
            "cascade": metrics(ys, ps, cascade.threshold),
        }
    data["card"] = {
        "fitted": date,
        "stage1": stage1_id,
        "verifier": verifier_id,
        "data": "calibration part (~30 % of groups) of MTRAG, BEGIN, HalluQA DEV; never in the verifier's training",
        "in_sample_figures": figures,
    }
    return data
