"""The LLM generator of ``bqas synth-rag``: the same items as the offline one, written by an LLM through
the one LLM seam (:class:`bqas.llm.client.LLMClient`: structured output, retries, cache).

Each round shows the LLM a few passages (fenced as data, each with its chunk id) and asks for the
missing number of items in the prompt of ``llm_prompt/`` (de/en/zh, data like a judge's). Every item is
checked before the quality filters: its chunk ids must be among those shown, and each supporting
sentence must stand in one of its passages (whitespace aside); the reference is then checked against
those sentences by the grounding filter like an offline item. The AFB of an operator item comes from the
operator table, never from the LLM.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bqas.judging.parse import extract_json, parse_reply
from bqas.judging.render import format_value, render_prompt
from bqas.judgment.spec import JudgeSpec, load_judge, load_policy
from bqas.llm.client import LLMClient, LLMError
from bqas.offline.embeddings import Embedder
from bqas.ragsynth.chunks import Passage
from bqas.ragsynth.filters import QualityFilters
from bqas.ragsynth.generate import SynthRagReport, SynthRagRequest, load_passages
from bqas.ragsynth.items import RagItem, to_record
from bqas.ragsynth.kinds import load_kinds

#: Passages shown per round, and items asked for per round at most.
PASSAGES_PER_ROUND = 4
ITEMS_PER_ROUND = 10


@cache
def load_spec() -> JudgeSpec:
    """The generator's prompt folder (``bqas/ragsynth/llm_prompt``)."""
    return load_judge(Path(str(resources.files("bqas.ragsynth") / "llm_prompt")), load_policy())


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def build_messages(
    spec: JudgeSpec, passages: Sequence[Passage], count: int, kinds: Sequence[str], language: str
) -> list[dict[str, str]]:
    """The chat messages of one round."""
    shown = [f"[{p.chunk_id}] {p.heading + ': ' if p.heading else ''}{p.text}" for p in passages]
    values = {"count": count, "kinds": ", ".join(kinds), "passages": format_value(shown, "-")}
    return list(render_prompt(spec, values, language).messages)


def read_items(
    text: str, spec: JudgeSpec, passages: Sequence[Passage], request: SynthRagRequest
) -> tuple[list[RagItem], Counter[str]]:
    """The valid items of one reply, and the invalid ones counted by reason."""
    dropped: Counter[str] = Counter()
    parsed = parse_reply(text, spec.schema)
    if parsed.ok and isinstance(parsed.data, list):
        raw_items: list[Any] = parsed.data
    else:
        value, _repairs, error = extract_json(text, top="array")
        if error is not None or not isinstance(value, list):
            dropped["bad_structure"] += 1
            return [], dropped
        raw_items = value
    by_id = {p.chunk_id: p for p in passages}
    items: list[RagItem] = []
    for raw in raw_items:
        item, reason = _item(raw, by_id, request)
        if item is None:
            dropped[reason or "bad_structure"] += 1
        else:
            items.append(item)
    return items, dropped


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def _item(raw: Any, by_id: Mapping[str, Passage], request: SynthRagRequest) -> tuple[RagItem | None, str | None]:
    if not isinstance(raw, Mapping):
        return None, "bad_structure"
    kind, query, reference = raw.get("kind"), raw.get("query"), raw.get("reference")
    support, ids, concepts = (_strings(raw.get(k)) for k in ("supporting_sentences", "chunk_ids", "expected_concepts"))
    if not isinstance(query, str) or not query.strip() or not isinstance(reference, str) or support is None:
        return None, "bad_structure"
    if ids is None or concepts is None or kind not in request.kinds:
        return None, "bad_structure"
    lang = request.language
    query = " ".join(query.split())
    if kind == "unanswerable":
        fixed = (load_kinds()["unanswerable"].reference or {}).get(lang, reference)
        return RagItem(kind, lang, query, fixed, [], [], [], key=query, topic=query), None
    chosen = [by_id[i] for i in dict.fromkeys(ids) if i in by_id]
    if not chosen or len(chosen) != len(set(ids)) or not support or not reference.strip():
        return None, "bad_structure"
    if kind == "multi_passage" and len(chosen) < 2:
        return None, "bad_structure"
    texts = [_squash(p.text) for p in chosen]
    if not all(any(_squash(s) in t for t in texts) for s in support):
        return None, "unsupported_quote"
    extra: dict[str, Any] = {}
    if kind == "operator":
        from bqas.offline.operators import find_operator, load_operators

        op = find_operator(str(raw.get("operator") or query.split()[0]), load_operators())
        if op is None:
            return None, "bad_structure"
        extra = {"operator": op.name, "expected_afb": op.afb, "expected_actions": list(op.actions)}
    item = RagItem(kind, lang, query, reference.strip(), chosen, support, concepts[:8], key=query, extra=extra)
    return item, None


async def synth_rag_llm(
    request: SynthRagRequest,
    client: LLMClient,
    embedder: Embedder | None,
    on_keep: Callable[[int], None] | None = None,
    *,
    max_rounds: int = 20,
) -> SynthRagReport:
    """Generate with the LLM until ``count`` items are kept or ``max_rounds`` requests were made."""
    corpus, passages, other = load_passages(request)
    lang = request.language
    mine = [p for p in passages if p.language == lang]
    spec = load_spec()
    rng = random.Random(request.seed)
    order = list(mine)
    rng.shuffle(order)
    filters = QualityFilters(lang, passages, embedder, max_overlap=request.max_overlap,
                             dedup_threshold=request.dedup_threshold, grounding=request.grounding)  # fmt: skip
    kinds = [k for k in request.kinds if k != "operator" or lang == "de"]
    kept: list[RagItem] = []
    dropped: Counter[str] = Counter()
    offered: Counter[str] = Counter()
    calls = 0
    error: str | None = None
    for round_ in range(max_rounds):
        need = request.count - len(kept)
        if need <= 0 or not order:
            break
        start = (round_ * PASSAGES_PER_ROUND) % len(order)
        batch = (order[start:] + order[:start])[:PASSAGES_PER_ROUND]
        messages = build_messages(spec, batch, min(need, ITEMS_PER_ROUND), kinds, lang)
        try:
            completion = await client.complete(
                messages,
                schema=spec.schema,
                schema_name=spec.name,
                accept=lambda t: parse_reply(t, spec.schema).ok,
                max_tokens=spec.max_tokens,
            )
        except LLMError as exc:
            error = f"LLM unavailable: {exc}"
            break
        calls += 1
        items, invalid = read_items(completion.text, spec, batch, request)
        dropped.update(invalid)
        for item in items:
            offered[item.kind] += 1
            if len(kept) >= request.count:
                break
            reason = filters.check(item)
            if reason is not None:
                dropped[reason] += 1
                continue
            kept.append(item)
            if on_keep is not None:
                on_keep(1)
    records = [to_record(item, i, "synth-rag:llm") for i, item in enumerate(kept, start=1)]
    return SynthRagReport(
        backend="llm",
        requested=request.count,
        records=records,
        kept_per_kind=dict(Counter(item.kind for item in kept)),
        dropped=dict(dropped),
        candidates=dict(offered),
        documents=corpus.read,
        unreadable=corpus.unreadable,
        other_language=other,
        passages=len(passages),
        llm_calls=calls,
        error=error,
    )
