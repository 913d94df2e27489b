"""Request and response bodies of the scoring API (names and fields as in the Chinese judge-prompt design's ``ScoreRequest``).

How the top-level convenience fields reach the judges (explicit keys in ``sample`` always win):

| field | judge inputs it fills |
|---|---|
| ``question`` | ``user_input`` (voice, RAGAS), ``query`` (RAG judges), ``text`` (intent) |
| ``answer`` | ``response`` |
| ``contexts`` | ``available_facts`` (rag_hallucination), ``context`` (rag_privacy), ``retrieved_passage`` (rag_retrieval), ``retrieved_contexts`` (RAGAS) |
| ``reference`` | ``reference`` (RAGAS), ``expected_concepts`` (rag_retrieval) |
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bqas.judgment.result import JudgmentResult
from bqas.service.config import JUDGE_LANGUAGES
from bqas.service.dify import read_contexts, split_names
from bqas.untrusted import UntrustedValueError, check_value

Backend = Literal["offline", "llm", "auto"]
Language = Literal["de", "en", "zh"]
JobState = Literal["queued", "running", "done", "failed"]

# question → ..., answer → ..., contexts → ..., reference → ...
FIELD_MAP: dict[str, tuple[str, ...]] = {
    "question": ("user_input", "query", "text"),
    "answer": ("response",),
    "contexts": ("available_facts", "context", "retrieved_passage", "retrieved_contexts"),
    "reference": ("reference", "expected_concepts"),
}


def check_judge_language(value: str | None) -> str | None:
    """None stays None (the server default applies); otherwise one of ``en``, ``zh``."""
    if value is None:
        return None
    lang = value.strip().lower()
    if lang not in JUDGE_LANGUAGES:
        raise ValueError(f"unsupported judge_language {value!r}; expected one of {', '.join(JUDGE_LANGUAGES)}")
    return lang


class ScoreRequest(BaseModel):
    """One sample to score with BQAS judges and/or RAGAS metrics."""

    sample: dict[str, Any] = Field(
        default_factory=dict,
        description="Judge input fields by name (see `bqas judges`), e.g. user_input, response, expected_intent.",
    )
    question: str | None = Field(default=None, description="User question → user_input, query, text.")
    answer: str | None = Field(default=None, description="Assistant answer → response.")
    contexts: list[str] | None = Field(
        default=None, description="Retrieved contexts → available_facts, context, retrieved_passage."
    )
    reference: str | None = Field(default=None, description="Ground truth → reference, expected_concepts.")
    judges: list[str] = Field(default_factory=list, description="BQAS judges, e.g. voice, rag_hallucination.")
    metrics: list[str] = Field(default_factory=list, description="RAGAS metrics, e.g. faithfulness.")
    language: Language | None = Field(default=None, description="Judge prompt language (default: BQAS_LANGUAGE).")
    judge_language: str | None = Field(
        default=None, description="Language of RAGAS judge prompts: en or zh (default: RAGAS_JUDGE_LANGUAGE, en)."
    )
    response_id: str | None = Field(default=None, max_length=300, description="Your id of the scored response.")
    backend: Backend | None = Field(default=None, description="offline, llm or auto (default: the server's).")

    @model_validator(mode="before")
    @classmethod
    def _untrusted(cls, data: Any) -> Any:
        # Invalid Unicode, NaN/Infinity and deep nesting are refused before any field is looked at
        # (bqas.untrusted decides this for every edge), so they answer 422 naming the field.
        try:
            check_value(data)
        except UntrustedValueError as exc:
            raise ValueError(str(exc)) from None
        return data

    @field_validator("judges", "metrics", mode="before")
    @classmethod
    def _names_from_text(cls, value: Any) -> Any:
        # Tool runners such as Dify send list parameters as one string, "voice, rag_privacy", or as a
        # one-item list of it, ["voice,rag_privacy"].
        return split_names(value)

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts_from_text(cls, value: Any) -> Any:
        # A text, texts, or Dify's knowledge-retrieval result (objects with "content", maybe as a repr).
        return read_contexts(value)

    @field_validator("judge_language")
    @classmethod
    def _judge_language(cls, value: str | None) -> str | None:
        return check_judge_language(value)

    @model_validator(mode="after")
    def _something_to_do(self) -> ScoreRequest:
        if not self.judges and not self.metrics:
            raise ValueError("give at least one judge in 'judges' or one metric in 'metrics'")
        return self

    def fields(self) -> dict[str, Any]:
        """The judge inputs: ``sample`` plus the convenience fields under every name they map to."""
        return merge_fields(self.sample, self.question, self.answer, self.contexts, self.reference)


def merge_fields(
    sample: dict[str, Any],
    question: str | None,
    answer: str | None,
    contexts: list[str] | None,
    reference: str | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``sample`` with the convenience values added under their mapped names (``sample`` keys win)."""
    fields: dict[str, Any] = {}
    values = {"question": question, "answer": answer, "contexts": contexts, "reference": reference}
    for name, value in values.items():
        if value is not None:
            for target in FIELD_MAP[name]:
                fields[target] = value
    for key, value in (extra or {}).items():
        if value is not None:
            fields[key] = value
    fields.update(sample)
    return fields


