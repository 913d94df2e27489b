"""Before the first target call: will the judges have what they need once the target has answered?

A judge's required input that neither the samples sent to the target hold nor the target's reply provides
(its kind's own fields and its ``outputs`` mapping) would make every such sample ``invalid`` after the
assistant was asked: the run is refused before any call instead, naming the field and how to map it.
A python target's fields are known only once it answers, so it is not checked here.

The same holds for one sample: a one-turn sample every judgment of which would be invalid whatever the
target answered (it lacks ``expected_intent``) is reported invalid without a call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from bqas.targets.config import Target, answer_fields, provided_fields

if TYPE_CHECKING:
    from bqas.judging.engine import JudgeEngine
    from bqas.judgment.work import WorkItem

# Filled in by the target stage for every turn of a conversation.
_STAGE_FIELDS = ("dialogue",)


def unmappable_fields(engine: JudgeEngine, works: Iterable[WorkItem], target: Target) -> list[str]:
    """One message per (judge, field) that no sample sent to ``target`` will hold; empty when all can.

    ``works``: the run's work items (the runner makes them, so this module, which the runner imports, does
    not import it back); a RAGAS metric's items (no judge of ``engine``) are not checked here."""
    if target.type == "python":
        return []
    provided = {*provided_fields(target), *_STAGE_FIELDS}
    needed = answer_fields(target)
    sent: dict[str, int] = {}  # judge -> work items sent to the target
    lacking: dict[tuple[str, str], int] = {}  # (judge, field) -> of those, how many lack it
    judges = set(engine.registry.names())
    for work in works:
        if work.error or work.judge not in judges:
            continue
        data = work.item.data
        if not any(data.get(name) in (None, "") for name in needed):
            continue  # answered in the dataset: not sent
        spec = engine.registry.get(work.judge)
        sent[spec.name] = sent.get(spec.name, 0) + 1
        for name, field in spec.inputs.items():
            if field.required and name not in provided and data.get(name) is None:
                lacking[spec.name, name] = lacking.get((spec.name, name), 0) + 1
    return [
        f"target: judge {judge} needs {name}, which none of the {count} samples sent to the target holds and "
        f"the {target.type} target does not give; {_how_to_map(target, name)}"
        for (judge, name), count in lacking.items()
        if count == sent.get(judge)
    ]


def _how_to_map(target: Target, name: str) -> str:
    outputs = getattr(target, "outputs", None) or {}
    mapped = ", ".join(f"{k}: {v}" for k, v in outputs.items())
    if target.type == "openai":
        return (
            f"map it from the assistant's message, read as JSON, with target.outputs "
            f"(e.g. outputs: {{response: $.answer, {name}: $.{name}}})"
        )
    where = "Dify's reply" if target.type == "dify" else "the reply"
    current = f" (now: {{{mapped}}})" if mapped else ""
    return f"map it from {where} with target.outputs{current}, e.g. {name}: $.{name}"


def unjudgeable(engine: JudgeEngine, target: Target | None, group: list[WorkItem]) -> list[tuple[WorkItem, str]]:
    """The work items of a one-turn sample with the reason each would be invalid, when every one of them
    would be whatever the target answered; empty when the sample is worth a call (or is a conversation,
    whose turns the target must hear in order)."""
    if target is None or target.type == "python" or not group:
        return []
    from bqas.judging.engine import InvalidSample, check_inputs
    from bqas.targets.conversation import prior_turns

    first = group[0].item
    if first.parent is not None or "turns" in first.data or prior_turns(first.data):
        return []
    provided = {*provided_fields(target), *_STAGE_FIELDS}
    doomed: list[tuple[WorkItem, str]] = []
    judges = set(engine.registry.names())
    for work in group:
        if work.error or work.judge not in judges:  # a RAGAS metric judges whatever comes back
            return []
        spec = engine.registry.get(work.judge)
        answered = {**work.item.data, **{name: "" for name in provided if work.item.data.get(name) is None}}
        try:
            check_inputs(spec, answered)
        except InvalidSample as exc:
            doomed.append(
                (work, f"line {work.item.line}: field {exc} (not sent to the target: it could not be judged)")
            )
            continue
        return []
    return doomed
