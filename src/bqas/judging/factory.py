"""Build a judge engine (and its LLM client) from settings plus explicit overrides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bqas.judging.engine import BackendChoice, EngineOptions, JudgeEngine
from bqas.judging.spec import JudgeRegistry, default_registry
from bqas.settings import Settings, check_language

if TYPE_CHECKING:
    from bqas.llm.client import LLMConfig


@dataclass
class LLMOverrides:
    """Values given on the command line or in a scenario; None means "use the setting"."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    structured_output: str | None = None
    concurrency: int | None = None
    cache: bool | None = None
    timeout: float | None = None
    max_retries: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None  # the scenario's llm.temperature (judging default 0)


def llm_config(settings: Settings, overrides: LLMOverrides | None = None) -> LLMConfig | None:
    """The LLM configuration, or None when no endpoint and model are configured."""
    o = overrides or LLMOverrides()
    base_url = o.base_url or settings.llm_base_url
    model = o.model or settings.judge_model
    if not base_url or not model:
        return None
    use_cache = settings.llm_cache if o.cache is None else o.cache
    from bqas.llm.client import LLMConfig  # aiohttp: only where an LLM is configured

    return LLMConfig(
        base_url=base_url,
        model=model,
        api_key=o.api_key or settings.llm_api_key,
        structured_output=o.structured_output or settings.structured_output,
        concurrency=o.concurrency or settings.llm_concurrency,
        timeout=o.timeout or settings.llm_timeout,
        max_retries=settings.llm_max_retries if o.max_retries is None else o.max_retries,
        max_tokens=o.max_tokens or settings.llm_max_tokens,
        cache_path=(settings.cache_dir / "llm-cache.sqlite") if use_cache else None,
        max_reply_bytes=settings.llm_max_reply_bytes,
        temperature=0.0 if o.temperature is None else o.temperature,
    )


def build_engine(
    settings: Settings,
    *,
    backend: BackendChoice = "auto",
    language: str | None = None,
    overrides: LLMOverrides | None = None,
    registry: JudgeRegistry | None = None,
    policy_file: Path | None = None,
) -> JudgeEngine:
    """An engine for ``backend``; raises ``ValueError`` with a clear message when it cannot be built."""
    if registry is None:
        registry = JudgeRegistry.load(None, policy_file) if policy_file else default_registry()
    config = llm_config(settings, overrides) if backend != "offline" else None
    if backend == "llm" and config is None:
        raise ValueError(
            "backend llm needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL or pass --base-url and --model"
        )
    llm = None
    if config is not None:
        from bqas.llm.client import LLMClient

        llm = LLMClient(config)
    options = EngineOptions(
        backend=backend,
        default_language=check_language(language or settings.language),
        max_field_chars=settings.max_field_chars,
        safety_gate=settings.safety_gate,
    )
    return JudgeEngine(registry, llm=llm, options=options)
