"""Which tier's value a dimension takes, and what an offline ``failed`` verdict must rest on.

Tiers in order of trust: a fact measured exactly offline (a rule hit, an exact intent match, a number of the
answer that the facts do not contain: ``DimensionProvenance.fact``), then the LLM, then the offline tier's
estimates (embeddings, the learned grounding scorer). So beside an LLM:

* a dimension with a fact keeps the offline value; the LLM's value is kept beside it (``llm_value``) and,
  where the two disagree, the judgment is escalated (``disagreement: …``);
* every other dimension takes the LLM's value, the offline estimate kept beside it (``offline_value``), and a
  disagreement larger than the policy's ``disagreement_margin`` escalates.

Offline alone, a ``failed`` verdict needs a fact that speaks against the answer (a failed gate with its
rule hit, a score below the middle of its scale with the finding that lowered it). Where only estimates
speak against it, the verdict is ``needs_review``, escalated with :data:`MEANING_NOT_MEASURED`: shared
wording is what those estimates measure, and an answer in other words is no failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bqas.judgment.result import DimensionProvenance
from bqas.judgment.spec import Dimension

#: The escalation reason of an offline verdict lowered from ``failed`` to ``needs_review``.
MEANING_NOT_MEASURED = "meaning not measured offline"


@dataclass(frozen=True)
class Combined:
    """One dimension's value beside an LLM, and the disagreement to escalate (None when they agree)."""

    provenance: DimensionProvenance
    disagreement: str | None


def _disagree(dim: Dimension, offline: Any, llm: Any, margin: float) -> bool:
    if dim.kind == "gate":
        return bool(offline != llm)
    a, b = dim.to_percent(offline), dim.to_percent(llm)
    return a is not None and b is not None and abs(a - b) > margin


def combine_dimension(
    name: str,
    dim: Dimension,
    offline: DimensionProvenance | None,
    llm_value: Any,
    model: str | None,
    margin: float,
) -> Combined:
    """The value of dimension ``name`` when the LLM answered it (see the module docstring)."""
    llm = DimensionProvenance(value=llm_value, backend="llm", model=model, method="judge_prompt")
    if offline is None or not offline.measured:
        return Combined(llm, None)
    if offline.fact is not None:
        kept = offline.model_copy(update={"llm_value": llm_value})
        if _disagree(dim, offline.value, llm_value, margin):
            why = f"{name}: offline fact ({offline.fact}) gives {offline.value}, LLM says {llm_value}; the fact stands"
            return Combined(kept, why)
        return Combined(kept, None)
    llm.offline_value = offline.value
    if _disagree(dim, offline.value, llm_value, margin):
        return Combined(llm, f"{name}: offline {offline.value} vs LLM {llm_value}")
    return Combined(llm, None)


def speaks_against(dim: Dimension, prov: DimensionProvenance) -> bool:
    """Whether a measured fact lowers the answer: a failed gate, or a score below the middle of its scale."""
    if not prov.measured or prov.fact is None:
        return False
    if dim.kind == "gate":
        return bool(prov.value == "fail")
    percent = dim.to_percent(prov.value)
    return percent is not None and percent < 50


def facts_against(dims: dict[str, Dimension], provenance: dict[str, DimensionProvenance]) -> list[str]:
    """``"dimension: fact"`` for every measured fact that speaks against the answer."""
    return [f"{n}: {p.fact}" for n, p in provenance.items() if n in dims and speaks_against(dims[n], p)]
