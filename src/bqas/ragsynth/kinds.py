"""The question kinds of the offline generator, read from ``bqas/ragsynth/kinds/<kind>/kind.yaml``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: Every kind, in the order a mix of them is drawn.
KINDS: tuple[str, ...] = ("fact", "number", "multi_passage", "unanswerable", "paraphrase", "operator")
#: Share of each kind in a mixed set (kinds without material give their share to the others).
DEFAULT_MIX: dict[str, float] = {
    "fact": 0.22,
    "number": 0.22,
    "multi_passage": 0.14,
    "unanswerable": 0.16,
    "paraphrase": 0.14,
    "operator": 0.12,
}


class KindFileError(ValueError):
    """A kind file that does not hold what it must (the message names the file and field)."""


@dataclass(frozen=True)
class SentencePattern:
    """A regular expression over one sentence and the question it becomes."""

    match: re.Pattern[str]
    question: str
    #: Fewest content words the subject needs ("What is the data?" names nothing in particular).
    min_subject_words: int = 0
    #: Whether two of its items make a multi-passage question (two release dates say nothing about how two
    #: versions differ).
    pairs: bool = True


@dataclass(frozen=True)
class Template:
    """A question template with its cues (unanswerable) or operator (operator kind)."""

    question: str
    cues: tuple[str, ...] = ()
    operator: str = ""


@dataclass(frozen=True)
class Kind:
    """One kind as the file gives it (fields a kind does not use stay empty)."""

    name: str
    description: str
    requires_digit: bool = False
    patterns: dict[str, tuple[SentencePattern, ...]] | None = None
    questions: dict[str, tuple[str, ...]] | None = None
    both: dict[str, tuple[str, ...]] | None = None
    templates: dict[str, tuple[Template, ...]] | None = None
    reference: dict[str, str] | None = None
    replace: dict[str, dict[str, str]] | None = None
    openers: dict[str, tuple[str, ...]] | None = None
    #: persona -> language -> openers (``--persona``).
    personas: dict[str, dict[str, tuple[str, ...]]] | None = None
    material: tuple[str, ...] = ()


def kinds_dir() -> Path:
    """The folder of the shipped kinds."""
    return Path(str(resources.files("bqas.ragsynth") / "kinds"))


def _per_language(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(k in ("de", "en", "zh") for k in raw):
        raise KindFileError(f"{where}: expected a mapping of de/en/zh")
    return {str(k): v for k, v in raw.items()}


def parse_kind(data: Any, where: str) -> Kind:
    """A kind from parsed YAML; KindFileError names the field at fault."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise KindFileError(f"{where}: expected a mapping with 'name'")
    patterns: dict[str, tuple[SentencePattern, ...]] = {}
    for lang, items in _per_language(data.get("patterns"), f"{where}: patterns").items():
        compiled = []
        for i, item in enumerate(items or []):
            at = f"{where}: patterns.{lang}[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("match"), str) or "question" not in item:
                raise KindFileError(f"{at}: expected match and question")
            try:
                rx = re.compile(item["match"])
            except re.error as exc:
                raise KindFileError(f"{at}.match: {exc}") from None
            if "answer" not in rx.groupindex:
                raise KindFileError(f"{at}.match: needs a group named answer")
            compiled.append(
                SentencePattern(
                    rx, str(item["question"]), int(item.get("min_subject_words") or 0), bool(item.get("pairs", True))
                )
            )
        patterns[lang] = tuple(compiled)
    templates: dict[str, tuple[Template, ...]] = {}
    for lang, items in _per_language(data.get("templates"), f"{where}: templates").items():
        out = []
        for i, item in enumerate(items or []):
            if not isinstance(item, dict) or not isinstance(item.get("question"), str):
                raise KindFileError(f"{where}: templates.{lang}[{i}]: expected a mapping with question")
            cues = tuple(str(c).casefold() for c in item.get("cues") or ())
            out.append(Template(item["question"], cues, str(item.get("operator") or "")))
        templates[lang] = tuple(out)
    questions = {k: tuple(str(q) for q in v or ()) for k, v in _per_language(data.get("questions"), where).items()}
    both = {k: tuple(str(q) for q in v or ()) for k, v in _per_language(data.get("both"), where).items()}
    openers = {k: tuple(str(q) for q in v or ()) for k, v in _per_language(data.get("openers"), where).items()}
    replace = {
        k: {str(a): str(b) for a, b in (v or {}).items()}
        for k, v in _per_language(data.get("replace"), f"{where}: replace").items()
    }
    for lang, rules in replace.items():
        for rule in rules:
            try:
                re.compile(rule)
            except re.error as exc:
                raise KindFileError(f"{where}: replace.{lang}: {rule!r}: {exc}") from None
    personas: dict[str, dict[str, tuple[str, ...]]] = {}
    for persona, per_lang in (data.get("personas") or {}).items():
        personas[str(persona)] = {
            k: tuple(str(q) for q in v or ())
            for k, v in _per_language(per_lang, f"{where}: personas.{persona}").items()
        }
    reference = {k: str(v) for k, v in _per_language(data.get("reference"), f"{where}: reference").items()}
    return Kind(
        name=data["name"],
        description=str(data.get("description") or ""),
        requires_digit=bool(data.get("requires_digit", False)),
        patterns=patterns or None,
        questions=questions or None,
        both=both or None,
        templates=templates or None,
        reference=reference or None,
        replace=replace or None,
        openers=openers or None,
        personas=personas or None,
        material=tuple(str(m).casefold() for m in data.get("material") or ()),
    )


@cache
def load_kinds(folder: Path | None = None) -> dict[str, Kind]:
    """All kinds of ``folder`` (the shipped ones by default), by name."""
    root = folder or kinds_dir()
    out: dict[str, Kind] = {}
    for path in sorted(root.glob("*/kind.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise KindFileError(f"{path}: not valid YAML: {exc}") from None
        kind = parse_kind(data, str(path))
        out[kind.name] = kind
    return out
