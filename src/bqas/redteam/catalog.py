"""The shipped plugins and strategies, read from their data files (``plugins/*.yaml``, ``strategies/*.yaml``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

LANGUAGES: tuple[str, ...] = ("de", "en", "zh")
SEVERITIES: tuple[str, ...] = ("critical", "high", "medium", "low")
GRADER_KINDS: tuple[str, ...] = ("canary", "marker", "patterns", "exfiltration")
MARKERS: tuple[str, ...] = ("reversed_word", "sum")
STRATEGY_KINDS: tuple[str, ...] = ("plain", "encode", "homoglyphs", "translation", "typos", "frame", "crescendo")
ENCODINGS: tuple[str, ...] = ("base64", "rot13", "leet")


class CatalogError(ValueError):
    """A plugin or strategy file, or a name asked for, is not usable (the message names file and field)."""


@dataclass(frozen=True)
class Plugin:
    """What is attacked: templates per language (a text, or a list of turns), a grader and a severity."""

    name: str
    description: str
    severity: str
    grader: dict[str, Any]
    templates: dict[str, tuple[tuple[str, ...], ...]]  # language -> templates, each a tuple of turns

    @property
    def grader_kind(self) -> str:
        return str(self.grader["kind"])


@dataclass(frozen=True)
class Strategy:
    """How an attack is dressed; ``spec`` holds the kind's own fields (wrappers, frames, warm-ups …)."""

    name: str
    description: str
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)


def _read(folder: str) -> list[tuple[str, Any]]:
    base = resources.files("bqas.redteam").joinpath(folder)
    out = []
    for entry in sorted(base.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            out.append((f"bqas/redteam/{folder}/{entry.name}", yaml.safe_load(entry.read_text(encoding="utf-8"))))
    return out


def parse_plugin(data: Any, source: str) -> Plugin:
    """A plugin from its parsed file; errors name ``source`` and the field."""
    if not isinstance(data, dict):
        raise CatalogError(f"{source}: expected a mapping")
    for key in ("name", "description", "severity", "grader", "templates"):
        if key not in data:
            raise CatalogError(f"{source}: field {key}: missing")
    if data["severity"] not in SEVERITIES:
        raise CatalogError(f"{source}: field severity: expected one of {', '.join(SEVERITIES)}")
    grader = data["grader"]
    if not isinstance(grader, dict) or grader.get("kind") not in GRADER_KINDS:
        raise CatalogError(f"{source}: field grader.kind: expected one of {', '.join(GRADER_KINDS)}")
    if grader["kind"] == "marker" and grader.get("marker") not in MARKERS:
        raise CatalogError(f"{source}: field grader.marker: expected one of {', '.join(MARKERS)}")
    for key in ("patterns", "confirm"):
        for lang, patterns in (grader.get(key) or {}).items():
            for i, pattern in enumerate(patterns):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise CatalogError(
                        f"{source}: field grader.{key}.{lang}[{i}]: bad regular expression: {exc}"
                    ) from None
    templates: dict[str, tuple[tuple[str, ...], ...]] = {}
    raw = data["templates"]
    if not isinstance(raw, dict):
        raise CatalogError(f"{source}: field templates: expected a mapping of language -> list")
    for lang in LANGUAGES:
        items = raw.get(lang)
        if not isinstance(items, list) or not items:
            raise CatalogError(f"{source}: field templates.{lang}: expected a non-empty list")
        turns = []
        for i, item in enumerate(items):
            entry = (item,) if isinstance(item, str) else tuple(item) if isinstance(item, list) else ()
            if not entry or not all(isinstance(t, str) and t.strip() for t in entry):
                raise CatalogError(f"{source}: field templates.{lang}[{i}]: expected a text or a list of texts")
            turns.append(entry)
        templates[lang] = tuple(turns)
    return Plugin(str(data["name"]), str(data["description"]), str(data["severity"]), dict(grader), templates)


def parse_strategy(data: Any, source: str) -> Strategy:
    """A strategy from its parsed file; errors name ``source`` and the field."""
    if not isinstance(data, dict):
        raise CatalogError(f"{source}: expected a mapping")
    for key in ("name", "description", "kind"):
        if key not in data:
            raise CatalogError(f"{source}: field {key}: missing")
    kind = data["kind"]
    if kind not in STRATEGY_KINDS:
        raise CatalogError(f"{source}: field kind: expected one of {', '.join(STRATEGY_KINDS)}")
    if kind == "encode" and data.get("encoding") not in ENCODINGS:
        raise CatalogError(f"{source}: field encoding: expected one of {', '.join(ENCODINGS)}")
    needs = {"encode": "wrappers", "translation": "wrappers", "frame": "frames", "crescendo": "warmups"}.get(kind)
    if needs is not None:
        block = data.get(needs)
        for lang in LANGUAGES:
            if not isinstance(block, dict) or not isinstance(block.get(lang), list) or not block[lang]:
                raise CatalogError(f"{source}: field {needs}.{lang}: expected a non-empty list")
    spec = {k: v for k, v in data.items() if k not in ("name", "description", "kind")}
    return Strategy(str(data["name"]), str(data["description"]), str(kind), spec)


@cache
def plugins() -> dict[str, Plugin]:
    """The shipped plugins by name."""
    return {p.name: p for p in (parse_plugin(d, s) for s, d in _read("plugins"))}


@cache
def strategies() -> dict[str, Strategy]:
    """The shipped strategies by name."""
    return {s.name: s for s in (parse_strategy(d, src) for src, d in _read("strategies"))}


@cache
def slots() -> dict[str, Any]:
    """The template fillers, marker words and refusal patterns (``slots.yaml``)."""
    text = resources.files("bqas.redteam").joinpath("slots.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def pick(names: list[str] | None, known: dict[str, Any], what: str) -> list[str]:
    """The names asked for (all when ``None``), each checked; an unknown one raises listing the valid ones."""
    if names is None:
        return sorted(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CatalogError(f"unknown {what} {', '.join(map(repr, unknown))}; valid: {', '.join(sorted(known))}")
    return list(dict.fromkeys(names))
