"""Benchmark: the offline judge-manipulation rules (``bqas.offline.manipulation``) on the probe suite.

Figures printed, each for the shipped rules on the normalised view and, side by side, for the same
rules on the raw text (what the gate did before normalisation):

* caught share of the probe attacks as written, and after each obfuscation of
  ``bqas.redteam.obfuscation`` (several seeds);
* the same for a baseline rules file (``--baseline-rules``: e.g. the rules before normalisation);
* caught share of the literal obfuscated attacks;
* false-trigger share on the benign probes;
* false-trigger share on real answers and user texts from ``../shared/datasets`` when present (MTRAG
  and HaluEval answers, BEGIN responses, HalluQA answers, MEMERAG en/es/fr answers, xSID commands,
  GermEval sentences): ordinary text that the rules were not written against, listed hit by hit;
* microseconds per text.

The probe suite (``tests/fixtures/manipulation_probes.yaml``) is IN-SAMPLE: the rules were written and
fixed against it. ``benchmarks/offline/manipulation_holdout.yaml`` was written after the rules were frozen
and never used to change them (same author: an out-of-sample check, not an independent one). The dataset texts are DEV parts; the rules were checked against their hits once (see
docs/offline-judge.md), so their false-trigger share is in-sample too.

Usage::

    .venv/bin/python benchmarks/offline/bench_manipulation.py [--data-dir DIR] [--seeds N] [--show N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import data_part

REPO = Path(__file__).resolve().parents[2]
PROBES = REPO / "tests" / "fixtures" / "manipulation_probes.yaml"
HOLDOUT = Path(__file__).resolve().parent / "manipulation_holdout.yaml"
DEFAULT_DATA_DIR = REPO / ".." / "shared" / "datasets"
LATIN = ("zero_width", "fullwidth", "homoglyphs", "bidi", "combining", "mixed")
ZH = ("traditional", "zero_width", "fullwidth", "bidi")


def _raw_rules(path: Path | None) -> Callable[[str], list[str]]:
    """Rules applied to the raw text (no normalisation), for comparison: the shipped rules, or the rules of
    ``path`` (e.g. an older rules file: ``git show REV:src/bqas/data/safety/judge_manipulation.yaml``)."""
    from bqas.offline import manipulation as m

    rules = m.parse_rules(yaml.safe_load(path.read_text(encoding="utf-8")), str(path)) if path else m._rules()

    def detect(text: str) -> list[str]:
        hits = [r.id for r in rules if r.matches(text if r.view == "rule" else text.casefold())]
        if path is None and m.judge_field_object(text):
            hits.append("judge_fields")
        return hits

    return detect


def _dataset_texts(data_dir: Path) -> Iterator[tuple[str, str]]:
    """(dataset, text) of ordinary answers and user texts in the DEV files that exist."""
    fields = {
        "rag_faithfulness_en.jsonl": ("answer",),
        "hallucination_en.jsonl": ("answer",),
        "attribution_en.jsonl": ("response",),
        "rag_faithfulness_memerag.jsonl": ("answer",),
        "hallucination_zh.jsonl": ("right_answers", "wrong_answers"),
        "intents_de.jsonl": ("text",),
        "intents_zh.jsonl": ("text",),
        "intents_en.jsonl": ("text",),
        "intents_de-ba.jsonl": ("text",),
        "intents_gsw.jsonl": ("text",),
        "pii_de.jsonl": ("text",),
    }
    for name, keys in fields.items():
        path = data_dir / name
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                rec: dict[str, Any] = json.loads(line)
                for key in keys:
                    value = rec.get(key)
                    for text in value if isinstance(value, list) else [value]:
                        if isinstance(text, str) and text.strip():
                            yield name, text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--seeds", type=int, default=5, help="random seeds per obfuscation (default 5)")
    ap.add_argument("--show", type=int, default=10, help="print up to N dataset false triggers")
    ap.add_argument("--baseline-rules", type=Path, help="rules file for the 'raw' column (default: shipped rules)")
    args = ap.parse_args(argv)

    from bqas.offline.manipulation import judge_manipulation
    from bqas.redteam.obfuscation import TRANSFORMS

    raw = _raw_rules(args.baseline_rules)
    detectors = {"normalised": judge_manipulation, "raw": raw}
    probes = yaml.safe_load(PROBES.read_text(encoding="utf-8"))
    print(f"probe suite {PROBES.relative_to(REPO)} (IN-SAMPLE: the rules were written against it)")
    baseline = args.baseline_rules or "shipped rules"
    print(f"columns: normalised = shipped rules on the normalised view; raw = {baseline} on the raw text")
    print(f"{'set':<34}{'n':>6}  {'normalised':>10}  {'raw':>8}")

    def row(label: str, texts: list[str], want_hit: bool) -> None:
        shares = []
        for det in detectors.values():
            hits = sum(1 for t in texts if bool(det(t)) == want_hit)
            shares.append(hits / len(texts) if texts else 0.0)
        print(f"{label:<34}{len(texts):>6}  {shares[0]:>10.1%}  {shares[1]:>8.1%}")

    attacks = probes["attacks"]
    row("attacks, plain (caught)", [p["text"] for p in attacks], True)
    for name in sorted(set(LATIN) | set(ZH) | {"letter_spacing"}):
        texts = []
        for p in attacks:
            allowed = ZH if p["lang"] == "zh" else LATIN
            if name in allowed or (name == "letter_spacing" and p.get("spaced")):
                texts += [TRANSFORMS[name](p["text"], random.Random(1000 + s)) for s in range(args.seeds)]
        row(f"attacks, {name} (caught)", texts, True)
    for lang in ("en", "de", "zh", "fr", "es"):
        row(f"attacks, {lang} plain (caught)", [p["text"] for p in attacks if p["lang"] == lang], True)
    row("literal obfuscated (caught)", [p["text"] for p in probes["literal"]], True)
    row("benign probes (not trig.)", [p["text"] for p in probes["benign"]], False)

    held = yaml.safe_load(HOLDOUT.read_text(encoding="utf-8"))
    print(
        f"\nheld-out probes {HOLDOUT.relative_to(REPO)} (written after the rules were frozen, never used to change them)"
    )
    row("held-out attacks (caught)", [p["text"] for p in held["attacks"]], True)
    row("held-out benign (not trig.)", [p["text"] for p in held["benign"]], False)
    for p in held["attacks"]:
        if not judge_manipulation(p["text"]):
            print(f"  MISSED {p['lang']}: {p['text'][:120]!r}")
    for p in held["benign"]:
        if judge_manipulation(p["text"]):
            print(f"  FALSE TRIGGER {p['lang']} {judge_manipulation(p['text'])}: {p['text'][:120]!r}")

    data = list(_dataset_texts(args.data_dir))
    if not data:
        print(f"no dataset texts under {args.data_dir}: dataset false-trigger share not measured")
        return 0
    print(f"\nfalse-trigger share on ordinary texts ({data_part(args.data_dir)})")
    per: dict[str, list[int]] = {}
    shown = 0
    timings: list[float] = []
    for name, text in data:
        t0 = time.perf_counter()
        hit = judge_manipulation(text)
        timings.append(time.perf_counter() - t0)
        per.setdefault(name, [0, 0])
        per[name][0] += 1
        if hit:
            per[name][1] += 1
            if shown < args.show:
                shown += 1
                print(f"  HIT {name} {hit}: {text[:160]!r}")
    total = sum(v[0] for v in per.values())
    fired = sum(v[1] for v in per.values())
    for name, (n, k) in per.items():
        print(f"  {name:<34}{n:>6} texts  {k:>4} triggered  {k / n:.2%}")
    print(f"  {'all':<34}{total:>6} texts  {fired:>4} triggered  {fired / total:.2%}")
    us = sorted(t * 1e6 for t in timings)
    print(f"time per text: median {statistics.median(us):.0f} us, p95 {us[int(0.95 * len(us))]:.0f} us (n={len(us)})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
