"""Calibration targets: the judge policy's metric goals by default, overridable by a YAML file.

A target whose figure is undefined (e.g. the FNR of a set where people reject nothing) cannot be shown to
be met and counts as missed, so that a CI gate never passes on a figure it did not measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


@dataclass(frozen=True)
class TargetResult:
    """One target with the figure it was checked against."""

    name: str
    expected: str
    actual: float | None
    passed: bool
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "expected": self.expected,
            "actual": self.actual,
            "passed": self.passed,
            "note": self.note,
        }


def _check(name: str, limit: float | None, fig: dict[str, Any], *, upper: bool, strict: bool) -> TargetResult | None:
    if limit is None:
        return None
    value = fig.get("value")
    sign = ("<" if upper else ">") + ("" if strict else "=")
    expected = f"{sign} {limit:g}"
    if value is None:
        return TargetResult(name, expected, None, False, f"undefined: {fig.get('undefined') or 'no data'}")
    below, above = (value < limit, value > limit) if strict else (value <= limit, value >= limit)
    passed = below if upper else above
    return TargetResult(name, expected, round(float(value), 6), passed)


def check_judge(targets: Targets, block: dict[str, Any], prefix: str = "") -> list[TargetResult]:
    """Targets on one judge's own figures: FPR, FNR, mean latency, abstention (judge policy: strict bounds)."""
    reject = block["reject"]
    latency = block["latency_ms"]
    lat_fig = {"value": latency.get("mean"), "undefined": latency.get("undefined")}
    checks = [
        _check(f"{prefix}fpr", targets.fpr_max, reject["fpr"], upper=True, strict=True),
        _check(f"{prefix}fnr", targets.fnr_max, reject["fnr"], upper=True, strict=True),
        _check(f"{prefix}latency_mean_ms", targets.latency_mean_max_ms, lat_fig, upper=True, strict=True),
        _check(f"{prefix}abstention", targets.abstention_max, block["abstention_rate"], upper=True, strict=False),
    ]
    return [c for c in checks if c is not None]


def check_agreement(
    targets: Targets, agreement_fig: dict[str, Any], kappa_fig: dict[str, Any], prefix: str = ""
) -> list[TargetResult]:
    """Targets on agreement: the verdict agreement (judge vs people, or judge A vs judge B) and its κ."""
    checks = [
        _check(f"{prefix}agreement", targets.agreement_min, agreement_fig, upper=False, strict=True),
        _check(f"{prefix}kappa", targets.kappa_min, kappa_fig, upper=False, strict=False),
    ]
    return [c for c in checks if c is not None]
