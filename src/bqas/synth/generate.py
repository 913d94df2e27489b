"""``bqas synth`` without the command line: generate, validate, deduplicate, retry until ``count``."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bqas.judgment.spec import JudgeSpec
from bqas.llm.client import LLMClient, LLMError
from bqas.offline.embeddings import Embedder
from bqas.synth.dedup import DEFAULT_THRESHOLD, NearDuplicateFilter
from bqas.synth.dialects import DialectBook, load_dialects
from bqas.synth.items import Collector, to_records
from bqas.synth.llm import ask, build_messages, read_reply
from bqas.synth.offline import generate_candidates
from bqas.synth.patterns import PatternBook, load_patterns, merge_patterns

SynthBackend = Literal["llm", "offline"]


@dataclass
class SynthRequest:
    """What to generate."""

    intent: str
    count: int
    typos: bool = False
    dialect: str | None = None
    patterns_file: Path | None = None
    seed: int | None = None
    threshold: float = DEFAULT_THRESHOLD
    max_rounds: int = 5
    language: str = "de"
    #: How many avoid-list items the LLM is shown in later rounds (the newest kept ones).
    max_avoid: int = 200


@dataclass
class SynthReport:
    """The kept records and why the rest was dropped."""

    backend: SynthBackend
    requested: int
    records: list[dict[str, Any]]
    dropped: dict[str, int]
    rounds: int
    broken_replies: list[str] = field(default_factory=list)
    salvaged: int = 0
    error: str | None = None
    candidates: int = 0

    @property
    def kept(self) -> int:
        return len(self.records)

    @property
    def complete(self) -> bool:
        return self.kept >= self.requested


def _tags(request: SynthRequest, dialects: DialectBook) -> list[str]:
    tags = ["typos"] if request.typos else []
    if request.dialect is not None:
        tags.append(dialects.get(request.dialect).tag)
    return tags


def prepare(request: SynthRequest) -> tuple[PatternBook, DialectBook]:
    """Load patterns (plus ``--patterns``) and dialects; ValueError/KeyError on bad input."""
    book = load_patterns()
    if request.patterns_file is not None:
        book = merge_patterns(book, request.patterns_file, request.intent)
    dialects = load_dialects()
    if request.dialect is not None:
        dialects.get(request.dialect)
    book.for_intent(request.intent)  # KeyError: no patterns for this intent
    return book, dialects


def generate_offline(
    request: SynthRequest, embedder: Embedder | None, on_keep: Callable[[int], None] | None = None
) -> SynthReport:
    """Offline generation: pattern variations until ``count`` kept or ``max_rounds`` rounds spent.

    A round draws ``max(20, 4 × missing)`` candidates; template variations collide often, so several
    rounds are normal (the round limit for offline is ``max_rounds × 10``)."""
    book, dialects = prepare(request)
    dialect = dialects.get(request.dialect) if request.dialect else None
    rng = random.Random(request.seed)
    stream = generate_candidates(book, request.intent, rng, typos=request.typos, dialect=dialect)
    collector = Collector(request.intent, request.count, NearDuplicateFilter(embedder, request.threshold))
    collector.on_keep = on_keep
    rounds = 0
    offered = 0
    while collector.need and rounds < request.max_rounds * 10:
        rounds += 1
        batch = [next(stream) for _ in range(max(20, 4 * collector.need))]
        offered += len(batch)
        # Surplus candidates of the last round were never asked for: they are not counted as dropped.
        collector.offer(batch, count_surplus=False)
    records = to_records(request.intent, collector.kept, _tags(request, dialects), "synth:offline")
    return SynthReport("offline", request.count, records, dict(collector.dropped), rounds, candidates=offered)


async def generate_llm(
    request: SynthRequest,
    spec: JudgeSpec,
    client: LLMClient,
    embedder: Embedder | None,
    on_keep: Callable[[int], None] | None = None,
) -> SynthReport:
    """LLM generation: ask, validate item by item, deduplicate, ask again for the rest (``max_rounds``)."""
    book, dialects = prepare(request)
    patterns = [p.display for p in book.for_intent(request.intent).patterns]
    instruction = dialects.instruction(request.dialect, request.language)
    collector = Collector(request.intent, request.count, NearDuplicateFilter(embedder, request.threshold))
    collector.on_keep = on_keep
    report = SynthReport("llm", request.count, [], {}, 0)
    while collector.need and report.rounds < request.max_rounds:
        report.rounds += 1
        avoid = [c.text for c in collector.kept][-request.max_avoid :]
        messages = build_messages(
            spec,
            intent=request.intent,
            count=collector.need,
            patterns=patterns,
            typos=request.typos,
            dialect_instruction=instruction,
            language=request.language,
            avoid=avoid,
        )
        try:
            text = await ask(client, spec, messages)
        except LLMError as exc:
            report.error = f"LLM unavailable: {exc}"
            break
        outcome = read_reply(text, spec, request.intent)
        if outcome.broken is not None:
            report.broken_replies.append(outcome.broken)
            report.salvaged += outcome.salvaged
        for reason, n in outcome.dropped.items():
            collector.drop(reason, n)
        report.candidates += len(outcome.candidates) + sum(outcome.dropped.values())
        collector.offer(outcome.candidates)
    report.records = to_records(request.intent, collector.kept, _tags(request, dialects), "synth:llm")
    report.dropped = dict(collector.dropped)
    return report
