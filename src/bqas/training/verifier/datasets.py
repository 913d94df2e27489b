"""The verifier's real training pairs: (claim, evidence, label 1 = not supported), from data whose licences
allow fitting and shipping weights, never from XNLI, OCNLI or MEMERAG (evaluation only).

* WiCE (``ryokamoi/wice``; annotations ODC-BY, Wikipedia text CC BY-SA): claims and sub-claims against
  their oracle evidence sentences; supported = 0, partially / not supported = 1;
* BEGIN (CC BY 4.0 / CDLA-Sharing-1.0): a dialogue response against its knowledge snippet;
* HalluQA (Apache-2.0): a wrong answer against the right ones (1), a right answer against the *other*
  right ones (0): Chinese paraphrases and contradictions;
* MTRAG (Apache-2.0): every sentence of an answer people rated faithful, against its passages (0).

Also the passages the synthetic pairs (:mod:`bqas.training.verifier.perturb`) start from, and the split of
each real dataset's groups into training and calibration parts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bqas.offline.text.sentences import split_sentences
from bqas.offline.verifier.evidence import context_sentences, select
from bqas.training.licences import check_use


@dataclass(frozen=True)
class Pair:
    claim: str
    evidence: str
    label: int  # 1 = the evidence does not support the claim
    source: str
    language: str
    kind: str = ""


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    check_use(path, "train")
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


#: Share of each real dataset's groups kept out of the verifier's training: the cascade's band and
#: combination are fitted on them (a model's own training rows would make it look surer than it is).
CALIBRATION_SHARE = 0.3


def is_calibration(key: str) -> bool:
    """Whether the group ``key`` (BEGIN knowledge, HalluQA id, MTRAG conversation) is in the calibration part."""
    return hashlib.sha256(key.encode("utf-8")).digest()[0] < int(256 * CALIBRATION_SHARE)


def group_key(source: str, row: dict[str, Any]) -> str:
    """The group a row of a real dataset belongs to (all its answers go to the same part)."""
    if source == "begin":
        return "begin:" + str(row["knowledge"])
    if source == "halluqa":
        return "halluqa:" + str(row["id"])
    return "mtrag:" + str(row.get("task_id") or row["id"]).split("<::>")[0]


def wice_pairs(folder: Path) -> list[Pair]:
    """WiCE claims and sub-claims (``oracle_chunks/{claim,subclaim}/{dev,test}.jsonl``)."""
    out: list[Pair] = []
    for level in ("claim", "subclaim"):
        for split in ("dev", "test"):
            path = folder / level / f"{split}.jsonl"
            if not path.is_file():
                continue
            for r in _rows(path):
                claims = r["claim"] if isinstance(r["claim"], list) else [r["claim"]]
                labels = r["label"] if isinstance(r["label"], list) else [r["label"]]
                sents = [s for s in r["evidence"] if not s.startswith("(meta data)")]
                for claim, label in zip(claims, labels, strict=False):
                    ev = select(claim, sents)
                    out.append(Pair(claim, ev, int(label != "supported"), f"wice-{level}", "en"))
    return out


def begin_pairs(path: Path) -> list[Pair]:
    out = []
    for r in _rows(path):
        if r["label"] == "generic" or is_calibration(group_key("begin", r)):
            continue
        ev = select(r["response"], context_sentences([r["knowledge"]]))
        out.append(Pair(r["response"], ev, int(r["label"] == "not_fully_attributable"), "begin", "en"))
    return out


def halluqa_pairs(path: Path) -> list[Pair]:
    out = []
    for r in _rows(path):
        if is_calibration(group_key("halluqa", r)):
            continue
        rights = [a for a in r["right_answers"] if a.strip()]
        for w in r["wrong_answers"]:
            if w.strip() and rights:
                out.append(Pair(w, select(w, context_sentences(rights)), 1, "halluqa", "zh"))
        for i, a in enumerate(rights):
            others = [x for j, x in enumerate(rights) if j != i]
            if others:
                out.append(Pair(a, select(a, context_sentences(others)), 0, "halluqa", "zh"))
    return out


def mtrag_pairs(path: Path) -> list[Pair]:
    """Sentences of answers people rated faithful, each against its passages (supported)."""
    out = []
    for r in _rows(path):
        if not r.get("contexts") or r.get("faithful") is not True or is_calibration(group_key("mtrag", r)):
            continue
        sents = context_sentences(r["contexts"])
        for claim in split_sentences(r["answer"]):
            if len(claim) >= 20:
                out.append(Pair(claim, select(claim, sents), 0, "mtrag", "en"))
    return out


def germeval_passages(path: Path, group: int = 4) -> list[tuple[str, str]]:
    """GermEval 2014 sentences (detokenised), ``group`` consecutive ones as one pseudo-passage."""
    sents = []
    for r in _rows(path):
        text = re.sub(r" ([.,;:!?)\]])", r"\1", r["text"])
        text = re.sub(r"([(\[„]) ", r"\1", text).replace(" “", "“").replace(' " ', ' "')
        sents.append(text)
    return [(" ".join(sents[i : i + group]), "de") for i in range(0, len(sents), group)]


def wice_passages(folder: Path) -> list[tuple[str, str]]:
    out = []
    path = folder / "claim" / "dev.jsonl"
    if path.is_file():
        for r in _rows(path):
            text = " ".join(s for s in r["evidence"] if not s.startswith("(meta data)"))
            out.append((text, "en"))
    return out
