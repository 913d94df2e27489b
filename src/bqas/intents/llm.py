"""Intent classification by the ``intent`` judge (INTENT_CLASSIFICATION_PROMPT) through the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bqas.judging.engine import JudgeEngine


@dataclass(frozen=True)
class JudgePrediction:
    """The judge's label (None when it could not answer) with its confidence or the reason."""

    label: str | None
    confidence: float | None
    reason: str | None = None


async def classify_with_judge(
    engine: JudgeEngine,
    texts: Sequence[str],
    *,
    concurrency: int = 8,
    language: str | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> list[JudgePrediction]:
    """Classify each text with ``engine.evaluate("intent", {"text": …})``; the label is ``outputs["type"]``.
    ``on_progress`` is told ``(what, done, total)`` as answers come in."""
    sem = asyncio.Semaphore(max(1, concurrency))
    what = f"classifying {len(texts)} texts"
    done = 0
    if on_progress is not None:
        on_progress(what, 0, len(texts))

    async def one(i: int, text: str) -> JudgePrediction:
        nonlocal done
        async with sem:
            result = await engine.evaluate("intent", {"text": text}, response_id=f"text-{i}", language=language)
        done += 1
        if on_progress is not None:
            on_progress(what, done, len(texts))
        label = result.outputs.get("type")
        if result.status != "scored" or not isinstance(label, str):
            return JudgePrediction(None, None, result.unscored_reason or "no intent in the judge's answer")
        # confidence has a 0-1 range in the schema, so the engine files it under dimensions.
        dim = result.dimensions.get("confidence")
        conf = dim.value if dim is not None and dim.measured else result.outputs.get("confidence")
        return JudgePrediction(label, float(conf) if isinstance(conf, int | float) else None)

    try:
        return list(await asyncio.gather(*(one(i, t) for i, t in enumerate(texts))))
    finally:
        if engine.llm is not None:
            await engine.llm.aclose()
