"""The review loop's CPU per result record, as ``bqas run`` pays it after each batch.

``process_results`` over batches of 200 voice-judge records (distinct ids, every tenth one escalated)
in a fresh SQLite store, as the runner's writer thread calls it. Prints CPU milliseconds per record for
each round. To compare with another checkout, run it with that checkout's ``src`` first on PYTHONPATH:

    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/service/bench_review_batch.py
    .venv/bin/python benchmarks/service/bench_review_batch.py [--batches 25] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Any


def record(i: int) -> dict[str, Any]:
    """A voice-judge result record as the runner stores it (inputs included)."""
    escalated = i % 10 == 0
    return {
        "run_id": "r-bench",
        "response_id": f"s{i}",
        "judge": "voice",
        "language": "de",
        "status": "scored",
        "verdict": "needs_review" if escalated else "production_ready",
        "composite_score": 80.0 if escalated else 92.5,
        "intent_accuracy": 85,
        "faithfulness": 4,
        "safety": "pass",
        "dimensions": {
            "faithfulness": {"value": 4, "backend": "llm", "model": "m", "method": "judge_prompt", "measured": True},
            "safety": {"value": "pass", "backend": "offline", "method": "safety_rules", "measured": True},
        },
        "escalation": "human_review" if escalated else None,
        "escalation_reasons": ["borderline composite 80 in 75-85"] if escalated else [],
        "inputs": {"user_input": f"Erinnere mich an Termin {i} morgen früh", "response": f"Termin {i} gemerkt."},
        "warnings": [],
        "errors": [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import bqas
    from bqas.review.process import process_results
    from bqas.store.db import open_store

    print(f"bqas from {bqas.__file__}")
    per: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.sqlite")
        process_results(store, "@local", [record(-1)], source="r-bench")  # warm: registry, statements
        for rnd in range(args.rounds):
            n = args.batches * args.batch_size
            cpu = time.process_time()
            for b in range(args.batches):
                first = rnd * 10_000_000 + b * args.batch_size
                batch = [record(first + j) for j in range(args.batch_size)]
                process_results(store, "@local", batch, source="r-bench")
            per.append(1000 * (time.process_time() - cpu) / n)
            print(f"round {rnd + 1}: {per[-1]:.3f} ms CPU per record ({n} records)")
    print(f"min {min(per):.3f} median {statistics.median(per):.3f} ms CPU per record")


if __name__ == "__main__":
    main()
