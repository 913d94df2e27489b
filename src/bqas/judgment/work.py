"""The units a run works on: a sample of the dataset and one judgment to make of it.

The runner makes them and the targets stage fills in what the assistant under test answered; both import
them from here, below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DatasetItem:
    """One sample of the dataset; ``error`` is set when the line itself is unusable."""

    line: int
    sample_id: str
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # One turn of a conversation (a sample with ``turns:``): the whole sample and this turn's index.
    parent: DatasetItem | None = None
    turn: int | None = None


@dataclass(frozen=True)
class WorkItem:
    """One judgment to make: a sample (or one turn of it) and a judge, under a key unique in its run."""

    key: str
    seq: int
    judge: str | None
    item: DatasetItem
    error: str | None = None
    repeat: int = 1  # 1..N with --repeats
    # What the assistant under test answered for this item's sample (bqas.targets; TargetReply.brief()).
    target: dict[str, Any] | None = None
