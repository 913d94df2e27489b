"""Austrian, Swiss and Bavarian forms from ``data/synth/dialects.yaml`` (a documented, uncertain-marked list).

Replacement rules: phrases first, then whole words, then characters (Swiss ``ß`` -> ``ss``). Keys are
matched case-sensitively (German nouns are capitalised, so ``Mal`` the noun is not ``mal`` the adverb);
a lower-case key also matches its capitalised form at the start of the text, and the replacement then
starts with a capital too.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from bqas.synth._text import lower_sentence_start


@dataclass(frozen=True)
class Replacement:
    """One standard form and its regional form."""

    source: str
    target: str
    uncertain: bool = False
    note: str = ""


@dataclass(frozen=True)
class Dialect:
    """A regional variety: its tag, LLM instruction, replacements and optional greeting markers."""

    key: str
    tag: str
    name: str
    instruction: dict[str, str]
    phrases: tuple[Replacement, ...]
    words: tuple[Replacement, ...]
    chars: tuple[tuple[str, str], ...]
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    marker_rate: float
    examples: tuple[str, ...]


@dataclass(frozen=True)
class DialectBook:
    """All dialects and the instruction used when none is chosen."""

    dialects: dict[str, Dialect]
    standard_instruction: dict[str, str]

    def get(self, key: str) -> Dialect:
        """The dialect ``key``; ValueError listing the known ones."""
        if key not in self.dialects:
            raise ValueError(f"unknown dialect {key!r}; known: {', '.join(sorted(self.dialects))}")
        return self.dialects[key]

    def instruction(self, key: str | None, language: str) -> str:
        """The LLM instruction for ``key`` (None: standard German) in ``language`` (German fallback)."""
        texts = self.standard_instruction if key is None else self.get(key).instruction
        return texts.get(language) or texts["de"]


def _replacements(raw: Any, where: str) -> tuple[Replacement, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a mapping of standard form to regional form")
    out: list[Replacement] = []
    for src, value in raw.items():
        if isinstance(value, str):
            out.append(Replacement(str(src), value))
        elif isinstance(value, dict) and isinstance(value.get("to"), str):
            out.append(Replacement(str(src), value["to"], bool(value.get("uncertain")), str(value.get("note") or "")))
        else:
            raise ValueError(f"{where}.{src}: expected a text or {{to: ..., uncertain: ...}}")
    # Longer sources first so that "Klassenarbeiten" is not cut by "Klassenarbeit".
    return tuple(sorted(out, key=lambda r: -len(r.source)))


def parse_dialects(data: Any, source: str) -> DialectBook:
    """A dialect book from parsed YAML; ValueError names the field at fault."""
    if not isinstance(data, dict) or not isinstance(data.get("dialects"), dict):
        raise ValueError(f"{source}: expected a mapping with 'dialects'")
    dialects: dict[str, Dialect] = {}
    for key, body in data["dialects"].items():
        where = f"{source}: dialects.{key}"
        if not isinstance(body, dict) or not isinstance(body.get("instruction"), dict):
            raise ValueError(f"{where}: expected a mapping with 'instruction'")
        dialects[str(key)] = Dialect(
            key=str(key),
            tag=str(body.get("tag") or key),
            name=str(body.get("name") or key),
            instruction={str(k): str(v) for k, v in body["instruction"].items()},
            phrases=_replacements(body.get("phrases"), f"{where}.phrases"),
            words=_replacements(body.get("words"), f"{where}.words"),
            chars=tuple((str(a), str(b)) for a, b in (body.get("chars") or {}).items()),
            prefixes=tuple(str(p) for p in body.get("prefixes") or ()),
            suffixes=tuple(str(s) for s in body.get("suffixes") or ()),
            marker_rate=float(body.get("marker_rate", 0.0)),
            examples=tuple(str(e) for e in body.get("examples") or ()),
        )
    standard = (data.get("standard") or {}).get("instruction") or {"de": "Verwende Standarddeutsch ohne Dialekt"}
    return DialectBook(dialects, {str(k): str(v) for k, v in standard.items()})


def default_dialects_path() -> Path:
    """The shipped dialect list."""
    return Path(str(resources.files("bqas.data") / "synth" / "dialects.yaml"))


@cache
def load_dialects(path: Path | None = None) -> DialectBook:
    """Load the dialect list (the shipped one by default)."""
    target = path or default_dialects_path()
    return parse_dialects(yaml.safe_load(target.read_text(encoding="utf-8")), str(target))


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _replace(text: str, rep: Replacement) -> str:
    pattern = re.compile(rf"(?<!\w){re.escape(rep.source)}(?!\w)")
    text = pattern.sub(lambda _m: rep.target, text)
    if rep.source[:1].islower():
        head = _capitalise(rep.source)
        if text.startswith(head) and not text[len(head) : len(head) + 1].isalnum():
            text = _capitalise(rep.target) + text[len(head) :]
    return text


def apply_dialect(text: str, dialect: Dialect) -> str:
    """Replace standard forms by the dialect's forms (deterministic)."""
    for rep in dialect.phrases:
        text = _replace(text, rep)
    for rep in dialect.words:
        text = _replace(text, rep)
    for src, dst in dialect.chars:
        text = text.replace(src, dst)
    return text


def add_marker(text: str, dialect: Dialect, rng: random.Random) -> str:
    """With probability ``marker_rate``, add a regional greeting before or a tag after the command."""
    if rng.random() >= dialect.marker_rate or not (dialect.prefixes or dialect.suffixes):
        return text
    if dialect.prefixes and (not dialect.suffixes or rng.random() < 0.5):
        # The greeting replaces a generic "Hey, " rather than stacking on it.
        body = text.removeprefix("Hey, ")
        return rng.choice(dialect.prefixes) + lower_sentence_start(body)
    return text.rstrip(".!?") + rng.choice(dialect.suffixes)
