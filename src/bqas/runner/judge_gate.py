"""Before a run judges with an LLM, the judge is measured on its known-answer set (bqas.judging.check).

A run gates releases on the judge's verdicts: an LLM that cannot tell a right answer from a wrong one
(a model far too small, a wrong chat template, a broken quantisation) would gate on noise. So a run whose
backend uses the LLM checks each of its judges that has a known-answer set in the run's language first
(cached per model, judge and prompt: paid once), and refuses to start on an unfit one unless told to
(``--accept-unfit-judge``). The figures go into the run's configuration (``judge_check``), which the
console, junit.xml and the HTML report show. A resumed run is checked again (the cache makes that free for
an unchanged model and prompt); a run started on an unfit judge with the override keeps that decision.
The check measures the LLM tier alone (bqas.judging.check_engine): the PII gate and the offline facts that
stand beside it in the run would otherwise decide the clear pairs for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bqas.judging.check import CheckResult, run_check, set_path
from bqas.judging.check_engine import backend_label, check_engine

if TYPE_CHECKING:
    from bqas.judging.engine import JudgeEngine
    from bqas.judging.factory import LLMOverrides
    from bqas.settings import Settings

OVERRIDE = "--accept-unfit-judge"


class UnfitJudge(ValueError):
    """A judge of the run came out unfit on its known-answer set (the message has the figures)."""


async def _check_all(
    engine: JudgeEngine, measured: str, judges: list[str], language: str, settings: Settings
) -> list[CheckResult]:
    model = engine.llm.config.model if engine.llm is not None else None
    backend = backend_label(engine)

    async def evaluate(name: str, sample: dict[str, Any], response_id: str, lang: str) -> Any:
        return await engine.evaluate(name, sample, response_id=response_id, language=lang)

    try:
        return [
            await run_check(
                engine.registry.get(judge),
                language,
                evaluate,
                model=model,
                backend=backend,
                cache_dir=settings.cache_dir / "judge-check",
                safety_gate=engine.options.safety_gate,
                measured=measured,
            )
            for judge in judges
        ]
    finally:
        if engine.llm is not None:
            await engine.llm.aclose()


def accepted_unfit(stored: Mapping[str, Any] | None) -> bool:
    """Whether a stored run was started on an unfit judge with the override: its resume keeps that decision."""
    checks = (stored or {}).get("judge_check") or []
    return any(isinstance(c, Mapping) and c.get("accepted_unfit") for c in checks)


def check_judges(
    run_engine: JudgeEngine,
    judges: list[str],
    language: str,
    settings: Settings,
    overrides: LLMOverrides,
    *,
    accept_unfit: bool,
    resumed: bool = False,
) -> list[dict[str, Any]]:
    """The check of every judge of the run that has a known-answer set, as JSON; raises :class:`UnfitJudge`
    for an unfit one unless ``accept_unfit``. Nothing is checked when the run uses no LLM. A check made when
    a run is resumed says so (``resumed``): the resume's LLM may not be the one the run started with."""
    if not run_engine.tiers[1] or not settings.judge_check:
        return []
    checked = [j for j in dict.fromkeys(judges) if set_path(j, language) is not None]
    if not checked:
        return []
    # An engine of its own: its LLM client lives and closes in this event loop, not the run's.
    engine, measured = check_engine(
        settings, backend=run_engine.options.backend, language=language, overrides=overrides
    )
    results = asyncio.run(_check_all(engine, measured, checked, language, settings))
    unfit = [r for r in results if not r.fit]
    if unfit and not accept_unfit:
        lines = "\n".join(f"  {r.summary()}" for r in unfit)
        raise UnfitJudge(
            f"the judge is unfit: it cannot tell clear right answers from wrong ones, so its verdicts would gate "
            f"on noise:\n{lines}\nFix the model or its configuration (chat template, quantisation, a larger "
            f"model; see `bqas judge-check`), or pass {OVERRIDE} to run anyway (the run then records it)"
        )
    return [{**r.to_json(), "accepted_unfit": not r.fit, **({"resumed": True} if resumed else {})} for r in results]
