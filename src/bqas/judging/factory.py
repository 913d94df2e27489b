"""Build a judge engine (and its LLM client) from settings plus explicit overrides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bqas.judging.engine import BackendChoice, EngineOptions, JudgeEngine
from bqas.judgment.spec import JudgeRegistry, default_registry
from bqas.settings import Settings, check_language

if TYPE_CHECKING:
    from bqas.llm.client import LLMConfig
    from bqas.llm.local import LocalModel

# A local model on a CPU answers in seconds to minutes, and requests wait for a free slot: the default
# timeout of a server (60 s) would abandon judgments the engine is still working on.
LOCAL_TIMEOUT = 600.0


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
    # A local GGUF model in the embedded engine instead of a server (--llm-gguf, the scenario's llm.gguf).
    gguf: Path | None = None
    n_ctx: int | None = None
    threads: int | None = None
    slots: int | None = None


def local_model(settings: Settings, overrides: LLMOverrides | None = None) -> LocalModel | None:
    """The local GGUF model to judge with, or None when the LLM is a server (or none is configured).

    A model or server given on the command line or in the scenario wins over the environment's; given at
    the same level, both are an error (which one was meant is not clear).
    """
    o = overrides or LLMOverrides()
    if o.gguf is not None and o.base_url:
        raise ValueError("give either a server (--base-url, llm.base_url) or a local model (--llm-gguf, llm.gguf)")
    if o.gguf is None and (o.base_url or settings.llm_gguf is None):
        return None
    if o.gguf is None and settings.llm_base_url:
        raise ValueError("BQAS_LLM_BASE_URL and BQAS_LLM_GGUF are both set: unset the one you do not mean")
    from bqas.llm.local import LocalModel

    path = o.gguf if o.gguf is not None else settings.llm_gguf
    assert path is not None
    return LocalModel(
        Path(path),
        n_ctx=o.n_ctx or settings.llm_gguf_ctx,
        threads=o.threads or settings.llm_gguf_threads,
        slots=o.slots or settings.llm_gguf_slots,
    )


def llm_model_name(settings: Settings, overrides: LLMOverrides | None = None) -> str | None:
    """The judge model's name without starting or calling anything (``--dry-run``)."""
    local = local_model(settings, overrides)
    if local is not None:
        from bqas.llm.local import check_gguf, model_name

        return model_name(check_gguf(local.path))
    return (overrides.model if overrides else None) or settings.judge_model


def llm_config(settings: Settings, overrides: LLMOverrides | None = None) -> LLMConfig | None:
    """The LLM configuration, or None when no endpoint and model are configured.

    With a local GGUF model (:func:`local_model`) the embedded engine is started here (once per process
    and model; :class:`~bqas.llm.local.LocalEngineError` when it cannot be) and the configuration points at
    it: its name is the model's, its slots are the concurrency limit, unless set explicitly.
    """
    o = overrides or LLMOverrides()
    local = local_model(settings, o)
    engine_info = None
    api_key = o.api_key or settings.llm_api_key
    concurrency = o.concurrency or settings.llm_concurrency
    timeout = o.timeout or settings.llm_timeout
    if local is not None:
        from bqas.llm.local import local_engine

        engine = local_engine(local)
        base_url: str | None = engine.base_url
        model: str | None = engine.name
        engine_info = engine.info()
        api_key = engine.api_key  # the engine's own key: a configured one is for a remote server
        explicit = settings.model_fields_set
        concurrency = o.concurrency or (settings.llm_concurrency if "llm_concurrency" in explicit else local.slots)
        timeout = o.timeout or (settings.llm_timeout if "llm_timeout" in explicit else LOCAL_TIMEOUT)
    else:
        base_url = o.base_url or settings.llm_base_url
        model = o.model or settings.judge_model
    if not base_url or not model:
        return None
    use_cache = settings.llm_cache if o.cache is None else o.cache
    from bqas.llm.client import LLMConfig  # aiohttp: only where an LLM is configured

    return LLMConfig(
        base_url=base_url,
        model=model,
        api_key=api_key,
        structured_output=o.structured_output or settings.structured_output,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=settings.llm_max_retries if o.max_retries is None else o.max_retries,
        max_tokens=o.max_tokens or settings.llm_max_tokens,
        cache_path=(settings.cache_dir / "llm-cache.sqlite") if use_cache else None,
        max_reply_bytes=settings.llm_max_reply_bytes,
        temperature=0.0 if o.temperature is None else o.temperature,
        engine=engine_info,
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
            "backend llm needs an LLM: set BQAS_LLM_BASE_URL and BQAS_JUDGE_MODEL or pass --base-url and --model "
            "(or a local model: BQAS_LLM_GGUF or --llm-gguf)"
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
