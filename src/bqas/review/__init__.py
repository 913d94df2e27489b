"""The human review loop: escalations to a review queue, a review page, gold labels, alerts on repeated
failures, new error categories, and a memory of past judgments for consistency checks.

Entry point after each batch of results: :func:`bqas.review.process.process_results`.

The names below load their module on first use: ``bqas.review.settings`` is read at the start of every
run and service, and importing the whole loop with it (SQLAlchemy ORM, numpy) cost a second of start-up.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.review.categories import NewCategory, new_categories
    from bqas.review.gold import gold_records
    from bqas.review.memory import calibration_examples, consistency_check
    from bqas.review.process import process_results
    from bqas.review.queue import enqueue_escalations
    from bqas.review.settings import ReviewSettings, get_review_settings

_MODULES = {
    "NewCategory": "categories",
    "new_categories": "categories",
    "gold_records": "gold",
    "calibration_examples": "memory",
    "consistency_check": "memory",
    "process_results": "process",
    "enqueue_escalations": "queue",
    "ReviewSettings": "settings",
    "get_review_settings": "settings",
}

__all__ = [
    "NewCategory",
    "ReviewSettings",
    "calibration_examples",
    "consistency_check",
    "enqueue_escalations",
    "get_review_settings",
    "gold_records",
    "new_categories",
    "process_results",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"bqas.review.{module}"), name)
