"""What the learned grounding scorer adds to the offline rag_hallucination cost, side by side.

    nice .venv/bin/python benchmarks/offline/bench_grounding_cost.py --data ../shared/datasets [--n 100] [--repeat 3]

Samples: the MTRAG DEV turns with passages (real multi-passage RAG contexts, 3-5k characters, distinct
questions). For each sample and repeat, both scorers run from cold caches (embedding LRU, built
contexts, the per-answer analysis cleared before each call), in alternating order:

* rules: ``claim_grounding`` + ``claim_invention_gate`` (the judge's offline methods before the model);
* learned: ``learned_grounding`` + ``learned_invention_gate`` (the analysis, the features, one
  question-answer similarity, the logistic model) with the verifier off (``BQAS_VERIFIER=off``);
* cascade: the same with the shipped cascade (the verifier where the grounding model is unsure), plus
  ``learned_unsupported_claims`` (hallucinated_claims), i.e. what the offline rag_hallucination judge runs.

Printed: wall ms and CPU ms per sample (min and median over the repeats of the per-repeat mean) for each,
the ratios, the share of samples the verifier read, and the verifier's load time in a fresh process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part

from bqas.offline import grounding
from bqas.offline.embeddings import default_embedder
from bqas.offline.grounding_model import (
    cascade_enabled,
    learned_grounding,
    learned_invention_gate,
    learned_unsupported_claims,
    load_model,
)
from bqas.offline.methods import OfflineContext
from bqas.training.grounding.datasets import load_mtrag


def _cold(ctx: OfflineContext) -> None:
    emb = ctx.embedder()
    cache = getattr(emb, "_cache", None)
    if cache is not None:
        cache.clear()
    grounding._CONTEXTS.clear()
    ctx.resources.pop("grounding_cache", None)
    ctx.resources.pop("grounding_probability", None)


LOAD = (
    "import time; t = time.perf_counter(); from bqas.offline.verifier.runtime import load_verifier; "
    "load_verifier(); print(time.perf_counter() - t)"
)


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
    names = ["rules", "learned"] + (["cascade"] if cascade_enabled() else [])
    runs: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    verified = 0
    for rep in range(args.repeat):
        totals = dict.fromkeys(names, 0.0)
        cpu_totals = dict.fromkeys(names, 0.0)
        for i, s in enumerate(samples):
            inputs = {"answer": s.answer, "facts": list(s.facts), "query": s.query}
            order = names[(i + rep) % len(names) :] + names[: (i + rep) % len(names)]
            for name in order:
                _cold(ctx)
                if name == "learned":
                    os.environ["BQAS_VERIFIER"] = "off"
                t0, c0 = time.perf_counter(), time.process_time()
                if name == "rules":
                    grounding.claim_grounding(inputs, ctx)
                    grounding.claim_invention_gate(inputs, ctx)
                    grounding.unsupported_claims(inputs, ctx)
                else:
                    g = learned_grounding(inputs, ctx)
                    learned_invention_gate(inputs, ctx)
                    learned_unsupported_claims(inputs, ctx)
                    if name == "cascade" and rep == 0 and (g.details or {}).get("stage") == "verifier":
                        verified += 1
                totals[name] += time.perf_counter() - t0
                cpu_totals[name] += time.process_time() - c0
                os.environ.pop("BQAS_VERIFIER", None)
        for name in names:
            runs[name].append(1000 * totals[name] / len(samples))
            cpu[name].append(1000 * cpu_totals[name] / len(samples))
    for name in names:
        w, c = runs[name], cpu[name]
        print(f"{name:8} ms/sample wall: min {min(w):.1f}  median {statistics.median(w):.1f}; "
              f"CPU: min {min(c):.1f}  median {statistics.median(c):.1f}  ({len(w)} repeats)")  # fmt: skip
    for name in names[1:]:
        ratio = [b / a for a, b in zip(cpu["rules"], cpu[name], strict=True)]
        print(f"{name} / rules (CPU): min {min(ratio):.2f}  median {statistics.median(ratio):.2f}")
    if "cascade" in names:
        print(f"verifier ran on {verified}/{len(samples)} samples ({verified / len(samples):.0%})")
        loads = [float(subprocess.check_output([sys.executable, "-c", LOAD], text=True)) for _ in range(3)]
        print(f"verifier load in a fresh process: min {min(loads):.2f} s  median {statistics.median(loads):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
