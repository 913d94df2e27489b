"""Choosing auto-accept and auto-reject thresholds with a guaranteed error bound (fixed-sequence testing).

A tier gives each item a risk score ``s`` (its ``p_reject``; higher = people more likely reject). With an
auto-accept threshold ``a`` the tier accepts items with ``s <= a``; with an auto-reject threshold ``r`` it
rejects items with ``s >= r``; everything else escalates.

What is bounded (rates relative to *all* people-rejected / -accepted items):

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

**Precision of the decisions themselves** (``precision_min``, per side). A class rate bounds the share of
*all* people-accepted answers that are auto-rejected; it says nothing about how many auto-rejects people
agree with (few accepted answers wrongly rejected can still be most of a handful of rejects). So each side
also bounds its precision, the share of decided items people agree with: P(people reject | s >= r) for
auto-reject, P(people accept | s <= a) for auto-accept. For a fixed threshold, the items it decides are
i.i.d. draws from the region, so the disagreements among them are Binomial(decided, 1 - precision) and a
Clopper-Pearson bound on that count bounds the precision from below. The candidates are the scores of
all scored items (no label is used to place them), tested by fixed-sequence testing from the most
confident end in four chains that start where the candidates decide m, 2m, 4m and 8m items (m: the fewest
decisions that can pass at all), each chain at delta / 4 and stopping at its first failure; a candidate
any chain passed is certified (union bound). Counting from the confident end, the first candidate whose
precision misses the target is the same for every chain when precision falls as the threshold widens
(the score ranks risk: the premise of thresholding it), which is what makes a fixed sequence valid here;
several starts keep a few disagreements among the very first items from ending the search. The side's threshold is the loosest candidate that passes both the class-rate
test and the precision test: the class rate only shrinks with a tighter threshold, and the precision was
certified at the chosen candidate itself. ``tests/test_trust_thresholds.py`` checks by simulation on
known distributions that both hold at their delta.

Each target's bound holds with probability >= 1 - delta; ``joint=True`` splits delta over the targets in
use (two class rates and up to two precisions; Bonferroni) so that all hold together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from bqas.trust.bounds import cp_upper, cp_upper_each, min_n_for_zero_errors

Side = Literal["accept", "reject"]
DEFAULT_FNR_MAX = 0.02
DEFAULT_FPR_MAX = 0.05
DEFAULT_DELTA = 0.1
DEFAULT_PRECISION_MIN = 0.90
# Fixed-sequence chains of the precision test (starting at m, 2m, 4m, 8m decisions; delta split among them).
PRECISION_CHAINS = 4
_COVERAGE_STEPS = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class MoreData:
    """How many labelled items of the bounded class would certify a given coverage of that side."""

    coverage: float  # share of all calibration items this side would decide
    error_rate: float  # the calibration error rate at that threshold (assumed to hold with more data)
    needed: int | None  # class items needed in all (None: that error rate can never meet the target)
    more: int | None  # needed minus those at hand


@dataclass(frozen=True)
class PrecisionFit:
    """The precision guarantee of one side: the share of the items it decides that people agree with.

    ``decided``/``agree``/``bound`` are at the side's final threshold; ``class_*`` at the threshold the
    class-rate target alone would allow (what the side would have decided without this guarantee)."""

    precision_min: float
    delta: float
    decided: int
    agree: int
    bound: float | None  # Clopper-Pearson lower bound on the precision at the final threshold
    class_threshold: float | None
    class_decided: int
    class_agree: int
    class_bound: float | None
    min_decided: int  # decisions without a disagreement needed to certify precision_min at delta
    narrowed: bool  # the precision target made the side decide less than its class target allows
    reason: str | None
    # Labelled items in all that would certify the class-only threshold's precision at today's rate.
    needed: int | None = None
    more: int | None = None


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
    precision: PrecisionFit | None = None

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
    precision_min: float | None = None,
    precision_delta: float | None = None,
) -> SideFit:
    """Certify the loosest threshold of one side whose error bound stays <= ``max_rate`` at 1 - ``delta``
    and, with ``precision_min``, whose decisions people agree with in at least that share (at 1 -
    ``precision_delta``, default ``delta``).

    ``eligible`` (optional): items this tier may decide at all (a cascade's second tier sees only what the
    first escalated); the others count in the class total and are never decided here.
    """
    if not 0.0 < max_rate < 1.0 or not 0.0 < delta < 1.0:
        raise ValueError(f"target rate and delta must lie in (0, 1), got {max_rate}, {delta}")
    if precision_min is not None and not 0.0 < precision_min < 1.0:
        raise ValueError(f"precision_min must lie in (0, 1), got {precision_min}")
    p_delta = delta if precision_delta is None else precision_delta
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
    decisions = "auto-accepts" if side == "accept" else "auto-rejects"
    curve: list[list[float]] = []

    def empty(reason: str, more: list[MoreData] | None = None, precision: PrecisionFit | None = None) -> SideFit:
        return SideFit(
            side, target, max_rate, delta, None, n_class, 0, None, 0, 0.0, reason, floor, more or [], curve, precision
        )

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
    class_conf = float(cand[first_fail - 1])
    precision: PrecisionFit | None = None
    chosen = class_conf
    if precision_min is not None:
        precision, chosen_or_none = _fit_precision(
            conf[ok], err_class[ok], class_conf, precision_min, p_delta, n, decisions, side
        )
        if chosen_or_none is None:
            return empty(precision.reason or "precision not certified", more, precision)
        chosen = chosen_or_none
    k_at = int(np.searchsorted(err_scores, chosen, side="right"))
    decided_at = int(np.searchsorted(all_scores, chosen, side="right"))
    bound_at = float(cp_upper(k_at, n_class, delta))
    thr = chosen if side == "accept" else -chosen
    return SideFit(
        side,
        target,
        max_rate,
        delta,
        float(thr),
        n_class,
        k_at,
        round(bound_at, 6),
        decided_at,
        round(decided_at / n, 6),
        None,
        floor,
        more,
        curve,
        precision,
    )


def _fit_precision(
    conf: NDArray[np.float64],
    wrong: NDArray[np.bool_],
    class_conf: float,
    precision_min: float,
    delta: float,
    n_all: int,
    decisions: str,
    side: Side,
) -> tuple[PrecisionFit, float | None]:
    """The precision test of one side over the scored items (``conf``: confidence order, ``wrong``: people
    disagree with this side's decision). Returns the fit and the chosen confidence threshold (None: none).

    Candidates: every distinct score (labels unused), from the most confident end. Fixed-sequence testing
    runs in :data:`PRECISION_CHAINS` chains that start where the candidates decide ``m``, ``2m``, ``4m`` and
    ``8m`` items (``m``: the fewest decisions that can pass at all), each at ``delta / chains`` and each
    stopping at its first failure; every candidate a chain passed is certified (union bound over the
    chains). One early chain that meets a few disagreements among the most confident items does not end the
    search. The chosen threshold is the loosest certified candidate that the class-rate threshold
    ``class_conf`` allows."""
    alpha = 1.0 - precision_min
    d_chain = delta / PRECISION_CHAINS
    min_dec = min_n_for_zero_errors(alpha, d_chain)
    order = np.sort(conf)
    wrong_sorted = np.sort(conf[wrong])
    cand = np.unique(conf)
    n_dec = np.searchsorted(order, cand, side="right")
    n_wrong = np.searchsorted(wrong_sorted, cand, side="right")
    err_bound = cp_upper_each(n_wrong, n_dec, d_chain)
    # At the class-only threshold: what the side would decide without the precision guarantee.
    c_dec = int(np.searchsorted(order, class_conf, side="right"))
    c_wrong = int(np.searchsorted(wrong_sorted, class_conf, side="right"))
    c_bound = None if c_dec == 0 else round(1.0 - float(cp_upper_each(c_wrong, c_dec, d_chain)), 6)
    c_thr = class_conf if side == "accept" else -class_conf
    needed, more = _precision_needed(c_wrong, c_dec, n_all, alpha, d_chain)

    def result(reason: str | None, chosen: float | None, dec: int, wrong_n: int, bound: float | None) -> PrecisionFit:
        return PrecisionFit(
            precision_min,
            delta,
            dec,
            dec - wrong_n,
            bound,
            float(c_thr),
            c_dec,
            c_dec - c_wrong,
            c_bound,
            min_dec,
            chosen is None or chosen < class_conf,
            reason,
            needed,
            more,
        )

    agree_text = f"of the {c_dec} {decisions} the class target alone allows, {c_dec - c_wrong} agree with people" + (
        "" if c_bound is None else f" (precision bound {c_bound:.2f})"
    )
    certified = np.zeros(cand.size, dtype=bool)
    first_failure: int | None = None
    for chain in range(PRECISION_CHAINS):
        begin = int(np.searchsorted(n_dec, min_dec * 2**chain, side="left"))
        if begin >= cand.size:
            break
        passed = err_bound[begin:] <= alpha
        stop = begin + (int(np.argmin(passed)) if not passed.all() else passed.size)
        certified[begin:stop] = True
        if stop == begin and first_failure is None:
            first_failure = begin
    usable = np.nonzero(certified & (cand <= class_conf))[0]
    if usable.size == 0:
        if c_dec < min_dec:
            reason = (
                f"{agree_text}: fewer than the {min_dec} {decisions} needed to certify precision >= "
                f"{precision_min:g} at delta {delta:g} even if people agreed with all"
            )
        elif first_failure is not None:
            f = first_failure
            reason = (
                f"{agree_text}; the {int(n_dec[f])} most confident already include {int(n_wrong[f])} that people "
                f"disagree with (bound {1 - float(err_bound[f]):.2f} < {precision_min:g}): escalated"
            )
        else:
            reason = f"{agree_text}: precision >= {precision_min:g} not certified at delta {delta:g}: escalated"
        return result(reason, None, 0, 0, None), None
    j = int(usable[-1])
    chosen = float(cand[j])
    dec, wrong_n = int(n_dec[j]), int(n_wrong[j])
    bound = round(1.0 - float(err_bound[j]), 6)
    narrowed: str | None = None
    if chosen < class_conf:
        narrowed = (
            f"{agree_text}; precision >= {precision_min:g} is certified up to {dec} {decisions}, "
            f"{dec - wrong_n} of which agree (bound {bound:.2f}): narrowed to those"
        )
    return result(narrowed, chosen, dec, wrong_n, bound), chosen


def _precision_needed(
    wrong: int, decided: int, n_all: int, alpha: float, delta: float
) -> tuple[int | None, int | None]:
    """Labelled items in all that would certify the precision seen at the class-only threshold (at its share
    of decisions and its disagreement rate); None when that rate misses the target."""
    if decided == 0 or n_all == 0:
        return None, None
    need_dec = _needed(wrong / decided, alpha, delta, decided)
    if need_dec is None:
        return None, None
    need = math.ceil(need_dec * n_all / decided)
    return need, max(0, need - n_all)


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
    precision_accept_min: float | None = DEFAULT_PRECISION_MIN,
    precision_reject_min: float | None = DEFAULT_PRECISION_MIN,
) -> TierFit:
    """Both thresholds of one tier (see the module docstring for what is guaranteed).

    ``precision_*_min`` None: that side certifies only its class rate (the guarantee before precision)."""
    targets = 2 + (precision_accept_min is not None) + (precision_reject_min is not None)
    d = delta / targets if joint else delta
    acc = fit_side(
        scores, rejected, "accept", fnr_max, d, eligible=eligible, precision_min=precision_accept_min, precision_delta=d
    )
    rej = fit_side(
        scores, rejected, "reject", fpr_max, d, eligible=eligible, precision_min=precision_reject_min, precision_delta=d
    )
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
