"""Benchmark the offline grounding methods against human hallucination/faithfulness labels (DEV sets).

Datasets (``--data``, default ``../shared/datasets``, see its README; a missing file is skipped):

* ``rag_faithfulness_en.jsonl`` (MTRAG): facts = the reference passages (turns without passages are
  skipped); hallucinated = ``faithful is False`` (``null`` excluded from the gate figures); Spearman of
  grounding_score with the mean human faithfulness rating.
* ``attribution_en.jsonl`` (BEGIN): facts = ``knowledge``; hallucinated = ``not_fully_attributable``,
  grounded = ``fully_attributable``; ``generic`` responses are reported separately.
* ``hallucination_zh.jsonl`` (HalluQA): facts = question + the right answers; responses = each wrong
  answer (hallucinated) and each right answer (not hallucinated; its own text is left out of the facts).
* ``hallucination_en.jsonl`` (HaluEval general): there are NO facts in this dataset; the question is the
  only "fact", so this measures how the methods behave outside a RAG setting (expect poor figures).

Printed per dataset: gate (``claim_invention_gate`` fail = hallucinated) accuracy / precision / recall /
F1, the same for ``grounding_score < 50``, Spearman / ROC-AUC of grounding_score (higher = more grounded)
against the labels, share not measured, and ms per sample (all three methods, excluding model load).

Usage: ``python benchmarks/offline/bench_grounding.py [--limit N] [--data DIR] [--sim X --lex Y]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part

from bqas.offline import grounding
from bqas.offline.grounding import claims as grounding_claims
from bqas.offline.methods import OfflineContext


@dataclass
class Sample:
    answer: str
    facts: list[str]
    hallucinated: bool | None  # None: no binary label
    human: float | None = None  # graded human score, higher = more faithful
    group: str = ""


def _rows(path: Path, limit: int | None) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if limit is not None and n >= limit:
                return
            yield json.loads(line)


def load_mtrag(path: Path, limit: int | None) -> list[Sample]:
    out = []
    for r in _rows(path, limit):
        if not r["contexts"]:
            continue
        human = r["human"].get("faithfulness") or []
        out.append(Sample(r["answer"], r["contexts"], None if r["faithful"] is None else not r["faithful"],
                          statistics.mean(human) if human else None))  # fmt: skip
    return out


def load_begin(path: Path, limit: int | None) -> list[Sample]:
    out = []
    for r in _rows(path, limit):
        label = r["label"]
        hallu = None if label == "generic" else label == "not_fully_attributable"
        out.append(Sample(r["response"], [r["knowledge"]], hallu, group=label))
    return out


def load_halluqa(path: Path, limit: int | None) -> list[Sample]:
    out = []
    for r in _rows(path, limit):
        rights = r["right_answers"]
        for w in r["wrong_answers"]:
            out.append(Sample(w, [r["question"], *rights], True, group=r["category"]))
        for i, a in enumerate(rights):
            others = [x for j, x in enumerate(rights) if j != i]
            out.append(Sample(a, [r["question"], *others], False, group=r["category"]))
    return out


def load_halueval(path: Path, limit: int | None) -> list[Sample]:
    return [Sample(r["answer"], [r["question"]], bool(r["hallucinated"])) for r in _rows(path, limit)]


def _prf(pred: list[bool], gold: list[bool]) -> str:
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    fp = sum(p and not g for p, g in zip(pred, gold, strict=True))
    fn = sum(not p and g for p, g in zip(pred, gold, strict=True))
    acc = sum(p == g for p, g in zip(pred, gold, strict=True)) / len(gold)
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * prec * rec / (prec + rec) if tp else 0.0
    return f"acc {acc:.3f}  prec {prec:.3f}  rec {rec:.3f}  F1 {f1:.3f}  (n={len(gold)}, positives={sum(gold)})"


def evaluate(name: str, samples: list[Sample]) -> None:
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    gates: list[str | None] = []
    scores: list[float | None] = []
    t0 = time.perf_counter()
    for s in samples:
        ctx = OfflineContext(language="en")
        inputs = {"answer": s.answer, "facts": s.facts}
        scores.append(grounding.claim_grounding(inputs, ctx).value)
        gates.append(grounding.claim_invention_gate(inputs, ctx).value)
        grounding.unsupported_claims(inputs, ctx)
    ms = 1000 * (time.perf_counter() - t0) / max(1, len(samples))
    print(f"\n== {name}: {len(samples)} samples, {ms:.1f} ms/sample")
    labelled = [(g, sc, s) for g, sc, s in zip(gates, scores, samples, strict=True) if s.hallucinated is not None]
    gate_rows = [(g == "fail", bool(s.hallucinated)) for g, _, s in labelled if g is not None]
    if gate_rows:
        print("  gate  fail=hallucinated:  " + _prf([p for p, _ in gate_rows], [y for _, y in gate_rows]))
    score_rows = [(sc, bool(s.hallucinated)) for _, sc, s in labelled if sc is not None]
    not_measured = sum(1 for _, sc, _ in labelled if sc is None)
    print(f"  grounding_score not measured (no checkable claim): {not_measured}/{len(labelled)}")
    if score_rows:
        print("  score <50 = hallucinated: " + _prf([sc < 50 for sc, _ in score_rows], [y for _, y in score_rows]))
        ys = [0 if y else 1 for _, y in score_rows]
        xs = [sc for sc, _ in score_rows]
        if 0 < sum(ys) < len(ys):
            print(f"  grounding_score vs grounded label: ROC-AUC {roc_auc_score(ys, xs):.3f}"
                  f"  Spearman {spearmanr(xs, ys).statistic:.3f}")  # fmt: skip
        gm = statistics.mean(sc for sc, y in score_rows if not y) if any(not y for _, y in score_rows) else float("nan")
        hm = statistics.mean(sc for sc, y in score_rows if y) if any(y for _, y in score_rows) else float("nan")
        print(f"  mean grounding_score: grounded {gm:.1f}, hallucinated {hm:.1f}")
    graded = [(sc, s.human) for sc, s in zip(scores, samples, strict=True) if sc is not None and s.human is not None]
    if graded:
        rho = spearmanr([a for a, _ in graded], [b for _, b in graded]).statistic
        print(f"  Spearman(grounding_score, human faithfulness mean) = {rho:.3f} (n={len(graded)})")
    groups = sorted({s.group for s in samples if s.group})
    if groups and name.startswith("attribution"):
        for grp in groups:
            gs = [g for g, s in zip(gates, samples, strict=True) if s.group == grp and g is not None]
            print(f"  {grp}: gate fail rate {sum(g == 'fail' for g in gs) / max(1, len(gs)):.3f} (n={len(gs)})")


LOADERS = (
    ("rag_faithfulness_en.jsonl", load_mtrag),
    ("attribution_en.jsonl", load_begin),
    ("hallucination_zh.jsonl", load_halluqa),
    ("hallucination_en.jsonl", load_halueval),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="records per dataset")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--only", default=None, help="substring of the dataset file names to run")
    ap.add_argument("--sim", type=float, default=None, help="override SIM_THRESHOLD")
    ap.add_argument("--lex", type=float, default=None, help="override LEX_THRESHOLD")
    args = ap.parse_args(argv)
    if args.sim is not None:
        grounding_claims.SIM_THRESHOLD = args.sim
    if args.lex is not None:
        grounding_claims.LEX_THRESHOLD = args.lex
    ctx = OfflineContext(language="en")
    t0 = time.perf_counter()
    ctx.embedder().embed(["warm up"])
    print(f"data: {data_part(args.data)}")
    print(f"embedder {ctx.embedder().name} loaded in {1000 * (time.perf_counter() - t0):.0f} ms; "
          f"SIM_THRESHOLD={grounding_claims.SIM_THRESHOLD} LEX_THRESHOLD={grounding_claims.LEX_THRESHOLD} "
          f"(with facts: {grounding.SIM_THRESHOLD_WITH_FACTS}/{grounding.LEX_THRESHOLD_WITH_FACTS})")  # fmt: skip
    for fname, loader in LOADERS:
        if args.only and args.only not in fname:
            continue
        path = args.data / fname
        if not path.exists():
            print(f"[skip] {path} not found")
            continue
        evaluate(fname, loader(path, args.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
