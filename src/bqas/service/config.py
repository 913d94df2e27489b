"""Settings of the scoring service (environment ``BQAS_*``; the CLI flags of ``bqas serve`` win)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

JUDGE_LANGUAGES: tuple[str, ...] = ("en", "zh")


class ServiceSettings(BaseSettings):
    """Limits, job and tenant settings of ``bqas serve`` / ``bqas worker``."""

    model_config = SettingsConfigDict(env_prefix="BQAS_", extra="ignore")

    # Backend used when a request names none.
    service_backend: Literal["offline", "llm", "auto"] = "auto"
    # Public URL written into the OpenAPI ``servers`` (Dify needs one); None: the listening address.
    public_url: str | None = None
    # Limits.
    max_body_bytes: int = Field(default=1_000_000, ge=1)
    # The request line and headers together; a larger head is answered 431 (bqas.service.server).
    max_header_bytes: int = Field(default=32 * 1024, ge=1024)
    # Addresses (or networks; "*" for any) whose X-Forwarded-For/-Proto are believed: the reverse proxy's.
    # Empty: none, and the failed-key back-off is keyed on the connecting peer's address.
    forwarded_allow_ips: str = ""
    max_turns: int = Field(default=50, ge=1)
    # Token bucket per tenant and per process: ``rate_limit`` requests per second, bursts of ``rate_burst``.
    # 0 switches the limit off.
    rate_limit: float = Field(default=50.0, ge=0)
    rate_burst: int = Field(default=100, ge=1)
    # Backpressure (bqas.service.backpressure): synchronous scoring requests in progress per process; one
    # more is answered 503 with Retry-After. None: 4 per offline worker (at least 8), plus twice
    # BQAS_LLM_CONCURRENCY when an LLM is configured (bqas.service.backpressure.default_max_in_flight).
    max_in_flight: int | None = Field(default=None, ge=1)
    # Seconds a client is told to wait (Retry-After) when the LLM cannot be reached.
    llm_retry_after: int = Field(default=30, ge=1)
    # Seconds a client is told to wait (Retry-After, with 503) while the database cannot be reached.
    db_retry_after: int = Field(default=5, ge=1)
    # The longest /readyz, /healthz and the queue series of /metrics wait for the database (seconds).
    health_timeout: float = Field(default=2.0, gt=0)
    # Jobs.
    job_retries: int = Field(default=3, ge=0)  # extra attempts of a turn whose LLM was unavailable
    job_retry_delay: float = Field(default=2.0, ge=0)  # seconds before the first retry; doubles each time
    job_lease_seconds: float = Field(default=30.0, gt=0)
    job_poll_seconds: float = Field(default=0.5, gt=0)
    # How long an Idempotency-Key of an async submission binds its first job (a retry within it gets that
    # job; after it, the key starts a new one).
    idempotency_retention_seconds: float = Field(default=86_400.0, gt=0)
    worker_concurrency: int = Field(default=4, ge=1)  # jobs processed at once per process
    turn_concurrency: int = Field(default=4, ge=1)  # turns of one job scored at once
    # An API key's lookup is cached this many seconds (a revoked key may work that long); while the store
    # is unavailable, a key verified within the last ``api_key_stale_seconds`` keeps working (responses
    # then carry ``X-BQAS-Key-Check: stale; age=<s>``).
    api_key_cache_seconds: float = Field(default=30.0, ge=0)
    api_key_stale_seconds: float = Field(default=900.0, ge=0)
    # Tenants: keys in the store (``bqas keys create``) and, optionally, a YAML file {tenant: [key, ...]}.
    api_keys_file: Path | None = None
    # Trust or escalate: calibration profiles per tenant, <profiles_dir>/<tenant>/*.yaml|*.yml|*.json
    # (one per judge, from `bqas calibrate fit`); results then carry decision / decided_by / profile_id.
    profiles_dir: Path | None = None
    # Back-off per client address after failed API keys or review logins: ``auth_failures_free`` failures
    # are free, then the client waits ``auth_backoff_seconds``, doubling per failure (0 switches it off).
    auth_failures_free: int = Field(default=5, ge=0)
    auth_backoff_seconds: float = Field(default=1.0, ge=0)
    # Mask PII (bqas.offline.pii) in everything the service stores.
    redact_pii: bool = False
