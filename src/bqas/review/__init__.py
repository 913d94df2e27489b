"""The human review loop: escalations to a review queue, a review page, gold labels, alerts on repeated
failures, new error categories, and a memory of past judgments for consistency checks.

Entry point after each batch of results: :func:`bqas.review.process.process_results`.
"""

from __future__ import annotations

from bqas.review.categories import NewCategory, new_categories
from bqas.review.gold import gold_records
from bqas.review.memory import calibration_examples, consistency_check
from bqas.review.process import process_results
from bqas.review.queue import enqueue_escalations
from bqas.review.settings import ReviewSettings, get_review_settings

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
