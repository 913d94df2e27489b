"""All training pairs of the verifier: the real pairs (:mod:`.datasets`) and the synthetic ones
(:mod:`.perturb`) of every permitted input found, shuffled; :func:`build_pairs` refuses any pair that shares a
sentence with the contradiction suite (:mod:`.suite_overlap`), which measures the shipped model."""

from __future__ import annotations

import random
from pathlib import Path

from bqas.offline.text.language import detect_language
from bqas.training.grounding.datasets import scenario_passages
from bqas.training.verifier.datasets import (
    Pair,
    _rows,
    begin_pairs,
    germeval_passages,
    group_key,
    halluqa_pairs,
    is_calibration,
    mtrag_pairs,
    wice_pairs,
    wice_passages,
)
from bqas.training.verifier.perturb import synthesize
from bqas.training.verifier.suite_overlap import drop_overlap, suite_sentences


def build_pairs(data: Path, wice: Path | None, scenarios: Path | None, suite: Path | None, seed: int = 0) -> list[Pair]:
    """All training pairs, shuffled (seeded). Missing inputs are skipped; the suite's sentences never pass."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    passages: dict[str, list[tuple[str, str]]] = {}
    if wice is not None and wice.is_dir():
        pairs += wice_pairs(wice)
        passages["wice"] = wice_passages(wice)
    if (data / "attribution_en.jsonl").is_file():
        pairs += begin_pairs(data / "attribution_en.jsonl")
        passages["begin"] = list(
            dict.fromkeys(
                (r["knowledge"], "en")
                for r in _rows(data / "attribution_en.jsonl")
                if not is_calibration(group_key("begin", r))
            )
        )
    if (data / "hallucination_zh.jsonl").is_file():
        pairs += halluqa_pairs(data / "hallucination_zh.jsonl")
        passages["halluqa"] = [
            (" ".join(r["right_answers"]), "zh")
            for r in _rows(data / "hallucination_zh.jsonl")
            if r["right_answers"] and not is_calibration(group_key("halluqa", r))
        ]
    if (data / "rag_faithfulness_en.jsonl").is_file():
        pairs += mtrag_pairs(data / "rag_faithfulness_en.jsonl")
        seen: dict[str, str] = {}
        for r in _rows(data / "rag_faithfulness_en.jsonl"):
            if is_calibration(group_key("mtrag", r)):
                continue
            for c in r.get("contexts") or []:
                seen.setdefault(c, "en")
        passages["mtrag"] = list(seen.items())
    if (data / "pii_de.jsonl").is_file():
        passages["germeval"] = germeval_passages(data / "pii_de.jsonl")
    if scenarios is not None and scenarios.is_dir():
        passages["scenarios"] = [(t, detect_language(t)) for t, _ in scenario_passages(scenarios)]
    per = {"germeval": 2, "scenarios": 12, "halluqa": 2, "mtrag": 3, "begin": 1, "wice": 2}
    for i, (name, ps) in enumerate(sorted(passages.items())):
        pairs += synthesize(ps, name, seed + i, per_passage=per.get(name, 1))
    if suite is not None and suite.is_dir():
        pairs = drop_overlap(pairs, suite_sentences(suite))
    pairs = [p for p in pairs if p.claim.strip() and p.evidence.strip()]
    rng.shuffle(pairs)
    return pairs
