"""Choosing auto-accept and auto-reject thresholds with a guaranteed error bound (fixed-sequence testing).

A tier gives each item a risk score ``s`` (its ``p_reject``; higher = people more likely reject). With an
auto-accept threshold ``a`` the tier accepts items with ``s <= a``; with an auto-reject threshold ``r`` it
rejects items with ``s >= r``; everything else escalates.

What is bounded (the issue's definitions, relative to *all* people-rejected / -accepted items):

- FNR(a) = P(s <= a | people reject): the share of people-rejected responses that are auto-accepted;
- FPR(r) = P(s >= r | people accept): the share of people-accepted responses that are auto-rejected.

The ratio "auto-accepted rejects / all rejects" has a random denominator, so we bound the rate inside the
class instead: given the labels, the ``n_reject`` calibration rejects are i.i.d. draws of the reject class
(exchangeable with live rejects), so the number of them with ``s <= a`` is Binomial(n_reject, FNR(a)) for a
fixed ``a``. A Clopper-Pearson upper bound at 1 - delta then bounds FNR(a). Candidate thresholds are the
scores of the *other* class (accepted items' scores for ``a``): given the labels those are independent of
the reject scores, so the test sequence is fixed before the tested counts are seen. FNR(a) grows with
``a``, so the candidates are tested in order from the most confident end (smallest ``a``) and testing
stops at the first threshold whose bound exceeds the target: fixed-sequence testing, which controls the
family-wise error at delta without a multiplicity correction. The last threshold that passed is chosen.
Symmetrically for ``r`` from the top. Items a tier could not score (``None``) count in the class totals
and are never auto-decided.

Each target's bound holds with probability >= 1 - delta; ``joint=True`` halves delta per target so that
both hold together (Bonferroni).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from bqas.trust.bounds import cp_upper, min_n_for_zero_errors

Side = Literal["accept", "reject"]
DEFAULT_FNR_MAX = 0.02
DEFAULT_FPR_MAX = 0.05
DEFAULT_DELTA = 0.1
_COVERAGE_STEPS = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class MoreData:
    """How many labelled items of the bounded class would certify a given coverage of that side."""

    coverage: float  # share of all calibration items this side would decide
    error_rate: float  # the calibration error rate at that threshold (assumed to hold with more data)
    needed: int | None  # class items needed in all (None: that error rate can never meet the target)
    more: int | None  # needed minus those at hand


@dataclass(frozen=True)
class SideFit:
    """The certified threshold of one side (auto-accept: FNR; auto-reject: FPR), or why there is none."""

    side: Side
    target: Literal["fnr", "fpr"]
    max_rate: float
    delta: float
    threshold: float | None
    n_class: int  # people-rejected items (accept side) or people-accepted items (reject side)
    errors: int  # calibration items of that class the threshold would decide wrongly
    bound: float | None  # Clopper-Pearson upper bound on the error rate at the threshold
    decided: int  # calibration items (both classes) the threshold decides
    coverage: float
    reason: str | None
    min_n_zero_errors: int
    more_data: list[MoreData] = field(default_factory=list)
    # Risk-coverage curve on the calibration data: [coverage, error rate, bound] along the candidates.
    curve: list[list[float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TierFit:
    """Both thresholds of one tier and the coverage they reach together on the calibration data."""

    accept: SideFit
    reject: SideFit
    n: int
    n_reject: int
    n_accept: int
    coverage: float
    accepted: int
    rejected: int

    def decide(self, score: float | None) -> Literal["accept", "reject", "escalate"]:
        """The tier's decision for one risk score."""
        return decide(score, self.accept.threshold, self.reject.threshold)

    def as_dict(self) -> dict[str, Any]:
        return {
            "accept": self.accept.as_dict(),
            "reject": self.reject.as_dict(),
            "n": self.n,
            "n_reject": self.n_reject,
            "n_accept": self.n_accept,
            "coverage": self.coverage,
            "accepted": self.accepted,
            "rejected": self.rejected,
        }


def decide(
    score: float | None, accept_at: float | None, reject_at: float | None
) -> Literal["accept", "reject", "escalate"]:
    """accept if score <= accept_at, reject if score >= reject_at, else escalate (both: escalate).

    If the two regions overlap, the overlap escalates: that only shrinks each region, so both bounds hold.
    """
    if score is None or math.isnan(score):
        return "escalate"
    acc = accept_at is not None and score <= accept_at
    rej = reject_at is not None and score >= reject_at
    if acc and not rej:
        return "accept"
    if rej and not acc:
        return "reject"
    return "escalate"


