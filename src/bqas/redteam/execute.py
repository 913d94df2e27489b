"""Send the attacks to the target and store each one as a result of a run (kind ``redteam``).

Each attack is one conversation with the target (a multi-turn attack's turns in order, as a run sends
``turns:``); when a turn fails, the attack is a target error and its later turns are not sent. Results
are written in batches as they come, so ``--resume`` sends only the attacks the run has no result for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bqas.redteam.canaries import CanaryIndex
from bqas.redteam.catalog import Plugin
from bqas.redteam.generate import Attack
from bqas.redteam.graders import Grade, grade, judge_grade, needs_judge

if TYPE_CHECKING:
    from bqas.store.db import Store
    from bqas.targets.config import Target

JUDGE = "redteam"
_BATCH = 50
# The verdicts of run records, so that the viewer, JUnit and comparisons read a red-team result like any:
# an attack that succeeded failed the assistant.
FAILED, HELD = "failed", "production_ready"


@dataclass
class Sent:
    """What the target said to one attack: one reply text per turn answered, the per-turn figures, the error."""

    replies: list[str]
    target: list[dict[str, Any]]
    error: str | None


def _said(reply: Any) -> str:
    value = reply.fields.get("response")
    if value is None:
        return ""
    return value if isinstance(value, str) else "\n".join(map(str, value)) if isinstance(value, list) else str(value)


async def send(client: Any, target: Target, run_id: str, attack: Attack, tenant_field: str) -> Sent:
    """Send the attack's turns in order, in one conversation."""
    from bqas.targets.kinds import Conversation
    from bqas.targets.turn_parts import SampleProblem

    conversation = Conversation(id=f"bqas-{run_id}-{attack.id}")
    replies: list[str] = []
    briefs: list[dict[str, Any]] = []
    for turn, text in enumerate(attack.turns):
        data = {
            "user_input": text,
            tenant_field: attack.tenant,
            "teacher_id": attack.tenant,
            "language": attack.language,
        }
        try:
            reply = await client.ask(data, conversation, turn)
        except SampleProblem as exc:
            return Sent(replies, briefs, f"turn {turn} could not be sent: {exc}")
        briefs.append(reply.brief())
        if reply.error is not None:
            return Sent(replies, briefs, f"turn {turn}: {reply.error}")
        said = _said(reply)
        replies.append(said)
        conversation.remote_id = reply.conversation_id or conversation.remote_id
        if target.type == "openai":
            conversation.messages += [{"role": "user", "content": text}, {"role": "assistant", "content": said}]
    return Sent(replies, briefs, None)


def record_of(
    run_id: str, attack: Attack, plugin: Plugin, sent: Sent, index: CanaryIndex, judged: Grade | None = None
) -> dict[str, Any]:
    """The stored result of one attack (a run record: sample_id, judge, status, verdict …, plus the attack)."""
    record: dict[str, Any] = {
        "run_id": run_id,
        "sample_id": attack.id,
        "judge": JUDGE,
        "language": attack.language,
        "plugin": attack.plugin,
        "strategy": attack.strategy,
        "severity": attack.severity,
        "tenant": attack.tenant,
        "turns": attack.turns,
        "plain": attack.plain,
        "replies": sent.replies,
        "target": sent.target,
        "composite_score": None,
    }
    if attack.marker is not None:
        record["marker"] = attack.marker
    if sent.error is not None:
        record.update(status="target_error", verdict=None, error=sent.error, success=None, refused=None)
        return record
    result = grade(plugin, attack, sent.replies, index, judged)
    record.update(
        status="ok" if result.success is not None else "unscored",
        verdict=None if result.success is None else FAILED if result.success else HELD,
        success=result.success,
        refused=result.refused,
        grader=result.grader,
        evidence=result.evidence,
    )
    if result.note:
        record["note"] = result.note
    return record


async def attack_all(
    store: Store | None,
    run_id: str,
    target: Target,
    attacks: list[Attack],
    plugins: dict[str, Plugin],
    index: CanaryIndex,
    *,
    tenant_field: str = "tenant",
    seq_of: dict[str, int] | None = None,
    advance: Callable[[int], None] | None = None,
    engine: Any = None,
) -> list[dict[str, Any]]:
    """Send every attack (``target.concurrency`` at a time), grade it, and store its record; returns the
    records made now (all of them when there is no store)."""
    from bqas.targets.kinds import client_for

    client = client_for(target, 8 * 1024 * 1024)
    gate = asyncio.Semaphore(target.concurrency)
    made: list[dict[str, Any]] = []
    pending: list[tuple[str, int, dict[str, Any]]] = []
    seq_of = seq_of or {a.id: i for i, a in enumerate(attacks)}

    async def flush() -> None:
        if store is not None and pending:
            batch = list(pending)
            pending.clear()
            await asyncio.to_thread(store.add_results, run_id, batch)

    async def one(attack: Attack) -> None:
        async with gate:
            sent = await send(client, target, run_id, attack, tenant_field)
        plugin = plugins[attack.plugin]
        judged = None
        if engine is not None and sent.error is None and needs_judge(plugin, index):
            judged = await judge_grade(engine, plugin, attack, sent.replies)
        # Grading decodes and normalises every reply: off the event loop, which goes on sending.
        record = await asyncio.to_thread(record_of, run_id, attack, plugin, sent, index, judged)
        made.append(record)
        pending.append((attack.id, seq_of[attack.id], record))
        if advance is not None:
            advance(1)
        if len(pending) >= _BATCH:
            await flush()

    try:
        await asyncio.gather(*(one(a) for a in attacks))
        await flush()
    finally:
        await client.aclose()
    return made
