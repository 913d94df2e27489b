"""The red-team table of a run's viewer page: attack success per plugin × strategy, with the refusal rate
and the canaries leaked, read from the summary the run stored when it finished (nothing is recomputed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _pct(cell: Mapping[str, Any] | None) -> str:
    if not cell or not cell.get("attacks"):
        return ""
    rate = cell.get("success_rate")
    shown = "–" if rate is None else f"{100 * rate:.1f} %"
    return f"{shown} ({cell.get('successes', 0)}/{cell.get('graded', 0)})"


def _refused(cell: Mapping[str, Any] | None) -> str:
    rate = (cell or {}).get("refusal_rate")
    return "–" if rate is None else f"{100 * rate:.1f} %"


def redteam_view(run: Any) -> dict[str, Any] | None:
    """The table for a finished red-team run; None for any other run (or one still running)."""
    summary = run.summary if isinstance(run.summary, Mapping) else {}
    data = summary.get("redteam")
    if getattr(run, "kind", None) != "redteam" or not isinstance(data, Mapping):
        return None
    strategies = sorted(data.get("strategies") or {})
    cells = data.get("cells") or {}
    severity = data.get("severity") or {}
    rows = [
        {
            "plugin": plugin,
            "severity": severity.get(plugin, ""),
            "cells": [_pct(cells.get(f"{plugin} × {s}")) for s in strategies],
            "all": _pct(cell),
            "refused": _refused(cell),
        }
        for plugin, cell in sorted((data.get("plugins") or {}).items())
    ]
    total = data.get("total") or {}
    by_strategy = data.get("strategies") or {}
    gates = [g for g in summary.get("gates") or [] if isinstance(g, Mapping)]
    return {
        "strategies": strategies,
        "rows": rows,
        "totals": [_pct(by_strategy.get(s)) for s in strategies],
        "all": _pct(total),
        "refused": _refused(total),
        "leaks": data.get("canary_leaks", 0),
        "target_errors": total.get("target_errors", 0),
        "failed_gates": [str(g.get("name")) for g in gates if not g.get("passed")],
    }
