"""The target stage of a run: before a sample is judged, ask the assistant under test for what the sample
lacks, turn by turn for a conversation, and hand the judges the sample with the answer mapped in.

Replies are stored (``target_replies``) by the run's writer before or with the results that use them, so
``--resume`` finds them and never asks again for a stored one (with ``--retry-target-errors`` it asks again
for a failed turn of a sample whose result is a target error; the new reply replaces the stored one);
``--reuse-target-replies RUN`` reads another run's replies instead of asking at all (and keeps a copy in
this run, marked ``reused_from``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bqas.targets.config import Target, answer_fields
from bqas.targets.conversation import prior_turns
from bqas.targets.kinds import Conversation, TargetClient, client_for
from bqas.targets.reply import TargetReply
from bqas.targets.turn_parts import SampleProblem, user_message

if TYPE_CHECKING:
    from bqas.judgment.work import DatasetItem, WorkItem
    from bqas.store.db import Store


# Stores replies (sample id, turn, reply) and returns once they are stored.
KeepReplies = Callable[[list[tuple[str, int, dict[str, Any]]]], Awaitable[None]]


@dataclass
class Answered:
    """A sample's work items after the target stage: ``judge`` to be judged (their data holds the answer),
    ``failed`` as (item, reason, is_target_error) to be stored as they are, ``replies`` to be stored."""

    judge: list[WorkItem]
    failed: list[tuple[WorkItem, str, bool]]
    replies: list[tuple[str, int, dict[str, Any]]]


class TargetStage:
    """Asks one target (or reads stored replies) for the samples of one run."""

    def __init__(
        self,
        store: Store | None,
        run_id: str,
        target: Target | None,
        *,
        reuse_from: str | None = None,
        max_reply_bytes: int = 8 * 1024 * 1024,
        retry: Container[str] | None = None,
    ):
        self.store = store
        self.run_id = run_id
        self.target = target
        self.reuse_from = reuse_from
        self.client: TargetClient | None = client_for(target, max_reply_bytes) if target is not None else None
        self.concurrency = target.concurrency if target is not None else 32
        # Samples this run holds replies for already (a resumed run): read back instead of asked again.
        # Without a store (the pytest plugin) nothing is stored or read back.
        self.stored: Container[str] = store.target_reply_samples(run_id) if store is not None else ()
        self.reused = store.target_reply_samples(reuse_from) if store is not None and reuse_from else None
        # ``--retry-target-errors``: the sample (turn) ids whose stored result is a target error. Their
        # samples' stored error replies are not read back: those turns are asked again (``asked_again``).
        self.retry = retry
        self.asked_again = 0

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()

    def needs_answer(self, data: dict[str, Any]) -> bool:
        """Whether a turn lacks its answer (one of the fields the target provides)."""
        fields = answer_fields(self.target) if self.target is not None else ("response",)
        return any(data.get(name) in (None, "") for name in fields)

    async def answer(self, group: list[WorkItem], keep: KeepReplies | None = None) -> Answered:
        """Ask (or look up) what the sample of ``group`` (its work items, one sample's) lacks.

        With ``keep``, each new reply that has a turn after it is handed to it (and stored) before the
        next turn is sent: a run killed in the middle of a conversation resumes after its last stored
        turn, in the same assistant session, instead of sending the answered turns again. The last turn's
        reply (a one-turn sample's only one) comes back in :attr:`Answered.replies`, stored ahead of the
        results that use it."""
        if all(w.error or w.judge is None for w in group):
            return Answered(list(group), [], [])  # a bad sample is not sent: it is reported as invalid
        first = group[0].item
        sample = first.parent or first
        judged = self._judged_turns(sample, group)
        history = prior_turns(sample.data)
        if not history and not any(self.needs_answer(item.data) for item in judged):
            return Answered(list(group), [], [])  # every turn has its stored answer: nothing to ask
        stored = await self._stored(sample.sample_id)
        retried = self.retry is not None and any(w.item.sample_id in self.retry for w in group)
        if retried:  # the turns that failed are asked again; the answered ones are read back as on any resume
            stored = {turn: reply for turn, reply in stored.items() if reply.get("error") is None}
        sequence: list[tuple[dict[str, Any], DatasetItem | None]] = [
            ({**{k: v for k, v in sample.data.items() if k not in ("history", "turns")}, **h}, None) for h in history
        ]
        sequence += [(item.data, item) for item in judged]
        conversation = Conversation(id=f"bqas-{self.run_id}-{sample.sample_id}")
        replies: list[tuple[str, int, dict[str, Any]]] = []
        outcome: dict[
            int, tuple[TargetReply | None, str | None, list[str]]
        ] = {}  # judged turn -> (reply, problem, dialogue)
        dialogue: list[str] = []
        broken: str | None = None
        for index, (data, item) in enumerate(sequence):
            reply: TargetReply | None = None
            problem: str | None = None
            if index in stored:
                reply = TargetReply.from_stored(stored[index])
                if self.reuse_from is not None and reply.reused_from is None:
                    reply.reused_from = self.reuse_from
                if self.reuse_from is not None:
                    replies.append((sample.sample_id, index, reply.stored()))
            elif item is not None and not self.needs_answer(data):
                pass  # this turn's answer is in the dataset
            elif broken is not None:
                reply = TargetReply(turn=index, kind=self._kind(), error=f"not sent: {broken}")
            elif self.reuse_from is not None or self.client is None:
                source = self.reuse_from or self.run_id
                reply = TargetReply(
                    turn=index, kind=self._kind(), error=f"run {source} holds no reply for turn {index}"
                )
            else:
                if retried:
                    self.asked_again += 1
                try:
                    reply = await self.client.ask(data, conversation, index)
                except SampleProblem as exc:
                    problem = f"line {sample.line}: {exc}"
                if reply is not None:
                    row = (sample.sample_id, index, reply.stored())
                    if keep is not None and index < len(sequence) - 1:
                        await keep([row])  # stored before the next turn is sent
                    else:  # the last turn: stored ahead of the results that use it
                        replies.append(row)
            text = _user_text(self.target, data)
            answer = (reply.fields.get("response") if reply is not None else data.get("response")) or ""
            said = _said(reply, answer)
            if reply is not None and reply.error is None:
                conversation.remote_id = reply.conversation_id or conversation.remote_id
            if self.target is not None and self.target.type == "openai" and (reply is None or reply.error is None):
                conversation.messages += [
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": said},
                ]
            dialogue += [f"user: {text}", f"assistant: {answer}"]
            if reply is not None and reply.error is not None and broken is None:
                broken = f"turn {index} failed ({reply.error[:200]})"
            if problem is not None and broken is None:
                broken = f"turn {index} could not be sent"
            if item is not None:
                outcome[index] = (reply, problem, list(dialogue))
        answered = self._assemble(group, judged, outcome, replies, len(history), conversational=len(sequence) > 1)
        for work in answered.judge:  # the stored reply's key, for the viewer's raw reply
            if work.target is not None:
                work.target["sample_id"] = sample.sample_id
        for work, _, _ in answered.failed:
            if work.target is not None:
                work.target["sample_id"] = sample.sample_id
        return answered

    def _assemble(
        self,
        group: list[WorkItem],
        judged: list[DatasetItem],
        outcome: dict[int, tuple[TargetReply | None, str | None, list[str]]],
        replies: list[tuple[str, int, dict[str, Any]]],
        offset: int,
        *,
        conversational: bool,
    ) -> Answered:
        by_item = {id(item): offset + i for i, item in enumerate(judged)}
        ready: list[WorkItem] = []
        failed: list[tuple[WorkItem, str, bool]] = []
        for work in group:
            index = by_item.get(id(work.item))
            if index is None or work.error or work.judge is None:
                ready.append(work)
                continue
            reply, problem, dialogue = outcome[index]
            if problem is not None:
                failed.append((work, problem, False))
                continue
            if reply is None:
                data = {**work.item.data, "dialogue": dialogue} if conversational else work.item.data
                ready.append(replace(work, item=replace(work.item, data=data)))
                continue
            brief = reply.brief()
            if reply.error is not None:
                failed.append((replace(work, target=brief), reply.error, True))
                continue
            data = {**work.item.data, **reply.fields}
            if conversational:
                data["dialogue"] = dialogue
            ready.append(replace(work, item=replace(work.item, data=data), target=brief))
        return Answered(ready, failed, replies)

    @staticmethod
    def _judged_turns(sample: DatasetItem, group: list[WorkItem]) -> list[DatasetItem]:
        """The sample's judged turns in order: every turn of a conversation (a resumed run may have only
        some of them pending, yet the target must hear them all), else the sample itself."""
        from bqas.targets.conversation import turn_items

        if sample.parent is None and "turns" in sample.data:
            turns = turn_items(sample) or []
            if turns and all(t.error is None for t in turns):
                pending = {w.item.turn: w.item for w in group if w.item.turn is not None}
                return [pending.get(t.turn if t.turn is not None else -1, t) for t in turns]
        return [group[0].item]

    async def _stored(self, sample_id: str) -> dict[int, dict[str, Any]]:
        """The replies stored for this sample: this run's (resume), else the reused run's."""
        if self.store is None:
            return {}
        reused = self.reuse_from is not None and self.reused is not None and sample_id in self.reused
        if reused and self.reuse_from is not None and sample_id not in self.stored:
            return await asyncio.to_thread(self.store.target_replies, self.reuse_from, sample_id)
        if sample_id in self.stored:
            return await asyncio.to_thread(self.store.target_replies, self.run_id, sample_id)
        return {}

    def _kind(self) -> str:
        return self.target.type if self.target is not None else "reused"


def _said(reply: TargetReply | None, answer: Any) -> str:
    """What the assistant said in a turn, as the next request's history: its whole message for an openai
    target (``outputs`` may have picked a part of it), else the answer. A reply stored before the message
    was kept whole is read from its raw reply, unless that was cut (then the answer stands in)."""
    if reply is not None and reply.message is not None:
        return reply.message
    if reply is not None and reply.kind == "openai" and reply.raw and not reply.raw_truncated:
        import orjson

        try:
            message = orjson.loads(reply.raw)["choices"][0]["message"]["content"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            return str(answer)
        return message if isinstance(message, str) else str(answer)
    return str(answer)


def _user_text(target: Target | None, data: dict[str, Any]) -> str:
    if target is None:
        return str(data.get("user_input") or data.get("query") or data.get("question") or "")
    try:
        return user_message(target, data)
    except SampleProblem:
        return ""


def group_by_sample(items: Any) -> Any:
    """Consecutive work items of one sample (one dataset line) as lists, in order."""
    group: list[WorkItem] = []
    for work in items:
        if group and work.item.line != group[0].item.line:
            yield group
            group = []
        group.append(work)
    if group:
        yield group
