"""Score one RAG sample with RAGAS metrics: the entry point of the scenario runner and the score API.

    records = await score_sample(
        {"user_input": "…", "response": "…", "retrieved_contexts": ["…"], "reference": "…"},
        ["faithfulness", "semantic_similarity"],
        llm=client,                 # bqas.llm.client.LLMClient, or None (LLM metrics are then unscored)
        judge_language="zh",        # Chinese judge prompts from configs/judge_prompts/zh
    )

Each record: ``metric``, ``value`` (float or None), ``status`` (``scored`` | ``unscored``),
``unscored_reason``, ``judge_language``, ``prompt_language``, ``backend`` (``ragas``), ``model``,
``llm_calls``, ``prompt_tokens``, ``completion_tokens``, ``latency_ms``, ``errors``. A metric that cannot
score (missing field, no LLM, LLM failure, NaN from ragas) is ``unscored`` with its reason, never NaN.

ragas itself is imported on the first call only (it costs seconds); this module imports nothing heavy.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bqas.llm.client import LLMClient
from bqas.ragas.metrics import EMBEDDING_ONLY, FIELD_ALIASES, METRIC_FIELDS, METRICS

JUDGE_LANGUAGES: tuple[str, ...] = ("en", "zh")
INSTALL_HINT = "the RAGAS extra is not installed: pip install 'bqas[ragas]'"


def available() -> bool:
    """Is the ``bqas[ragas]`` extra installed? (Looks for the package; does not import it.)"""
    return importlib.util.find_spec("ragas") is not None


def normalize_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Sample fields under ragas names (aliases question/answer/contexts/ground_truth accepted).

    ``retrieved_contexts`` may be one string or a list of strings; empty values count as missing.
    """
    out: dict[str, Any] = {}
    for key, value in fields.items():
        name = FIELD_ALIASES.get(key, key)
        if name in out and key != name:
            continue  # the ragas name wins over its alias
        out[name] = value
    contexts = out.get("retrieved_contexts")
    if isinstance(contexts, str):
        out["retrieved_contexts"] = [contexts]
    elif isinstance(contexts, Sequence):
        out["retrieved_contexts"] = [str(c) for c in contexts if c is not None and str(c).strip()]
    for name in ("user_input", "response", "reference"):
        if out.get(name) is not None and not isinstance(out[name], str):
            out[name] = str(out[name])
    return out


def _missing(fields: Mapping[str, Any], metric: str) -> list[str]:
    return [f for f in METRIC_FIELDS[metric] if not fields.get(f)]


def _record(metric: str, judge_language: str, **values: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "metric": metric,
        "value": None,
        "status": "unscored",
        "unscored_reason": None,
        "judge_language": judge_language,
        "prompt_language": None,
        "backend": "ragas",
        "model": None,
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latency_ms": 0.0,
        "errors": [],
    }
    record.update(values)
    return record


def _check(metrics: Sequence[str], judge_language: str) -> None:
    unknown = [m for m in metrics if m not in METRIC_FIELDS]
    if unknown:
        raise ValueError(f"metrics: unknown RAGAS metric(s) {unknown}; known: {', '.join(METRICS)}")
    if judge_language not in JUDGE_LANGUAGES:
        raise ValueError(f"judge_language: expected one of {', '.join(JUDGE_LANGUAGES)}, got {judge_language!r}")


async def score_sample(
    fields: Mapping[str, Any],
    metrics: Sequence[str],
    *,
    llm: LLMClient | None,
    judge_language: str = "en",
) -> list[dict[str, Any]]:
    """Score one sample with each of ``metrics``; one result record per metric, in the order given.

    The metrics of one sample run concurrently; the LLM client's semaphore bounds requests in flight,
    so callers may gather many samples at once. Raises ``ValueError`` only for a usage error (unknown
    metric name, judge language not ``en``/``zh``); everything else becomes an ``unscored`` record.
    """
    names = list(dict.fromkeys(metrics))
    _check(names, judge_language)
    sample = normalize_fields(fields)
    model = llm.config.model if llm is not None else None
    records: dict[str, dict[str, Any]] = {}
    runnable: list[str] = []
    for name in names:
        missing = _missing(sample, name)
        if missing:
            reason = f"missing sample field(s): {', '.join(missing)}"
            records[name] = _record(name, judge_language, unscored_reason=reason)
        elif name not in EMBEDDING_ONLY and llm is None:
            reason = "no LLM configured (set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL)"
            records[name] = _record(name, judge_language, unscored_reason=reason)
        else:
            runnable.append(name)
    if runnable and not available():
        for name in runnable:
            records[name] = _record(name, judge_language, unscored_reason=INSTALL_HINT)
        runnable = []
    if runnable:
        try:
            from bqas.ragas.factory import build_metric_pipeline

            pipeline = build_metric_pipeline(runnable, client=llm, judge_language=judge_language)
        except Exception as exc:  # e.g. a broken ragas install: every metric unscored, with the reason
            reason = f"RAGAS could not be loaded: {type(exc).__name__}: {exc}"
            for name in runnable:
                records[name] = _record(name, judge_language, unscored_reason=reason)
        else:
            results = await asyncio.gather(
                *(_score_one(pipeline, name, sample, judge_language, model) for name in runnable)
            )
            records.update(zip(runnable, results, strict=True))
    return [records[name] for name in names]


async def _score_one(
    pipeline: Any, name: str, sample: Mapping[str, Any], judge_language: str, model: str | None
) -> dict[str, Any]:
    metric = pipeline.metrics[name]
    adapter = pipeline.llms.get(name)
    kwargs = {f: sample[f] for f in METRIC_FIELDS[name]}
    report = pipeline.localization
    errors = [f"localization: {w}" for w in report.metric_warnings(name)]
    start = time.perf_counter()
    value: float | None = None
    reason: str | None = None
    try:
        result = await metric.ascore(**kwargs)
        raw = result.value
        value = float(raw) if raw is not None else None
        if value is None or not math.isfinite(value):
            # ragas returns NaN when, e.g., no statements could be extracted from the response.
            reason = f"ragas returned no number ({raw!r}): nothing to score (e.g. no statements extracted)"
            value = None
    except Exception as exc:  # one metric's failure never fails the sample
        reason = f"{type(exc).__name__}: {exc}"
    latency_ms = round((time.perf_counter() - start) * 1000.0, 3)
    stats = adapter.stats if adapter is not None else None
    if stats is not None:
        errors.extend(stats.errors)
    return _record(
        name,
        judge_language,
        value=value,
        status="scored" if reason is None else "unscored",
        unscored_reason=reason,
        prompt_language=report.metric_language(name) if name not in EMBEDDING_ONLY else None,
        model=model if name not in EMBEDDING_ONLY else pipeline.embeddings.name,
        llm_calls=stats.llm_calls if stats else 0,
        prompt_tokens=stats.prompt_tokens if stats else 0,
        completion_tokens=stats.completion_tokens if stats else 0,
        latency_ms=latency_ms,
        errors=errors,
    )
