"""The FastAPI application of ``bqas serve``: score endpoints, job status, health and metrics.

Build it with :func:`create_app`; every instance has its own store handle, scorer, metrics registry,
rate limiter and (unless ``run_worker=False``) an in-process job worker started with the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

import orjson
from fastapi import Depends, FastAPI, Header, HTTPException, Request, Security
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline

from bqas import __version__
from bqas.auth.keys import Authenticator
from bqas.auth.throttle import FailureThrottle
from bqas.judging.workers import offline_workers, run_cpu
from bqas.judgment.spec import default_registry
from bqas.review.memory import embedder as memory_embedder
from bqas.review.settings import get_review_settings
from bqas.review.web import review_router
from bqas.service.backpressure import InFlightLimit, default_max_in_flight
from bqas.service.config import ServiceSettings
from bqas.service.deadline import DeadlineCall, NoAnswer
from bqas.service.errors import install_error_handlers
from bqas.service.jobs import status_view, submit, submit_once
from bqas.service.judge_check import JudgeCheckState, check_service_judges
from bqas.service.key_check import STATE_KEY as KEY_CHECK_STATE
from bqas.service.key_check import KeyCheckHeader, stale_value
from bqas.service.limits import BodySizeLimit, RateLimiter, retry_after_header
from bqas.service.metrics import CONTENT_TYPE_LATEST, MetricsMiddleware, ServiceMetrics
from bqas.service.models import (
    Health,
    JobAccepted,
    JobStatus,
    MetricRecord,
    ResultRecord,
    ScoreRequest,
    SessionScoreRequest,
    check_judge_language,
)
from bqas.service.review_feed import ReviewFeed
from bqas.service.scoring import LLMUnavailable, RequestProblem, ScoreCall, Scorer, bind_tenant
from bqas.service.worker import JobWorker
from bqas.settings import Settings, get_settings
from bqas.store.db import Store, open_store
from bqas.store.service import IdempotencyConflict, get_job, ping
from bqas.viewer.web import viewer_router

DOCS_STATIC = "/docs/static"
log = logging.getLogger("uvicorn.error")  # shown by uvicorn at the default log level

AUTH_HELP = "Send your API key as `Authorization: Bearer <key>` (or in the `X-API-Key` header)."


class FastJSON(JSONResponse):
    """JSON via orjson (the score endpoint answers many small records per second)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


@dataclass
class ServiceState:
    settings: Settings
    service: ServiceSettings
    store: Store
    scorer: Scorer
    auth: Authenticator
    limiter: RateLimiter
    metrics: ServiceMetrics
    worker: JobWorker | None
    default_judge_language: str
    review: bool = True
    feed: ReviewFeed | None = None
    # "loading" until the offline models are loaded at start-up, then "ready" (or "error: …").
    models: str = "loading"
    # The LLM judge's known-answer check after the models are loaded (reported on /readyz).
    judge_check: JudgeCheckState = field(default_factory=JudgeCheckState)


bearer_scheme = HTTPBearer(auto_error=False, description=AUTH_HELP, scheme_name="bearerAuth")
api_key_scheme = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="The API key (alternative to Bearer).", scheme_name="apiKeyAuth"
)


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.bqas
    return state


