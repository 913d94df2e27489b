"""Intent taxonomy and the offline method ``intent_taxonomy``.

The taxonomy (``bqas/data/intent_taxonomy.yaml`` by default; another file via the ``path`` argument or
the environment variable ``BQAS_INTENT_TAXONOMY``) groups the voice assistant's intents into categories
and lists related intents across categories. A detected intent is scored against the expected one on the
voice judge's rubric: exact 100, same category 80-99, related 50-79, wrong 0-49; the numbers inside the
bands are set (and justified) in the YAML file.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bqas.offline.methods import FACT_KEY, MethodResult, OfflineContext, offline_method
from bqas.offline.text.inputs import as_text

TAXONOMY_ENV = "BQAS_INTENT_TAXONOMY"
DEFAULT_TAXONOMY_PATH = Path(__file__).resolve().parent.parent / "data" / "intent_taxonomy.yaml"
UNKNOWN_INTENT = "unknown"

_BANDS = {
    "exact": (100.0, 100.0),
    "same_category": (80.0, 99.0),
    "related": (50.0, 79.0),
    "wrong": (0.0, 49.0),
    "unknown": (0.0, 49.0),
}


class TaxonomyError(ValueError):
    """An invalid taxonomy file (the message names the file and the key)."""


@dataclass(frozen=True)
class IntentTaxonomy:
    """A validated intent taxonomy."""

    source: str
    scoring: dict[str, float]
    category_of: dict[str, str]
    descriptions: dict[str, dict[str, str]]
    category_labels: dict[str, dict[str, str]]
    same_category_overrides: dict[frozenset[str], float] = field(default_factory=dict)
    related: dict[frozenset[str], str] = field(default_factory=dict)
    # Intents whose answers bring content of their own (not checked against the user's words offline).
    content_intents: frozenset[str] = frozenset()

    @property
    def intents(self) -> list[str]:
        """All intent names."""
        return list(self.category_of)

    def __contains__(self, intent: object) -> bool:
        return isinstance(intent, str) and normalise_intent(intent) in self.category_of

    def relation(self, detected: str, expected: str) -> str:
        """``exact``, ``unknown``, ``same_category``, ``related`` or ``wrong`` (both must be known)."""
        d, e = normalise_intent(detected), normalise_intent(expected)
        if d == e:
            return "exact"
        if UNKNOWN_INTENT in (d, e):
            return "unknown"
        if self.category_of[d] == self.category_of[e]:
            return "same_category"
        if frozenset((d, e)) in self.related:
            return "related"
        return "wrong"

    def score(self, detected: str, expected: str) -> tuple[float, str]:
        """The rubric score and the relation of two known intents."""
        rel = self.relation(detected, expected)
        if rel == "same_category":
            pair = frozenset((normalise_intent(detected), normalise_intent(expected)))
            return self.same_category_overrides.get(pair, self.scoring["same_category"]), rel
        return self.scoring[rel], rel


def normalise_intent(name: str) -> str:
    """Casefold, strip, and turn spaces/hyphens/dots into underscores (``"Reminder Schedule"``)."""
    return re.sub(r"[\s\-.]+", "_", name.strip().casefold()).strip("_")


def _err(path: str, key: str, msg: str) -> TaxonomyError:
    return TaxonomyError(f"{path}: {key}: {msg}")


def _pair(path: str, key: str, entry: Any, known: Mapping[str, str]) -> tuple[str, str]:
    if not isinstance(entry, Mapping) or "pair" not in entry:
        raise _err(path, key, "expected a mapping with 'pair: [intent_a, intent_b]'")
    pair = entry["pair"]
    if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise _err(path, key, f"'pair' must be a list of two intent names, got {pair!r}")
    a, b = normalise_intent(pair[0]), normalise_intent(pair[1])
    for name in (a, b):
        if name not in known:
            raise _err(path, key, f"unknown intent {name!r} (not listed under 'categories')")
    if a == b:
        raise _err(path, key, f"pair relates {a!r} to itself")
    return a, b


def parse_taxonomy(data: Any, source: str = "<taxonomy>") -> IntentTaxonomy:
    """Validate a parsed taxonomy document; raise :class:`TaxonomyError` naming file and key."""
    if not isinstance(data, Mapping):
        raise _err(source, "<root>", "expected a mapping")
    scoring_raw = data.get("scoring", {})
    if not isinstance(scoring_raw, Mapping):
        raise _err(source, "scoring", "expected a mapping")
    scoring: dict[str, float] = {
        "exact": 100.0,
        "same_category": 90.0,
        "related": 65.0,
        "wrong": 0.0,
        "unknown": 0.0,
    }
    for key, value in scoring_raw.items():
        if key not in _BANDS:
            raise _err(source, f"scoring.{key}", f"unknown key; allowed: {', '.join(_BANDS)}")
        if not isinstance(value, (int, float)):
            raise _err(source, f"scoring.{key}", f"expected a number, got {value!r}")
        lo, hi = _BANDS[key]
        if not lo <= float(value) <= hi:
            raise _err(source, f"scoring.{key}", f"{value} outside the rubric band {lo:g}-{hi:g}")
        scoring[key] = float(value)

    categories = data.get("categories")
    if not isinstance(categories, Mapping) or not categories:
        raise _err(source, "categories", "expected a non-empty mapping of category -> {intents: [...]}")
    category_of: dict[str, str] = {}
    labels: dict[str, dict[str, str]] = {}
    for cat, body in categories.items():
        key = f"categories.{cat}"
        if not isinstance(body, Mapping) or not isinstance(body.get("intents"), list):
            raise _err(source, key, "expected a mapping with an 'intents' list")
        labels[str(cat)] = {str(k): str(v) for k, v in (body.get("label") or {}).items()}
        for raw in body["intents"]:
            if not isinstance(raw, str) or not raw.strip():
                raise _err(source, f"{key}.intents", f"invalid intent name {raw!r}")
            name = normalise_intent(raw)
            if name in category_of:
                raise _err(source, f"{key}.intents", f"intent {name!r} already in category {category_of[name]!r}")
            category_of[name] = str(cat)

    descriptions: dict[str, dict[str, str]] = {}
    intents_raw = data.get("intents", {}) or {}
    if not isinstance(intents_raw, Mapping):
        raise _err(source, "intents", "expected a mapping intent -> {de, en, zh}")
    for raw, desc in intents_raw.items():
        name = normalise_intent(str(raw))
        if name not in category_of:
            raise _err(source, f"intents.{raw}", f"unknown intent {name!r} (not listed under 'categories')")
        if not isinstance(desc, Mapping):
            raise _err(source, f"intents.{raw}", "expected a mapping of language -> description")
        descriptions[name] = {str(k): str(v) for k, v in desc.items()}

    overrides: dict[frozenset[str], float] = {}
    for i, entry in enumerate(data.get("same_category_overrides", []) or []):
        key = f"same_category_overrides[{i}]"
        a, b = _pair(source, key, entry, category_of)
        if category_of[a] != category_of[b]:
            raise _err(source, key, f"{a!r} and {b!r} are in different categories")
        score = entry.get("score")
        if not isinstance(score, (int, float)) or not 80 <= float(score) <= 99:
            raise _err(source, f"{key}.score", f"expected a number in 80-99, got {score!r}")
        overrides[frozenset((a, b))] = float(score)

    related: dict[frozenset[str], str] = {}
    for i, entry in enumerate(data.get("related", []) or []):
        key = f"related[{i}]"
        a, b = _pair(source, key, entry, category_of)
        if category_of[a] == category_of[b]:
            raise _err(source, key, f"{a!r} and {b!r} are in the same category (already scored as such)")
        if UNKNOWN_INTENT in (a, b):
            raise _err(source, key, "'unknown' cannot be related to another intent")
        related[frozenset((a, b))] = str(entry.get("why", ""))

    content = data.get("content_intents", []) or []
    if not isinstance(content, list):
        raise _err(source, "content_intents", "expected a list of intent names")
    content_intents = set()
    for raw in content:
        name = normalise_intent(str(raw))
        if name not in category_of:
            raise _err(source, "content_intents", f"unknown intent {name!r} (not listed under 'categories')")
        content_intents.add(name)

    return IntentTaxonomy(
        source=source,
        content_intents=frozenset(content_intents),
        scoring=scoring,
        category_of=category_of,
        descriptions=descriptions,
        category_labels=labels,
        same_category_overrides=overrides,
        related=related,
    )


_CACHE: dict[tuple[str, float], IntentTaxonomy] = {}


def taxonomy_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The taxonomy file to use: ``path``, else ``$BQAS_INTENT_TAXONOMY``, else the built-in file."""
    if path is not None:
        return Path(path)
    env = os.environ.get(TAXONOMY_ENV, "").strip()
    return Path(env) if env else DEFAULT_TAXONOMY_PATH


