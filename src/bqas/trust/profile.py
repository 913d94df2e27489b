"""Calibration profiles: the certified thresholds of each tier for one judge configuration (JSON/YAML).

A profile names the judge, the configuration it was fitted for (backend, LLM model, prompt hashes per
language, a hash of the judge's scoring and offline configuration, the offline p_reject model id), the
targets (fnr_max, fpr_max, precision_accept_min, precision_reject_min, delta), the data (n, classes, sha256) and per tier the thresholds with their
bounds. A profile fitted for another judge, configuration or prompt is refused (:func:`check_profile`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError

if TYPE_CHECKING:
    from bqas.judgment.result import JudgmentResult
    from bqas.judgment.spec import JudgeSpec

PROFILE_FORMAT = "bqas-calibration-profile/1"
ScoreField = Literal["p_reject", "risk"]


class TierProfile(BaseModel):
    """One tier's certified thresholds (None: that side decides nothing) and the fit behind them."""

    tier: Literal["offline", "llm"]
    score: ScoreField = "p_reject"
    accept_threshold: float | None = None
    reject_threshold: float | None = None
    fnr_max: float
    fpr_max: float
    delta: float
    # Share of this tier's auto-accepts / auto-rejects people agree with, certified at 1 - delta (None:
    # not a target of this profile, e.g. one fitted before precision targets existed).
    precision_accept_min: float | None = None
    precision_reject_min: float | None = None
    fit: dict[str, Any] = Field(default_factory=dict)


class ProfileConfig(BaseModel):
    """What the profile was fitted for; a different one at use time is refused."""

    backend: str
    model: str | None = None
    judge_hash: str
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    offline_model: str | None = None


class CalibrationProfile(BaseModel):
    """A versioned calibration profile."""

    format: str = PROFILE_FORMAT
    id: str
    judge: str
    created_at: str
    configuration: ProfileConfig
    targets: dict[str, Any]
    data: dict[str, Any]
    cascade: dict[str, Any] = Field(default_factory=dict)
    tiers: list[TierProfile]
    coverage: dict[str, Any] = Field(default_factory=dict)

    def tier(self, name: str) -> TierProfile | None:
        return next((t for t in self.tiers if t.tier == name), None)

    # The engine's trust step (bqas.judging.engine.TrustStep): it calls these, never the trust layer itself.
    def offline_decides(self, result: JudgmentResult) -> bool:
        """Is the offline tier certified to decide ``result`` on its own (the LLM need not be asked)?"""
        from bqas.trust.decide import tier_decision

        tier = self.tier("offline")
        return tier is not None and tier_decision(result, tier) != "escalate"

    def apply(self, result: JudgmentResult) -> None:
        """Set ``decision``, ``decided_by`` and ``profile_id`` (:func:`bqas.trust.decide.apply_profile`)."""
        from bqas.trust.decide import apply_profile

        apply_profile(result, self)

    def dump(self, path: Path) -> None:
        """Write as YAML (``.yaml``/``.yml``) or JSON (anything else)."""
        data = self.model_dump(mode="json")
        if path.suffix in (".yaml", ".yml"):
            import yaml

            path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        else:
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


class ProfileError(ValueError):
    """A profile that cannot be read, or that does not fit the judge configuration in use."""


def load_profile(path: Path) -> CalibrationProfile:
    """Read a profile; :class:`ProfileError` names the file and the field at fault."""
    import yaml

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"{path}: cannot read calibration profile: {exc}") from None
    if not isinstance(raw, dict):
        raise ProfileError(f"{path}: a calibration profile is a mapping")
    if raw.get("format") != PROFILE_FORMAT:
        raise ProfileError(f"{path}: format: expected {PROFILE_FORMAT!r}, got {raw.get('format')!r}")
    try:
        return CalibrationProfile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ProfileError(f"{path}: {where}: {err['msg']}") from None


def judge_hash(spec: JudgeSpec) -> str:
    """Hash of what decides the offline tier's verdict: dimensions, scoring rule, offline bindings, schema."""
    scoring = spec.scoring
    blob = {
        "name": spec.name,
        "schema": spec.schema,
        "scoring": None
        if scoring is None
        else {
            "composite": {k: [t.weight, t.scale, t.pass_value, t.fail_value] for k, t in scoring.composite.items()},
            "gates": list(scoring.gates),
            "thresholds": [scoring.production_ready, scoring.needs_review],
        },
        "offline": {k: [b.method, sorted(b.inputs.items())] for k, b in spec.offline.items()},
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:16]


def prompt_hashes(spec: JudgeSpec) -> dict[str, str]:
    """The LLM prompt hash per prompt language (as results carry it in ``prompt_hash``)."""
    from bqas.judging.render import render_prompt

    values = dict.fromkeys(spec.inputs, "")
    return {lang: render_prompt(spec, values, lang).prompt_hash for lang in sorted(spec.templates)}


def check_profile(
    profile: CalibrationProfile, spec: JudgeSpec, *, backend: str, model: str | None, where: str = "profile"
) -> None:
    """Refuse a profile fitted for another judge, configuration, model or prompt (ProfileError says which)."""
    from bqas.offline.methods import load_builtin_methods
    from bqas.offline.p_reject import offline_model_id

    load_builtin_methods()  # providers register when their method modules load
    cfg = profile.configuration
    if profile.judge != spec.name:
        raise ProfileError(f"{where}: fitted for judge {profile.judge!r}, not {spec.name!r}")
    current = judge_hash(spec)
    if cfg.judge_hash != current:
        raise ProfileError(
            f"{where}: fitted for another configuration of judge {spec.name} (judge hash {cfg.judge_hash}, "
            f"now {current}); refit with `bqas calibrate fit`"
        )
    off = offline_model_id(spec)
    if profile.tier("offline") is not None and cfg.offline_model != off:
        raise ProfileError(f"{where}: fitted with offline p_reject model {cfg.offline_model!r}, now {off!r}")
    if profile.tier("llm") is not None and backend != "offline":
        if cfg.model is not None and model is not None and cfg.model != model:
            raise ProfileError(f"{where}: its LLM tier was fitted for model {cfg.model!r}, not {model!r}")
        now = prompt_hashes(spec)
        changed = sorted(lang for lang, h in cfg.prompt_hashes.items() if now.get(lang) != h)
        if changed:
            raise ProfileError(
                f"{where}: its LLM tier was fitted for other prompts of judge {spec.name} "
                f"(changed: {', '.join(changed)}); refit with `bqas calibrate fit`"
            )
