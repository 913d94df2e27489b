"""Labelled examples and datasets for intent classification (JSON Lines with a text and a label field)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from bqas.jsonl import iter_json_objects


class DataError(ValueError):
    """Bad input data; the message names file, line and field."""


@dataclass(frozen=True)
class Labelled:
    """One text with its intent label (``id`` when the file has one)."""

    text: str
    label: str
    id: str | None = None


def default_examples_path() -> Path:
    """The shipped German examples of the 19 teacher intents (20 hand-written and 40 generated per intent)."""
    return Path(str(resources.files("bqas.data") / "synth" / "intent_examples_de.jsonl"))


def load_labelled(path: Path, *, text_field: str = "text", label_field: str = "intent") -> list[Labelled]:
    """Read JSON Lines; every line needs a non-empty text field and label field (DataError otherwise).

    ``label_field`` falls back to ``expected_intent`` (the field ``bqas synth`` writes) when absent."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror}") from None
    out: list[Labelled] = []
    for row in iter_json_objects(lines):
        if row.value is None:
            raise DataError(row.error(str(path)))
        lineno, obj = row.line, row.value
        text = obj.get(text_field)
        label = obj.get(label_field, obj.get("expected_intent") if label_field == "intent" else None)
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{path}:{lineno}: field {text_field!r}: missing or empty text")
        if not isinstance(label, str) or not label.strip():
            raise DataError(f"{path}:{lineno}: field {label_field!r}: missing or empty label")
        rid = obj.get("id")
        out.append(Labelled(text.strip(), label.strip(), str(rid) if rid is not None else None))
    if not out:
        raise DataError(f"{path}: no labelled lines")
    return out


def load_label_list(path: Path) -> list[str]:
    """Intent names from a YAML list (or ``{intents: [...]}``) or a text file with one name per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        data = yaml.safe_load(text)
        if isinstance(data, dict):
            data = data.get("intents")
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise DataError(f"{path}: expected a list of intent names (or intents: [...])")
        names = [x.strip() for x in data]
    else:
        names = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not names:
        raise DataError(f"{path}: no intent names")
    return list(dict.fromkeys(names))
