"""Does embedding only the candidate context units (``grounding.candidate_units``) change the grounding
decisions? Runs the grounding analysis twice on the same samples, once embedding every context unit and
once with the shipped candidate selection, and prints how many claims changed their ``supported``
decision, the change of the best-sentence cosine, and the CPU time of both (side by side).

Samples: generated German/Chinese/English RAG samples (``_samples.py``) and, when present, the MTRAG DEV
contexts (Apache-2.0) from /work/shared/datasets.

Run: nice .venv/bin/python benchmarks/bench_grounding_candidates.py [--n 150]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _samples import mtrag_samples, rag_samples

from bqas.offline import grounding
from bqas.offline.embeddings import default_embedder
from bqas.offline.methods import OfflineContext

MTRAG = "/work/shared/datasets/rag_faithfulness_en.jsonl"


def analyse(samples: list[dict[str, object]], embed_all: bool) -> tuple[list[tuple[bool, float]], float]:
    saved = grounding.EMBED_ALL_UNITS
    grounding.EMBED_ALL_UNITS = 10**9 if embed_all else saved
    default_embedder()._cache.clear()  # type: ignore[attr-defined]
    grounding._CONTEXTS.clear()
    out: list[tuple[bool, float]] = []
    started = time.process_time()
    try:
        for s in samples:
            ctx = OfflineContext(language=str(s["language"]))
            a = grounding.analyse_grounding(str(s["response"]), list(s["available_facts"]), ctx, str(s["query"]))  # type: ignore[call-overload]
            out.extend((c.supported, c.similarity or 0.0) for c in a.checkable)
    finally:
        grounding.EMBED_ALL_UNITS = saved
    return out, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150, help="samples per set")
    args = parser.parse_args()
    default_embedder().embed(["load"])
    sets = {"generated de/zh/en": rag_samples(args.n), "MTRAG DEV": mtrag_samples(MTRAG, args.n)}
    for name, samples in sets.items():
        if not samples:
            print(f"{name}: not available")
            continue
        full, t_full = analyse(samples, embed_all=True)
        cand, t_cand = analyse(samples, embed_all=False)
        changed = sum(1 for (a, _), (b, _) in zip(full, cand, strict=True) if a != b)
        drops = [f - c for (_, f), (_, c) in zip(full, cand, strict=True)]
        print(
            f"{name}: {len(samples)} samples, {len(full)} claims; supported decision changed for {changed}"
            f" ({100 * changed / max(1, len(full)):.1f} %); cosine lower by mean {statistics.fmean(drops):.4f},"
            f" max {max(drops):.4f}; CPU all units {1000 * t_full / len(samples):.1f} ms/sample,"
            f" candidates {1000 * t_cand / len(samples):.1f} ms/sample (ratio {t_full / t_cand:.2f})"
        )


if __name__ == "__main__":
    main()
