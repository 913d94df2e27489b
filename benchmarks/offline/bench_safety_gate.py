"""The deterministic safety gate's cost by answer length and language: the ``safety_gate``
method (PII rules, the Chinese NER pass on Han text, the judge-manipulation rules) on distinct realistic
answers, as the voice judge runs it on every sample and every backend.

Inputs (``_samples.py``, no /work/shared needed): German voice answers (30-90 characters), German, Chinese and
English RAG answers (2-4 sentences, 100-400 characters), and German, Chinese and English answers of about 1,000
and 3,000 characters made of the generated passages' sentences. Every text is distinct and each is judged once
per round (the manipulation rules' per-text memo is cleared between rounds), so no cache answers.

``--before SRC`` runs the same measurement in fresh processes against another source tree (a worktree of an
earlier commit) and this checkout, alternating, ``--repeat`` times each, and prints per bucket the min and
median microseconds per call of both and the ratio of the medians.

Run: nice .venv/bin/python benchmarks/offline/bench_safety_gate.py --before /tmp/before/src --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
sys.path.insert(0, str(BENCHMARKS))


def _long_answer(rng: random.Random, lang: str, chars: int) -> str:
    """An answer of about ``chars`` characters made of passage sentences (the way RAG answers restate)."""
    from _samples import rag_sample

    sep = "" if lang == "zh" else " "
    parts: list[str] = []
    while sum(map(len, parts)) < chars:
        sample = rag_sample(rng, lang, 0, context_chars=max(chars, 1500))
        sentences = [s for p in sample["available_facts"] for s in p.split("\n")[1:]]
        parts += rng.sample(sentences, k=min(len(sentences), 6))
    return sep.join(parts)[:chars]


def buckets(n: int, seed: int = 15) -> dict[str, list[tuple[str, str]]]:
    """Bucket name -> ``n`` distinct (text, language) pairs."""
    from _samples import rag_samples, voice_samples

    rng = random.Random(seed)
    out: dict[str, list[tuple[str, str]]] = {"voice de": [(s["response"], "de") for s in voice_samples(n, seed)]}
    for lang in ("de", "zh", "en"):
        out[f"answer {lang}"] = [(s["response"], lang) for s in rag_samples(n, seed, languages=(lang,))]
    for chars in (1000, 3000):
        for lang in ("de", "zh", "en"):
            out[f"{chars} {lang}"] = [(_long_answer(rng, lang, chars), lang) for _ in range(n)]
    return out


def measure(n: int) -> dict[str, dict[str, float]]:
    """Mean microseconds per ``safety_gate`` call and mean length, per bucket (one process)."""
    from bqas.offline.manipulation import _manipulation_hits
    from bqas.offline.methods import OfflineContext, get_method

    gate = get_method("safety_gate")
    data = buckets(n)
    # Imports, name lists, the NER model and the per-word memos warm up on other texts (a run judges
    # thousands of answers; the first few are not what it costs).
    for items in buckets(5, seed=99).values():
        for text, lang in items:
            gate({"text": text}, OfflineContext(language=lang))
    _manipulation_hits.cache_clear()
    result: dict[str, dict[str, float]] = {}
    for name, items in data.items():
        started = time.perf_counter()
        for text, lang in items:
            gate({"text": text}, OfflineContext(language=lang))
        elapsed = time.perf_counter() - started
        result[name] = {"us": elapsed / len(items) * 1e6, "chars": statistics.mean(len(t) for t, _ in items)}
    return result


def _child(src: str, n: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--n", str(n)], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def side_by_side(before: str, n: int, repeat: int) -> None:
    """Alternate fresh processes of ``before`` and this checkout; print min/median per bucket and the ratio."""
    this = str(BENCHMARKS.parent / "src")
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"before": [], "after": []}
    for r in range(repeat):
        order = [("before", before), ("after", this)] if r % 2 == 0 else [("after", this), ("before", before)]
        for label, src in order:
            runs[label].append(_child(src, n))
            print(f"round {r + 1} {label} done", file=sys.stderr)
    print(f"safety_gate, {n} distinct texts per bucket, {repeat} alternating rounds; us per call (min / median)")
    print(
        f"{'bucket':12s} {'chars':>6s} {'before min':>11s} {'median':>9s} {'after min':>10s} {'median':>9s} {'ratio':>6s}"
    )
    for name in runs["after"][0]:
        b = [run[name]["us"] for run in runs["before"]]
        a = [run[name]["us"] for run in runs["after"]]
        chars = runs["after"][0][name]["chars"]
        ratio = statistics.median(b) / statistics.median(a)
        print(
            f"{name:12s} {chars:6.0f} {min(b):11.0f} {statistics.median(b):9.0f} "
            f"{min(a):10.0f} {statistics.median(a):9.0f} {ratio:5.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="distinct texts per bucket")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", help="src/ of another checkout, measured side by side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.n)))
    elif args.before:
        side_by_side(args.before, args.n, args.repeat)
    else:
        for name, row in measure(args.n).items():
            print(f"{name:12s} {row['chars']:6.0f} chars {row['us']:9.0f} us per call")


if __name__ == "__main__":
    main()