async def tenant_of(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
    api_key: Annotated[str | None, Security(api_key_scheme)],
) -> str:
    """The caller's tenant from its API key (401 without a valid key); also applies the rate limit (429)."""
    state = _state(request)
    key = bearer.credentials if bearer is not None else api_key
    tenant: str | None = None
    if key:
        client = request.client.host if request.client is not None else "unknown"
        wait = state.auth.throttle.wait(client)
        if wait is not None:  # this client sent too many wrong keys: back off before any lookup
            raise HTTPException(
                status_code=429,
                detail="too many requests with invalid API keys from this client; retry later",
                headers={"Retry-After": retry_after_header(wait)},
            )
        hit, tenant = state.auth.cached(key)
        if not hit:
            tenant, stale_age = await run_in_threadpool(state.auth.check, key)
            if stale_age is not None:  # verified earlier; the store cannot be asked now
                setattr(request.state, KEY_CHECK_STATE, stale_value(stale_age))
        if tenant is None:
            state.auth.throttle.failed(client)
    if tenant is None:
        raise HTTPException(
            status_code=401,
            detail="missing or invalid API key: " + AUTH_HELP,
            headers={"WWW-Authenticate": "Bearer"},
        )
    wait = state.limiter.acquire(tenant)
    if wait is not None:
        raise HTTPException(
            status_code=429,
            detail=f"rate limit of {state.service.rate_limit:g} requests/s for tenant exceeded; retry later",
            headers={"Retry-After": retry_after_header(wait)},
        )
    return tenant


Tenant = Annotated[str, Depends(tenant_of)]

IDEMPOTENCY_HELP = (
    "Optional: any text of 1-255 visible ASCII characters (a UUID) that names this submission. A retry "
    "with the same key (after a timeout or a lost reply) gets the job the first submission created, not a "
    "second job, for BQAS_IDEMPOTENCY_RETENTION_SECONDS (24 h); the same key with a different body is 409."
)
IdempotencyKeyHeader = Annotated[
    str | None, Header(alias="Idempotency-Key", description=IDEMPOTENCY_HELP, max_length=255)
]


def _idempotency_problem(key: str) -> JSONResponse | None:
    if key and all(0x21 <= ord(c) <= 0x7E for c in key):
        return None
    detail = [
        {
            "loc": ["header", "Idempotency-Key"],
            "msg": "expected 1-255 visible ASCII characters (letters, digits, punctuation; no spaces)",
            "type": "value_error",
        }
    ]
    return JSONResponse(status_code=422, content={"detail": detail})


def _problem(exc: RequestProblem) -> JSONResponse:
    return JSONResponse(
        status_code=422, content={"detail": [{"loc": list(exc.loc), "msg": exc.message, "type": "value_error"}]}
    )


def _resolve(state: ServiceState, body: ScoreRequest) -> tuple[str, str]:
    """(backend, judge_language) with the server's defaults filled in."""
    return body.backend or state.service.service_backend, body.judge_language or state.default_judge_language


def warm_up_memory() -> None:
    """Load the review memory's embedding model once at start-up."""
    memory_embedder().embed(["warm up"])


