"""Settings of the review loop (``BQAS_*`` environment variables), kept apart from the core settings."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bqas.tenants import LOCAL_TENANT, RESERVED_PREFIX, is_reserved


class ReviewSettings(BaseSettings):
    """Review queue, alerts and memory. Environment variables: the field names upper-cased, ``BQAS_`` prefix."""

    model_config = SettingsConfigDict(env_prefix="BQAS_", extra="ignore")

    # The whole loop (queue, memory, categories, alerts) after each batch of results; off: BQAS_REVIEW=false.
    review: bool = True
    # The tenant that CLI runs (`bqas run`) belong to in the review queue: a reserved name ("@…") for
    # which no API key can exist, so no service tenant reaches what local runs stored.
    local_tenant: str = LOCAL_TENANT

    @field_validator("local_tenant")
    @classmethod
    def _reserved(cls, value: str) -> str:
        if not is_reserved(value):
            raise ValueError(f"must start with {RESERVED_PREFIX!r} (a name no service tenant can have)")
        return value

    # Alerts: per tenant/judge rules come from the YAML file; these are the defaults.
    alerts_file: Path | None = None
    alert_webhook_url: str | None = None
    alert_threshold: int = Field(default=5, ge=1)
    alert_window_s: float = Field(default=600.0, gt=0)
    alert_retries: int = Field(default=3, ge=0)
    alert_backoff_s: float = Field(default=0.5, ge=0)
    alert_timeout_s: float = Field(default=5.0, gt=0)

    # Memory of past judgments and the consistency check.
    memory: bool = True
    memory_k: int = Field(default=5, ge=1)
    memory_margin: float = Field(default=15.0, ge=0)  # composite points (0-100)
    memory_dimension_margin: float = Field(default=25.0, ge=0)  # percent of a dimension's range
    memory_min_similarity: float = Field(default=0.6, ge=-1, le=1)
    memory_min_neighbours: int = Field(default=2, ge=1)
    memory_max_chars: int = Field(default=4000, ge=100)  # input text embedded per judgment
    # Judgments nobody reviewed are deleted from the memory after this many days (0: kept for ever);
    # reviewed cases stay. Alert windows read these rows, so keep it longer than BQAS_ALERT_WINDOW_S.
    memory_retention_days: float = Field(default=30.0, ge=0)
    memory_examples: bool = False  # give the LLM judge similar reviewed cases (fenced as data)
    memory_examples_k: int = Field(default=3, ge=1)

    # Review page.
    review_path: str = "/review"  # where the router is mounted (for links in alerts)
    review_session_hours: float = Field(default=8.0, gt=0)
    review_cookie_secure: bool = False  # set true behind HTTPS


@cache
def get_review_settings() -> ReviewSettings:
    """The process-wide review settings (read once from the environment)."""
    return ReviewSettings()
