"""Trust-or-escalate figures of a run: who decided how much (per tier and language), how many of the
automatic decisions people agree with (where the samples carry labels) and the guaranteed bounds."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.trust.profile import CalibrationProfile

TIERS = ("offline", "llm", "human")


@dataclass
class TrustStats:
    """Counts of results decided by each tier, per judge and language (only results under a profile)."""

    by_judge: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    by_language: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    decisions: Counter[str] = field(default_factory=Counter)
    profiles: set[str] = field(default_factory=set)
    # Automatic decisions of samples with an accept/reject label: (decision, "decided"|"agree") -> count.
    labelled: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, record: Mapping[str, Any]) -> None:
        by = record.get("decided_by")
        if not record.get("profile_id") or by not in TIERS:
            return
        self.profiles.add(str(record["profile_id"]))
        self.by_judge[str(record.get("judge"))][str(by)] += 1
        self.by_language[str(record.get("language"))][str(by)] += 1
        decision = str(record.get("decision"))
        self.decisions[decision] += 1
        people = people_reject(record.get("expected"))
        if decision in ("accept", "reject") and people is not None:
            self.labelled[(decision, "decided")] += 1
            self.labelled[(decision, "agree")] += int(people == (decision == "reject"))

    @staticmethod
    def _shares(counts: Counter[str]) -> dict[str, Any]:
        n = sum(counts.values())
        return {"n": n, **{t: round(counts[t] / n, 4) if n else 0.0 for t in TIERS}}

    def as_dict(self) -> dict[str, Any] | None:
        if not self.profiles:
            return None
        total: Counter[str] = Counter()
        for c in self.by_judge.values():
            total.update(c)
        from bqas.trust.fit import precision_row

        return {
            "profiles": sorted(self.profiles),
            "coverage": self._shares(total),
            "decisions": dict(self.decisions),
            # Of the automatic decisions whose samples carry people's label: how many they agree with.
            "agreement": {
                side: precision_row(self.labelled[(side, "decided")], self.labelled[(side, "agree")], None)
                for side in ("accept", "reject")
            },
            "by_judge": {j: self._shares(c) for j, c in sorted(self.by_judge.items())},
            "by_language": {lang: self._shares(c) for lang, c in sorted(self.by_language.items())},
        }


def people_reject(expected: Any) -> bool | None:
    """People's accept/reject label of a sample's ``expected`` block: reject when the verdict is ``failed``
    or any pass/fail label is ``fail``, accept for ``production_ready``/``needs_review``, else None."""
    if not isinstance(expected, Mapping):
        return None
    if expected.get("verdict") == "failed" or any(v == "fail" for v in expected.values()):
        return True
    if expected.get("verdict") in ("production_ready", "needs_review"):
        return False
    return None


def precision_line(side: str, row: Mapping[str, Any]) -> str:
    """``of 16 auto-rejects, 7 agree with people (43.8 %, 90 % CI 23.1-66.2 %); target >= 0.9 not held``."""
    what = "auto-accepts" if side == "accept" else "auto-rejects"
    if not row["decided"]:
        return f"no {what}"
    lo, hi = row["interval"]
    text = (
        f"of {row['decided']} {what}, {row['agree']} agree with people ({row['precision']:.1%}, "
        f"90 % CI {lo:.1%}-{hi:.1%})"
    )
    if row["target"] is None:
        return text
    return text + f"; target >= {row['target']:g} {row.get('status') or 'undefined'}"


def side_statement(tier: Mapping[str, Any], side: str) -> str:
    """One line on what a profile tier guarantees for one side (from :func:`profile_brief`), e.g.
    ``auto-reject if p ≥ 0.78: FPR ≤ 5 % (bound 4.4 %); precision ≥ 0.9: 15 of 16 … agree (bound 0.91)``
    or ``none certified: of the 16 auto-rejects the class target alone allows, 7 agree with people …``."""
    name = "auto-accept" if side == "accept" else "auto-reject"
    label = f"{name} if p {'≤' if side == 'accept' else '≥'}"
    thr = tier.get(f"{side}_threshold")
    prec = tier.get(f"{side}_precision") or {}
    if thr is None:
        return f"{name}: none certified: {tier.get(f'{side}_reason') or 'no reason recorded'}"
    rate, limit = ("FNR", tier.get("fnr_max")) if side == "accept" else ("FPR", tier.get("fpr_max"))
    bound = tier.get("fnr_bound" if side == "accept" else "fpr_bound")
    text = f"{label} {float(thr):.4g}: {rate} ≤ {_pct(limit)} (bound {_pct(bound)})"
    target = tier.get(f"precision_{side}_min")
    if target is None or not prec:
        return text + "; precision not a target of this profile"
    return (
        text + f"; precision ≥ {float(target):g}: {prec.get('agree')} of {prec.get('decided')} calibration "
        f"{'auto-accepts' if side == 'accept' else 'auto-rejects'} agree with people (bound {_num(prec.get('bound'))})"
    )


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.3g} %"


def _num(value: Any) -> str:
    return "–" if value is None else f"{float(value):.2f}"


def profile_brief(profile: CalibrationProfile) -> dict[str, Any]:
    """What a report shows of a profile: targets, per tier thresholds, guaranteed bounds, fitted coverage."""
    tiers = []
    for t in profile.tiers:
        acc, rej = t.fit.get("accept") or {}, t.fit.get("reject") or {}
        tiers.append(
            {
                "tier": t.tier,
                "accept_threshold": t.accept_threshold,
                "reject_threshold": t.reject_threshold,
                "fnr_max": t.fnr_max,
                "fpr_max": t.fpr_max,
                "delta": t.delta,
                "fnr_bound": acc.get("bound"),
                "fpr_bound": rej.get("bound"),
                "accept_reason": acc.get("reason"),
                "reject_reason": rej.get("reason"),
                "precision_accept_min": t.precision_accept_min,
                "precision_reject_min": t.precision_reject_min,
                "accept_precision": acc.get("precision"),
                "reject_precision": rej.get("precision"),
                "coverage": profile.coverage.get(t.tier),
                "curves": {"accept": acc.get("curve") or [], "reject": rej.get("curve") or []},
            }
        )
    return {
        "id": profile.id,
        "judge": profile.judge,
        "targets": profile.targets,
        "n": profile.data.get("n"),
        "n_reject": profile.data.get("n_reject"),
        "tiers": tiers,
    }


def trust_properties(trust: Mapping[str, Any] | None, profiles: list[Any]) -> list[tuple[str, object]]:
    """Flat ``(name, value)`` pairs for JUnit properties: coverage per tier and language, and bounds."""
    out: list[tuple[str, object]] = []
    if trust:
        for tier in TIERS:
            out.append((f"trust.coverage.{tier}", trust["coverage"][tier]))
        for lang, c in trust["by_language"].items():
            for tier in TIERS:
                out.append((f"trust.coverage.{lang}.{tier}", c[tier]))
    for p in profiles:
        if not isinstance(p, Mapping):
            continue
        out.append((f"trust.profile.{p.get('judge')}", p.get("id")))
        for t in p.get("tiers") or []:
            key = f"trust.{p.get('judge')}.{t.get('tier')}"
            if t.get("accept_threshold") is not None:
                out.append((f"{key}.fnr_max", t.get("fnr_max")))
            if t.get("reject_threshold") is not None:
                out.append((f"{key}.fpr_max", t.get("fpr_max")))
            for side in ("accept", "reject"):
                prec = t.get(f"{side}_precision") or {}
                if t.get(f"precision_{side}_min") is not None:
                    out.append((f"{key}.{side}.precision_min", t.get(f"precision_{side}_min")))
                    out.append((f"{key}.{side}.precision_bound", prec.get("bound")))
                    out.append((f"{key}.{side}.calibration_decided", prec.get("decided")))
                    out.append((f"{key}.{side}.calibration_agree", prec.get("agree")))
                out.append((f"{key}.{side}", side_statement(t, side)))
            out.append((f"{key}.confidence", round(1 - float(t.get("delta") or 0), 6)))
    if trust:
        for side, row in (trust.get("agreement") or {}).items():
            if row.get("decided"):
                out.append((f"trust.{side}.decided_labelled", row["decided"]))
                out.append((f"trust.{side}.agree_with_people", row["agree"]))
    return out
