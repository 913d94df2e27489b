"""One call after each batch of results: memory, consistency check, review queue, alerts, new categories."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bqas.logs import get_logger
from bqas.review.alerts import AlertConfigError, check_alerts
from bqas.review.categories import flag_categories, forget_known
from bqas.review.labels import spec_for
from bqas.review.memory import (
    consistency_check,
    embedder,
    input_text,
    prune_memory,
    reviewed_set,
    to_bytes,
    warning_reason,
)
from bqas.review.queue import insert_items, item_rows
from bqas.review.records import dimension_values, insert_for, is_judgment, record_inputs, record_source, record_time
from bqas.review.settings import ReviewSettings, get_review_settings
from bqas.review.tables import Judgment
from bqas.store.db import Store

if TYPE_CHECKING:
    from bqas.judgment.spec import JudgeRegistry

log = get_logger("bqas.review")


def _registry(registry: JudgeRegistry | None) -> JudgeRegistry | None:
    if registry is not None:
        return registry
    from bqas.judgment.spec import default_registry

    try:
        return default_registry()
    except ValueError:  # a broken judge folder must not stop the review loop; specs are then unknown
        log.exception("review: cannot load the judge registry")
        return None


def process_results(
    store: Store,
    tenant: str,
    records: Sequence[Mapping[str, Any]],
    *,
    settings: ReviewSettings | None = None,
    source: str = "",
    samples: Sequence[Mapping[str, Any] | None] | None = None,
    registry: JudgeRegistry | None = None,
) -> list[dict[str, Any]]:
    """Run the review loop over a batch of result records of ``tenant`` and return the records, amended.

    1. Each judgment (scored or unscored) is stored in the memory with an embedding of its input.
    2. The consistency check compares it with the most similar reviewed cases; a deviation beyond the
       margin adds ``consistency_warning``, ``escalation = "human_review"`` and a reason.
    3. Records with ``escalation`` enter the tenant's review queue.
    4. New error categories are flagged (once per tenant and judge) and logged.
    5. Alert windows of the judges with ``failed`` verdicts are checked (webhooks go out in the background).

    Inputs come from each record's ``inputs`` (the runner adds them) or from ``samples`` aligned with
    ``records``; ``source`` names the batch (run or job id) where records carry no ``run_id``/``job_id``.
    Records are copied, never changed in place. Steps 1, 3 and 4 are one transaction.
    """
    settings = settings or get_review_settings()
    registry = _registry(registry)
    # A shallow copy is enough: below, only top-level keys of a record are set, nested values are replaced
    # (never changed in place). A deep copy of every record was a tenth of the review loop's CPU.
    out = [dict(r) for r in records]
    now = time.time()
    judged = [i for i, r in enumerate(out) if is_judgment(r)]
    if not judged:
        return out
    inputs: dict[int, Any] = {}
    for i in judged:
        spec = spec_for(registry, str(out[i]["judge"]))
        sample = samples[i] if samples is not None and i < len(samples) else None
        inputs[i] = record_inputs(out[i], sample, list(spec.inputs) if spec else None)
        if inputs[i] and not out[i].get("inputs"):
            out[i]["inputs"] = inputs[i]

    vectors: dict[int, Any] = {}
    emb_name: str | None = None
    if settings.memory:
        emb = embedder()
        emb_name = emb.name
        # Embedding an input costs as much as judging it offline, so embed only what the memory uses: the
        # inputs of judges that have enough reviewed cases to compare with. Queued items without a vector
        # get one when they are reviewed (queue._remember); other judgments are kept without one.
        judges = {str(out[i]["judge"]) for i in judged}
        cases = {j: reviewed_set(store, tenant, j, emb_name) for j in judges}
        comparable = {j for j, c in cases.items() if len(c.cases) >= settings.memory_min_neighbours}
        texts = {
            i: input_text(inputs[i], settings.memory_max_chars) for i in judged if str(out[i]["judge"]) in comparable
        }
        with_text = [i for i, text in texts.items() if text]
        if with_text:
            matrix = emb.embed([texts[i] for i in with_text])
            vectors = {i: matrix[n] for n, i in enumerate(with_text)}
        for i, vector in vectors.items():
            warning = consistency_check(
                store,
                tenant,
                out[i],
                settings.memory_k,
                settings.memory_margin,
                dimension_margin=settings.memory_dimension_margin,
                min_similarity=settings.memory_min_similarity,
                min_neighbours=settings.memory_min_neighbours,
                vector=vector,
                registry=registry,
                cases=cases[str(out[i]["judge"])],
            )
            if warning is not None:
                out[i]["consistency_warning"] = warning
                out[i]["escalation"] = "human_review"
                out[i]["escalation_reasons"] = [*(out[i].get("escalation_reasons") or []), warning_reason(warning)]
        # Store a vector only where it will be used: on items that enter the queue.
        vectors = {i: v for i, v in vectors.items() if out[i].get("escalation")}

    memory_rows = [
        {
            "tenant": tenant,
            "source": record_source(out[i], source),
            "response_id": str(out[i]["response_id"])[:300],
            "judge": str(out[i]["judge"])[:100],
            "language": out[i].get("language"),
            "verdict": out[i].get("verdict"),
            "composite": out[i].get("composite_score"),
            "scores": dimension_values(out[i]),
            "at": record_time(out[i], now),
            "embedder": emb_name if i in vectors else None,
            "embedding": to_bytes(vectors[i]) if i in vectors else None,
        }
        for i in judged
    ]
    queue_rows = item_rows(tenant, out, source=source, registry=registry)
    try:
        with store.session.begin() as s:
            # executemany with one parameter set per row: SQLAlchemy compiles the statement once and caches
            # it ("insertmanyvalues"); .values(rows) compiled a new multi-row INSERT for every batch.
            s.connection().execute(
                insert_for(store)(Judgment.__table__).on_conflict_do_nothing(
                    index_elements=["tenant", "source", "response_id", "judge"]
                ),
                memory_rows,
            )
            queued = insert_items(store, s, queue_rows)
            new = flag_categories(store, s, tenant, out, source=source, registry=registry, now=now)
    except Exception:
        forget_known()  # the categories cached as known were rolled back with the transaction
        raise
    for cat in new:
        log.warning(
            "new error category: tenant=%s judge=%s category=%s (first seen on %s/%s)",
            tenant, cat.judge, cat.category, cat.source, cat.response_id,
            extra={"bqas_review": {"event": "new_category", "judge": cat.judge, "category": cat.category,
                                   "response_id": cat.response_id}},
        )  # fmt: skip
    failing = {str(out[i]["judge"]) for i in judged if out[i].get("verdict") == "failed"}
    if failing:
        try:
            check_alerts(store, tenant, failing, settings, now=now)
        except AlertConfigError as exc:  # a broken alerts file is logged; scoring goes on
            log.error("review alerts: %s", exc)
    if queued:
        log.debug("review: %d item(s) queued for tenant %s", queued, tenant)
    if settings.memory_retention_days > 0:
        prune_memory(store, tenant, settings.memory_retention_days, now=now)
    return out
