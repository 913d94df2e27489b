"""Base patterns and slot word lists per intent (``data/synth/patterns_de.yaml``), extensible by a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: The 19 teacher intents of INTENT_CLASSIFICATION_PROMPT (the specification's judge prompts), in the prompt's order.
TEACHER_INTENTS: tuple[str, ...] = (
    "student_observation",
    "reminder",
    "homework_check",
    "conference_topic",
    "correction_note",
    "worksheet_generate",
    "worksheet_differentiate",
    "quick_activity",
    "quiz_generate",
    "parent_letter",
    "class_message",
    "canvas_edit",
    "canvas_layout",
    "operator_checklist",
    "eh_passage",
    "feedback_suggest",
    "reminder_schedule",
    "task_summary",
    "unknown",
)


class PatternFileError(ValueError):
    """A pattern file is unreadable or has the wrong structure (the message names file and field)."""


@dataclass(frozen=True)
class Pattern:
    """One base pattern: a plain command, or an imperative with optional infinitive and ich-forms."""

    imp: str
    inf: str | None = None
    want: str | None = None

    @property
    def display(self) -> str:
        """The form shown to the LLM as a base pattern."""
        return self.imp


@dataclass
class IntentPatterns:
    """The patterns of one intent and the slot lists it defines for itself."""

    patterns: list[Pattern] = field(default_factory=list)
    slots: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class PatternBook:
    """Global slot lists and the patterns of every intent."""

    slots: dict[str, list[str]]
    intents: dict[str, IntentPatterns]

    def for_intent(self, intent: str) -> IntentPatterns:
        """The patterns of ``intent``; KeyError when there are none."""
        entry = self.intents.get(intent)
        if entry is None or not entry.patterns:
            raise KeyError(intent)
        return entry

    def slot_values(self, intent: str, slot: str) -> list[str] | None:
        """The word list of ``slot`` for ``intent`` (intent-specific first, then global)."""
        entry = self.intents.get(intent)
        if entry is not None and slot in entry.slots:
            return entry.slots[slot]
        return self.slots.get(slot)


def default_patterns_path() -> Path:
    """The shipped German pattern file."""
    return Path(str(resources.files("bqas.data") / "synth" / "patterns_de.yaml"))


def _pattern(raw: Any, where: str) -> Pattern:
    if isinstance(raw, str) and raw.strip():
        return Pattern(raw.strip())
    if isinstance(raw, dict):
        imp = raw.get("imp")
        if not isinstance(imp, str) or not imp.strip():
            raise PatternFileError(f"{where}.imp: a pattern mapping needs a non-empty 'imp' text")
        extra = {k: raw.get(k) for k in ("inf", "want")}
        for key, value in extra.items():
            if value is not None and not isinstance(value, str):
                raise PatternFileError(f"{where}.{key}: expected text")
        return Pattern(imp.strip(), extra["inf"], extra["want"])
    raise PatternFileError(f"{where}: expected a text or a mapping with imp/inf/want")


def _slots(raw: Any, where: str) -> dict[str, list[str]]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PatternFileError(f"{where}: expected a mapping of slot name to a list of values")
    out: dict[str, list[str]] = {}
    for name, values in raw.items():
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
            raise PatternFileError(f"{where}.{name}: expected a non-empty list of texts")
        out[str(name)] = list(values)
    return out


def parse_book(data: Any, source: str) -> tuple[PatternBook, set[str]]:
    """A book from parsed YAML; also returns the intents marked ``replace: true``."""
    if not isinstance(data, dict):
        raise PatternFileError(f"{source}: expected a mapping with 'slots' and 'intents'")
    slots = _slots(data.get("slots"), f"{source}: slots")
    intents: dict[str, IntentPatterns] = {}
    replace: set[str] = set()
    raw_intents = data.get("intents") or {}
    if not isinstance(raw_intents, dict):
        raise PatternFileError(f"{source}: intents: expected a mapping of intent name to patterns")
    for name, body in raw_intents.items():
        where = f"{source}: intents.{name}"
        if isinstance(body, list):
            body = {"patterns": body}
        if not isinstance(body, dict):
            raise PatternFileError(f"{where}: expected a mapping with 'patterns'")
        raw_patterns = body.get("patterns") or []
        if not isinstance(raw_patterns, list):
            raise PatternFileError(f"{where}.patterns: expected a list")
        patterns = [_pattern(p, f"{where}.patterns[{i}]") for i, p in enumerate(raw_patterns)]
        intents[str(name)] = IntentPatterns(patterns, _slots(body.get("slots"), f"{where}.slots"))
        if body.get("replace") is True:
            replace.add(str(name))
    return PatternBook(slots, intents), replace


def load_patterns(path: Path | None = None) -> PatternBook:
    """Load a pattern file (the shipped one by default)."""
    target = path or default_patterns_path()
    try:
        data = yaml.safe_load(target.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PatternFileError(f"{target}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise PatternFileError(f"{target}: invalid YAML: {exc}") from None
    book, _ = parse_book(data, str(target))
    return book


def merge_patterns(book: PatternBook, path: Path, intent: str) -> PatternBook:
    """Add (or, with ``replace: true``, override) patterns and slot lists from ``path``.

    YAML files have the structure of the shipped file; any other file is plain text with one pattern
    per line for ``intent`` (empty lines and lines starting with ``#`` are skipped).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PatternFileError(f"{path}: cannot read: {exc.strerror}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PatternFileError(f"{path}: invalid YAML: {exc}") from None
        extra, replace = parse_book(data, str(path))
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if not lines:
            raise PatternFileError(f"{path}: no patterns (one per line expected)")
        extra, replace = PatternBook({}, {intent: IntentPatterns([Pattern(ln) for ln in lines])}), set()
    slots = {**book.slots, **extra.slots}
    intents = {name: IntentPatterns(list(e.patterns), dict(e.slots)) for name, e in book.intents.items()}
    for name, entry in extra.intents.items():
        current = intents.setdefault(name, IntentPatterns())
        current.patterns = list(entry.patterns) if name in replace else current.patterns + entry.patterns
        current.slots.update(entry.slots)
    return PatternBook(slots, intents)
