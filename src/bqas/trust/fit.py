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
    the auto-accepts / auto-rejects people agree with, with a 90 % Clopper-Pearson interval) and whether
    each target held on these items.

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
        fnr = fn / len(rejects) if rejects else None
        fpr = fp / len(accepts) if accepts else None
        row: dict[str, Any] = {
            "coverage": round(len(mine) / n, 6) if n else 0.0,
            "false_negatives": fn,
            "false_positives": fp,
            "fnr": None if fnr is None else round(fnr, 6),
            "fpr": None if fpr is None else round(fpr, 6),
            "fnr_max": fnr_max,
            "fpr_max": fpr_max,
            "fnr_held": None if fnr is None else fnr <= fnr_max,
            "fpr_held": None if fpr is None else fpr <= fpr_max,
        }
        for side, wrong in (("accept", fn), ("reject", fp)):
            decided = sum(1 for k in mine if decisions[k][0] == side)
            target = (
                getattr(t, f"precision_{side}_min") if t is not None else profile.targets.get(f"precision_{side}_min")
            )
            row[f"{side}_precision"] = precision_row(decided, decided - wrong, target)
        out["tiers"][name] = row
    return out


def precision_row(decided: int, agree: int, target: float | None) -> dict[str, Any]:
    """How many of a side's decisions people agree with, the share with its 90 % interval, and whether the
    target held (None: nothing decided, or no target)."""
    interval = cp_interval(agree, decided, 0.9)
    value = agree / decided if decided else None
    return {
        "decided": decided,
        "agree": agree,
        "precision": None if value is None else round(value, 6),
        "interval": None if interval is None else [round(interval[0], 6), round(interval[1], 6)],
        "target": target,
        "held": None if value is None or target is None else value >= target,
    }
