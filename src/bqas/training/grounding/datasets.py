"""Labelled grounding examples for training and measuring the learned grounding scorer: the dataset loaders.

Loaders turn the shared datasets (``../shared/datasets``, see its README) into :class:`Example` rows
(answer, facts, query, label 1 = unfaithful). Which ones may be used for what is fixed here, by license:

* trainable: MTRAG (``rag_faithfulness_en``, Apache-2.0), BEGIN (``attribution_en``, CC BY 4.0 /
  CDLA-Sharing-1.0), HalluQA (``hallucination_zh``, Apache-2.0), and synthetic perturbations of their
  contexts and of BQAS's own scenario contexts (German, Chinese; :mod:`bqas.training.grounding.synthetic`);
* measure only: MEMERAG (``rag_faithfulness_memerag``, CC BY-NC 4.0, "should not be used to train
  models"), like XNLI and OCNLI (:mod:`bqas.training.licences`): every loader asked for training, fitting
  or choosing data (``use``) refuses it; :func:`load_memerag` is for measuring.

HaluEval (``hallucination_en``, MIT) has no reference text, so no grounding feature can be computed on it;
it is not trained on (:func:`load_halueval` loads it for the benchmark, which shows it as unscored).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bqas.jsonl import iter_json_objects
from bqas.offline._textutil import detect_language
from bqas.training.licences import Use, check_use


@dataclass(frozen=True)
class Example:
    """One answer with its facts and a binary label (1 = unfaithful, 0 = faithful)."""

    answer: str
    facts: tuple[str, ...]
    query: str
    label: int
    source: str  # dataset name, or "synthetic:<dataset>"
    language: str


def _rows(path: Path, use: Use) -> Iterator[dict[str, Any]]:
    check_use(path, use)
    with path.open(encoding="utf-8") as fh:
        for line in iter_json_objects(fh):
            if line.value is None:
                raise ValueError(line.error(str(path)))
            yield line.value


def load_mtrag(path: Path, *, use: Use = "train") -> list[Example]:
    """MTRAG human evaluations: turns with passages and a faithful/unfaithful label (null skipped)."""
    out = []
    for r in _rows(path, use):
        if r.get("contexts") and r.get("faithful") is not None:
            label = 0 if r["faithful"] else 1
            out.append(Example(r["answer"], tuple(r["contexts"]), r["question"], label, "mtrag", "en"))
    return out


def load_begin(path: Path, *, use: Use = "train") -> list[Example]:
    """BEGIN: fully_attributable = faithful, not_fully_attributable = unfaithful, generic skipped."""
    out = []
    for r in _rows(path, use):
        if r["label"] == "generic":
            continue
        label = 1 if r["label"] == "not_fully_attributable" else 0
        out.append(Example(r["response"], (r["knowledge"],), r.get("message") or "", label, "begin", "en"))
    return out


def load_halluqa(path: Path, *, use: Use = "train") -> list[Example]:
    """HalluQA, leave-one-out: facts = the question's other right answers (never the answer itself).

    Each right answer is a faithful example against the remaining right answers; each wrong answer is
    unfaithful against all of them. Questions with a single right answer give no faithful example (its
    only fact would be itself)."""
    out = []
    for r in _rows(path, use):
        rights = [a for a in r["right_answers"] if a.strip()]
        for w in r["wrong_answers"]:
            if w.strip() and rights:
                out.append(Example(w, tuple(rights), r["question"], 1, "halluqa", "zh"))
        for i, a in enumerate(rights):
            others = tuple(x for j, x in enumerate(rights) if j != i)
            if others:
                out.append(Example(a, others, r["question"], 0, "halluqa", "zh"))
    return out


def load_memerag(path: Path, language: str | None = None, *, use: Use = "measure") -> list[Example]:
    """MEMERAG (measure only): answers with every sentence Supported = faithful, any Not Supported =
    unfaithful, the rest skipped. ``language`` keeps one of en/es/fr."""
    out = []
    for r in _rows(path, use):
        if r.get("faithful") is None or (language is not None and r["lang"] != language):
            continue
        label = 0 if r["faithful"] else 1
        out.append(Example(r["answer"], tuple(r["contexts"]), r["question"], label, f"memerag-{r['lang']}", r["lang"]))
    return out


def load_halueval(path: Path, *, use: Use = "train") -> list[Example]:
    """HaluEval general (MIT): open chat answers with a hallucinated label and *no* facts (so the learned
    scorer leaves every one unscored; the benchmark shows that rather than skipping the set)."""
    return [
        Example(r["answer"], (), r["question"], int(bool(r["hallucinated"])), "halueval", "en")
        for r in _rows(path, use)
    ]


#: Trainable datasets: file name -> loader. MEMERAG, XNLI and OCNLI are deliberately absent.
TRAINABLE: dict[str, tuple[str, Callable[[Path], list[Example]]]] = {
    "mtrag": ("rag_faithfulness_en.jsonl", load_mtrag),
    "begin": ("attribution_en.jsonl", load_begin),
    "halluqa": ("hallucination_zh.jsonl", load_halluqa),
}


def load_training(data_dir: Path, names: list[str] | None = None) -> list[Example]:
    """The real labelled examples of the trainable datasets found in ``data_dir`` (missing files skipped);
    a measure-only dataset among ``names`` raises :class:`~bqas.training.licences.LicenceError`."""
    out: list[Example] = []
    for name in names or list(TRAINABLE):
        check_use(name, "train")
        if name not in TRAINABLE:
            raise ValueError(f"{name!r} is not a trainable dataset (allowed: {', '.join(TRAINABLE)})")
        file_name, loader = TRAINABLE[name]
        path = data_dir / file_name
        if path.is_file():
            out.extend(loader(path))
    return out


def scenario_passages(folder: Path) -> list[tuple[str, str]]:
    """Context passages of BQAS's own scenario files (``scenarios/data``; written for this project)."""
    out: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.jsonl")):
        for r in _rows(path, "train"):
            for key in ("available_facts", "context", "retrieved_passage"):
                value = r.get(key)
                items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
                for item in items:
                    if isinstance(item, str) and len(item) >= 40:
                        out.append((item, detect_language(item)))
    return list(dict.fromkeys(out))