def _as_arrays(
    scores: Sequence[float | None], rejected: Sequence[bool]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    if len(scores) != len(rejected):
        raise ValueError(f"{len(scores)} scores but {len(rejected)} labels")
    s = np.array([np.nan if v is None else float(v) for v in scores], dtype=np.float64)
    return s, np.asarray(rejected, dtype=bool)


def _needed(rate: float, alpha: float, delta: float, have: int) -> int | None:
    """Fewest class items N with CP-upper(ceil(rate N), N) <= alpha (None when rate >= alpha).

    ceil, not floor: with today's error rate, N items would carry at least that share of errors."""
    if rate >= alpha:
        return None
    lo, hi = 1, max(have, 1)
    while float(cp_upper(math.ceil(rate * hi), hi, delta)) > alpha:
        lo, hi = hi, hi * 2
        if hi > 50_000_000:
            return None
    while lo < hi:  # the bound falls (up to the floor's steps) as N grows: bisect
        mid = (lo + hi) // 2
        if float(cp_upper(math.ceil(rate * mid), mid, delta)) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return hi


def fit_side(
    scores: Sequence[float | None],
    rejected: Sequence[bool],
    side: Side,
    max_rate: float,
    delta: float,
    *,
    eligible: Sequence[bool] | None = None,
) -> SideFit:
    """Certify the loosest threshold of one side whose error bound stays <= ``max_rate`` at 1 - ``delta``.

    ``eligible`` (optional): items this tier may decide at all (a cascade's second tier sees only what the
    first escalated); the others count in the class total and are never decided here.
    """
    if not 0.0 < max_rate < 1.0 or not 0.0 < delta < 1.0:
        raise ValueError(f"target rate and delta must lie in (0, 1), got {max_rate}, {delta}")
    s, y = _as_arrays(scores, rejected)
    ok = ~np.isnan(s)
    if eligible is not None:
        ok &= np.asarray(eligible, dtype=bool)
    target: Literal["fnr", "fpr"] = "fnr" if side == "accept" else "fpr"
    # Work in "confidence order": for the accept side small scores are confident; flip the reject side.
    conf = s if side == "accept" else -s
    err_class = y if side == "accept" else ~y  # whose rate is bounded
    other = ~err_class
    n_class, n = int(err_class.sum()), len(s)
    floor = min_n_for_zero_errors(max_rate, delta)
    who = "people reject" if side == "accept" else "people accept"

    def empty(reason: str, more: list[MoreData] | None = None) -> SideFit:
        return SideFit(side, target, max_rate, delta, None, n_class, 0, None, 0, 0.0, reason, floor, more or [], curve)

    curve: list[list[float]] = []

    if n == 0:
        return empty("no calibration data")
    if n_class == 0:
        return empty(f"no response that {who} in the calibration data: {target.upper()} cannot be bounded")
    cand = np.unique(conf[ok & other])
    if cand.size == 0:
        whose = "accept" if side == "accept" else "reject"
        return empty(f"no scored response that people {whose} to place a threshold at")
    err_scores = np.sort(conf[ok & err_class])
    all_scores = np.sort(conf[ok])
    k = np.searchsorted(err_scores, cand, side="right")  # class errors decided at each candidate
    decided = np.searchsorted(all_scores, cand, side="right")
    bounds = cp_upper(k, n_class, delta)
    passed = bounds <= max_rate
    # Fixed sequence: stop at the first failure (bounds are monotone in k here, but the rule is the rule).
    first_fail = int(np.argmin(passed)) if not passed.all() else cand.size
    more = _more_data(k, decided, n, n_class, max_rate, delta)
    for j in np.unique(np.linspace(0, cand.size - 1, min(cand.size, 40)).astype(int)):
        curve.append([round(float(decided[j]) / n, 5), round(float(k[j]) / n_class, 5), round(float(bounds[j]), 5)])
    if first_fail == 0:
        if n_class < floor:
            reason = (
                f"{n_class} responses that {who} < {floor} needed to certify {target.upper()} <= {max_rate:g} "
                f"at delta {delta:g} even with no error"
            )
        else:
            tied = int(k[0])
            reason = (
                f"the most confident threshold already decides {tied} of {n_class} responses that {who} wrongly "
                f"(bound {float(bounds[0]):.3f} > {max_rate:g})" + (" — tied scores" if tied and cand.size == 1 else "")
            )
        return empty(reason, more)
    i = first_fail - 1
    thr = float(cand[i]) if side == "accept" else float(-cand[i])
    return SideFit(
        side,
        target,
        max_rate,
        delta,
        thr,
        n_class,
        int(k[i]),
        round(float(bounds[i]), 6),
        int(decided[i]),
        round(int(decided[i]) / n, 6),
        None,
        floor,
        more,
        curve,
    )


def _more_data(
    k: NDArray[np.intp], decided: NDArray[np.intp], n: int, n_class: int, alpha: float, delta: float
) -> list[MoreData]:
    """For a few coverage levels: the class sample size that would certify them at today's error rate."""
    out: list[MoreData] = []
    cover = decided / n
    for step in _COVERAGE_STEPS:
        idx = np.nonzero(cover >= step)[0]
        if idx.size == 0:
            break
        i = int(idx[0])
        rate = float(k[i]) / n_class
        needed = _needed(rate, alpha, delta, n_class)
        out.append(
            MoreData(
                round(float(cover[i]), 4),
                round(rate, 5),
                needed,
                None if needed is None else max(0, needed - n_class),
            )
        )
    return out


def fit_tier(
    scores: Sequence[float | None],
    rejected: Sequence[bool],
    *,
    fnr_max: float = DEFAULT_FNR_MAX,
    fpr_max: float = DEFAULT_FPR_MAX,
    delta: float = DEFAULT_DELTA,
    joint: bool = False,
    eligible: Sequence[bool] | None = None,
) -> TierFit:
    """Both thresholds of one tier (see the module docstring for what is guaranteed)."""
    d = delta / 2 if joint else delta
    acc = fit_side(scores, rejected, "accept", fnr_max, d, eligible=eligible)
    rej = fit_side(scores, rejected, "reject", fpr_max, d, eligible=eligible)
    s, y = _as_arrays(scores, rejected)
    ok = np.ones(len(s), dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    decisions = [decide(v, acc.threshold, rej.threshold) if o else "escalate" for v, o in zip(s, ok, strict=True)]
    accepted = sum(1 for d_ in decisions if d_ == "accept")
    rejected_n = sum(1 for d_ in decisions if d_ == "reject")
    n = len(s)
    return TierFit(
        acc,
        rej,
        n,
        int(y.sum()),
        int((~y).sum()),
        round((accepted + rejected_n) / n, 6) if n else 0.0,
        accepted,
        rejected_n,
    )