#: Seconds a loaded taxonomy is used before its file is checked for changes again (stat + resolve on
#: every judgment were ~7 % of a voice request's CPU in the service).
RECHECK_SECONDS = 2.0
_RECENT: dict[tuple[str, str], tuple[float, IntentTaxonomy]] = {}


def load_taxonomy(path: str | os.PathLike[str] | None = None) -> IntentTaxonomy:
    """Load and validate a taxonomy file (cached per path and modification time; the file is checked for
    changes at most every :data:`RECHECK_SECONDS`)."""
    recent_key = (str(path) if path is not None else "", os.environ.get(TAXONOMY_ENV, ""))
    recent = _RECENT.get(recent_key)
    now = time.monotonic()
    if recent is not None and now - recent[0] < RECHECK_SECONDS:
        return recent[1]
    taxonomy = _load_checked(path)
    _RECENT[recent_key] = (now, taxonomy)
    return taxonomy


def _load_checked(path: str | os.PathLike[str] | None) -> IntentTaxonomy:
    p = taxonomy_path(path)
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise TaxonomyError(f"{p}: cannot read intent taxonomy: {exc.strerror or exc}") from exc
    key = (str(p.resolve()), mtime)
    if key not in _CACHE:
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise TaxonomyError(f"{p}: invalid YAML: {exc}") from exc
        _CACHE[key] = parse_taxonomy(data, str(p))
    return _CACHE[key]


