"""Calibration targets: the judge policy's metric goals by default, overridable by a YAML file.

Each target is judged on its figure's 95 % confidence interval, not on the point: **met** when the whole
interval meets it (its far end), **missed** when the whole interval misses it (its near end), **not enough
evidence** otherwise, with about how many more labelled items of the figure's kind would decide it at the
observed value. A target whose figure is undefined (e.g. the FNR of a set where people reject nothing)
cannot be shown to be met and counts as missed, so that a CI gate never passes on a figure it did not
measure; neither does "not enough evidence" unless the caller allows it (``bqas calibrate`` exit 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bqas.calibration.metrics import CONFIDENCE as CONFIDENCE_TEXT
from bqas.untrusted import UntrustedValueError, load_yaml


class Targets(BaseModel):
    """The judge policy's "Metrik-Ziele": FPR < 5 %, FNR < 2 %, inter-judge agreement > 90 %, mean time < 500 ms."""

    model_config = ConfigDict(extra="forbid")

    fpr_max: float | None = Field(default=0.05, ge=0, le=1)
    fnr_max: float | None = Field(default=0.02, ge=0, le=1)
    agreement_min: float | None = Field(default=0.90, ge=0, le=1)
    latency_mean_max_ms: float | None = Field(default=500.0, gt=0)
    kappa_min: float | None = Field(default=None, ge=-1, le=1)
    # Share of judged samples left unscored; 0 by default, as for `bqas score` and `bqas run` (README:
    # one exit-code rule). Set it (or null) to allow abstention.
    abstention_max: float | None = Field(default=0.0, ge=0, le=1)


def load_targets(path: Path | None) -> Targets:
    """The default targets, or those of ``path`` (missing keys keep their defaults; null switches one off)."""
    if path is None:
        return Targets()
    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
    except UntrustedValueError as exc:  # alias bombs and the like (bqas.untrusted)
        raise ValueError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read targets file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a targets file must be a mapping, e.g. 'fpr_max: 0.05'")
    try:
        return Targets.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ValueError(f"{path}: {where}: {err['msg']}") from None


Status = Literal["met", "missed", "not enough evidence"]
MET: Status = "met"
MISSED: Status = "missed"
UNDECIDED: Status = "not enough evidence"
MORE_CAP = 10_000_000  # beyond this many items a target is "not decidable at the observed value"


@dataclass(frozen=True)
class TargetResult:
    """One target with the figure it was checked against, its interval and the verdict on it."""

    name: str
    expected: str
    actual: float | None
    passed: bool
    note: str | None = None
    status: Status = MISSED
    interval: tuple[float, float] | None = None
    # Not enough evidence: about how many more items of ``more_of`` would decide it at the observed value.
    more_needed: int | None = None
    more_of: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expected": self.expected,
            "actual": self.actual,
            "interval": None if self.interval is None else [round(self.interval[0], 6), round(self.interval[1], 6)],
            "status": self.status,
            "passed": self.passed,
            "more_needed": self.more_needed,
            "more_of": self.more_of,
            "note": self.note,
        }


def _decide(lo: float, hi: float, limit: float, *, upper: bool, strict: bool) -> Status:
    """met / missed / not enough evidence for an interval against ``value < limit`` (upper) or
    ``value > limit`` (lower); ``strict`` False makes them <= / >=."""
    if upper:
        meets = hi < limit if strict else hi <= limit
        misses = lo >= limit if strict else lo > limit
    else:
        meets = lo > limit if strict else lo >= limit
        misses = hi <= limit if strict else hi < limit
    return MET if meets else MISSED if misses else UNDECIDED


def _more_for_rate(k: int, n: int, limit: float, *, upper: bool, strict: bool) -> int | None:
    """Items in all (of the rate's denominator) whose Clopper-Pearson interval decides the target at the
    observed rate k/n; None when the rate equals the limit or no realistic number decides it."""
    from bqas.calibration.metrics import clopper_pearson

    p = k / n
    if abs(p - limit) < 1e-12:
        return None

    def decided(m: int) -> bool:
        lo, hi = clopper_pearson(round(p * m), m)
        return _decide(lo, hi, limit, upper=upper, strict=strict) != UNDECIDED

    lo_n, hi_n = n, max(2 * n, n + 1)
    while not decided(hi_n):
        lo_n, hi_n = hi_n, hi_n * 2
        if hi_n > MORE_CAP:
            return None
    while lo_n + 1 < hi_n:  # the interval narrows as m grows (up to rounding): bisect
        mid = (lo_n + hi_n) // 2
        if decided(mid):
            hi_n = mid
        else:
            lo_n = mid
    return hi_n


