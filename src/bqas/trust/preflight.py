"""What a set of labels can possibly certify, said before anything is judged or fitted.

A class-rate bound needs labelled items of its class even when the judge makes no error: zero misses
among ``n`` rejects bound FNR by ``1 - delta ** (1 / n)`` at best (45 rejects: 5.0 % at delta 0.1). A
precision bound needs decisions: at least ``min_n_for_zero_errors(1 - precision_min, delta / chains)`` of
them on a side. ``bqas calibrate fit`` prints this first and suggests targets the labels can support, so
that a user who asks for FNR <= 2 % with 37 rejects learns it before the judging, not after.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from bqas.trust.bounds import cp_upper, min_n_for_zero_errors
from bqas.trust.thresholds import PRECISION_CHAINS


@dataclass(frozen=True)
class ClassLimit:
    """One class-rate target of one tier against the labels at hand."""

    tier: str
    target: str  # "fnr" or "fpr"
    max_rate: float
    delta: float
    n_class: int  # labelled rejects (FNR) or accepts (FPR)
    tightest: float  # the smallest bound the labels can certify (zero errors)
    needed: int  # class items needed to certify max_rate with zero errors
    reachable: bool
    suggested: float  # the smallest whole percent at or above ``tightest`` (for a tier's share: the total)


def _round_up_percent(value: float) -> float:
    return min(0.99, math.ceil(value * 100 - 1e-9) / 100)


def class_limits(
    n_reject: int,
    n_accept: int,
    *,
    fnr_max: float,
    fpr_max: float,
    delta: float,
    joint: bool,
    precision: bool,
    tiers: tuple[tuple[str, float], ...] = (("offline", 1.0),),
) -> list[ClassLimit]:
    """Per tier (name, share of the error budget) and class target: how tight the labels allow.

    The tiers of a cascade are certified at ``delta / len(tiers)`` and their share of the budget; with
    ``joint`` the delta is split further over the targets in use (two class rates, two precisions)."""
    per_tier = delta / len(tiers)
    targets = 4 if precision else 2
    d = per_tier / targets if joint else per_tier
    out: list[ClassLimit] = []
    for tier, share in tiers:
        for target, max_rate, n_class in (("fnr", fnr_max * share, n_reject), ("fpr", fpr_max * share, n_accept)):
            tightest = float(cp_upper(0, n_class, d)) if n_class else 1.0
            out.append(
                ClassLimit(
                    tier,
                    target,
                    round(max_rate, 6),
                    d,
                    n_class,
                    round(tightest, 6),
                    min_n_for_zero_errors(max_rate, d),
                    tightest <= max_rate,
                    _round_up_percent(tightest / share) if n_class else 1.0,
                )
            )
    return out


def precision_floor(precision_min: float, delta: float) -> int:
    """Decisions a side must make, none of them disputed, to certify ``precision_min`` at ``delta``."""
    return min_n_for_zero_errors(1.0 - precision_min, delta / PRECISION_CHAINS)


def preflight(
    n_reject: int,
    n_accept: int,
    *,
    fnr_max: float,
    fpr_max: float,
    delta: float,
    joint: bool,
    precision_accept_min: float | None,
    precision_reject_min: float | None,
    tiers: tuple[tuple[str, float], ...] = (("offline", 1.0),),
) -> dict[str, Any]:
    """The lines ``bqas calibrate fit`` prints before judging, and the figures behind them (JSON)."""
    precision = precision_accept_min is not None or precision_reject_min is not None
    limits = class_limits(
        n_reject,
        n_accept,
        fnr_max=fnr_max,
        fpr_max=fpr_max,
        delta=delta,
        joint=joint,
        precision=precision,
        tiers=tiers,
    )
    lines = [f"labels: {n_reject + n_accept} with an accept/reject label ({n_reject} rejected, {n_accept} accepted)"]
    for lim in limits:
        who = ("reject" if lim.target == "fnr" else "accept") + ("" if lim.n_class == 1 else "s")
        side = "auto-accept" if lim.target == "fnr" else "auto-reject"
        where = f"{lim.tier} tier: " if len(tiers) > 1 else ""
        head = (
            f"{where}with {lim.n_class} {who} the tightest certifiable {lim.target.upper()} bound is "
            f"{100 * lim.tightest:.1f} % (no error at all, delta {lim.delta:g})"
        )
        if lim.reachable:
            lines.append(f"{head}: {lim.target.upper()} <= {lim.max_rate:g} is within reach")
        else:
            more = lim.needed - lim.n_class
            lines.append(
                f"{head}: {lim.target.upper()} <= {lim.max_rate:g} needs >= {lim.needed} {who.rstrip('s')}s "
                f"({more} more); "
                f"{side} cannot be certified with these labels"
            )
    floor = {}
    for side, value in (("accept", precision_accept_min), ("reject", precision_reject_min)):
        if value is not None:
            floor[side] = precision_floor(value, delta / len(tiers))
            lines.append(
                f"precision >= {value:g} of the auto-{side}s needs >= {floor[side]} of them decided "
                f"without a dispute before any can be certified"
            )
    suggestions: dict[str, float] = {}
    for key, target in (("fnr_max", "fnr"), ("fpr_max", "fpr")):
        unreachable = [lim for lim in limits if lim.target == target and not lim.reachable]
        if unreachable:
            suggestions[key] = max(lim.suggested for lim in unreachable)
    if suggestions:
        opts = " ".join(f"--{k.replace('_', '-')} {v:g}" for k, v in suggestions.items())
        lines.append(
            f"suggested targets these labels can support: {opts} (the tightest they certify when the judge "
            "makes no error on that side; every error needs more labels or a looser target)"
        )
    return {
        "lines": lines,
        "limits": [asdict(lim) for lim in limits],
        "precision_floor": floor,
        "suggested": suggestions,
    }
