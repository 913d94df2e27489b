"""Gold files: JSON Lines of samples with human labels under ``expected``, checked against one judge.

A line is the scenario sample format (``id``, the judge's input fields, optional ``language`` and
``judge``, and ``expected`` holding the human labels). ``--map SRC=DST`` copies a flat column onto an
input field (``question=query``) or a label (``human_score=expected.grounding_score``); SRC may be a
dotted path into nested objects. A line that cannot be used is reported with its number and skipped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.jsonl import iter_json_objects
from bqas.judging.engine import InvalidSample, check_inputs
from bqas.judgment.spec import JudgeSpec
from bqas.settings import check_language

HUMAN_VERDICTS: tuple[str, ...] = ("production_ready", "needs_review", "failed")
_MISSING = object()


@dataclass(frozen=True)
class GoldSample:
    """One usable gold line: the judge's input, its language and the human labels."""

    line: int
    id: str
    sample: dict[str, Any]
    language: str
    labels: dict[str, Any]


@dataclass(frozen=True)
class GoldProblem:
    """A line that was skipped, with why."""

    line: int
    message: str


@dataclass
class GoldSet:
    """The usable samples of a gold file and what was skipped."""

    path: Path
    samples: list[GoldSample] = field(default_factory=list)
    problems: list[GoldProblem] = field(default_factory=list)
    other_judge: int = 0
    lines: int = 0
    limited: bool = False
    ignored_labels: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "lines": self.lines,
            "samples": len(self.samples),
            "bad_lines": len(self.problems),
            "problems": [{"line": p.line, "message": p.message} for p in self.problems],
            "other_judge": self.other_judge,
            "limited": self.limited,
            "labels_not_compared": dict(sorted(self.ignored_labels.items())),
        }


def parse_maps(items: list[str] | None) -> list[tuple[str, str]]:
    """``SRC=DST`` pairs in the order given; ``ValueError`` names the bad item."""
    pairs: list[tuple[str, str]] = []
    for item in items or []:
        src, sep, dst = item.partition("=")
        src, dst = src.strip(), dst.strip()
        if not sep or not src or not dst:
            raise ValueError(f"--map {item!r}: expected SRC=DST, e.g. question=query or score=expected.relevance")
        if dst.startswith("expected.") and not dst.removeprefix("expected."):
            raise ValueError(f"--map {item!r}: name the label after 'expected.'")
        pairs.append((src, dst))
    return pairs


def _get_path(obj: dict[str, Any], path: str) -> Any:
    if path in obj:
        return obj[path]
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current


def apply_maps(obj: dict[str, Any], maps: list[tuple[str, str]]) -> dict[str, Any]:
    """A copy of ``obj`` with each mapped column copied to its destination (input field or label)."""
    out = dict(obj)
    expected = out.get("expected")
    labels = dict(expected) if isinstance(expected, dict) else {}
    for src, dst in maps:
        value = _get_path(obj, src)
        if value is _MISSING:
            continue
        if dst.startswith("expected."):
            labels[dst.removeprefix("expected.")] = value
        else:
            out[dst] = value
    if labels or "expected" in out:
        out["expected"] = labels if labels or isinstance(expected, dict) else expected
    return out


def _check_label(spec: JudgeSpec, name: str, value: Any) -> str | None:
    """Why a label value is unusable, or None."""
    if name == "verdict":
        if value not in HUMAN_VERDICTS:
            return f"expected.verdict: expected one of {', '.join(HUMAN_VERDICTS)}, got {value!r}"
        return None
    dim = spec.dimensions[name]
    if dim.kind == "gate":
        if value not in ("pass", "fail"):
            return f"expected.{name}: expected 'pass' or 'fail', got {value!r}"
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected.{name}: expected a number, got {type(value).__name__}"
    lo, hi = dim.minimum, dim.maximum
    if lo is not None and hi is not None and not lo <= value <= hi:
        return f"expected.{name}: {value} is outside the dimension's range {lo:g}-{hi:g}"
    return None


def _applies_to(obj: dict[str, Any], judge: str) -> bool:
    named = obj.get("judge")
    if named is None:
        return True
    if isinstance(named, list):
        return judge in named
    return bool(named == judge)