def _more_by_width(value: float, n: int, lo: float, hi: float, limit: float, *, upper: bool) -> int | None:
    """Items in all for an interval whose half-width shrinks like 1/sqrt(n) (bootstrap, Student t) to decide
    the target at the observed value; None when the value equals the limit."""
    gap = abs(value - limit)
    if gap < 1e-12:
        return None
    meets_now = value < limit if upper else value > limit
    # The end that must cross the limit: the far end to meet, the near end to miss.
    half = (hi - value) if upper == meets_now else (value - lo)
    if half <= 0:
        return n
    need = math.ceil(n * (half / gap) ** 2) + 1
    return need if need <= MORE_CAP else None


def _check(
    name: str,
    limit: float | None,
    fig: dict[str, Any],
    *,
    upper: bool,
    strict: bool,
    of: str,
) -> TargetResult | None:
    if limit is None:
        return None
    value = fig.get("value")
    sign = ("<" if upper else ">") + ("" if strict else "=")
    expected = f"{sign} {limit:g}"
    if value is None:
        return TargetResult(name, expected, None, False, f"undefined: {fig.get('undefined') or 'no data'}")
    actual = round(float(value), 6)
    n = int(fig.get("n") or 0)
    if upper and not strict and limit == 0:
        # "None at all" (abstention_max 0) is a rule about these results, not an estimate of a rate: no
        # interval can ever reach 0, so it is judged on the count itself.
        return TargetResult(name, expected, actual, value == 0, None, MET if value == 0 else MISSED)
    interval = fig.get("interval")
    if not interval:
        return TargetResult(
            name,
            expected,
            actual,
            False,
            f"no confidence interval on {n} {of} ({fig.get('no_interval') or 'too few'}): not enough evidence",
            UNDECIDED,
            None,
            None,
            of,
        )
    lo, hi = float(interval[0]), float(interval[1])
    status = _decide(lo, hi, limit, upper=upper, strict=strict)
    if status != UNDECIDED:
        return TargetResult(name, expected, actual, status == MET, None, status, (lo, hi))
    k = fig.get("k")
    if k is not None and n:
        total = _more_for_rate(int(k), n, limit, upper=upper, strict=strict)
    else:
        total = _more_by_width(float(value), n, lo, hi, limit, upper=upper)
    more = None if total is None else max(1, total - n)
    note = f"the {100 * CONFIDENCE_TEXT:g} % interval {lo:.4g}–{hi:.4g} straddles {limit:g}: " + (
        f"about {more} more {of} would decide it at the observed value"
        if more is not None
        else "no realistic number of items decides it at the observed value"
    )
    return TargetResult(name, expected, actual, False, note, UNDECIDED, (lo, hi), more, of)


def check_judge(targets: Targets, block: dict[str, Any], prefix: str = "") -> list[TargetResult]:
    """Targets on one judge's own figures: FPR, FNR, mean evaluation time, abstention (judge policy: strict
    bounds). The time target is judged on the service time (the judgment's own work), when the block has it."""
    reject = block["reject"]
    latency = block.get("service_ms") or block["latency_ms"]
    lat_fig = {
        "value": latency.get("mean"),
        "undefined": latency.get("undefined"),
        "n": latency.get("n"),
        "interval": latency.get("mean_interval"),
    }
    checks = [
        _check(f"{prefix}fpr", targets.fpr_max, reject["fpr"], upper=True, strict=True, of="people-accepted samples"),
        _check(f"{prefix}fnr", targets.fnr_max, reject["fnr"], upper=True, strict=True, of="people-rejected samples"),
        _check(
            f"{prefix}latency_mean_ms",
            targets.latency_mean_max_ms,
            lat_fig,
            upper=True,
            strict=True,
            of="judged samples",
        ),
        _check(
            f"{prefix}abstention",
            targets.abstention_max,
            block["abstention_rate"],
            upper=True,
            strict=False,
            of="judged samples",
        ),
    ]
    return [c for c in checks if c is not None]


def check_agreement(
    targets: Targets, agreement_fig: dict[str, Any], kappa_fig: dict[str, Any], prefix: str = ""
) -> list[TargetResult]:
    """Targets on agreement: the verdict agreement (judge vs people, or judge A vs judge B) and its κ."""
    checks = [
        _check(
            f"{prefix}agreement",
            targets.agreement_min,
            agreement_fig,
            upper=False,
            strict=True,
            of="samples with a verdict from both",
        ),
        _check(
            f"{prefix}kappa",
            targets.kappa_min,
            kappa_fig,
            upper=False,
            strict=False,
            of="samples with a verdict from both",
        ),
    ]
    return [c for c in checks if c is not None]


def outcome(results: list[TargetResult]) -> Status:
    """The calibration's overall verdict: missed if any target missed, else not enough evidence if any
    could not be decided, else met."""
    statuses = {r.status for r in results}
    return MISSED if MISSED in statuses else UNDECIDED if UNDECIDED in statuses else MET
