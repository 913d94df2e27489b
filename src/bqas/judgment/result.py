"""The result record of one judgment (JSON), as stored, printed and reported.

Dimension values sit at the top level under the seed's keys (``intent_accuracy``, ``safety`` …), as in
the seed's worked example; ``dimensions`` says for each which backend and model produced it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Backend = Literal["llm", "offline", "human"]
Status = Literal["scored", "unscored", "invalid"]


class DimensionProvenance(BaseModel):
    """Who produced one dimension's value, and how."""

    value: Any = None
    backend: Backend
    model: str | None = None
    method: str | None = None
    measured: bool = True
    note: str | None = None
    offline_value: Any = None
    llm_value: Any = None
    #: The checkable fact behind an offline value measured exactly (a rule hit, an exact intent match, a
    #: number not in the facts); None for estimates. Such a value is never replaced by the LLM's.
    fact: str | None = None


class TierConfidence(BaseModel):
    """One tier's confidence in its accept/reject call (see docs/calibration.md, trust or escalate).

    ``p_reject``: the probability that people would reject the response, from a fitted model (offline) or
    the LLM's own token probabilities / sample agreement; ``None`` with a ``reason`` when the tier has no
    such model, never a made-up number. ``risk``: the tier's raw risk score (1 - composite/100, 1 for a
    failed gate), which a calibration profile may calibrate instead when no ``p_reject`` model exists.
    """

    p_reject: float | None = None
    risk: float | None = None
    method: str | None = None
    model: str | None = None
    reason: str | None = None


Decision = Literal["accept", "reject", "escalate"]
DecidedBy = Literal["offline", "llm", "human"]


class JudgmentResult(BaseModel):
    """One judge's verdict on one sample."""

    response_id: str
    judge: str
    language: str
    prompt_language: str | None = None
    status: Status = "scored"
    dimensions: dict[str, DimensionProvenance] = Field(default_factory=dict)
    composite_score: float | None = None
    coverage: float = 0.0
    partial: bool = False
    verdict: str | None = None
    escalation: str | None = None
    escalation_reasons: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    reasoning_language: str | None = None  # detected language of an LLM's reasoning
    reasoning_language_mismatch: bool = False  # the judge wrote in another language than its prompt's
    unscored_reason: str | None = None
    outputs: dict[str, Any] = Field(default_factory=dict)  # non-graded outputs (labels, lists)
    prompt_id: str | None = None
    prompt_hash: str | None = None
    backend: str = "offline"
    model: str | None = None
    latency_ms: float = 0.0
    # latency_ms split: the judgment's own work (offline tier in its worker, LLM requests, scoring) and the
    # time it waited for a free offline worker, an LLM connection slot or an LLM retry's back-off.
    service_ms: float = 0.0
    queue_ms: float = 0.0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit: bool = False
    repairs: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    truncated: dict[str, int] = Field(default_factory=dict)
    # Trust or escalate: per-tier confidence, and the decision a calibration profile allows (if loaded).
    confidence: dict[str, TierConfidence] = Field(default_factory=dict)
    decision: Decision | None = None
    decided_by: DecidedBy | None = None
    profile_id: str | None = None
    # The deterministic safety gate (PII, judge manipulation): "checked" on every backend unless switched
    # off ("off"); None for judges without a safety dimension.
    safety_gate: Literal["checked", "off"] | None = None
    # The LLM exchange as the viewer shows it (bqas.judging.exchange): stored in its own column by the
    # runner, not part of the record (to_record, API answers, results.jsonl).
    exchange: dict[str, Any] | None = Field(default=None, exclude=True)

    def to_record(self) -> dict[str, Any]:
        """The flat JSON record: dimension values under their seed keys, then everything else."""
        data = self.model_dump(mode="json")
        flat: dict[str, Any] = {
            "response_id": data.pop("response_id"),
            "judge": data.pop("judge"),
            "language": data.pop("language"),
        }
        for name, prov in self.dimensions.items():
            flat[name] = prov.value
        for name, value in self.outputs.items():
            flat.setdefault(name, value)
        flat.update(data)
        return flat
