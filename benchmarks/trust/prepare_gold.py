"""Convert the human-labelled datasets in ../shared/datasets into gold JSONL for ``bqas calibrate``.

    .venv/bin/python benchmarks/trust/prepare_gold.py [--datasets DIR] [--out DIR]

Writes one ``<dataset>.jsonl`` per dataset into ``--out`` (default /tmp/bqas-gold) and prints how many
records each got and how many were skipped and why. Nothing from the datasets is committed: the output
folder lies outside the repository. The mappings (see docs/calibration.md):

* rag_faithfulness_en (MTRAG, Apache-2.0) -> judge rag_hallucination: question->query, answer->response,
  contexts->available_facts; ``faithful`` true -> verdict production_ready + invention_detection pass,
  false -> failed + fail, null -> skipped; mean human faithfulness (1-4) -> grounding_score
  ``(mean - 1) / 3 * 100`` (1 -> 0, 4 -> 100, linear).
* hallucination_en (HaluEval general, MIT) -> rag_hallucination: question->query, answer->response,
  available_facts empty (the set gives the annotators no reference text); hallucinated -> failed + fail,
  else production_ready + pass.
* attribution_en (BEGIN, CC BY 4.0 / CDLA-Sharing-1.0) -> rag_hallucination: message->query,
  response->response, knowledge->available_facts; fully_attributable -> production_ready + pass,
  not_fully_attributable -> failed + fail, generic -> skipped (neither grounded nor inventing).
* hallucination_zh (HalluQA, Apache-2.0) -> rag_hallucination, language zh: question->query; leave-one-out:
  the right answers except the first as available_facts, one record answering with the first right answer
  (accept) and one with the first wrong answer (reject); questions with one right answer are skipped.
* pii_de (GermEval 2014, CC BY 4.0) -> rag_privacy, language de: the sentence is the response (query and
  context empty); an outer-level PER entity (not -deriv/-part) -> privacy_compliance fail + failed,
  otherwise pass + production_ready.
* rag_faithfulness_memerag (MEMERAG en/es/fr, CC BY-NC 4.0: measuring only, never fitted on) ->
  rag_hallucination: question->query, answer->response, contexts->available_facts; ``faithful`` true ->
  accept, false -> reject, null -> skipped; the source language is kept as tag ``lang:xx``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Record = dict[str, Any]


def _read(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _accept(dim: str) -> dict[str, Any]:
    return {"verdict": "production_ready", dim: "pass"}


def _reject(dim: str) -> dict[str, Any]:
    return {"verdict": "failed", dim: "fail"}


def mtrag(rec: Record, skipped: Counter[str]) -> list[Record]:
    faithful = rec["faithful"]
    if faithful is None:
        skipped["faithful is null (mean faithfulness between 2.5 and 3.5)"] += 1
        return []
    expected = _accept("invention_detection") if faithful else _reject("invention_detection")
    ratings = rec["human"]["faithfulness"]
    if ratings:
        mean = sum(ratings) / len(ratings)
        expected["grounding_score"] = round((mean - 1) / 3 * 100, 4)
    return [
        {
            "id": rec["id"],
            "judge": "rag_hallucination",
            "language": "en",
            "query": rec["question"],
            "response": rec["answer"],
            "available_facts": rec["contexts"],
            "tags": [rec["model"], rec["answerability"]],
            "expected": expected,
        }
    ]


def halueval(rec: Record, skipped: Counter[str]) -> list[Record]:
    return [
        {
            "id": rec["id"],
            "judge": "rag_hallucination",
            "language": "en",
            "query": rec["question"],
            "response": rec["answer"],
            "available_facts": [],
            "expected": _reject("invention_detection") if rec["hallucinated"] else _accept("invention_detection"),
        }
    ]


def begin(rec: Record, skipped: Counter[str]) -> list[Record]:
    label = rec["label"]
    if label == "generic":
        skipped["label generic"] += 1
        return []
    return [
        {
            "id": rec["id"],
            "judge": "rag_hallucination",
            "language": "en",
            "query": rec["message"],
            "response": rec["response"],
            "available_facts": [rec["knowledge"]],
            "tags": [rec["subset"], rec["model"]],
            "expected": _accept("invention_detection")
            if label == "fully_attributable"
            else _reject("invention_detection"),
        }
    ]


def halluqa(rec: Record, skipped: Counter[str]) -> list[Record]:
    """Leave-one-out: the facts are the right answers *except* the first, which is the accepted response
    (so it is not found verbatim among the facts); the rejected response is the first wrong answer
    against the same facts. Questions with a single right answer have nothing left to ground it: skipped."""
    rights = [a for a in rec["right_answers"] if a.strip()]
    if len(rights) < 2:
        skipped["fewer than two right answers (nothing to ground the accepted one in)"] += 1
        return []
    facts = rights[1:]
    base = {"judge": "rag_hallucination", "language": "zh", "query": rec["question"], "tags": [rec["category"]]}
    out = [
        {**base, "id": f"{rec['id']}/right", "response": rights[0], "available_facts": facts,
         "expected": _accept("invention_detection")},
    ]  # fmt: skip
    if rec["wrong_answers"]:
        out.append(
            {**base, "id": f"{rec['id']}/wrong", "response": rec["wrong_answers"][0], "available_facts": facts,
             "expected": _reject("invention_detection")}
        )  # fmt: skip
    else:
        skipped["no wrong answer"] += 1
    return out


def germeval(rec: Record, skipped: Counter[str]) -> list[Record]:
    person = any(e["type"] == "PER" and e["variant"] is None for e in rec["entities"])
    return [
        {
            "id": rec["id"],
            "judge": "rag_privacy",
            "language": "de",
            "query": "",
            "context": "",
            "response": rec["text"],
            "expected": _reject("privacy_compliance") if person else _accept("privacy_compliance"),
        }
    ]


def memerag(rec: Record, skipped: Counter[str]) -> list[Record]:
    # MEMERAG (CC BY-NC 4.0): for measuring only, never for fitting anything. The judge has no es/fr
    # prompts; the offline grounding detects the answer's language itself, so the sample runs as "en"
    # and the source language is kept as a tag.
    faithful = rec["faithful"]
    if faithful is None:
        skipped["faithful is null (a sentence challenging to determine)"] += 1
        return []
    return [
        {
            "id": rec["id"],
            "judge": "rag_hallucination",
            "language": "en",
            "query": rec["question"],
            "response": rec["answer"],
            "available_facts": rec["contexts"],
            "tags": [f"lang:{rec['lang']}"],
            "expected": _accept("invention_detection") if faithful else _reject("invention_detection"),
        }
    ]


CONVERTERS: dict[str, Callable[[Record, Counter[str]], list[Record]]] = {
    "rag_faithfulness_en": mtrag,
    "hallucination_en": halueval,
    "attribution_en": begin,
    "hallucination_zh": halluqa,
    "pii_de": germeval,
    "rag_faithfulness_memerag": memerag,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_datasets = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    parser.add_argument("--datasets", type=Path, default=default_datasets, help="folder of the dataset JSONL files")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bqas-gold"), help="output folder for gold JSONL")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, convert in CONVERTERS.items():
        source = args.datasets / f"{name}.jsonl"
        skipped: Counter[str] = Counter()
        labels: Counter[str] = Counter()
        written = 0
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for rec in _read(source):
                for gold in convert(rec, skipped):
                    fh.write(json.dumps(gold, ensure_ascii=False) + "\n")
                    labels[gold["expected"]["verdict"]] += 1
                    written += 1
        notes = ", ".join(f"{why}: {n}" for why, n in skipped.items()) or "none"
        print(f"{name}: {written} gold records {dict(labels)}; skipped: {notes} -> {args.out / (name + '.jsonl')}")


if __name__ == "__main__":
    main()