def clean_intent(value: Any) -> str:
    text = as_text(value)
    if text.startswith("{") and '"type"' in text:
        m = re.search(r'"type"\s*:\s*"([^"]+)"', text)
        if m:
            text = m.group(1)
    return normalise_intent(text)


@offline_method("intent_taxonomy")
def intent_taxonomy(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """intent_accuracy 0-100 of ``detected`` vs ``expected`` on the taxonomy (see module docstring)."""
    method = "taxonomy:intent"
    taxonomy = ctx.resources.get("intent_taxonomy")
    if not isinstance(taxonomy, IntentTaxonomy):
        taxonomy = load_taxonomy()
    detected = clean_intent(inputs.get("detected"))
    expected = clean_intent(inputs.get("expected"))
    if not expected:
        return MethodResult(None, method, note="no expected intent")
    if not detected:
        return MethodResult(None, method, note="no detected intent")
    details: dict[str, Any] = {"detected": detected, "expected": expected, "taxonomy": taxonomy.source}
    wrong = taxonomy.scoring["wrong"]
    if detected not in taxonomy:
        # A made-up intent name is no intent the assistant can act on, even when the test case expects the
        # same name: it fails (a deployment with its own intents sets BQAS_INTENT_TAXONOMY).
        note = f"detected intent {detected!r} is not an intent of the taxonomy ({taxonomy.source})"
        fact = f"detected intent {detected!r} is not an intent of the taxonomy"
        return MethodResult(
            wrong, "taxonomy:unknown-intent", note=note, details={**details, "relation": "wrong", FACT_KEY: fact}
        )
    if detected == expected:
        fact = f"detected intent {detected!r} equals the expected intent"
        return MethodResult(100.0, "taxonomy:exact", details={**details, "relation": "exact", FACT_KEY: fact})
    if expected not in taxonomy:
        # The detected intent is a real one and not the expected name: whatever that name means, it is not
        # what was detected.
        note = f"expected intent {expected!r} is not in the taxonomy; the detected {detected!r} does not match it"
        fact = f"detected intent {detected!r} is not the expected {expected!r}"
        return MethodResult(
            wrong, "taxonomy:wrong", note=note, details={**details, "relation": "wrong", FACT_KEY: fact}
        )
    score, relation = taxonomy.score(detected, expected)
    details.update(
        relation=relation,
        detected_category=taxonomy.category_of[detected],
        expected_category=taxonomy.category_of[expected],
    )
    if relation == "related":
        details["why"] = taxonomy.related[frozenset((detected, expected))]
    elif relation == "wrong":
        # Two intents of the taxonomy that it does not relate: a different intent, checkable in the labels.
        details[FACT_KEY] = f"detected intent {detected!r} is not the expected {expected!r} (unrelated in the taxonomy)"
    return MethodResult(round(score, 1), f"taxonomy:{relation}", details=details)
