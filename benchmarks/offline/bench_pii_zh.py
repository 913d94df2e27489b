"""Benchmark: Chinese person names and addresses of ``bqas.offline.pii`` on the Chinese PII test set.

The set (``tests/fixtures/pii_zh.jsonl``, built by ``benchmarks/offline/make_pii_zh.py``: hand-written templates,
names and places from Faker's zh_CN lists, MIT) has gold ``person`` and ``address`` spans and negatives
(hard ones: 张家界, 王府井大街, specimen names). It is written for BQAS and the NER mapping was checked
against it, so its figures are IN-SAMPLE.

Printed side by side for the regex rules alone (``BQAS_ZH_NER=off``) and with LAC (the default):

* per kind, span overlap precision / recall / F1 over all findings, and over gating findings
  (confidence >= GATE_MIN_CONFIDENCE, what fails ``pii_gate``);
* sentence level: share of positive sentences that fail the gate, share of negatives that pass;
* milliseconds per sentence for ``detect_pii(text, "zh")`` (model loaded, the NER memo emptied before
  each call; median, p95 of 3 repeats).

Usage::

    .venv/bin/python benchmarks/offline/bench_pii_zh.py [--data PATH] [--show-errors N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO / "tests" / "fixtures" / "pii_zh.jsonl"
KINDS = ("person", "address")


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _prf(tp_p: int, n_pred: int, tp_r: int, n_gold: int) -> str:
    p = tp_p / n_pred if n_pred else 0.0
    r = tp_r / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return f"P {p:.3f}  R {r:.3f}  F1 {f:.3f}  (pred {n_pred}, gold {n_gold})"


def evaluate(records: list[dict[str, Any]], show: int) -> None:
    from bqas.offline import zh_ner
    from bqas.offline.pii import detect_pii
    from bqas.offline.safety import GATE_MIN_CONFIDENCE

    # The NER pass remembers its tags per sentence; forgetting them before each call keeps the figure the
    # cost of a new sentence, as before the memo.
    forget = getattr(getattr(zh_ner, "_tagged", None), "cache_clear", lambda: None)
    timings: list[float] = []
    preds: list[list[Any]] = []
    for rep in range(3):
        for rec in records:
            forget()
            t0 = time.perf_counter()
            found = detect_pii(rec["text"], "zh")
            timings.append(time.perf_counter() - t0)
            if rep == 0:
                preds.append(found)
    shown = 0
    for gating in (False, True):
        label = "gating findings" if gating else "all findings"
        for kind in KINDS:
            tp_p = n_pred = tp_r = n_gold = 0
            for rec, found in zip(records, preds, strict=True):
                gold = [(e["start"], e["end"]) for e in rec["entities"] if e["type"] == kind]
                pred = [
                    (f.start, f.end)
                    for f in found
                    if f.kind == kind and (not gating or f.confidence >= GATE_MIN_CONFIDENCE)
                ]
                n_pred += len(pred)
                n_gold += len(gold)
                tp_p += sum(1 for p in pred if any(_overlaps(p, g) for g in gold))
                tp_r += sum(1 for g in gold if any(_overlaps(p, g) for p in pred))
                if not gating and shown < show:
                    for p in pred:
                        if not any(_overlaps(p, g) for g in gold):
                            shown += 1
                            print(f"    FP {kind}: {rec['text'][p[0] : p[1]]!r} in {rec['text']!r}")
                    for g in gold:
                        if not any(_overlaps(p, g) for p in pred):
                            shown += 1
                            print(f"    FN {kind}: {rec['text'][g[0] : g[1]]!r} in {rec['text']!r}")
            print(f"  {label:<16}{kind:<8} {_prf(tp_p, n_pred, tp_r, n_gold)}")
    pos = [(r, f) for r, f in zip(records, preds, strict=True) if not r["negative"]]
    neg = [(r, f) for r, f in zip(records, preds, strict=True) if r["negative"]]
    fails = sum(1 for _, f in pos if any(x.confidence >= GATE_MIN_CONFIDENCE for x in f))
    passes = sum(1 for _, f in neg if not any(x.confidence >= GATE_MIN_CONFIDENCE for x in f))
    print(f"  gate: positives failed {fails}/{len(pos)} = {fails / len(pos):.1%}; ", end="")
    print(f"negatives passed {passes}/{len(neg)} = {passes / len(neg):.1%}")
    ms = sorted(t * 1000 for t in timings)
    print(f"  ms per sentence: median {statistics.median(ms):.2f}, p95 {ms[int(0.95 * len(ms))]:.2f} (n={len(ms)})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--show-errors", type=int, default=0)
    args = ap.parse_args(argv)
    records = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    in_sample = args.data.resolve() == DEFAULT_DATA.resolve()
    print(f"{args.data} ({len(records)} sentences){' - IN-SAMPLE' if in_sample else ''}")
    from bqas.offline.pii import detect_pii

    for setting in ("off", "on"):
        os.environ["BQAS_ZH_NER"] = setting
        detect_pii("张伟同学", "zh")  # load the lists (and the model) before timing
        print(f"== BQAS_ZH_NER={setting} ({'regex rules only' if setting == 'off' else 'regex + LAC'})")
        evaluate(records, args.show_errors)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