def _labels(spec: JudgeSpec, expected: Any, ignored: Counter[str]) -> tuple[dict[str, Any], str | None]:
    """The comparable labels of a line (verdict and the judge's graded dimensions) or an error."""
    if expected is None:
        return {}, None
    if not isinstance(expected, dict):
        return {}, f"expected: expected an object of human labels, got {type(expected).__name__}"
    graded = set(spec.graded_dimensions)
    labels: dict[str, Any] = {}
    for name, value in expected.items():
        if name != "verdict" and name not in graded:
            ignored[name] += 1
            continue
        if value is None:  # a missing label: this dimension is not compared for this sample
            continue
        problem = _check_label(spec, name, value)
        if problem:
            return {}, problem
        labels[name] = value
    return labels, None


def load_gold(
    path: Path,
    spec: JudgeSpec,
    *,
    maps: list[tuple[str, str]] | None = None,
    default_language: str = "de",
    limit: int | None = None,
) -> GoldSet:
    """Read a gold file for ``spec``; unusable lines become :class:`GoldProblem` entries.

    Raises ``ValueError`` only when the file itself cannot be read.
    """
    gold = GoldSet(path=path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read gold file: {exc.strerror}") from None
    with handle:
        for row in iter_json_objects(handle):
            if limit is not None and len(gold.samples) >= limit:
                gold.limited = True
                break
            gold.lines += 1
            if row.value is None:
                gold.problems.append(GoldProblem(row.line, str(row.problem)))
                continue
            _add(gold, spec, row.value, row.line, maps, default_language)
    return gold


def _add(
    gold: GoldSet,
    spec: JudgeSpec,
    obj: Any,
    lineno: int,
    maps: list[tuple[str, str]] | None,
    default_language: str,
) -> None:
    """Check one gold object and add it to ``gold`` (as a sample, a problem or an other judge's line)."""
    if not isinstance(obj, dict):
        gold.problems.append(GoldProblem(lineno, f"expected a JSON object, got {type(obj).__name__}"))
        return
    obj = apply_maps(obj, maps or [])
    if not _applies_to(obj, spec.name):
        gold.other_judge += 1
        return
    sample = _sample(spec, obj, lineno, default_language, gold)
    if sample is not None:
        gold.samples.append(sample)


STORE_PREFIX = "store:"


def load_gold_store(
    tenant: str,
    spec: JudgeSpec,
    *,
    maps: list[tuple[str, str]] | None = None,
    default_language: str = "de",
    limit: int | None = None,
) -> GoldSet:
    """The reviewed items of ``tenant`` for ``spec``'s judge, straight from the store (``--gold store:TENANT``).

    Lines are numbered by their position in the export (as ``bqas gold export`` would write them).
    """
    from bqas.review.gold import iter_gold
    from bqas.store.db import open_store

    gold = GoldSet(path=Path(f"{STORE_PREFIX}{tenant}"))
    for lineno, obj in enumerate(iter_gold(open_store(), tenant, spec.name), start=1):
        if limit is not None and len(gold.samples) >= limit:
            gold.limited = True
            break
        gold.lines += 1
        _add(gold, spec, obj, lineno, maps, default_language)
    return gold


def _sample(
    spec: JudgeSpec, obj: dict[str, Any], lineno: int, default_language: str, gold: GoldSet
) -> GoldSample | None:
    try:
        check_inputs(spec, obj)
    except InvalidSample as exc:
        gold.problems.append(GoldProblem(lineno, f"field {exc}"))
        return None
    lang_value = obj.get("language")
    try:
        language = check_language(str(lang_value)) if lang_value else default_language
    except ValueError as exc:
        gold.problems.append(GoldProblem(lineno, str(exc)))
        return None
    labels, problem = _labels(spec, obj.get("expected"), gold.ignored_labels)
    if problem:
        gold.problems.append(GoldProblem(lineno, problem))
        return None
    sample_id = obj.get("id") or obj.get("response_id") or f"line-{lineno}"
    return GoldSample(line=lineno, id=str(sample_id), sample=obj, language=language, labels=labels)
