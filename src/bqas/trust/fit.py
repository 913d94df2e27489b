"""Fitting a calibration profile from labelled items (each with its tiers' scores and the human label).

Cascade (offline, then LLM): the error budget is split across the tiers. The offline tier is certified
with ``fnr_max * share`` and ``fpr_max * share`` at ``delta / 2``; the LLM tier with the rest of the
budget at ``delta / 2``, counting its errors among *all* people-rejected (-accepted) items but deciding
only the items the offline tier escalated. The pipeline's FNR is the sum of the tiers' (each error is
made by one tier), so FNR <= fnr_max and FPR <= fpr_max hold together for both tiers with probability
>= 1 - delta (union bound). A single tier gets the whole budget and delta.

The precision targets (share of a side's decisions that people agree with) need no budget split: each
tier is certified at the full ``precision_*_min`` on the items it decides (at its ``delta / 2``), and a
mixture of decision sets that each reach a precision reaches it too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bqas.trust.bounds import cp_interval
from bqas.trust.profile import PROFILE_FORMAT, CalibrationProfile, ProfileConfig, ScoreField, TierProfile
from bqas.trust.thresholds import (
    DEFAULT_DELTA,
    DEFAULT_FNR_MAX,
    DEFAULT_FPR_MAX,
    DEFAULT_PRECISION_MIN,
    TierFit,
    decide,
    fit_tier,
)


@dataclass(frozen=True)
class LabelledItem:
    """One gold item: its id, language, people's decision and each tier's score (None: not scored)."""

    id: str
    language: str
    rejected: bool
    offline: float | None = None
    llm: float | None = None


@dataclass(frozen=True)
class Targets:
    fnr_max: float = DEFAULT_FNR_MAX
    fpr_max: float = DEFAULT_FPR_MAX
    delta: float = DEFAULT_DELTA
    offline_share: float = 0.5  # share of the error budget for the offline tier in a cascade
    joint: bool = False  # all targets together (delta split among them) rather than each at 1 - delta
    # Share of a side's decisions people agree with (None: that side bounds only its class rate).
    precision_accept_min: float | None = DEFAULT_PRECISION_MIN
    precision_reject_min: float | None = DEFAULT_PRECISION_MIN


def data_hash(items: Sequence[LabelledItem]) -> str:
    """sha256 over the items' ids and labels (order-independent)."""
    lines = sorted(f"{i.id}\t{int(i.rejected)}" for i in items)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _by_language(items: Sequence[LabelledItem], decisions: Sequence[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lang in sorted({i.language for i in items}):
        idx = [k for k, i in enumerate(items) if i.language == lang]
        row: dict[str, float] = {"n": len(idx)}
        for tier in ("offline", "llm"):
            row[tier] = round(sum(1 for k in idx if decisions[k][1] == tier) / len(idx), 4)
        row["decided"] = round(sum(1 for k in idx if decisions[k][1] != "human") / len(idx), 4)
        out[lang] = row
    return out


def fit_profile(
    items: Sequence[LabelledItem],
    *,
    judge: str,
    config: ProfileConfig,
    targets: Targets,
    source: str,
    score: ScoreField = "p_reject",
) -> CalibrationProfile:
    """Certify thresholds per tier and return the profile (coverage 0 with reasons when data are short)."""
    if not items:
        raise ValueError("no labelled item to fit a calibration profile on")
    labels = [i.rejected for i in items]
    cascade = any(i.llm is not None for i in items) and any(i.offline is not None for i in items)
    has_offline = any(i.offline is not None for i in items)
    share = targets.offline_share if cascade else 1.0
    delta_tier = targets.delta / 2 if cascade else targets.delta
    tiers: list[TierProfile] = []
    fits: dict[str, TierFit] = {}
    off_fit: TierFit | None = None
    if has_offline:
        off_fit = fit_tier(
            [i.offline for i in items],
            labels,
            fnr_max=targets.fnr_max * share,
            fpr_max=targets.fpr_max * share,
            delta=delta_tier,
            joint=targets.joint,
            precision_accept_min=targets.precision_accept_min,
            precision_reject_min=targets.precision_reject_min,
        )
        fits["offline"] = off_fit
        tiers.append(
            _tier("offline", off_fit, score, targets.fnr_max * share, targets.fpr_max * share, delta_tier, targets)
        )
    if any(i.llm is not None for i in items):
        rest = 1.0 - share if cascade else 1.0
        eligible = [
            off_fit is None or off_fit.decide(i.offline) == "escalate" for i in items
        ]  # the LLM tier only sees what the offline tier escalated
        llm_fit = fit_tier(
            [i.llm for i in items],
            labels,
            fnr_max=targets.fnr_max * rest,
            fpr_max=targets.fpr_max * rest,
            delta=delta_tier,
            joint=targets.joint,
            eligible=eligible,
            precision_accept_min=targets.precision_accept_min,
            precision_reject_min=targets.precision_reject_min,
        )
        fits["llm"] = llm_fit
        tiers.append(
            _tier("llm", llm_fit, "p_reject", targets.fnr_max * rest, targets.fpr_max * rest, delta_tier, targets)
        )
    decisions = [_cascade_decision(i, tiers) for i in items]
    n = len(items)
    coverage: dict[str, Any] = {
        "decided": round(sum(1 for d in decisions if d[1] != "human") / n, 6),
        **{t.tier: round(sum(1 for d in decisions if d[1] == t.tier) / n, 6) for t in tiers},
        "by_language": _by_language(items, decisions),
    }
    created = datetime.now(UTC)
    digest = data_hash(items)
    ident = hashlib.sha256(
        json.dumps([judge, config.model_dump(), digest, [t.model_dump() for t in tiers]], sort_keys=True).encode()
    ).hexdigest()[:10]
    return CalibrationProfile(
        format=PROFILE_FORMAT,
        id=f"{judge}-{created.strftime('%Y%m%d')}-{ident}",
        judge=judge,
        created_at=created.isoformat(timespec="seconds"),
        configuration=config,
        targets={
            "fnr_max": targets.fnr_max,
            "fpr_max": targets.fpr_max,
            "delta": targets.delta,
            "joint": targets.joint,
            "precision_accept_min": targets.precision_accept_min,
            "precision_reject_min": targets.precision_reject_min,
        },
        data={
            "source": source,
            "n": n,
            "n_reject": sum(labels),
            "n_accept": n - sum(labels),
            "sha256": digest,
        },
        cascade={
            "tiers": [t.tier for t in tiers],
            "method": "budget split, second tier on what the first escalates" if cascade else "single tier",
            "offline_share": share,
            "delta_per_tier": delta_tier,
        },
        tiers=tiers,
        coverage=coverage,
    )


def _tier(
    name: str, fit: TierFit, score: ScoreField, fnr: float, fpr: float, delta: float, targets: Targets
) -> TierProfile:
    return TierProfile(
        tier=name,  # type: ignore[arg-type]
        score=score,
        accept_threshold=fit.accept.threshold,
        reject_threshold=fit.reject.threshold,
        fnr_max=round(fnr, 6),
        fpr_max=round(fpr, 6),
        delta=delta,
        precision_accept_min=targets.precision_accept_min,
        precision_reject_min=targets.precision_reject_min,
        fit=fit.as_dict(),
    )


def _cascade_decision(item: LabelledItem, tiers: Sequence[TierProfile]) -> tuple[str, str]:
    for t in tiers:
        s = item.offline if t.tier == "offline" else item.llm
        d = decide(s, t.accept_threshold, t.reject_threshold)
        if d != "escalate":
            return d, t.tier
    return "escalate", "human"


def check_on(items: Sequence[LabelledItem], profile: CalibrationProfile) -> dict[str, Any]:
    """Realised FNR/FPR and coverage of a profile on new labelled items (their scores), per tier."""
    decisions = [_cascade_decision(i, profile.tiers) for i in items]
    return realised(decisions, [i.rejected for i in items], profile)


def realised(
    decisions: Sequence[tuple[str, str]], rejected: Sequence[bool], profile: CalibrationProfile
) -> dict[str, Any]:
    """Per tier and for the pipeline: coverage, realised FNR/FPR (errors / all people-rejected resp.
    -accepted items, escalations decided by people), the precision of each side's decisions (how many of
    the auto-accepts / auto-rejects people agree with) and whether each target held on these items.

    Each is judged on its 90 % Clopper-Pearson interval, not on the point, as ``bqas calibrate`` judges
    its targets: ``held`` when the whole interval meets the target, ``not held`` when the whole interval
    misses it, ``not enough evidence`` otherwise (one agreeing decision is not a held precision of 0.9, and
    0 misses of 3 rejects not a held FNR of 5 %); ``undefined`` when there is nothing to measure it on.
    ``*_held`` is True / False for held / not held, None otherwise.

    ``decisions``: (accept|reject|escalate, offline|llm|human) per item, in the order of ``rejected``."""
    n = len(decisions)
    rejects = [k for k in range(n) if rejected[k]]
    accepts = [k for k in range(n) if not rejected[k]]
    out: dict[str, Any] = {"n": n, "n_reject": len(rejects), "n_accept": len(accepts), "tiers": {}}
    for t in [*profile.tiers, None]:
        name = t.tier if t is not None else "pipeline"
        mine = {k for k in range(n) if decisions[k][1] != "human" and (t is None or decisions[k][1] == t.tier)}
        fn = sum(1 for k in rejects if k in mine and decisions[k][0] == "accept")
        fp = sum(1 for k in accepts if k in mine and decisions[k][0] == "reject")
        fnr_max = t.fnr_max if t is not None else profile.targets["fnr_max"]
        fpr_max = t.fpr_max if t is not None else profile.targets["fpr_max"]
        row: dict[str, Any] = {
            "coverage": round(len(mine) / n, 6) if n else 0.0,
            "false_negatives": fn,
            "false_positives": fp,
            "fnr_max": fnr_max,
            "fpr_max": fpr_max,
        }
        for name_, errors, total, limit in (("fnr", fn, len(rejects), fnr_max), ("fpr", fp, len(accepts), fpr_max)):
            interval = cp_interval(errors, total, CHECK_CONFIDENCE)
            status = UNDEFINED if interval is None else _status(interval[1] <= limit, interval[0] > limit)
            row[name_] = round(errors / total, 6) if total else None
            row[f"{name_}_interval"] = None if interval is None else [round(interval[0], 6), round(interval[1], 6)]
            row[f"{name_}_status"] = status
            row[f"{name_}_held"] = _held(status)
        for side, wrong in (("accept", fn), ("reject", fp)):
            decided = sum(1 for k in mine if decisions[k][0] == side)
            target = (
                getattr(t, f"precision_{side}_min") if t is not None else profile.targets.get(f"precision_{side}_min")
            )
            row[f"{side}_precision"] = precision_row(decided, decided - wrong, target)
        out["tiers"][name] = row
    return out


HELD, NOT_HELD, UNDECIDED, UNDEFINED = "held", "not held", "not enough evidence", "undefined"
CHECK_CONFIDENCE = 0.9  # of the intervals a profile is checked on (as the precision rows always showed)


def _status(meets: bool, misses: bool) -> str:
    return HELD if meets else NOT_HELD if misses else UNDECIDED


def _held(status: str | None) -> bool | None:
    return True if status == HELD else False if status == NOT_HELD else None


def precision_row(decided: int, agree: int, target: float | None) -> dict[str, Any]:
    """How many of a side's decisions people agree with, the share with its 90 % interval, and whether the
    target held on that interval (status None: no target, or nothing decided, so nothing to hold)."""
    interval = cp_interval(agree, decided, CHECK_CONFIDENCE)
    value = agree / decided if decided else None
    status = None
    if interval is not None and target is not None:
        status = _status(interval[0] >= target, interval[1] < target)
    return {
        "decided": decided,
        "agree": agree,
        "precision": None if value is None else round(value, 6),
        "interval": None if interval is None else [round(interval[0], 6), round(interval[1], 6)],
        "target": target,
        "status": status,
        "held": _held(status),
    }


def profile_outcome(report: dict[str, Any]) -> str:
    """The check's verdict over every tier: not held if any target is not held, else not enough evidence
    if any could not be decided (or an FNR/FPR had no item to be measured on), else held."""
    statuses = {
        status
        for tier in report["tiers"].values()
        for status in (
            tier["fnr_status"],
            tier["fpr_status"],
            *(tier[f"{s}_precision"]["status"] for s in ("accept", "reject")),
        )
    }
    if NOT_HELD in statuses:
        return NOT_HELD
    return UNDECIDED if statuses & {UNDECIDED, UNDEFINED} else HELD
