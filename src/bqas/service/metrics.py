"""Prometheus metrics of one app instance (its own registry, so several apps in one process never mix).

``/metrics`` shows requests by route and status, request latency, judgments by judge and verdict, LLM
calls and LLM errors, and jobs by final status.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bqas.service.asgi import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_TYPE_LATEST", "MetricsMiddleware", "ServiceMetrics"]

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
        self.jobs = Counter("bqas_jobs", "Jobs finished, by status.", ["status"], registry=self.registry)
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

    def render(self) -> bytes:
        return generate_latest(self.registry)


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
