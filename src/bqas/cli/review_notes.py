"""What the review loop says during ``bqas run``, held back and summarised after the run.

The review loop logs each new error category and each alert as it happens (the right thing in the
service's log). On the command line those lines used to land before the progress bar, a dozen at a
time, with a relative ``/review/queue?…`` path although no server runs. :func:`held_review_notes`
collects them while the run works and :func:`print_review_notes` prints one short summary after it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import typer

from bqas.textsafe import printable


@dataclass
class ReviewNotes:
    """The review loop's messages of one run: new categories, alerts, anything else it warned about."""

    categories: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


class _Collector(logging.Handler):
    def __init__(self, notes: ReviewNotes):
        super().__init__(logging.WARNING)
        self.notes = notes

    def emit(self, record: logging.LogRecord) -> None:
        data = getattr(record, "bqas_review", None)
        event = data.get("event") if isinstance(data, dict) else None
        if event == "new_category":
            self.notes.categories.append(data)  # type: ignore[arg-type]
        elif event == "alert":
            self.notes.alerts.append(data)  # type: ignore[arg-type]
        else:
            self.notes.other.append(f"{record.levelname.lower()}: {record.getMessage()}")


@contextmanager
def held_review_notes(notes: ReviewNotes) -> Iterator[ReviewNotes]:
    """Collect the ``bqas.review`` warnings into ``notes`` instead of printing them, until the block ends."""
    logger = logging.getLogger("bqas.review")
    handler = _Collector(notes)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield notes
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def in_ci() -> bool:
    """True in a CI job (``CI`` set, as GitHub Actions, GitLab and most CI systems do): the local review
    queue and its page (`bqas review`) are not there to open, so their pointers are left out of the log."""
    import os

    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def print_review_notes(notes: ReviewNotes, verbose: bool = False) -> None:
    """One summary of the review loop after the run: one line for the new categories (counted per judge;
    each listed with ``verbose``), the alerts, the rest. In CI only with ``verbose``."""
    if in_ci() and not verbose:
        return
    if notes.categories:
        by_judge: dict[str, list[str]] = {}
        for cat in notes.categories:
            by_judge.setdefault(str(cat.get("judge")), []).append(str(cat.get("category")))
        parts = ", ".join(f"{judge} {len(cats)}" for judge, cats in sorted(by_judge.items()))
        n = len(notes.categories)
        typer.echo(
            f"review: {n} new error categor{'y' if n == 1 else 'ies'} ({parts}); "
            + ("listed below" if verbose else "`bqas runs --verbose` lists them")
        )
        if verbose:
            for judge, cats in sorted(by_judge.items()):
                for name in cats:
                    typer.echo(printable(f"  {judge}: {name}"))
    for alert in notes.alerts:
        window = float(alert.get("window_seconds") or 0)
        typer.echo(
            f"alert: judge {alert.get('judge')} had {alert.get('count')} failed verdicts within {window:g} s "
            f"(threshold {alert.get('threshold')}); `bqas review` opens the queue (filter: judge "
            f"{alert.get('judge')}, verdict failed)"
        )
    for line in notes.other:
        typer.echo(line, err=True)
