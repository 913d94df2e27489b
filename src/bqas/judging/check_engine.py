"""The engine a known-answer check grades with, and what it therefore measures (bqas.judging.check).

The check asks whether a judge can be trusted where it decides alone. For an LLM judge that is the LLM:
the deterministic tiers beside it (the PII gate on every backend, the offline facts of ``auto``: an exact
intent match, a number missing from the facts) are never overruled, so on the clear pairs they answer
themselves and a model that tells nothing apart passes. By default an LLM judge is therefore checked as
the LLM tier alone (backend ``llm``, no safety gate): every pair gets the LLM's own answer. The
judge-manipulation rules still run; none of them fires on a known-answer pair. Without an LLM (or with
backend ``offline``) the offline tier is checked as configured. ``as_configured`` checks the judge
exactly as a run uses it, deterministic tiers included.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bqas.judging.check import AS_CONFIGURED, LLM_ALONE, OFFLINE_TIER
from bqas.judging.factory import build_engine

if TYPE_CHECKING:
    from bqas.judging.engine import BackendChoice, JudgeEngine
    from bqas.judging.factory import LLMOverrides
    from bqas.settings import Settings


def check_engine(
    settings: Settings,
    *,
    backend: BackendChoice,
    language: str,
    overrides: LLMOverrides | None = None,
    as_configured: bool = False,
) -> tuple[JudgeEngine, str]:
    """The engine for checking the judges of ``backend`` and what it measures (``measured`` of the result).

    Raises ``ValueError`` like :func:`~bqas.judging.factory.build_engine` when the engine cannot be built."""
    engine = build_engine(settings, backend=backend, language=language, overrides=overrides)
    if not engine.tiers[1]:
        return engine, OFFLINE_TIER
    if as_configured:
        return engine, AS_CONFIGURED
    engine.options = replace(engine.options, backend="llm", safety_gate=False)
    return engine, LLM_ALONE


def backend_label(engine: JudgeEngine) -> str:
    """The tiers the engine grades with: ``offline``, ``llm`` or ``offline+llm``."""
    use_offline, use_llm = engine.tiers
    return "offline" if not use_llm else ("llm" if not use_offline else "offline+llm")
