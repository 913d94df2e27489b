"""Offline judge speed on real inputs: mean / p50 / p95 milliseconds per sample and CPU per sample, after
the embedding model is loaded (load time printed apart), with the defaults (one embedder thread).

Workloads, each in distinct samples so that the embedding caches answer only what repeats for real:
* ``rag de|zh|en`` - generated RAG samples (``_samples.py``): 3-5 passages, ~4,000 characters of context;
* ``mtrag`` - MTRAG DEV (English, Apache-2.0, several passages, ~3.7k characters) when /work/shared exists;
* ``voice`` - generated short German voice turns;
* ``shipped`` - the example scenarios in scenarios/data.
Target: rag_hallucination < 50 ms per sample mean, voice < 5 ms. On a busy machine wall time
exceeds CPU time; both are printed. ``--repeat`` runs the whole set again in the same process (fresh
samples each pass) and prints min and median of the pass means.

``--verifier both`` measures the grounding cascade's two settings side by side: ``--repeat`` rounds, each
running this script once with ``BQAS_VERIFIER=off`` (the default) and once with ``on`` in fresh processes
(cold caches, the same samples for both, the order swapped every round; round i uses seed 15 + i), and
prints min and median over the rounds per setting. Same samples in one process would not do: the second
setting would find the first one's texts in the caches of the rules, the embedder and ``re``.

Run: nice .venv/bin/python benchmarks/offline/bench_offline.py [--n 150] [--repeat 3] [--verifier both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _samples import mtrag_samples, rag_samples, voice_samples

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judgment.spec import default_registry

ROOT = Path(__file__).resolve().parents[2]
MTRAG = "/work/shared/datasets/rag_faithfulness_en.jsonl"
SHIPPED = {
    "voice_de.jsonl": "de",
    "abitur_rag_de.jsonl": "de",
    "device_docs_zh.jsonl": "zh",
}


def shipped_samples() -> list[dict[str, Any]]:
    out = []
    for name, lang in SHIPPED.items():
        for line in (ROOT / "scenarios/data" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                sample = json.loads(line)
                sample.setdefault("language", lang)
                sample.setdefault("judge", "voice")
                out.append(sample)
    return out


def workloads(n: int, seed: int) -> dict[str, list[dict[str, Any]]]:
    rag = rag_samples(3 * n, seed=seed)
    sets = {f"rag {lang}": [s for s in rag if s["language"] == lang] for lang in ("de", "zh", "en")}
    sets["mtrag"] = mtrag_samples(MTRAG, n)
    sets["voice"] = voice_samples(n, seed=seed)
    sets["shipped"] = shipped_samples()
    return {k: v for k, v in sets.items() if v}


async def measure(engine: JudgeEngine, samples: list[dict[str, Any]]) -> tuple[list[float], float]:
    """Per-sample wall milliseconds (one at a time, as `bqas score` does) and process CPU ms per sample."""
    times: list[float] = []
    cpu0 = time.process_time()
    for sample in samples:
        judges = sample.get("judge") or "voice"
        for judge in [judges] if isinstance(judges, str) else judges:
            started = time.perf_counter()
            await engine.evaluate(judge, sample, response_id=sample["id"], language=sample.get("language"))
            times.append(1000 * (time.perf_counter() - started))
    return times, 1000 * (time.process_time() - cpu0) / max(1, len(times))


def side_by_side(n: int, rounds: int) -> None:
    """Rounds of one fresh process per verifier setting (order swapped every round); min / median per setting."""
    cpus: dict[str, list[float]] = defaultdict(list)
    means: dict[str, list[float]] = defaultdict(list)
    for i in range(rounds):
        for setting in ("off", "on") if i % 2 == 0 else ("on", "off"):
            out = subprocess.run(
                [sys.executable, __file__, "--n", str(n), "--repeat", "1", "--seed", str(15 + i), "--json"],
                env=os.environ | {"BQAS_VERIFIER": setting},
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for name, figures in json.loads(out.strip().splitlines()[-1]).items():
                cpus[f"{name} [verifier {setting}]"].append(figures["cpu_ms"])
                means[f"{name} [verifier {setting}]"].append(figures["mean_ms"])
            print(f"round {i + 1}/{rounds} verifier {setting} done", file=sys.stderr, flush=True)
    for name in sorted(cpus):
        c, m = cpus[name], means[name]
        print(
            f"{name:26s} rounds={len(c)}  CPU/sample min {min(c):6.1f} median {statistics.median(c):6.1f} ms"
            f"  wall mean min {min(m):6.1f} median {statistics.median(m):6.1f} ms"
        )
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150, help="samples per generated workload")
    parser.add_argument("--repeat", type=int, default=3, help="passes (each with fresh generated samples)")
    parser.add_argument("--seed", type=int, default=15, help="seed of the first pass's generated samples")
    parser.add_argument("--verifier", choices=("env", "both"), default="env",
                        help="both: the cascade off and on side by side (BQAS_VERIFIER), in fresh processes")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args()
    if args.verifier == "both":
        side_by_side(args.n, args.repeat)
        return
    engine = JudgeEngine(default_registry(), options=EngineOptions(backend="offline"))
    t0 = time.perf_counter()
    engine.offline.load()
    from bqas.offline.grounding_model import cascade_enabled

    if cascade_enabled():
        from bqas.offline.verifier.runtime import load_verifier

        load_verifier()  # the verifier's ONNX session loads on first use: a model load, excluded like the embedder's
    print(f"model load: {1000 * (time.perf_counter() - t0):.0f} ms (excluded below; embedder threads: 1)", flush=True)
    means: dict[str, list[float]] = defaultdict(list)
    cpus: dict[str, list[float]] = defaultdict(list)
    last: dict[str, list[float]] = {}

    async def run() -> None:
        for rep in range(args.repeat):
            for name, samples in workloads(args.n, seed=args.seed + rep).items():
                if name in ("mtrag", "shipped") and rep > 0:
                    # Fixed sets: a second pass would be answered from the caches.
                    continue
                times, cpu = await measure(engine, samples)
                means[name].append(statistics.fmean(times))
                cpus[name].append(cpu)
                last[name] = times

    asyncio.run(run())
    for name, ms in means.items():
        q = statistics.quantiles(last[name], n=20)
        target = 5.0 if name == "voice" else 50.0
        verdict = "met" if min(ms) < target else "MISSED"
        print(
            f"{name:8s} n={len(last[name]):4d} passes={len(ms)}  mean min {min(ms):6.1f} median"
            f" {statistics.median(ms):6.1f} ms  p50 {statistics.median(last[name]):6.1f}  p95 {q[18]:6.1f}"
            f"  CPU/sample min {min(cpus[name]):6.1f} ms  (target < {target:g} ms: {verdict})"
        )
    if args.json:
        print(json.dumps({name: {"cpu_ms": min(cpus[name]), "mean_ms": min(ms)} for name, ms in means.items()}))


if __name__ == "__main__":
    main()
