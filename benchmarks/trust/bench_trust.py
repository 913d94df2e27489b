"""Benchmark: what p_reject adds per judgment, and fitting a profile on 10,000 labelled items.

    nice .venv/bin/python benchmarks/trust/bench_trust.py [--repeat 5]

1. Offline p_reject: the same judgments through the engine's offline tier with and without the
   p_reject step (feature extraction + the shipped model), side by side in one process on realistic
   varied inputs (German, English and Chinese RAG answers over multi-passage contexts, distinct
   questions; PII sentences for rag_privacy). Reported: ms per judgment for the p_reject step alone
   (min and median over repeats) and as a share of the whole offline judgment.
2. Fitting: fit_profile on 10,000 items (two tiers, scores from known distributions), min/median.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bqas.judging.engine import check_inputs
from bqas.judging.offline import OfflineJudge
from bqas.judgment.spec import default_registry
from bqas.offline.methods import MethodResult
from bqas.offline.p_reject import offline_confidence
from bqas.trust.fit import LabelledItem, Targets, fit_profile
from bqas.trust.profile import ProfileConfig, judge_hash

CONTEXTS = {
    "de": [
        "Die Sprechstunde der Klassenleitung findet dienstags von 13:15 bis 14:00 Uhr in Raum 204 statt.",
        "Für die Abiturprüfung 2025 gilt: Die schriftlichen Prüfungen beginnen am 9. April, die mündlichen am 2. Juni.",
        "Der Förderverein übernimmt bis zu 50 Euro der Kosten für die Klassenfahrt, wenn ein Antrag bis 15. März vorliegt.",
        "Die Mensa bietet täglich zwei Menüs an; ein Menü kostet 3,80 Euro, Bestellungen bis 9 Uhr am Vortag.",
    ],
    "en": [
        "The library is open from 8 am to 6 pm on weekdays and closes at noon on Saturdays.",
        "Students may borrow up to five books for three weeks; renewals are possible twice online.",
        "The science fair takes place on 14 May in the main hall; projects must be registered by 30 April.",
        "Bus line 12 stops at the school gate every 15 minutes between 7 and 9 am.",
    ],
    "zh": [
        "图书馆工作日早上八点开放，晚上六点关闭，周六中午闭馆。",
        "学生最多可借五本书，借期三周，可在网上续借两次。",
        "科学展览将于五月十四日在大礼堂举行，项目须在四月三十日前登记。",
        "十二路公交车早上七点到九点每十五分钟在校门口停靠一次。",
    ],
}
ANSWERS = {
    "de": [
        "Die Sprechstunde ist dienstags von 13:15 bis 14:00 Uhr in Raum {k}.",
        "Die schriftlichen Prüfungen beginnen am {k}. April, die mündlichen im Juni.",
        "Der Förderverein zahlt bis zu {k} Euro, wenn der Antrag rechtzeitig kommt.",
    ],
    "en": [
        "The library opens at 8 am and closes at {k} pm on weekdays.",
        "You can borrow up to {k} books for three weeks and renew them online.",
        "The science fair is on {k} May in the main hall.",
    ],
    "zh": [
        "图书馆工作日早上八点开放，晚上{k}点关闭。",
        "学生最多可借{k}本书，借期三周。",
        "科学展览将于五月{k}日举行。",
    ],
}


def samples(n: int) -> list[tuple[str, dict[str, object]]]:
    out = []
    rng = np.random.default_rng(0)
    for i in range(n):
        lang = ("de", "en", "zh")[i % 3]
        facts = list(rng.permutation(CONTEXTS[lang]))[: 2 + i % 3]
        answer = ANSWERS[lang][i % 3].format(k=int(rng.integers(2, 400)))
        out.append((lang, {"query": f"Frage {i}?", "response": answer, "available_facts": facts}))
    return out


def bench_p_reject(repeat: int) -> None:
    spec = default_registry().get("rag_hallucination")
    offline = OfflineJudge()
    data = samples(150)
    prepared = []
    for lang, sample in data:  # warm up: the embedding model loads once, outside the timing
        values = check_inputs(spec, sample)
        evidence: dict[str, MethodResult] = {}
        dims, _ = offline.evaluate(spec, values, lang, evidence)
        prepared.append((lang, values))
    with_p, without_p, step = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for lang, values in prepared:
            offline.evaluate(spec, values, lang)
        t1 = time.perf_counter()
        only = 0.0
        for lang, values in prepared:
            evidence = {}
            dims, _ = offline.evaluate(spec, values, lang, evidence)
            s = time.perf_counter()
            offline_confidence(spec, values, dims, evidence)
            only += time.perf_counter() - s
        t2 = time.perf_counter()
        n = len(prepared)
        without_p.append((t1 - t0) / n * 1000)
        with_p.append((t2 - t1) / n * 1000)
        step.append(only / n * 1000)
    print(f"offline judgment, {len(prepared)} varied de/en/zh RAG answers, {repeat} repeats (ms per judgment):")
    print(f"  without p_reject: min {min(without_p):.3f}  median {statistics.median(without_p):.3f}")
    print(f"  with p_reject:    min {min(with_p):.3f}  median {statistics.median(with_p):.3f}")
    print(f"  p_reject step alone: min {min(step):.4f}  median {statistics.median(step):.4f}")


def bench_fit(repeat: int) -> None:
    rng = np.random.default_rng(1)
    n = 10_000
    y = rng.random(n) < 0.3
    off = np.where(y, rng.beta(5, 2, n), rng.beta(2, 5, n))
    llm = np.where(y, rng.beta(8, 2, n), rng.beta(2, 8, n))
    items = [
        LabelledItem(str(i), ("de", "en", "zh")[i % 3], bool(y[i]), float(off[i]), float(llm[i])) for i in range(n)
    ]
    config = ProfileConfig(backend="auto", judge_hash=judge_hash(default_registry().get("rag_hallucination")))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fit_profile(items, judge="rag_hallucination", config=config, targets=Targets(), source="bench")
        times.append(time.perf_counter() - t0)
    print(f"fit_profile on {n} items, two tiers: min {min(times):.3f} s  median {statistics.median(times):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bench_p_reject(args.repeat)
    bench_fit(args.repeat)


if __name__ == "__main__":
    main()
