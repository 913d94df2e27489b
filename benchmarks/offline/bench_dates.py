"""The grounding date extractor with and without its literal pre-filter, side by side in one process.

Texts: the responses and context passages of the generated RAG samples (German, Chinese, English; the
samples of bench_offline.py) and of the MTRAG DEV turns, as ``_build_context`` and the claim checks pass
them to ``extract_dates``. Each set runs REPEATS times both ways, alternating; the script first checks
that both ways give the same dates and blanked text for every text (it exits 1 when not).

Run: nice .venv/bin/python benchmarks/offline/bench_dates.py [REPEATS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import mtrag_samples, rag_samples
from bench_offline import MTRAG

from bqas.offline.grounding import extract_dates


def text_sets() -> dict[str, list[str]]:
    """Responses and passages per workload."""
    sets: dict[str, list[str]] = {}
    rag = rag_samples(300, seed=21)
    for lang in ("de", "zh", "en"):
        sets[f"rag {lang}"] = [
            text for s in rag if s["language"] == lang for text in [s["response"], *s["available_facts"]]
        ]
    sets["mtrag"] = [
        text for s in mtrag_samples(MTRAG, 150) for text in [s["response"], *(s.get("available_facts") or [])]
    ]
    return {name: texts for name, texts in sets.items() if texts}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for name, texts in text_sets().items():
        if any(extract_dates(t) != extract_dates(t, prefilter=False) for t in texts):
            print(f"{name}: the pre-filtered extraction differs from running every pattern")
            sys.exit(1)
        cpu: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(repeats):
            for filtered in (True, False):
                started = time.process_time()
                for text in texts:
                    extract_dates(text, prefilter=filtered)
                cpu[filtered].append(1e6 * (time.process_time() - started) / len(texts))
        mean_chars = sum(map(len, texts)) // len(texts)
        on, off = statistics.median(cpu[True]), statistics.median(cpu[False])
        print(
            f"{name:7s} {len(texts):5d} texts, {mean_chars:5d} chars mean: pre-filtered min {min(cpu[True]):6.1f}"
            f" median {on:6.1f} us per text; every pattern min {min(cpu[False]):6.1f} median {off:6.1f} us;"
            f" ratio of medians {off / on:.2f}x"
        )


if __name__ == "__main__":
    main()