class Turn(BaseModel):
    """One turn of a session."""

    question: str
    answer: str
    contexts: list[str] = Field(default_factory=list)
    reference: str | None = None
    expected_intent: str | None = None
    detected_intent: str | None = None
    response_id: str | None = Field(default=None, max_length=300)

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts_from_text(cls, value: Any) -> Any:
        return read_contexts(value)


class SessionScoreRequest(ScoreRequest):
    """A conversation: every turn is scored with the same judges/metrics; ``sample`` holds shared fields."""

    turns: list[Turn] = Field(min_length=1, description="The turns, in order.")

    def turn_fields(self, turn: Turn) -> dict[str, Any]:
        """The judge inputs of one turn: shared ``sample`` fields, overridden by the turn's own values."""
        extra = {"expected_intent": turn.expected_intent, "detected_intent": turn.detected_intent}
        base = {k: v for k, v in self.sample.items()}
        turn_values = merge_fields({}, turn.question, turn.answer, turn.contexts, turn.reference, extra)
        return {**base, **turn_values}


class ResultRecord(JudgmentResult):
    """One judge's result record, as ``bqas score`` prints it and ``results.jsonl`` holds it.

    Besides these fields, each dimension's value also stands at the top level under its name
    (``intent_accuracy``, ``safety``, ``grounding_score`` …, the seed's keys) and so does each non-graded
    output (``hallucinated_claims``, ``detected_pii`` …); ``dimensions`` says who produced each value.
    """

    # Documents the answers (OpenAPI); the service sends the records as they are, unvalidated.
    model_config = ConfigDict(extra="allow")


class MetricRecord(BaseModel):
    """One RAGAS metric's result record (``metrics`` in the request)."""

    model_config = ConfigDict(extra="allow")
    metric: str = Field(description="faithfulness, answer_relevancy, context_recall, …")
    value: float | None = Field(description="the metric's value, 0-1; None when unscored")
    status: Literal["scored", "unscored"]
    unscored_reason: str | None = None
    judge_language: str
    prompt_language: str | None = None
    backend: Literal["ragas"] = "ragas"
    model: str | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    errors: list[str] = Field(default_factory=list)


class TurnRecord(BaseModel):
    """The results of one turn of a session job, in turn order."""

    turn: int
    response_id: str
    results: list[ResultRecord | MetricRecord]


class JobAccepted(BaseModel):
    """Answer to an asynchronous submission."""

    job_id: str
    status: JobState
    status_url: str


class Progress(BaseModel):
    done: int
    total: int


class SessionAggregate(BaseModel):
    """Summary of a session: mean composite over scored results, worst verdict, escalations."""

    turns: int
    results: int
    scored: int
    unscored: int
    mean_composite: float | None
    worst_verdict: str | None
    escalations: int
    per_turn_composite: list[float | None]


class JobStatus(BaseModel):
    """State of a job; ``results`` when done (``turns`` for sessions), ``error`` when failed. Documents
    ``GET /api/jobs/{id}``; the answer is built by :func:`bqas.service.jobs.status_view`."""

    job_id: str
    kind: Literal["score", "session"]
    status: JobState
    progress: Progress
    results: list[ResultRecord | MetricRecord] | None = None
    turns: list[TurnRecord] | None = None
    aggregate: SessionAggregate | None = None
    error: str | None = None
    created_at: str
    updated_at: str
    finished_at: str | None = None


class Health(BaseModel):
    status: str
    database: str
    version: str
    # "loading" while the offline models load at start-up (requests then wait for them), "ready" after.
    models: str = "ready"
    # /readyz only: the LLM judge's known-answer check (bqas.service.judge_check), per judge and language.
    judge_check: dict[str, Any] | None = None
