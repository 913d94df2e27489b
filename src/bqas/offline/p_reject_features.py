"""The evidence the offline tier already computed, as named numeric features for a ``p_reject`` model.

Generic over judges: input lengths, each graded dimension (measured? value? gate failed?), and the
details the built-in methods leave behind (claim support similarities and lexical overlap, unsupported
numbers/dates/entities, PII findings and their confidence). Missing evidence is encoded as a
``measured:…`` / ``has_…`` indicator with the value 0, so the model learns what "not measured" means
rather than being fed an invented value. A fitted model names the features it uses; others are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.judgment.result import DimensionProvenance
    from bqas.judgment.spec import JudgeSpec
    from bqas.offline.methods import MethodResult


def _chars(value: Any) -> tuple[int, int]:
    """(characters, items) of an input value (a text or a list of texts)."""
    if value is None:
        return 0, 0
    if isinstance(value, list | tuple):
        return sum(len(str(v)) for v in value), len(value)
    text = str(value)
    return len(text), 1 if text.strip() else 0


def _stats(prefix: str, xs: list[float], out: dict[str, float]) -> None:
    out[f"has_{prefix}"] = 1.0 if xs else 0.0
    out[f"{prefix}_min"] = min(xs) if xs else 0.0
    out[f"{prefix}_mean"] = sum(xs) / len(xs) if xs else 0.0
    out[f"{prefix}_max"] = max(xs) if xs else 0.0


def _claims(details: Mapping[str, Any], out: dict[str, float]) -> None:
    claims = [c for c in details.get("claims") or [] if isinstance(c, dict)]
    n = len(claims)
    out["claims_n_log"] = math.log1p(n)
    out["claims_supported_frac"] = sum(1 for c in claims if c.get("supported")) / n if n else 0.0
    out["not_checkable_n_log"] = math.log1p(len(details.get("not_checkable") or []))
    _stats("sim", [float(c["similarity"]) for c in claims if c.get("similarity") is not None], out)
    _stats("lex", [float(c["lexical_overlap"]) for c in claims if c.get("lexical_overlap") is not None], out)
    facts = [f for c in claims for f in c.get("facts") or [] if isinstance(f, dict)]
    out["facts_n_log"] = math.log1p(len(facts))
    bad = [f for f in facts if not f.get("supported")]
    out["facts_unsupported_n"] = float(len(bad))
    out["facts_unsupported_frac"] = len(bad) / len(facts) if facts else 0.0
    for kind in ("number", "date", "entity", "quote"):
        out[f"unsupported_{kind}"] = float(sum(1 for f in bad if f.get("kind") == kind))


def _pii(details: Mapping[str, Any], out: dict[str, float]) -> None:
    findings = [f for f in details.get("findings") or [] if isinstance(f, dict)]
    confs = [float(f.get("confidence") or 0.0) for f in findings]
    out["pii_n_log"] = math.log1p(len(findings))
    out["pii_conf_max"] = max(confs) if confs else 0.0
    out["pii_conf_sum"] = sum(confs)
    out["pii_strong_n"] = float(sum(1 for c in confs if c >= 0.65))
    out["pii_weak_n"] = float(sum(1 for c in confs if c < 0.65))
    for kind in ("person", "email", "phone", "address", "iban", "id"):
        out[f"pii_{kind}"] = float(sum(1 for f in findings if f.get("kind") == kind))
    out["manipulation_n"] = float(len(details.get("manipulation") or []))


def extract_features(
    spec: JudgeSpec,
    values: Mapping[str, Any],
    dims: Mapping[str, DimensionProvenance],
    evidence: Mapping[str, MethodResult],
) -> dict[str, float]:
    """All features for one offline judgment (cheap: a few dozen floats, no model calls)."""
    out: dict[str, float] = {"bias": 1.0}
    for name in spec.inputs:
        chars, items = _chars(values.get(name))
        out[f"len_log:{name}"] = math.log1p(chars)
        out[f"items:{name}"] = float(items)
    for name in spec.graded_dimensions:
        dim = spec.dimensions[name]
        prov = dims.get(name)
        measured = prov is not None and prov.measured and prov.value is not None
        out[f"measured:{name}"] = 1.0 if measured else 0.0
        if dim.kind == "gate":
            out[f"gate_fail:{name}"] = 1.0 if measured and prov is not None and prov.value == "fail" else 0.0
        else:
            pct = dim.to_percent(prov.value) if measured and prov is not None else None
            out[f"score:{name}"] = (pct or 0.0) / 100.0
    seen_claims = seen_pii = False
    for result in evidence.values():
        details = result.details or {}
        if not seen_claims and "claims" in details:
            _claims(details, out)
            seen_claims = True
        if not seen_pii and "findings" in details:
            _pii(details, out)
            seen_pii = True
    return out
