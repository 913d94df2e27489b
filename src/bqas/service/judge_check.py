"""The service's LLM judge measured on its known-answer sets at start-up (bqas.judging.check).

After the models are loaded, a service whose backend uses an LLM grades the known-answer pairs of each
judge that has a set in its default language (cached per model, judge and prompt: a restart with the same
configuration asks nothing). ``/readyz`` reports the outcome per judge in its ``judge_check`` detail, and
``bqas_judge_check_fit{judge,language}`` is 1 for a fit judge, 0 for an unfit one. The service keeps
answering meanwhile: an unfit judge is reported, not hidden, and readiness stays about the database and
the models. As in `bqas judge-check`, the LLM tier is checked alone (bqas.judging.check_engine): the PII gate
and the offline facts beside it would decide the clear pairs for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bqas.judging.check import available_sets, run_check
from bqas.judging.check_engine import backend_label, check_engine

if TYPE_CHECKING:
    from bqas.service.metrics import ServiceMetrics
    from bqas.settings import Settings

log = logging.getLogger("bqas.service")
#: The check's fields on /readyz, per judge.
READYZ_FIELDS = ("fit", "pairs_right", "verdict_agreement", "parse_failures", "model", "measured", "reasons", "cached")


@dataclass
class JudgeCheckState:
    """What ``/readyz`` says about the check: ``state`` and, once done, the figures per ``judge.language``."""

    state: str = "not run"
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)

    def detail(self) -> dict[str, Any]:
        return {"state": self.state, "judges": self.judges}


async def check_service_judges(
    settings: Settings, backend: str, state: JudgeCheckState, metrics: ServiceMetrics
) -> None:
    """Run the check for the service's backend and language; fills ``state`` and the fit gauge."""
    if not settings.judge_check:
        state.state = "off (BQAS_JUDGE_CHECK=false)"
        return
    language = settings.language
    try:
        engine, measured = check_engine(settings, backend=backend, language=language)  # type: ignore[arg-type]
    except ValueError as exc:
        state.state = f"error: {exc}"[:300]
        return
    if not engine.tiers[1]:
        state.state = "not needed (no LLM judge)"
        return
    judges = sorted({j for j, lang in available_sets() if lang == language})
    state.state = "running"
    model = engine.llm.config.model if engine.llm is not None else None
    backend_used = backend_label(engine)

    async def evaluate(name: str, sample: dict[str, Any], response_id: str, lang: str) -> Any:
        return await engine.evaluate(name, sample, response_id=response_id, language=lang)

    try:
        for judge in judges:
            result = await run_check(
                engine.registry.get(judge),
                language,
                evaluate,
                model=model,
                backend=backend_used,
                cache_dir=settings.cache_dir / "judge-check",
                safety_gate=engine.options.safety_gate,
                measured=measured,
            )
            state.judges[f"{judge}.{language}"] = {k: v for k, v in result.to_json().items() if k in READYZ_FIELDS}
            metrics.judge_fit.labels(judge, language).set(1.0 if result.fit else 0.0)
            if not result.fit:
                log.warning("bqas serve: %s", result.summary())
        state.state = "done"
    except Exception as exc:  # an LLM that cannot be reached: said on /readyz, the service goes on
        state.state = f"error: {type(exc).__name__}: {exc}"[:300]
    finally:
        if engine.llm is not None:
            await engine.llm.aclose()
