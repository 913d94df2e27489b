"""What the learned grounding scorer adds to the offline rag_hallucination cost, side by side.

    nice .venv/bin/python benchmarks/bench_grounding_cost.py --data ../shared/datasets [--n 100] [--repeat 3]

Samples: the MTRAG DEV turns with passages (real multi-passage RAG contexts, 3-5k characters, distinct
questions). For each sample and repeat, both scorers run from cold caches (embedding LRU, built
contexts, the per-answer analysis cleared before each call), in alternating order:

* rules: ``claim_grounding`` + ``claim_invention_gate`` (the judge's offline methods before the model);
* learned: ``learned_grounding`` + ``learned_invention_gate`` (the analysis, the features, one
  question-answer similarity, the logistic model).

Printed: ms per sample (min and median over the repeats of the per-repeat mean) for each, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _data import DEFAULT_DATA, data_part

from bqas.offline import grounding
from bqas.offline.embeddings import default_embedder
from bqas.offline.grounding_data import load_mtrag
from bqas.offline.grounding_model import learned_grounding, learned_invention_gate, load_model
from bqas.offline.methods import OfflineContext


def _cold(ctx: OfflineContext) -> None:
    emb = ctx.embedder()
    cache = getattr(emb, "_cache", None)
    if cache is not None:
        cache.clear()
    grounding._CONTEXTS.clear()
    ctx.resources.pop("grounding_cache", None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    samples = load_mtrag(args.data / "rag_faithfulness_en.jsonl")[: args.n]
    print(f"data: {data_part(args.data)}; {len(samples)} MTRAG samples, contexts "
          f"{statistics.median(sum(len(f) for f in s.facts) for s in samples):.0f} characters (median)")  # fmt: skip
    ctx = OfflineContext(language="en", embedder_factory=default_embedder)
    ctx.embedder().embed(["warm up"])
    load_model()
    runs: dict[str, list[float]] = {"rules": [], "learned": []}
    for rep in range(args.repeat):
        totals = {"rules": 0.0, "learned": 0.0}
        for i, s in enumerate(samples):
            inputs = {"answer": s.answer, "facts": list(s.facts), "query": s.query}
            order = ("rules", "learned") if (i + rep) % 2 == 0 else ("learned", "rules")
            for name in order:
                _cold(ctx)
                t0 = time.perf_counter()
                if name == "rules":
                    grounding.claim_grounding(inputs, ctx)
                    grounding.claim_invention_gate(inputs, ctx)
                else:
                    learned_grounding(inputs, ctx)
                    learned_invention_gate(inputs, ctx)
                totals[name] += time.perf_counter() - t0
        for name, total in totals.items():
            runs[name].append(1000 * total / len(samples))
    for name, vals in runs.items():
        print(f"{name:8} ms/sample: min {min(vals):.1f}  median {statistics.median(vals):.1f}  ({len(vals)} repeats)")
    ratio = [b / a for a, b in zip(runs["rules"], runs["learned"], strict=True)]
    print(f"learned / rules: min {min(ratio):.2f}  median {statistics.median(ratio):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
