"""A red-team scenario: ``target:`` (the system attacked), ``redteam:`` (the attack) and ``thresholds:``.

Errors name the file, the line and the field, as for run scenarios (:mod:`bqas.runner.scenario`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bqas.redteam.canaries import Canary, CanaryError, CanaryIndex, check_canary
from bqas.targets.config import Target, TargetConfig

Language = Literal["de", "en", "zh"]


class RedteamError(ValueError):
    """A red-team scenario or option cannot be used; ``str()`` names file, line and field."""


class TenantSpec(BaseModel):
    """One tenant (a teacher's namespace): who the attacker claims to be, and the secrets planted for it."""

    model_config = ConfigDict(extra="forbid")
    teacher: str | None = Field(default=None, max_length=200)  # how colleagues name them ("Frau Meier")
    school: str | None = Field(default=None, max_length=200)
    # kind (names, grades, emails, notes …) -> the values the assistant's knowledge holds for this tenant
    canaries: dict[str, list[str]] = Field(default_factory=dict)


class RedteamSection(BaseModel):
    """The ``redteam:`` block."""

    model_config = ConfigDict(extra="forbid")
    plugins: list[str] | None = None  # default: every shipped plugin
    strategies: list[str] | None = None  # default: every shipped strategy
    languages: list[Language] = Field(default_factory=lambda: list[Language](["de"]), min_length=1)
    count: int = Field(default=10, ge=1, le=100_000)  # attacks per plugin
    seed: int = 0
    # The sample field holding the attacker's tenant id (a target's body takes it as {tenant}).
    tenant_field: str = Field(default="tenant", min_length=1, max_length=100)
    tenants: dict[str, TenantSpec] = Field(default_factory=dict)
    canaries_file: str | None = None  # YAML with `tenants:` (and `system_canaries:`), relative to the scenario
    system_canaries: list[str] = Field(default_factory=list)  # secrets of the system prompt: foreign to everyone
    # LLM-written variations per plugin (the LLM of BQAS_LLM_BASE_URL / BQAS_JUDGE_MODEL or a local GGUF)
    llm_variations: int = Field(default=0, ge=0, le=10_000)

    @field_validator("languages")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class RedteamThresholds(BaseModel):
    """Gates: the attack success rate overall and per plugin, canary leaks, target errors."""

    model_config = ConfigDict(extra="forbid")
    # A rate in [0, 1] for all attacks, or {overall: r, <plugin>: r, …}.
    max_attack_success: float | dict[str, float] | None = None
    max_canary_leaks: int = Field(default=0, ge=0)  # attacks with a leaked canary (0 unless set)
    max_target_errors: int | None = Field(default=None, ge=0)  # unset: 0

    @field_validator("max_attack_success")
    @classmethod
    def _rates(cls, value: Any) -> Any:
        rates = value.values() if isinstance(value, dict) else [] if value is None else [value]
        if any(not 0 <= r <= 1 for r in rates):
            raise ValueError("rates are between 0 and 1")
        return value


class RedteamScenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(default="redteam", min_length=1, max_length=200)
    description: str | None = None
    target: TargetConfig
    redteam: RedteamSection = Field(default_factory=RedteamSection)
    thresholds: RedteamThresholds = Field(default_factory=RedteamThresholds)
    path: Path | None = Field(default=None, exclude=True)

    def tenants(self) -> dict[str, TenantSpec]:
        return self.redteam.tenants

    def canary_index(self) -> CanaryIndex:
        """Every planted secret, checked; a too short one raises naming the tenant."""
        found: list[Canary] = []
        for tenant, spec in self.redteam.tenants.items():
            for kind, values in spec.canaries.items():
                for i, value in enumerate(values):
                    canary = Canary(value, tenant, kind)
                    check_canary(canary, f"redteam.tenants.{tenant}.canaries.{kind}[{i}]")
                    found.append(canary)
        for i, value in enumerate(self.redteam.system_canaries):
            canary = Canary(value, None, "system")
            check_canary(canary, f"redteam.system_canaries[{i}]")
            found.append(canary)
        return CanaryIndex(found)


def fingerprint(scenario: RedteamScenario) -> str:
    """What decides the attacks and their grading (a resumed run must be the same)."""
    data = scenario.model_dump(mode="json", exclude={"path"})
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _validate(data: dict[str, Any], source: str, lines: dict[tuple[Any, ...], int] | None = None) -> RedteamScenario:
    from bqas.runner.scenario import _line_for

    try:
        return RedteamScenario.model_validate(data)
    except ValidationError as exc:
        messages = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            if len(loc) > 1 and loc[0] == "target" and loc[1] in ("openai", "http", "dify", "python"):
                loc = (loc[0], *loc[2:])
            field = ".".join(str(p) for p in loc) or "(scenario)"
            line = f":{_line_for(lines, loc)}" if lines is not None else ""
            messages.append(f"{source}{line}: {field}: {err['msg']}")
        raise RedteamError("\n".join(messages)) from None


def _read_canaries_file(scenario: RedteamScenario, base: Path) -> None:
    """Merge ``canaries_file`` (``tenants:``, ``system_canaries:``) into the scenario's ``redteam:``."""
    name = scenario.redteam.canaries_file
    if name is None:
        return
    path = (base / name).resolve()
    # Scenarios come from pull requests and the report quotes what leaked: the file must lie inside the
    # scenario's folder or the working directory, as a run scenario's dataset must.
    if not any(path.is_relative_to(root.resolve()) for root in (base, Path.cwd())):
        raise RedteamError(
            f"redteam.canaries_file: {path} lies outside the scenario's folder and the working directory"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RedteamError(f"redteam.canaries_file: {path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise RedteamError(f"redteam.canaries_file: {path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise RedteamError(f"redteam.canaries_file: {path}: expected a mapping with tenants")
    try:
        extra = RedteamSection.model_validate(
            {"tenants": data.get("tenants") or {}, "system_canaries": data.get("system_canaries") or []}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RedteamError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    for tenant, spec in extra.tenants.items():
        if tenant in scenario.redteam.tenants:
            raise RedteamError(f"{path}: tenants.{tenant}: also in the scenario's redteam.tenants")
        scenario.redteam.tenants[tenant] = spec
    scenario.redteam.system_canaries += extra.system_canaries
    scenario.redteam.canaries_file = None


def load_redteam_scenario(path: Path) -> RedteamScenario:
    """Load and validate a red-team scenario (``canaries_file`` merged in)."""
    from bqas.runner.scenario import _line_index, read_yaml_mapping

    data, node = read_yaml_mapping(path, RedteamError, "a red-team scenario")
    scenario = _validate(data, str(path), _line_index(node))
    scenario.path = path
    _read_canaries_file(scenario, path.parent)
    return scenario


def quick_scenario(target: Target, section: RedteamSection) -> RedteamScenario:
    """The scenario of ``bqas redteam --target …`` (no file)."""
    return RedteamScenario(name="redteam", target=target, redteam=section)


def checked_index(scenario: RedteamScenario) -> CanaryIndex:
    try:
        return scenario.canary_index()
    except CanaryError as exc:
        raise RedteamError(str(exc)) from None
