"""Read JSON Lines with line numbers: one place that decides what a bad line is and how it is reported.

Scenario datasets, gold files, intent examples and `bqas score` input all use it, so every error reads
``FILE:LINE: invalid JSON: … (column N)``, ``FILE:LINE: expected a JSON object, got list`` or, for values
that :mod:`bqas.untrusted` refuses, ``FILE:LINE: field response: invalid Unicode: lone surrogate …``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from bqas.untrusted import UntrustedValueError, loads


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line: its 1-based number and either the object or the problem (without file prefix)."""

    line: int
    value: dict[str, Any] | None
    problem: str | None = None

    def error(self, name: str) -> str:
        """The problem as ``name:line: problem``."""
        return f"{name}:{self.line}: {self.problem}"


def iter_json_objects(lines: Iterable[str]) -> Iterator[JsonLine]:
    """Parse each non-blank line as a JSON object; bad lines come back with ``problem`` set, never raised."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = loads(raw)
        except json.JSONDecodeError as exc:
            yield JsonLine(number, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        except UntrustedValueError as exc:  # invalid Unicode, NaN/Infinity, deep nesting (bqas.untrusted)
            yield JsonLine(number, None, str(exc))
            continue
        if not isinstance(value, dict):
            yield JsonLine(number, None, f"expected a JSON object, got {type(value).__name__}")
            continue
        yield JsonLine(number, value)
