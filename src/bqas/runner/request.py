"""What a ``bqas run`` was asked for and what follows from it for judging: the LLM settings, the judge
engine and the review memory's calibration examples. The local executor (:mod:`bqas.runner.run`) and the
Ray judge actors (:mod:`bqas.runner.ray_run`) build their engines here, so both judge alike."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bqas.judging.factory import LLMOverrides, build_engine

if TYPE_CHECKING:
    from bqas.judging.engine import ExamplesProvider, JudgeEngine
    from bqas.runner.scenario import Scenario
    from bqas.settings import Settings
    from bqas.store.db import Store


@dataclass
class RunRequest:
    """What the user asked for on the command line."""

    scenario_path: Path | None = None
    resume: str | None = None
    out_dir: Path | None = None
    backend: str | None = None
    language: str | None = None
    concurrency: int | None = None
    overrides: LLMOverrides = field(default_factory=LLMOverrides)
    baseline: str | None = None
    progress: bool = True
    # Called with (run id, out folder, resuming) as soon as the run is known, before any judging.
    on_start: Callable[[str, Path, bool], None] | None = None
    profiles: list[Path] = field(default_factory=list)  # --profile (besides the scenario's profiles)
    # Read a dataset that lies outside the scenario's folder and the working directory (bqas.runner.scenario).
    allow_dataset_outside: bool = False
    ray: str | None = None  # --ray ADDRESS|auto|local: judge on a Ray cluster (overrides the scenario's ray:)
    ray_workers: int | None = None  # --ray-workers: judge actors (default: the scenario's, else the cluster's CPUs)
    ray_placement_timeout: float | None = None  # --ray-placement-timeout (else the scenario's ray.placement_timeout)
    repeats: int | None = None  # --repeats (else the scenario's `repeats`)
    target: str | None = None  # --target FILE|YAML: the assistant under test (instead of the scenario's target:)
    reuse_target_replies: str | None = None  # --reuse-target-replies RUN_ID: judge that run's replies again
    accept_unfit_judge: bool = False  # --accept-unfit-judge: run even when the LLM judge fails its known-answer check
    retry_target_errors: bool = False  # --retry-target-errors (with --resume): ask the target again for its errors
    # Wraps each step of the run that can take seconds (loading the judges, starting Ray, writing the
    # reports): called with the step's name (and ``bar=True`` for the judging, which has its own bar) to
    # say what the run is doing; None says nothing.
    on_step: Callable[..., AbstractContextManager[None]] | None = None

    def step(self, name: str, *, bar: bool = False) -> AbstractContextManager[None]:
        """The context of one step of the run (:attr:`on_step`)."""
        return nullcontext() if self.on_step is None else self.on_step(name, bar=bar)


def engine_for(
    scenario: Scenario, request: RunRequest, settings: Settings, stored: dict[str, Any] | None
) -> JudgeEngine:
    """The run's judge engine: backend, language and LLM settings from the command line over the scenario
    (on resume, the backend and profiles the run started with), with its trust-or-escalate profiles."""
    backend = (stored or {}).get("backend") or request.backend or scenario.backend
    overrides = llm_overrides(scenario, request)
    engine = build_engine(
        settings,
        backend=backend,  # type: ignore[arg-type]  # validated by the scenario model
        language=request.language or scenario.language,
        overrides=overrides,
    )
    # Trust or escalate: profiles from the scenario, --profile, or (on resume) those the run started with.
    paths = [Path(p) for p in (stored or {}).get("profiles") or []] or [*scenario.profile_paths(), *request.profiles]
    if paths:
        from bqas.trust.load import load_profiles

        engine.options.profiles = load_profiles(paths, engine, scenario.judges)
    return engine


def loading_step(settings: Settings, backend: str, overrides: LLMOverrides) -> str:
    """The name of the step that builds a judge engine: it also starts the embedded llama.cpp engine when
    the judges use a local GGUF model (a matter of seconds to minutes)."""
    from bqas.judging.factory import local_model

    try:
        local = local_model(settings, overrides) if backend != "offline" else None
    except ValueError:  # a server and a model file at once: building the engine says so
        local = None
    if local is not None:
        return f"loading the judges and starting the embedded llama.cpp engine ({local.path.name})"
    return "loading the judges"


def llm_overrides(scenario: Scenario, request: RunRequest) -> LLMOverrides:
    """The LLM settings of a run: the command line's, else the scenario's (the API key from its variable)."""
    o = request.overrides
    llm = scenario.llm
    # A server or model on the command line replaces the scenario's (either kind).
    from_cli = o.base_url is not None or o.gguf is not None
    return LLMOverrides(
        base_url=o.base_url or (None if from_cli else llm.base_url),
        gguf=o.gguf or (None if from_cli else scenario.gguf_path()),
        n_ctx=o.n_ctx or llm.n_ctx,
        threads=o.threads or llm.threads,
        slots=o.slots or llm.slots,
        model=o.model or llm.model,
        api_key=o.api_key or (os.environ.get(llm.api_key_env) if llm.api_key_env else None),
        structured_output=o.structured_output or llm.structured_output,
        concurrency=o.concurrency or llm.concurrency,
        cache=o.cache,
        temperature=llm.temperature,
    )


def memory_examples(store: Store, tenant: str, k: int) -> ExamplesProvider:
    """Similar human-reviewed cases from the review memory as calibration examples for the LLM judge."""
    from bqas.review.memory import calibration_examples

    async def provide(judge: str, values: Mapping[str, Any], language: str) -> str:
        return await asyncio.to_thread(calibration_examples, store, tenant, judge, values, k, language=language)

    return provide
