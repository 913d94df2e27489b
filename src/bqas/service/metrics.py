"""Prometheus metrics of one app instance (its own registry, so several apps in one process never mix).

``/metrics`` shows requests by route and status, request latency, judgments by judge and verdict, LLM
calls and LLM errors, and jobs by final status; and, read from the database at each scrape (so every
replica reports the same figures, also about worker processes that serve no HTTP), the job queue:
queued and running jobs and turns, the age of the oldest queued job, jobs whose lease ran out, and lease
recoveries (:class:`QueueCollector`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from bqas.service.asgi import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_TYPE_LATEST", "MetricsMiddleware", "QueueCollector", "ServiceMetrics"]

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServiceMetrics:
    """The counters and histograms of one app."""

    def __init__(self) -> None:
        # No ``*_created`` series: they double the output and scrapers do not need them (a process-wide
        # switch of prometheus_client; BQAS is its only user in the process).
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "bqas_http_requests",
            "HTTP requests by route and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "bqas_http_request_duration_seconds",
            "HTTP request latency by route.",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.judgments = Counter(
            "bqas_judgments", "Judgments by judge and verdict.", ["judge", "verdict"], registry=self.registry
        )
        self.llm_calls = Counter("bqas_llm_calls", "LLM calls made by judgments.", registry=self.registry)
        self.llm_errors = Counter(
            "bqas_llm_errors", "Judgments whose LLM could not be reached or answered.", registry=self.registry
        )
        # Backpressure (bqas.service.backpressure): synchronous scoring requests in progress, and the limit
        # beyond which they are answered 503.
        self.in_flight = Gauge(
            "bqas_in_flight_requests",
            "Synchronous scoring requests in progress in this process.",
            registry=self.registry,
        )
        self.in_flight_limit = Gauge(
            "bqas_in_flight_limit",
            "Synchronous scoring requests this process takes at once (BQAS_MAX_IN_FLIGHT); more get 503.",
            registry=self.registry,
        )
        self.jobs = Counter("bqas_jobs", "Jobs finished, by status.", ["status"], registry=self.registry)
        # A judgment's time split (bqas.judgment.timing): its own work, and its wait for a free offline
        # worker or LLM connection slot. Not the job queue's gauges below: this wait is inside a judgment.
        self.service_time = Histogram(
            "bqas_judgment_service_seconds",
            "A judgment's own work (offline tier in its worker, LLM requests, scoring), by judge.",
            ["judge"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "bqas_judgment_queue_wait_seconds",
            "Time a judgment waited for a free offline worker or LLM connection slot, by judge.",
            ["judge"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        # Trust or escalate: who decided (coverage per tier and language) and the guaranteed bounds.
        self.decisions = Counter(
            "bqas_trust_decisions",
            "Judgments under a calibration profile, by judge, language, deciding tier and decision.",
            ["judge", "language", "decided_by", "decision"],
            registry=self.registry,
        )
        self.bounds = Gauge(
            "bqas_trust_guaranteed_max",
            "Guaranteed error bound of a profile's tier (FNR of auto-accept, FPR of auto-reject), held with "
            "probability >= 1 - delta; only for sides that certify something.",
            ["profile", "judge", "tier", "target"],
            registry=self.registry,
        )
        # The LLM judge's known-answer check at start-up (bqas.service.judge_check): 1 fit, 0 unfit.
        self.judge_fit = Gauge(
            "bqas_judge_check_fit",
            "Whether the LLM judge passed its known-answer check (1) or came out unfit (0), by judge and language.",
            ["judge", "language"],
            registry=self.registry,
        )
        self.precision = Gauge(
            "bqas_trust_guaranteed_precision_min",
            "Guaranteed share of a profile tier's auto-accepts / auto-rejects that people agree with, held "
            "with probability >= 1 - delta; only for sides that certify something under a precision target.",
            ["profile", "judge", "tier", "side"],
            registry=self.registry,
        )

    def observe_records(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Count judgments, LLM calls and LLM errors of result records."""
        for record in records:
            verdict = record.get("verdict") or record.get("status") or "none"
            name = record.get("judge") or record.get("metric")  # RAGAS records name a metric
            self.judgments.labels(str(name), str(verdict)).inc()
            calls = record.get("llm_calls") or 0
            if isinstance(calls, int) and calls > 0:
                self.llm_calls.inc(calls)
            if any(str(e).startswith("llm:") for e in record.get("errors") or ()):
                self.llm_errors.inc()
            service, queue = record.get("service_ms"), record.get("queue_ms")
            if isinstance(service, int | float) and isinstance(queue, int | float):
                self.service_time.labels(str(name)).observe(float(service) / 1000)
                self.queue_wait.labels(str(name)).observe(float(queue) / 1000)
            if record.get("decided_by"):
                self.decisions.labels(
                    str(name), str(record.get("language")), str(record["decided_by"]), str(record.get("decision"))
                ).inc()

    def observe_profiles(self, profiles: Iterable[Any]) -> None:
        """Publish the guaranteed bounds of calibration profiles in use."""
        for p in profiles:
            for t in p.tiers:
                if t.accept_threshold is not None:
                    self.bounds.labels(p.id, p.judge, t.tier, "fnr").set(t.fnr_max)
                if t.reject_threshold is not None:
                    self.bounds.labels(p.id, p.judge, t.tier, "fpr").set(t.fpr_max)
                for side, threshold in (("accept", t.accept_threshold), ("reject", t.reject_threshold)):
                    target = getattr(t, f"precision_{side}_min", None)
                    if threshold is not None and target is not None:
                        self.precision.labels(p.id, p.judge, t.tier, side).set(target)

    def track_queue(self, store: Any, deadline: float = 2.0) -> None:
        """Report the job queue of ``store`` (a :class:`bqas.store.db.Store`) at every scrape; a database
        that does not answer within ``deadline`` seconds is reported as ``bqas_queue_up 0``."""
        self.registry.register(QueueCollector(store, deadline))

    def render(self) -> bytes:
        """The text exposition; reads the database when the queue is tracked (call it off the event loop)."""
        return generate_latest(self.registry)


