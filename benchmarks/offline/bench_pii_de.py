"""Benchmark: person-name detection of ``bqas.offline.pii`` on German NER data (GermEval 2014).

GermEval 2014 (CC BY 4.0) is newspaper and Wikipedia text, so it measures name finding in general German
prose, where most persons appear without a title cue; teacher notes ("Frau Yilmaz", "Schülerin Lea") are
easier. Gold persons are the outer-level ``PER`` entities without variant; ``PER-deriv``/``PER-part``
(e.g. "Bismarck-Ära") are reported separately and neither count as misses nor as false positives.

Figures printed:

* span level (exact match of start and end) precision, recall, F1;
* overlap level (a predicted span counts as correct if it overlaps a gold PER span; a gold span is found
  if any prediction overlaps it) precision, recall, F1;
* token level precision, recall, F1 over the tokens inside PER spans;
* predictions that fall on LOC/ORG spans (false positives of the most confusable kind);
* milliseconds per sentence for ``detect_pii(text, kinds={"person"})`` and for all kinds.

Usage::

    .venv/bin/python benchmarks/offline/bench_pii_de.py [--data PATH] [--limit N] [--show-errors N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import data_part

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO / ".." / "shared" / "datasets" / "pii_de.jsonl"


@dataclass
class Counts:
    """Running totals for one evaluation."""

    span_tp: int = 0
    pred: int = 0
    gold: int = 0
    overlap_pred_ok: int = 0
    overlap_gold_found: int = 0
    tok_tp: int = 0
    tok_pred: int = 0
    tok_gold: int = 0
    fp_on: Counter[str] = field(default_factory=Counter)
    variant_found: Counter[str] = field(default_factory=Counter)
    variant_total: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    by_method_ok: Counter[str] = field(default_factory=Counter)


def prf(tp_p: int, n_pred: int, tp_r: int, n_gold: int) -> tuple[float, float, float]:
    """Precision, recall, F1 (precision and recall may use different true-positive counts)."""
    p = tp_p / n_pred if n_pred else 0.0
    r = tp_r / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def token_spans(text: str) -> list[tuple[int, int]]:
    """The space-separated tokens of a GermEval sentence as character spans."""
    spans, pos = [], 0
    for tok in text.split(" "):
        spans.append((pos, pos + len(tok)))
        pos += len(tok) + 1
    return [s for s in spans if s[1] > s[0]]


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def evaluate(records: list[dict[str, Any]], show_errors: int) -> tuple[Counts, list[str]]:
    """Run the detector over the records and count agreement with the gold PER spans."""
    from bqas.offline.pii import detect_pii

    c = Counts()
    errors: list[str] = []
    for rec in records:
        text: str = rec["text"]
        ents = rec["entities"]
        gold = [(e["start"], e["end"]) for e in ents if e["type"] == "PER" and not e["variant"]]
        ignore = [(e["start"], e["end"], e["variant"]) for e in ents if e["type"] == "PER" and e["variant"]]
        other = [(e["start"], e["end"], e["type"]) for e in ents if e["type"] != "PER"]
        preds = detect_pii(text, "de", kinds={"person"})
        spans = [(f.start, f.end) for f in preds]
        # Predictions on PER-deriv/-part spans are neither right nor wrong: drop them before scoring.
        kept = []
        for f in preds:
            hit = [v for (s, e, v) in ignore if overlaps((f.start, f.end), (s, e))]
            if hit:
                continue
            kept.append(f)
        for s, e, v in ignore:
            c.variant_total[v] += 1
            if any(overlaps((s, e), sp) for sp in spans):
                c.variant_found[v] += 1
        c.pred += len(kept)
        c.gold += len(gold)
        for f in kept:
            sp = (f.start, f.end)
            exact = sp in gold
            ok = any(overlaps(sp, g) for g in gold)
            c.span_tp += exact
            c.overlap_pred_ok += ok
            c.by_method[f.method] += 1
            c.by_method_ok[f.method] += ok
            if not ok:
                kinds = {t for (s, e, t) in other if overlaps(sp, (s, e))}
                for t in kinds:
                    c.fp_on[t] += 1
                if not kinds:
                    c.fp_on["none"] += 1
                if len(errors) < show_errors:
                    errors.append(f"FP {f.text!r} ({f.method}, on {sorted(kinds) or '-'}) | {text[:140]}")
        for g in gold:
            if any(overlaps(g, (f.start, f.end)) for f in kept):
                c.overlap_gold_found += 1
            elif len(errors) < show_errors:
                errors.append(f"FN {text[g[0] : g[1]]!r} | {text[:140]}")
        toks = token_spans(text)
        gold_toks = {t for t in toks if any(overlaps(t, g) for g in gold)}
        ign_toks = {t for t in toks if any(overlaps(t, (s, e)) for (s, e, _) in ignore)}
        pred_toks = {t for t in toks if any(overlaps(t, (f.start, f.end)) for f in kept)} - ign_toks
        c.tok_tp += len(gold_toks & pred_toks)
        c.tok_pred += len(pred_toks)
        c.tok_gold += len(gold_toks)
    return c, errors


def time_it(records: list[dict[str, Any]], kinds: set[str] | None) -> float:
    """Milliseconds per sentence (after one warm-up pass that loads the lexicons)."""
    from bqas.offline.pii import detect_pii

    for rec in records[:50]:
        detect_pii(rec["text"], "de", kinds=kinds)
    start = time.perf_counter()
    for rec in records:
        detect_pii(rec["text"], "de", kinds=kinds)
    return (time.perf_counter() - start) * 1000 / max(1, len(records))


def report(c: Counts, n_records: int, ms_person: float, ms_all: float, part: str = "") -> None:
    """Print the figures."""
    print(
        f"GermEval 2014 sentences ({part}): {n_records}; gold PER spans (no variant): {c.gold}; predictions: {c.pred}"
    )
    rows = [
        ("span (exact)", prf(c.span_tp, c.pred, c.span_tp, c.gold)),
        ("overlap", prf(c.overlap_pred_ok, c.pred, c.overlap_gold_found, c.gold)),
        ("token", prf(c.tok_tp, c.tok_pred, c.tok_tp, c.tok_gold)),
    ]
    print(f"{'level':<14}{'precision':>10}{'recall':>10}{'F1':>10}")
    for name, (p, r, f) in rows:
        print(f"{name:<14}{p:>10.3f}{r:>10.3f}{f:>10.3f}")
    fps = c.pred - c.overlap_pred_ok
    print(
        f"false positives: {fps} (on LOC spans: {c.fp_on['LOC']}, on ORG spans: {c.fp_on['ORG']}, "
        f"on no entity: {c.fp_on['none']})"
    )
    for v in sorted(c.variant_total):
        print(f"PER-{v} (excluded from scores): {c.variant_found[v]}/{c.variant_total[v]} overlapped by a prediction")
    print("predictions by method (overlapping a gold PER / total):")
    for method, n in c.by_method.most_common():
        print(f"  {method:<28}{c.by_method_ok[method]:>5} / {n:<5}")
    print(f"speed: {ms_person:.3f} ms/sentence (person only), {ms_all:.3f} ms/sentence (all kinds)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="pii_de.jsonl (GermEval 2014)")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N sentences")
    parser.add_argument("--show-errors", type=int, default=0, help="print up to N false positives/negatives")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: data file {args.data} not found (it lives in the shared datasets folder)")
        return 0
    with args.data.open(encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    if args.limit:
        records = records[: args.limit]
    counts, errors = evaluate(records, args.show_errors)
    report(counts, len(records), time_it(records, {"person"}), time_it(records, None), data_part(args.data))
    for line in errors:
        print(line)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
