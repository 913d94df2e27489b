"""A small typed client of the BQAS scoring service (httpx), synchronous and asynchronous.

    from bqas.client import BQASClient
    with BQASClient("http://127.0.0.1:8765", api_key="bqas_…") as bqas:
        records = bqas.score(judges=["rag_hallucination"], question="…", answer="…", contexts=["…"])
        job = bqas.wait_for_job(bqas.score_session_async(turns=[{"question": "…", "answer": "…"}], judges=["voice"]))

Errors come as :class:`BQASError` with the HTTP status, the server's ``detail`` and ``Retry-After``.

Async submissions (``score_async``, ``score_session_async``) carry an ``Idempotency-Key`` (a new UUID per
call unless one is given) and are sent again with the same key when the reply is lost (a dropped
connection, a timeout) or the service answers 503 (its database restarting): a submission that the
service stored before its reply was lost then returns that job instead of creating a second one.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["AsyncBQASClient", "BQASClient", "BQASError", "Job"]

FINAL = ("done", "failed")


class BQASError(RuntimeError):
    """The service answered with an error status."""

    def __init__(self, status: int, detail: Any, retry_after: float | None = None):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail
        self.retry_after = retry_after


@dataclass(frozen=True)
class Job:
    """A job's state as returned by ``GET /api/jobs/{id}``."""

    job_id: str
    kind: str
    status: str
    done: int
    total: int
    results: list[dict[str, Any]] | None = None
    turns: list[dict[str, Any]] | None = None
    aggregate: dict[str, Any] | None = None
    error: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.status in FINAL

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        progress = data.get("progress") or {}
        return cls(
            job_id=str(data["job_id"]),
            kind=str(data.get("kind", "score")),
            status=str(data["status"]),
            done=int(progress.get("done", 0)),
            total=int(progress.get("total", 0)),
            results=data.get("results"),
            turns=data.get("turns"),
            aggregate=data.get("aggregate"),
            error=data.get("error"),
            raw=dict(data),
        )


