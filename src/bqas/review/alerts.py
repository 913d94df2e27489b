"""Repeated-failure alerts: N ``failed`` verdicts of a judge within a window → one webhook POST and a log line.

Rules come from ``BQAS_ALERTS_FILE`` (YAML) with the settings as defaults::

    defaults: {threshold: 5, window: 600, webhook: "https://hooks.example/bqas"}
    tenants:
      acme:
        webhook: "https://hooks.example/acme"      # tenant-wide
        judges:
          voice: {threshold: 3, window: 300}       # per judge
          rag_privacy: {enabled: false}

At most one alert per (tenant, judge) per window, enforced in the store: a row per (tenant, judge) holds
the time of the last alert, and only the process whose conditional UPDATE moves it forward sends. The
webhook is posted from a background thread with retries and backoff; a failure is logged and stored in
``review_alerts``, never raised into scoring.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml
from sqlalchemy import func, select, update

from bqas.logs import get_logger
from bqas.review.records import insert_for, iso
from bqas.review.settings import ReviewSettings
from bqas.review.tables import Alert, AlertState, Judgment
from bqas.store.db import Store

log = get_logger("bqas.review.alerts")
SAMPLE_IDS = 10


@dataclass(frozen=True)
class AlertRule:
    """When to alert for one tenant and judge, and where to."""

    threshold: int = 5
    window_s: float = 600.0
    webhook: str | None = None
    enabled: bool = True


class AlertConfigError(ValueError):
    """The alerts file is unreadable or has a bad value (the message names the file and key)."""


def _rule(base: AlertRule, raw: Any, where: str) -> AlertRule:
    if raw is None:
        return base
    if not isinstance(raw, dict):
        raise AlertConfigError(f"{where}: expected a mapping")
    rule = base
    for key, value in raw.items():
        if key == "threshold":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise AlertConfigError(f"{where}.threshold: expected a whole number >= 1, got {value!r}")
            rule = replace(rule, threshold=value)
        elif key == "window":
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise AlertConfigError(f"{where}.window: expected seconds > 0, got {value!r}")
            rule = replace(rule, window_s=float(value))
        elif key == "webhook":
            if value is not None and not (isinstance(value, str) and value.startswith(("http://", "https://"))):
                raise AlertConfigError(f"{where}.webhook: expected an http(s) URL, got {value!r}")
            rule = replace(rule, webhook=value)
        elif key == "enabled":
            rule = replace(rule, enabled=bool(value))
        elif key not in ("judges",):
            raise AlertConfigError(f"{where}.{key}: unknown key (threshold, window, webhook, enabled, judges)")
    return rule


@dataclass(frozen=True)
class AlertConfig:
    """Alert rules: defaults, per tenant, per tenant and judge."""

    defaults: AlertRule
    tenants: dict[str, Any]
    path: Path | None = None

    def rule_for(self, tenant: str, judge: str) -> AlertRule:
        """The rule of a tenant and judge (judge entry over tenant entry over defaults)."""
        where = f"{self.path or 'alerts'}: tenants.{tenant}"
        raw = self.tenants.get(tenant)
        rule = _rule(self.defaults, raw, where)
        judges = (raw or {}).get("judges") if isinstance(raw, dict) else None
        if isinstance(judges, dict) and judge in judges:
            rule = _rule(rule, judges[judge], f"{where}.judges.{judge}")
        return rule


def load_alert_config(settings: ReviewSettings) -> AlertConfig:
    """The alert rules of ``settings`` (the YAML file is re-read when it changes)."""
    base = AlertRule(settings.alert_threshold, settings.alert_window_s, settings.alert_webhook_url)
    path = settings.alerts_file
    if path is None:
        return AlertConfig(base, {})
    try:
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise AlertConfigError(f"{path}: cannot read alerts file: {exc.strerror}") from None
    key = (str(path), mtime, base)
    cached = _config_cache.get("config")
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AlertConfigError(f"{path}: cannot parse alerts file: {exc}") from None
    if not isinstance(data, dict):
        raise AlertConfigError(f"{path}: expected a mapping with 'defaults' and 'tenants'")
    unknown = set(data) - {"defaults", "tenants"}
    if unknown:
        raise AlertConfigError(f"{path}: unknown key(s) {sorted(unknown)} (expected defaults, tenants)")
    tenants = data.get("tenants") or {}
    if not isinstance(tenants, dict):
        raise AlertConfigError(f"{path}: tenants: expected a mapping of tenant to rules")
    config = AlertConfig(_rule(base, data.get("defaults"), f"{path}: defaults"), tenants, path)
    for tenant, raw in tenants.items():  # validate every entry now, not on the first failure
        judges = raw.get("judges") if isinstance(raw, dict) else None
        for judge in judges if isinstance(judges, dict) else ["*"]:
            config.rule_for(str(tenant), str(judge))
    _config_cache["config"] = (key, config)
    return config


_config_cache: dict[str, tuple[tuple[str, float, AlertRule], AlertConfig]] = {}


def _claim(store: Store, tenant: str, judge: str, now: float, window: float) -> bool:
    """Atomically take the (tenant, judge) alert slot unless an alert went out within ``window``."""
    with store.session.begin() as s:
        s.execute(
            insert_for(store)(AlertState)
            .values(tenant=tenant, judge=judge, last_alert_at=-1e12)
            .on_conflict_do_nothing(index_elements=["tenant", "judge"])
        )
        result = s.execute(
            update(AlertState)
            .where(AlertState.tenant == tenant, AlertState.judge == judge, AlertState.last_alert_at <= now - window)
            .values(last_alert_at=now)
        )
        return bool(getattr(result, "rowcount", 0))


def check_alerts(
    store: Store, tenant: str, judges: set[str], settings: ReviewSettings, *, now: float | None = None
) -> list[dict[str, Any]]:
    """Raise an alert for each judge whose failed verdicts in the window reach the threshold.

    Returns the payloads of the alerts raised now (each is logged, stored and posted in the background).
    """
    config = load_alert_config(settings)
    at = now if now is not None else time.time()
    raised: list[dict[str, Any]] = []
    for judge in sorted(judges):
        rule = config.rule_for(tenant, judge)
        if not rule.enabled:
            continue
        since = at - rule.window_s
        where = (
            Judgment.tenant == tenant,
            Judgment.judge == judge,
            Judgment.verdict == "failed",
            Judgment.at >= since,
            Judgment.at <= at,
        )
        with store.session() as s:
            count, first, last = s.execute(
                select(func.count(Judgment.id), func.min(Judgment.at), func.max(Judgment.at)).where(*where)
            ).one()
            if int(count or 0) < rule.threshold:
                continue
            ids = s.scalars(
                select(Judgment.response_id).where(*where).order_by(Judgment.at.desc()).limit(SAMPLE_IDS)
            ).all()
        if not _claim(store, tenant, judge, at, rule.window_s):
            continue
        query = urlencode({"judge": judge, "verdict": "failed", "status": "open"})
        payload = {
            "type": "bqas.repeated_failures",
            "tenant": tenant,
            "judge": judge,
            "count": int(count),
            "threshold": rule.threshold,
            "window_seconds": rule.window_s,
            "first_at": iso(first),
            "last_at": iso(last),
            "sample_ids": list(ids),
            "review_path": f"{settings.review_path.rstrip('/')}/queue?{query}",
        }
        log.warning(
            "alert: tenant=%s judge=%s %d failed verdicts in %gs (first %s, last %s); review at %s",
            tenant, judge, payload["count"], rule.window_s, payload["first_at"], payload["last_at"], payload["review_path"],
            extra={"bqas_review": {"event": "alert", **payload}},
        )  # fmt: skip
        with store.session.begin() as s:
            row = Alert(
                tenant=tenant,
                judge=judge,
                at=at,
                count=int(count),
                payload=payload,
                status="pending" if rule.webhook else "no_webhook",
                attempts=0,
            )
            s.add(row)
            s.flush()
            alert_id = int(row.id)
        payload["alert_id"] = alert_id
        if rule.webhook:
            sender().submit(store, alert_id, rule.webhook, payload, settings)
        raised.append(payload)
    return raised


class WebhookSender:
    """Posts alert payloads from background threads, with retries and exponential backoff."""

    def __init__(self, workers: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bqas-alert")
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()

    def submit(self, store: Store, alert_id: int, url: str, payload: dict[str, Any], settings: ReviewSettings) -> None:
        future = self._pool.submit(self._deliver, store, alert_id, url, payload, settings)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every submitted alert was delivered or gave up; False on timeout."""
        with self._lock:
            pending = set(self._pending)
        if not pending:
            return True
        _done, not_done = wait(pending, timeout=timeout)
        return not not_done

    @staticmethod
    def _deliver(store: Store, alert_id: int, url: str, payload: dict[str, Any], settings: ReviewSettings) -> None:
        import httpx

        attempts, error = 0, None
        for attempt in range(settings.alert_retries + 1):
            attempts = attempt + 1
            try:
                response = httpx.post(url, json=payload, timeout=settings.alert_timeout_s)
                if 200 <= response.status_code < 300:
                    error = None
                    break
                error = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
            log.warning("alert %s: webhook attempt %d failed: %s", alert_id, attempts, error)
            if attempt < settings.alert_retries:
                time.sleep(settings.alert_backoff_s * (2**attempt))
        status = "failed" if error else "sent"
        if error:
            log.error("alert %s: webhook gave up after %d attempts: %s", alert_id, attempts, error)
        try:
            with store.session.begin() as s:
                s.execute(
                    update(Alert).where(Alert.id == alert_id).values(status=status, attempts=attempts, error=error)
                )
        except Exception:  # the store may be gone at shutdown; the log line above is the record then
            log.exception("alert %s: could not store the delivery outcome", alert_id)


_sender: WebhookSender | None = None
_sender_lock = threading.Lock()


def sender() -> WebhookSender:
    """The process-wide webhook sender."""
    global _sender
    with _sender_lock:
        if _sender is None:
            _sender = WebhookSender()
        return _sender


def flush_alerts(timeout: float = 30.0) -> bool:
    """Wait for webhook deliveries in flight (call before a CLI process exits). False on timeout."""
    return sender().flush(timeout)


def recent_alerts(store: Store, tenant: str, limit: int = 20) -> list[dict[str, Any]]:
    """The tenant's latest alerts with their delivery status."""
    with store.session() as s:
        rows = s.scalars(select(Alert).where(Alert.tenant == tenant).order_by(Alert.at.desc()).limit(limit)).all()
        return [
            {
                "id": r.id,
                "judge": r.judge,
                "at": iso(r.at),
                "count": r.count,
                "status": r.status,
                "attempts": r.attempts,
            }
            for r in rows
        ]
