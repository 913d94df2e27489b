"""One figure of ``calibration.json`` as text: its value, its 95 % interval where it has one, and its n.

The console tables (:mod:`.console`) and the HTML page (:mod:`.html`) show the same figures the same way;
only the markup around the parts differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FigureText:
    """The parts of one figure: ``value`` (``12.5 %``), ``interval`` (`` [8.1–18.2]`` or empty) and ``n``;
    ``missing`` when there is no figure at all, ``undefined`` (the reason) when it has no value."""

    value: str = ""
    interval: str = ""
    n: int = 0
    missing: bool = False
    undefined: str | None = None

    def plain(self) -> str:
        """``12.5 % [8.1–18.2] (n=120)``, ``undefined (reason)`` or ``–``."""
        if self.missing:
            return "–"
        if self.undefined is not None:
            return f"undefined ({self.undefined})"
        return f"{self.value}{self.interval} (n={self.n})"


def figure_text(data: Mapping[str, Any] | None, percent: bool = False) -> FigureText:
    """The parts of a figure dict (``value``, ``interval``, ``n``, ``undefined``); ``percent`` shows shares as %."""
    if not data:
        return FigureText(missing=True)
    value = data.get("value")
    if value is None:
        return FigureText(undefined=str(data.get("undefined") or "no data"))
    text = f"{100 * value:.1f} %" if percent else f"{value:.3f}"
    interval = data.get("interval")
    span = ""
    if interval:
        lo, hi = interval
        span = f" [{100 * lo:.1f}–{100 * hi:.1f}]" if percent else f" [{lo:.3f}–{hi:.3f}]"
    return FigureText(text, span, int(data.get("n") or 0))


def language_figures(block: Mapping[str, Any]) -> list[tuple[Mapping[str, Any] | None, bool]]:
    """The figures of one language's row, each with whether it is a share: FPR, FNR, accuracy
    (accept/reject), verdict agreement, Cohen's κ (verdict), abstention."""
    reject, verdicts = block["reject"], block["verdicts"]
    return [
        (reject["fpr"], True),
        (reject["fnr"], True),
        (reject["accuracy"], True),
        (verdicts["agreement"], True),
        (verdicts["kappa"], False),
        (block["abstention_rate"], True),
    ]
