"""Which shared datasets may be used for what, by licence: one list and one rule for every loader and benchmark.

XNLI (``nli_de.jsonl``, CC BY-NC 4.0), OCNLI (``nli_zh.jsonl``, CC BY-NC 2.0) and MEMERAG
(``rag_faithfulness_memerag.jsonl``, CC BY-NC 4.0, "should not be used to train models") are non-commercial:
BQAS measures on them and never ships them, nor anything trained, fitted or chosen on them (weights, a
calibration, a threshold, a feature or recipe choice). The rule: a loader asked for training, fitting or
choosing data refuses them with :class:`LicenceError`; measuring is allowed.

A dataset is recognised by its markers in a file name, a dataset key or an example's source tag
(``rag_faithfulness_memerag.jsonl``, ``memerag``, ``memerag-en``, ``nli_de``, ``xnli`` ...), so a copy under
another folder or a tag derived from it (``synthetic:memerag``) is caught as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

#: What data is asked for: fitting weights (``train``), fitting a calibration or a combination (``fit``),
#: choosing a threshold, a feature or a recipe (``choose``), or measuring (``measure``).
Use = Literal["train", "fit", "choose", "measure"]
USES: tuple[str, ...] = get_args(Use)
_DOING = {"train": "training on it", "fit": "fitting on it", "choose": "choosing anything on it"}


@dataclass(frozen=True)
class MeasureOnly:
    """A dataset whose licence allows measuring only."""

    name: str
    licence: str
    file: str  # its file in the shared datasets folder
    markers: tuple[str, ...]  # casefolded substrings that name it in a file name, dataset key or source tag


#: The measure-only datasets (the shared datasets' README: "non-commercial, eval only").
MEASURE_ONLY: tuple[MeasureOnly, ...] = (
    MeasureOnly("MEMERAG", "CC BY-NC 4.0", "rag_faithfulness_memerag.jsonl", ("memerag",)),
    MeasureOnly("XNLI", "CC BY-NC 4.0", "nli_de.jsonl", ("xnli", "nli_de")),
    MeasureOnly("OCNLI", "CC BY-NC 2.0", "nli_zh.jsonl", ("ocnli", "nli_zh")),
)


class LicenceError(ValueError):
    """Measure-only data was asked for training, fitting or choosing."""


def measure_only(name: str | Path) -> MeasureOnly | None:
    """The measure-only dataset that ``name`` (a path, file name, dataset key or source tag) names, if any."""
    key = (name.name if isinstance(name, Path) else name).casefold()
    return next((d for d in MEASURE_ONLY if any(m in key for m in d.markers)), None)


def check_use(name: str | Path, use: Use) -> None:
    """Raise :class:`LicenceError` when ``name`` is measure-only data and ``use`` is not ``measure``."""
    if use not in USES:
        raise ValueError(f"use must be one of {', '.join(USES)}, got {use!r}")
    found = measure_only(name)
    if found is not None and use != "measure":
        raise LicenceError(
            f"{name}: {found.name} ({found.licence}) is evaluation-only, not a trainable dataset: "
            f"measuring on it is allowed, {_DOING[use]} is not"
        )


def check_sources(sources: Iterable[str], use: Use) -> None:
    """:func:`check_use` on each source tag of the rows about to be used (e.g. ``Example.source``)."""
    for source in sorted(set(sources)):
        check_use(source, use)
