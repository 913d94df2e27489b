"""Run one judge configuration over the samples of a gold set (bounded concurrency, one engine)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.calibration.gold import GoldSample
from bqas.judging.engine import InvalidSample, JudgeEngine
from bqas.judging.factory import LLMOverrides, build_engine
from bqas.judgment.spec import JudgeRegistry
from bqas.settings import Settings


@dataclass(frozen=True)
class JudgeConfig:
    """A judge configuration to calibrate: a backend, optionally a model and another judges folder.

    Specs: ``offline``, ``llm``, ``auto``, ``llm:MODEL`` (the LLM backend with that model), or
    ``prompt:DIR`` (the judges of folder DIR, e.g. another prompt version, with the command's backend).
    """

    label: str
    backend: str
    model: str | None = None
    judges_dir: Path | None = None

    @classmethod
    def parse(cls, spec: str, default_backend: str) -> JudgeConfig:
        kind, sep, arg = spec.partition(":")
        if not sep and spec in ("offline", "llm", "auto"):
            return cls(spec, spec)
        if kind == "llm" and arg:
            return cls(spec, "llm", model=arg)
        if kind == "prompt" and arg:
            path = Path(arg)
            if not path.is_dir():
                raise ValueError(f"--compare {spec!r}: {arg} is not a folder of judges")
            return cls(spec, default_backend, judges_dir=path)
        raise ValueError(f"--compare {spec!r}: expected offline, llm, auto, llm:MODEL or prompt:DIR")


@dataclass
class Outcome:
    """The judge's result record for one gold sample."""

    gold: GoldSample
    record: dict[str, Any]


@dataclass
class EngineRequest:
    """How to build the engine for a configuration (what the command line gave)."""

    settings: Settings
    language: str | None = None
    overrides: LLMOverrides = field(default_factory=LLMOverrides)
    policy_file: Path | None = None


def engine_for(config: JudgeConfig, request: EngineRequest) -> JudgeEngine:
    """An engine for ``config``; ``ValueError`` when it cannot be built (e.g. no LLM configured)."""
    o = request.overrides
    overrides = LLMOverrides(
        base_url=o.base_url,
        model=config.model or o.model,
        api_key=o.api_key,
        structured_output=o.structured_output,
        concurrency=o.concurrency,
        cache=o.cache,
        gguf=o.gguf,
        n_ctx=o.n_ctx,
        threads=o.threads,
        slots=o.slots,
    )
    registry = None
    if config.judges_dir is not None:
        registry = JudgeRegistry.load([config.judges_dir], request.policy_file)
    return build_engine(
        request.settings,
        backend=config.backend,  # type: ignore[arg-type]  # checked by the CLI / JudgeConfig.parse
        language=request.language,
        overrides=overrides,
        registry=registry,
        policy_file=request.policy_file,
    )


async def judge_all(
    engine: JudgeEngine, judge: str, samples: list[GoldSample], concurrency: int
) -> tuple[list[Outcome], list[tuple[int, str]]]:
    """Judge every sample; returns outcomes in gold order and (line, message) for samples the engine refused."""
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(gold: GoldSample) -> Outcome | tuple[int, str]:
        async with sem:
            try:
                result = await engine.evaluate(judge, gold.sample, response_id=gold.id, language=gold.language)
            except InvalidSample as exc:
                return (gold.line, f"field {exc}")
            return Outcome(gold, result.to_record())

    try:
        done = await asyncio.gather(*(one(g) for g in samples))
    finally:
        if engine.llm is not None:
            await engine.llm.aclose()
    outcomes = [d for d in done if isinstance(d, Outcome)]
    refused = [d for d in done if not isinstance(d, Outcome)]
    return outcomes, refused


def run_config(
    config: JudgeConfig, request: EngineRequest, judge: str, samples: list[GoldSample], concurrency: int
) -> tuple[list[Outcome], list[tuple[int, str]], str | None, float]:
    """Build the engine, judge the samples; returns outcomes, refusals, the model used (if any) and the
    wall-clock seconds the judging took (model loading excluded: it happens before the first clock)."""
    engine = engine_for(config, request)
    engine.registry.get(judge)
    model = engine.llm.config.model if engine.llm is not None else None
    (outcomes, refused), wall = asyncio.run(_timed_all(engine, judge, samples, concurrency))
    return outcomes, refused, model, wall


async def _timed_all(
    engine: JudgeEngine, judge: str, samples: list[GoldSample], concurrency: int
) -> tuple[tuple[list[Outcome], list[tuple[int, str]]], float]:
    """:func:`judge_all` and its wall-clock seconds, the models loaded before the clock starts."""
    if engine.tiers[0]:
        await engine.dispatch.prepare()
    started = time.perf_counter()
    done = await judge_all(engine, judge, samples, concurrency)
    return done, time.perf_counter() - started
