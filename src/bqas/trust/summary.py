"""Trust-or-escalate figures of a run: who decided how much (per tier and language) and the bounds."""

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

    def add(self, record: Mapping[str, Any]) -> None:
        by = record.get("decided_by")
        if not record.get("profile_id") or by not in TIERS:
            return
        self.profiles.add(str(record["profile_id"]))
        self.by_judge[str(record.get("judge"))][str(by)] += 1
        self.by_language[str(record.get("language"))][str(by)] += 1
        self.decisions[str(record.get("decision"))] += 1

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
        return {
            "profiles": sorted(self.profiles),
            "coverage": self._shares(total),
            "decisions": dict(self.decisions),
            "by_judge": {j: self._shares(c) for j, c in sorted(self.by_judge.items())},
            "by_language": {lang: self._shares(c) for lang, c in sorted(self.by_language.items())},
        }


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
            out.append((f"{key}.confidence", round(1 - float(t.get("delta") or 0), 6)))
    return out
