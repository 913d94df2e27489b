"""``bqas synth-rag`` without the command line: documents in, a RAG test set with ground truth out.

:func:`synth_rag` reads the documents, chunks them, asks a generator for candidates per kind (offline:
extractive, :mod:`bqas.ragsynth.offline`), runs the quality filters and keeps up to ``count`` items,
mixing the kinds by :data:`~bqas.ragsynth.kinds.DEFAULT_MIX` (a kind without material gives its share to
the others). Everything random comes from one ``random.Random(seed)``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bqas.offline.embeddings import Embedder
from bqas.ragsynth.chunks import DEFAULT_MAX_CHARS, Passage, chunk_sections
from bqas.ragsynth.documents import DEFAULT_MAX_BYTES, Corpus, Unreadable, read_documents
from bqas.ragsynth.filters import DEFAULT_DEDUP_THRESHOLD, DEFAULT_MAX_OVERLAP, QualityFilters
from bqas.ragsynth.items import RagItem, to_record
from bqas.ragsynth.kinds import DEFAULT_MIX, KINDS, load_kinds
from bqas.ragsynth.offline import (
    extractive_items,
    multi_passage_items,
    operator_items,
    paraphrase_items,
    unanswerable_items,
    with_persona,
)


@dataclass
class SynthRagRequest:
    """What to generate from which documents."""

    docs: list[Path]
    count: int
    language: str = "de"
    kinds: tuple[str, ...] = KINDS
    seed: int | None = None
    typos: bool = False
    max_overlap: float = DEFAULT_MAX_OVERLAP
    dedup_threshold: float = DEFAULT_DEDUP_THRESHOLD
    grounding: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    max_chars: int = DEFAULT_MAX_CHARS
    #: Who asks (teacher, student, technician: the personas of the paraphrase kind's file), or None.
    persona: str | None = None


@dataclass
class SynthRagReport:
    """The kept records, what was dropped and why, and what could not be read."""

    backend: str
    requested: int
    records: list[dict[str, Any]]
    kept_per_kind: dict[str, int]
    dropped: dict[str, int]
    candidates: dict[str, int]
    documents: list[str]
    unreadable: list[Unreadable]
    other_language: dict[str, str] = field(default_factory=dict)
    passages: int = 0
    llm_calls: int = 0
    #: Why generation stopped early (the LLM unreachable), None otherwise.
    error: str | None = None

    @property
    def kept(self) -> int:
        return len(self.records)

    @property
    def complete(self) -> bool:
        return self.kept >= self.requested


class NoMaterialError(ValueError):
    """Nothing to generate from (no readable document, or none in the requested language)."""


def load_passages(request: SynthRagRequest) -> tuple[Corpus, list[Passage], dict[str, str]]:
    """Read and chunk the documents; the passages in the requested language, and the files in another one.

    NoMaterialError when no file could be read or none is in the requested language."""
    corpus = read_documents(request.docs, max_bytes=request.max_bytes)
    if not corpus.read:
        why = "; ".join(f"{u.source}: {u.reason}" for u in corpus.unreadable[:5]) or "the folder is empty"
        raise NoMaterialError(f"no readable document under {', '.join(map(str, request.docs))} ({why})")
    passages = chunk_sections(corpus.sections, max_chars=request.max_chars)
    per_file: dict[str, Counter[str]] = {}
    for p in passages:
        per_file.setdefault(p.source, Counter())[p.language] += len(p.text)
    other = {src: c.most_common(1)[0][0] for src, c in per_file.items() if c.most_common(1)[0][0] != request.language}
    if len(other) == len(per_file):
        found = ", ".join(sorted({lang for lang in other.values()}))
        raise NoMaterialError(
            f"no document in {request.language!r}: the documents are in {found} "
            f"(pass --language {sorted(set(other.values()))[0]} or other documents)"
        )
    return corpus, passages, other


def candidate_pools(
    request: SynthRagRequest, passages: Sequence[Passage], rng: random.Random
) -> dict[str, list[RagItem]]:
    """Candidates per kind from the passages in the requested language, each pool shuffled by ``rng``."""
    kinds = load_kinds()
    lang = request.language
    mine = [p for p in passages if p.language == lang]
    facts = extractive_items(kinds["fact"], mine, lang)
    numbers = extractive_items(kinds["number"], mine, lang)
    pools: dict[str, list[RagItem]] = {"fact": facts, "number": numbers}
    pools["paraphrase"] = paraphrase_items(kinds["paraphrase"], facts + numbers, lang, rng, typos=request.typos)
    pools["multi_passage"] = multi_passage_items(kinds["multi_passage"], numbers, lang, rng)
    pools["unanswerable"] = unanswerable_items(kinds["unanswerable"], mine, lang)
    pools["operator"] = operator_items(kinds["operator"], mine, lang, rng)
    if request.persona is not None:
        openers = ((kinds["paraphrase"].personas or {})[request.persona]).get(lang, ())
        colloquial = [o.split("{q}")[0] for o in (kinds["paraphrase"].openers or {}).get(lang, ())]
        pools = {k: with_persona(v, openers, request.persona, rng, colloquial) for k, v in pools.items()}
    out: dict[str, list[RagItem]] = {}
    for name in request.kinds:
        pool = list(pools.get(name, []))
        rng.shuffle(pool)
        out[name] = pool
    return out


def quotas(count: int, available: Sequence[str]) -> dict[str, int]:
    """How many items of each available kind a set of ``count`` holds (largest remainder on the mix)."""
    if not available:
        return {}
    total = sum(DEFAULT_MIX.get(k, 0.1) for k in available)
    raw = {k: count * DEFAULT_MIX.get(k, 0.1) / total for k in available}
    out = {k: int(v) for k, v in raw.items()}
    for k in sorted(available, key=lambda k: -(raw[k] - out[k]))[: count - sum(out.values())]:
        out[k] += 1
    return out


def select(
    pools: dict[str, list[RagItem]],
    count: int,
    filters: QualityFilters,
    on_keep: Callable[[int], None] | None = None,
) -> tuple[list[RagItem], Counter[str]]:
    """Keep up to ``count`` items, kinds in turn (to their quota first, then any kind with candidates
    left), each through the filters; one item per source sentence among the single-passage kinds."""
    dropped: Counter[str] = Counter()
    kept: list[RagItem] = []
    used: set[str] = set()
    cursor = dict.fromkeys(pools, 0)
    quota = quotas(count, [k for k, pool in pools.items() if pool])
    per_kind: Counter[str] = Counter()

    def next_from(kind: str) -> bool:
        """Offer the kind's candidates until one is kept; False when its pool is spent."""
        pool = pools[kind]
        while cursor[kind] < len(pool):
            item = pool[cursor[kind]]
            cursor[kind] += 1
            if item.kind in ("fact", "number", "paraphrase") and item.key in used:
                continue
            reason = filters.check(item)
            if reason is not None:
                dropped[reason] += 1
                continue
            kept.append(item)
            used.add(item.key)
            per_kind[kind] += 1
            if on_keep is not None:
                on_keep(1)
            return True
        return False

    # Unanswerable questions are cheap to make; past their quota they fill at most a quarter of the set.
    cap = {"unanswerable": max(quota.get("unanswerable", 0), -(-count // 4))}
    for phase_quota in (True, False):
        active = [k for k in pools if pools[k]]
        while len(kept) < count and active:
            for kind in list(active):
                if len(kept) >= count:
                    break
                limit = quota.get(kind, 0) if phase_quota else cap.get(kind, count)
                if per_kind[kind] >= limit:
                    active.remove(kind)
                    continue
                if not next_from(kind):
                    active.remove(kind)
    return kept, dropped


def synth_rag(
    request: SynthRagRequest,
    embedder: Embedder | None,
    on_keep: Callable[[int], None] | None = None,
) -> SynthRagReport:
    """Generate with the offline generator; NoMaterialError when the documents give nothing to read."""
    corpus, passages, other = load_passages(request)
    rng = random.Random(request.seed)
    pools = candidate_pools(request, passages, rng)
    filters = QualityFilters(
        request.language,
        passages,
        embedder,
        max_overlap=request.max_overlap,
        dedup_threshold=request.dedup_threshold,
        grounding=request.grounding,
    )
    kept, dropped = select(pools, request.count, filters, on_keep)
    records = [to_record(item, i, "synth-rag:offline") for i, item in enumerate(kept, start=1)]
    return SynthRagReport(
        backend="offline",
        requested=request.count,
        records=records,
        kept_per_kind=dict(Counter(item.kind for item in kept)),
        dropped=dict(dropped),
        candidates={k: len(v) for k, v in pools.items()},
        documents=corpus.read,
        unreadable=corpus.unreadable,
        other_language=other,
        passages=len(passages),
    )
