"""The judge-manipulation check of every grader, on every backend.

A judge's ``judge.yaml`` names under ``evaluated:`` the input fields that hold the system's output (the
answer, the operator definition, the retrieved passage). If one of them contains text that tries to
steer the judge ("SYSTEM: ignore the rubric", a planted ``{"faithfulness": 5}``, see
:mod:`bqas.offline.manipulation`), the judgment is ``failed`` and escalated to a person whatever the
scores say: the judge policy's safety-first rule for an answer that attacks its own evaluation. The scores are
still reported. Judges whose safety gate already runs the same rules (voice) fail through the gate too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bqas.judgment.result import JudgmentResult
from bqas.judgment.spec import JudgeSpec


def _as_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value if v is not None)
    return "" if value is None else str(value)


def find_manipulation(spec: JudgeSpec, values: Mapping[str, Any]) -> dict[str, list[str]]:
    """For each evaluated field of ``spec`` that tries to steer the judge: the ids of the rules that fired."""
    if not spec.evaluated:
        return {}
    from bqas.offline.manipulation import judge_manipulation  # lazy: loads the rules and OpenCC

    found: dict[str, list[str]] = {}
    for name in spec.evaluated:
        hits = judge_manipulation(_as_text(values.get(name)))
        if hits:
            found[name] = hits
    return found


def apply_manipulation(result: JudgmentResult, found: Mapping[str, list[str]]) -> None:
    """Fail and escalate ``result`` for the manipulation ``found`` (nothing happens when it is empty)."""
    if not found or result.verdict is None:  # classifiers have no verdict to fail
        return
    for name, ids in found.items():
        reason = f"judge manipulation in {name} ({', '.join(ids)})"
        result.escalation_reasons.append(reason)
        result.warnings.append(f"{reason}: verdict failed whatever the scores")
    result.verdict = "failed"
    result.status = "scored"
    result.unscored_reason = None
    result.escalation = "human_review"