def _body(
    judges: Sequence[str] | None,
    metrics: Sequence[str] | None,
    sample: Mapping[str, Any] | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    body: dict[str, Any] = {"judges": list(judges or []), "metrics": list(metrics or [])}
    if sample:
        body["sample"] = dict(sample)
    body.update({k: v for k, v in options.items() if v is not None})
    return body


def _check(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text
        retry = response.headers.get("Retry-After")
        raise BQASError(response.status_code, detail, float(retry) if retry and retry.isdigit() else None)
    return response.json()


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"}


SUBMIT_RETRIES = 3  # extra tries of an async submission whose reply was lost or that met a 503
MAX_RETRY_WAIT_S = 30.0


def _retry_wait(error: BaseException, attempt: int) -> float | None:
    """Seconds before the next try of a submission, or None when ``error`` is final.

    A lost reply (a dropped connection, a timeout) and 503 are retried: with the same idempotency key,
    a retry can only find the first job, never make a second. Anything else (401, 409, 422 …) is final."""
    if isinstance(error, BQASError):
        if error.status != 503:
            return None
        return min(error.retry_after if error.retry_after is not None else 2.0**attempt, MAX_RETRY_WAIT_S)
    if isinstance(error, httpx.TransportError):
        return min(0.5 * 2.0**attempt, MAX_RETRY_WAIT_S)
    return None


def _submit_headers(headers: dict[str, str], idempotency_key: str | None) -> dict[str, str]:
    return {**headers, "Idempotency-Key": idempotency_key or str(uuid.uuid4())}


class BQASClient:
    """Synchronous client."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        http: httpx.Client | None = None,
        submit_retries: int = SUBMIT_RETRIES,
    ):
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self._headers = _headers(api_key)
        self.submit_retries = submit_retries

    def __enter__(self) -> BQASClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return _check(self._http.post(path, json=body, headers=self._headers))

    def _submit(self, path: str, body: dict[str, Any], idempotency_key: str | None) -> str:
        headers = _submit_headers(self._headers, idempotency_key)
        attempt = 0
        while True:
            try:
                return str(_check(self._http.post(path, json=body, headers=headers))["job_id"])
            except (BQASError, httpx.TransportError) as exc:
                wait = _retry_wait(exc, attempt)
                if wait is None or attempt >= self.submit_retries:
                    raise
            time.sleep(wait)
            attempt += 1

    def score(
        self,
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Score now (``POST /api/score``); options: question, answer, contexts, reference, language,
        judge_language, response_id, backend. Returns one result record per judge/metric."""
        result: list[dict[str, Any]] = self._post("/api/score", _body(judges, metrics, sample, options))
        return result

    def score_async(
        self,
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> str:
        """Queue one sample (``POST /api/score/async``); returns the job id. ``idempotency_key``: the
        submission's key (default: a new UUID; give your own to make retries across processes safe)."""
        return self._submit("/api/score/async", _body(judges, metrics, sample, options), idempotency_key)

    def score_session_async(
        self,
        turns: Sequence[Mapping[str, Any]],
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> str:
        """Queue a session (``POST /api/score/session_async``); returns the job id (``idempotency_key`` as
        for :meth:`score_async`)."""
        body = _body(judges, metrics, sample, options)
        body["turns"] = [dict(t) for t in turns]
        return self._submit("/api/score/session_async", body, idempotency_key)

    def job(self, job_id: str) -> Job:
        """The job's state (``GET /api/jobs/{id}``)."""
        return Job.from_json(_check(self._http.get(f"/api/jobs/{job_id}", headers=self._headers)))

    def wait_for_job(self, job_id: str, *, timeout: float = 300.0, poll: float = 0.5) -> Job:
        """Poll until the job is done or failed; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job.finished:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.status} after {timeout:g} s")
            time.sleep(poll)


class AsyncBQASClient:
    """Asynchronous client (same methods, awaitable)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 60.0,
        http: httpx.AsyncClient | None = None,
        submit_retries: int = SUBMIT_RETRIES,
    ):
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._headers = _headers(api_key)
        self.submit_retries = submit_retries

    async def __aenter__(self) -> AsyncBQASClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        return _check(await self._http.post(path, json=body, headers=self._headers))

    async def _submit(self, path: str, body: dict[str, Any], idempotency_key: str | None) -> str:
        headers = _submit_headers(self._headers, idempotency_key)
        attempt = 0
        while True:
            try:
                return str(_check(await self._http.post(path, json=body, headers=headers))["job_id"])
            except (BQASError, httpx.TransportError) as exc:
                wait = _retry_wait(exc, attempt)
                if wait is None or attempt >= self.submit_retries:
                    raise
            await asyncio.sleep(wait)
            attempt += 1

    async def score(
        self,
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Score now; see :meth:`BQASClient.score`."""
        result: list[dict[str, Any]] = await self._post("/api/score", _body(judges, metrics, sample, options))
        return result

    async def score_async(
        self,
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> str:
        """Queue one sample; returns the job id (see :meth:`BQASClient.score_async`)."""
        return await self._submit("/api/score/async", _body(judges, metrics, sample, options), idempotency_key)

    async def score_session_async(
        self,
        turns: Sequence[Mapping[str, Any]],
        *,
        judges: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        sample: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        **options: Any,
    ) -> str:
        """Queue a session; returns the job id (see :meth:`BQASClient.score_async`)."""
        body = _body(judges, metrics, sample, options)
        body["turns"] = [dict(t) for t in turns]
        return await self._submit("/api/score/session_async", body, idempotency_key)

    async def job(self, job_id: str) -> Job:
        """The job's state."""
        return Job.from_json(_check(await self._http.get(f"/api/jobs/{job_id}", headers=self._headers)))

    async def wait_for_job(self, job_id: str, *, timeout: float = 300.0, poll: float = 0.5) -> Job:
        """Poll until the job is done or failed; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = await self.job(job_id)
            if job.finished:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.status} after {timeout:g} s")
            await asyncio.sleep(poll)