def create_app(
    *,
    settings: Settings | None = None,
    service: ServiceSettings | None = None,
    store: Store | None = None,
    run_worker: bool = True,
    public_url: str | None = None,
) -> FastAPI:
    """A new app instance (the store is opened and migrated here; the worker starts with the app)."""
    settings = settings or get_settings()
    service = service or ServiceSettings()
    from bqas.privacy import enable_redaction, install

    # The PII masker of the store's columns, the LLM cache and the logs (bqas.redaction), used when
    # BQAS_REDACT_PII or redact_pii is on.
    install()
    store = store or open_store(settings.resolved_database_url())
    default_jl = check_judge_language(settings.ragas_judge_language)
    if default_jl is None:  # pragma: no cover - the setting has a default
        default_jl = "en"
    if service.redact_pii:
        enable_redaction(True)  # process-wide: the store, the LLM cache and the logs mask PII
    metrics = ServiceMetrics()
    metrics.track_queue(store, deadline=service.health_timeout)
    scorer = Scorer(settings, service, metrics)
    review = get_review_settings().review
    worker = None
    if run_worker:
        # A pool of its own: requests that hold every API connection (or a frozen database that holds
        # them) must not make the worker's lease renewals and writes wait, nor the other way round.
        worker_store = store.own_pool(service.worker_concurrency + 2)
        worker = JobWorker(worker_store, scorer, service, metrics=metrics, review=review)
    readiness = DeadlineCall("readiness", service.health_timeout)
    state = ServiceState(
        settings=settings,
        service=service,
        store=store,
        scorer=scorer,
        auth=Authenticator(
            store,
            service.api_keys_file,
            ttl=service.api_key_cache_seconds,
            throttle=FailureThrottle(free=service.auth_failures_free, base=service.auth_backoff_seconds),
            stale_limit=service.api_key_stale_seconds,
        ),
        limiter=RateLimiter(service.rate_limit, service.rate_burst),
        metrics=metrics,
        worker=worker,
        default_judge_language=default_jl,
        review=review,
    )

    async def load_models() -> None:
        """Load the offline judge's models in the worker pool while the server already answers."""
        started = time.perf_counter()
        try:
            # The judge specs (YAML) are read in the pool: on the event loop that read held back the first
            # answers of a server that had just started listening.
            await run_cpu(default_registry)
            engine = scorer.engine(service.service_backend)
            # A server expects sustained load: in BQAS_OFFLINE_POOL=auto the offline tier gets its worker
            # processes now (each loads the models), so that judging keeps the event loop's GIL free.
            await engine.dispatch.prepare(expect_load=True)
            if review:
                await run_in_threadpool(warm_up_memory)  # the memory's backend (the same model by default)
        except Exception as exc:  # requests still load lazily; /healthz says what went wrong
            state.models = f"error: {type(exc).__name__}: {exc}"[:300]
            log.error("bqas serve: loading the models failed: %s", exc)
            return
        # Long-lived objects (judges, lexicons, the embedding model) go to the permanent generation, so
        # the collector's full passes stay short and do not show up as latency spikes.
        gc.collect()
        gc.freeze()
        state.models = "ready"
        log.info("bqas serve: models ready in %.1f s (/healthz says models: ready)", time.perf_counter() - started)
        await check_service_judges(settings, service.service_backend, state.judge_check, metrics)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop)) if worker is not None else None
        if review:
            state.feed = ReviewFeed(store)
            state.feed.start()
        # In the background: the server is healthy at once and says on /healthz when the models are loaded
        # (a request that comes earlier waits for the load instead of loading a second copy).
        log.info("bqas serve: loading the models in the background")
        loader = asyncio.create_task(load_models())
        try:
            yield
        finally:
            loader.cancel()
            stop.set()
            if worker is not None:
                worker.wake()
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            if worker is not None and worker.store is not store:
                worker.store.engine.dispose()
            if state.feed is not None:
                await state.feed.close()
            await scorer.aclose()
            from bqas.judging.dispatch import shutdown_pools

            shutdown_pools()  # the offline tier's worker processes end with the server

    url = public_url or service.public_url
    # Swagger UI (/docs) and ReDoc (/redoc) with their assets served from the fastapi-offline package
    # under /docs/static: the pages work without internet and load nothing from a CDN.
    app = FastAPIOffline(
        static_url=DOCS_STATIC,
        title="BQAS scoring service",
        version=__version__,
        description=("Score assistant answers with BQAS judges (and RAGAS metrics where installed). " + AUTH_HELP),
        servers=[{"url": url, "description": "BQAS"}] if url else None,
        lifespan=lifespan,
    )
    app.state.bqas = state
    install_error_handlers(app, db_retry_after=service.db_retry_after)
    if state.review:
        app.include_router(review_router(state.store, state.auth))
        app.include_router(viewer_router(state.store, state.auth))

    @app.post(
        "/api/score",
        operation_id="score",
        summary="Score one sample now",
        description="Judges the sample with every judge in `judges` and every RAGAS metric in `metrics` and "
        "returns one result record per judge/metric. 503 with Retry-After when the LLM is unreachable.",
        response_model=list[ResultRecord | MetricRecord],
        responses={
            401: {"description": "no valid API key"},
            429: {"description": "rate limit"},
            503: {"description": "LLM unreachable"},
        },
    )
    async def score(body: ScoreRequest, tenant: Tenant) -> Response:
        backend, judge_language = _resolve(state, body)
        call = ScoreCall(
            fields=body.fields(),
            judges=body.judges,
            metrics=body.metrics,
            language=body.language,
            judge_language=judge_language,
            response_id=body.response_id or f"req-{secrets.token_hex(6)}",
            backend=backend,
        )
        try:
            state.scorer.check(call.fields, call.judges, call.metrics, backend)
            bind_tenant(state.store, tenant)  # whose reviewed cases and cache entries
            records = await state.scorer.score(call)
        except RequestProblem as exc:
            return _problem(exc)
        except LLMUnavailable as exc:
            retry = str(state.service.llm_retry_after)
            return JSONResponse(
                status_code=503,
                content={"detail": f"{exc.reason}; retry later", "results": exc.records},
                headers={"Retry-After": retry},
            )
        if state.feed is not None:
            state.feed.put(tenant, records, call.fields)  # reviewed in the background, off the request path
        return FastJSON(records)

    async def _submit(body: ScoreRequest, tenant: str, idempotency_key: str | None) -> Response:
        backend, judge_language = _resolve(state, body)
        if idempotency_key is not None and (problem := _idempotency_problem(idempotency_key)) is not None:
            return problem
        try:
            if isinstance(body, SessionScoreRequest):
                if len(body.turns) > state.service.max_turns:
                    raise RequestProblem(
                        ("body", "turns"),
                        f"{len(body.turns)} turns; at most {state.service.max_turns} (setting BQAS_MAX_TURNS)",
                    )
                for i, turn in enumerate(body.turns):
                    state.scorer.check(body.turn_fields(turn), body.judges, body.metrics, backend, ("body", "turns", i))
            else:
                state.scorer.check(body.fields(), body.judges, body.metrics, backend)
        except RequestProblem as exc:
            return _problem(exc)
        if idempotency_key is None:
            job_id = await run_in_threadpool(
                submit,
                state.store,
                tenant,
                body,
                backend=backend,
                judge_language=judge_language,
                language=body.language,
            )
            created = True
        else:
            try:
                job_id, created = await run_in_threadpool(
                    submit_once,
                    state.store,
                    tenant,
                    body,
                    key=idempotency_key,
                    retention_seconds=state.service.idempotency_retention_seconds,
                    backend=backend,
                    judge_language=judge_language,
                    language=body.language,
                )
            except IdempotencyConflict as exc:
                return JSONResponse(
                    status_code=409,
                    content={
                        "detail": f"{exc}; use a new key for a new request",
                        "error": "idempotency_key_reused",
                        "job_id": exc.job_id,
                    },
                )
        if not created:  # a retry: the first submission's job, as it stands now
            job = await run_in_threadpool(get_job, state.store, job_id, tenant)
            status = job.status if job is not None else "queued"
            accepted = JobAccepted(job_id=job_id, status=status, status_url=f"/api/jobs/{job_id}")  # type: ignore[arg-type]
            return JSONResponse(status_code=202, content=accepted.model_dump(), headers={"Idempotent-Replayed": "true"})
        if state.worker is not None:
            state.worker.wake()
        accepted = JobAccepted(job_id=job_id, status="queued", status_url=f"/api/jobs/{job_id}")
        return JSONResponse(status_code=202, content=accepted.model_dump())

    @app.post(
        "/api/score/async",
        operation_id="score_async",
        summary="Queue one sample for scoring",
        description="Same body as /api/score; answers 202 with a job id. Poll GET /api/jobs/{job_id}. "
        "Send an Idempotency-Key header so that a retry cannot create a second job.",
        status_code=202,
        response_model=JobAccepted,
        responses={409: {"description": "the Idempotency-Key was used for a different request"}},
    )
    async def score_async(body: ScoreRequest, tenant: Tenant, idempotency_key: IdempotencyKeyHeader = None) -> Response:
        return await _submit(body, tenant, idempotency_key)

    @app.post(
        "/api/score/session_async",
        operation_id="score_session_async",
        summary="Queue a conversation for scoring",
        description="Scores every turn with the same judges/metrics; the finished job has per-turn results "
        "and an aggregate (mean composite, worst verdict, escalation count). Answers 202 with a job id. "
        "Send an Idempotency-Key header so that a retry cannot create a second job.",
        status_code=202,
        response_model=JobAccepted,
        responses={409: {"description": "the Idempotency-Key was used for a different request"}},
    )
    async def score_session_async(
        body: SessionScoreRequest, tenant: Tenant, idempotency_key: IdempotencyKeyHeader = None
    ) -> Response:
        return await _submit(body, tenant, idempotency_key)

    @app.get(
        "/api/jobs/{job_id}",
        operation_id="get_job",
        summary="Status and results of a job",
        description="queued, running, done (with results) or failed (with the reason). Only the tenant "
        "that submitted a job can see it; other ids answer 404.",
        response_model=JobStatus,
        responses={404: {"description": "no such job for this tenant"}},
    )
    async def job_status(job_id: str, tenant: Tenant) -> Response:
        job = await run_in_threadpool(get_job, state.store, job_id, tenant)
        if job is None:
            raise HTTPException(status_code=404, detail=f"no job {job_id!r}")
        return FastJSON(await run_in_threadpool(status_view, state.store, job))

    async def database_state() -> str:
        """ "ok", or why not; within BQAS_HEALTH_TIMEOUT even while the database does not answer."""
        if state.store.down:  # found unreachable moments ago: no need to wait for it again
            return "unreachable: StoreDown"
        try:
            await run_in_threadpool(readiness, lambda: ping(state.store))
        except NoAnswer:
            return f"unreachable: no answer within {service.health_timeout:g} s"
        except Exception as exc:
            return f"unreachable: {type(exc).__name__}"
        return "ok"

    @app.get("/healthz", operation_id="healthz", include_in_schema=False)
    async def healthz() -> Response:
        database = await database_state()
        ok = database == "ok"
        health = Health(status="ok" if ok else "error", database=database, version=__version__, models=state.models)
        return JSONResponse(status_code=200 if ok else 503, content=health.model_dump())

    @app.get("/livez", operation_id="livez", include_in_schema=False)
    async def livez() -> Response:
        """Liveness: the process answers. Never asks the database, so an outage of the database does not
        make an orchestrator restart every replica (which would not bring the database back)."""
        return JSONResponse({"status": "alive", "version": __version__})

    @app.get("/readyz", operation_id="readyz", include_in_schema=False)
    async def readyz() -> Response:
        """Readiness: the database answers and the models are loaded; 503 (with Retry-After) otherwise,
        so that a load balancer sends requests elsewhere until both hold."""
        database = await database_state()
        ready = database == "ok" and state.models == "ready"
        health = Health(
            status="ready" if ready else "not ready",
            database=database,
            version=__version__,
            models=state.models,
            judge_check=state.judge_check.detail(),
        )
        if ready:
            return JSONResponse(health.model_dump())
        return JSONResponse(
            status_code=503, content=health.model_dump(), headers={"Retry-After": str(service.db_retry_after)}
        )

    @app.get("/metrics", operation_id="metrics", include_in_schema=False)
    async def prometheus_metrics() -> Response:
        # In the thread pool: the queue's series are read from the database at each scrape.
        return Response(await run_in_threadpool(state.metrics.render), media_type=CONTENT_TYPE_LATEST)

    # The last added is the outermost: metrics see every answer, 413 and 503 included; the body limit acts
    # before anything reads the body; a request refused for its size never counts as in progress.
    llm_configured = settings.llm_base_url is not None or settings.llm_gguf is not None
    max_in_flight = service.max_in_flight or default_max_in_flight(
        offline_workers(), settings.llm_concurrency if llm_configured else 0
    )
    metrics.in_flight_limit.set(max_in_flight)
    app.add_middleware(InFlightLimit, max_in_flight=max_in_flight, gauge=metrics.in_flight)
    app.add_middleware(KeyCheckHeader)
    app.add_middleware(BodySizeLimit, max_bytes=service.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
