"""Asynchronous jobs: what is stored at submission, how a stored job becomes scoring calls, status views."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from bqas.service.models import ScoreRequest, SessionAggregate, SessionScoreRequest
from bqas.service.scoring import ScoreCall
from bqas.store.db import Store
from bqas.store.service import JobView, create_job, create_job_once, job_items


def job_payload(request: ScoreRequest, *, backend: str, judge_language: str, language: str | None) -> dict[str, Any]:
    """The stored form of a request: the body as sent plus the values resolved at submission."""
    return {
        "body": request.model_dump(mode="json"),
        "resolved": {"backend": backend, "judge_language": judge_language, "language": language},
    }


def submit(
    store: Store,
    tenant: str,
    request: ScoreRequest,
    *,
    backend: str,
    judge_language: str,
    language: str | None,
) -> str:
    """Queue a score or session job and return its id."""
    kind = "session" if isinstance(request, SessionScoreRequest) else "score"
    total = len(request.turns) if isinstance(request, SessionScoreRequest) else 1
    payload = job_payload(request, backend=backend, judge_language=judge_language, language=language)
    return create_job(store, tenant, kind, payload, total)


def request_hash(request: ScoreRequest) -> str:
    """What makes two submissions "the same request" for an idempotency key: the endpoint and the body as
    parsed (``"judges": "voice"`` and ``["voice"]`` are the same request), not its bytes."""
    kind = "session" if isinstance(request, SessionScoreRequest) else "score"
    canonical = orjson.dumps({"kind": kind, "body": request.model_dump(mode="json")}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def submit_once(
    store: Store,
    tenant: str,
    request: ScoreRequest,
    *,
    key: str,
    retention_seconds: float,
    backend: str,
    judge_language: str,
    language: str | None,
) -> tuple[str, bool]:
    """:func:`submit` under an idempotency key: (job id, True) for a new job, (the first submission's job
    id, False) for a repeat; IdempotencyConflict when the key came with another request before."""
    kind = "session" if isinstance(request, SessionScoreRequest) else "score"
    total = len(request.turns) if isinstance(request, SessionScoreRequest) else 1
    payload = job_payload(request, backend=backend, judge_language=judge_language, language=language)
    return create_job_once(
        store,
        tenant,
        kind,
        payload,
        total,
        key=key,
        request_hash=request_hash(request),
        retention_seconds=retention_seconds,
    )


def job_calls(job: JobView) -> list[ScoreCall]:
    """One scoring call per turn (one call for a single-sample job), in turn order."""
    body = job.request["body"]
    resolved = job.request["resolved"]
    common = {
        "judges": list(body.get("judges") or []),
        "metrics": list(body.get("metrics") or []),
        "language": resolved.get("language"),
        "judge_language": resolved["judge_language"],
        "backend": resolved["backend"],
    }
    if job.kind == "session":
        request = SessionScoreRequest.model_validate(body)
        base_id = request.response_id or job.id
        return [
            ScoreCall(fields=request.turn_fields(turn), response_id=turn.response_id or f"{base_id}#{i}", **common)
            for i, turn in enumerate(request.turns)
        ]
    single = ScoreRequest.model_validate(body)
    return [ScoreCall(fields=single.fields(), response_id=single.response_id or job.id, **common)]


def status_view(store: Store, job: JobView) -> dict[str, Any]:
    """The answer of ``GET /api/jobs/{id}`` (documented by :class:`JobStatus`); results only once the
    job is done. The stored records are sent as they are: validating each against the documented record
    would only cost time and could refuse a record an older version stored."""
    results: list[dict[str, Any]] | None = None
    turns: list[dict[str, Any]] | None = None
    if job.status == "done":
        items = job_items(store, job.id)
        if job.kind == "session":
            turns = items
        else:
            results = list(items[0]["results"]) if items else []
    aggregate = None
    if job.kind == "session" and job.status == "done" and job.aggregate is not None:
        aggregate = SessionAggregate.model_validate(job.aggregate).model_dump(mode="json")
    return {
        "job_id": job.id,
        "kind": "session" if job.kind == "session" else "score",
        "status": job.status,
        "progress": {"done": job.done, "total": job.total},
        "results": results,
        "turns": turns,
        "aggregate": aggregate,
        "error": job.error,
        "created_at": job.created_at.isoformat(),
        "updated_at": job.updated_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