QUEUE_STATES = ("queued", "running")
JOB_KINDS = ("score", "session")


class QueueCollector(Collector):
    """The job queue as Prometheus series, read from the database at each scrape.

    Labels are the job's state and kind only (never the tenant: bounded series, nothing about who
    submits). Every series is present, zeros included, so that an autoscaler's query never comes back
    empty. While the database cannot be read, the queue series are left out and
    ``bqas_queue_up`` is 0: at once while the store is known to be down, else after ``deadline`` seconds
    without an answer (a scrape must not hang on a frozen database)."""

    def __init__(self, store: Any, deadline: float = 2.0):
        from bqas.service.deadline import DeadlineCall

        self.store = store
        self.read = DeadlineCall("queue-metrics", deadline)

    def describe(self) -> list[Any]:  # no query at registration
        return []

    def collect(self) -> Iterable[Any]:
        from bqas.store.service import queue_state

        up = GaugeMetricFamily("bqas_queue_up", "1 when the job queue could be read from the database at this scrape.")
        try:
            if getattr(self.store, "down", False):
                raise ConnectionError("the store is down")
            state = self.read(lambda: queue_state(self.store))
        except Exception:  # an outage of the database: say so, and keep the other metrics
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        jobs = GaugeMetricFamily(
            "bqas_queue_jobs",
            "Jobs waiting (queued) or being scored (running), by kind; the same on every replica (read from the database).",
            labels=["state", "kind"],
        )
        items = GaugeMetricFamily(
            "bqas_queue_items",
            "Turns not yet scored of queued and running jobs (one per single-sample job), by kind.",
            labels=["state", "kind"],
        )
        for status in QUEUE_STATES:
            for kind in JOB_KINDS:
                jobs.add_metric([status, kind], state.jobs.get((status, kind), 0))
                items.add_metric([status, kind], state.items.get((status, kind), 0))
        yield jobs
        yield items
        yield GaugeMetricFamily(
            "bqas_queue_oldest_queued_age_seconds",
            "Seconds since the oldest queued job was submitted (0 when none waits).",
            value=round(state.oldest_queued_age, 3),
        )
        yield GaugeMetricFamily(
            "bqas_queue_lease_expired_jobs",
            "Running jobs whose lease ran out (their worker died or stalled), waiting to be claimed again.",
            value=state.lease_expired,
        )
        yield CounterMetricFamily(
            "bqas_job_lease_recoveries",
            "Jobs claimed again after their lease ran out, by any worker, since the database was created.",
            value=state.lease_recoveries,
        )


def route_template(scope: Scope) -> str:
    """The route path of a finished request; ``unmatched`` only when no route of the app matches.

    FastAPI's own routes put themselves into the scope; plain Starlette routes (``/openapi.json``,
    ``/docs``) and mounts (the docs assets) do not, so those are matched here, after the fact."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        return str(path)
    from starlette.routing import Match

    app = scope.get("app")
    for candidate in getattr(app, "routes", ()):
        match, _ = candidate.matches(scope)
        if match == Match.FULL:
            return str(getattr(candidate, "path", "") or "unmatched")
    return "unmatched"


class MetricsMiddleware:
    """Counts every HTTP request by route template (not the raw path, so job ids do not explode labels)."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            template = route_template(scope)
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method, template, str(status)).inc()
            self.metrics.latency.labels(method, template).observe(time.perf_counter() - started)
