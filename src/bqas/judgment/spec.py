"""Judges as data: load ``judges/<name>/{judge.yaml,schema.json,prompt.<lang>.txt}`` into typed specs.

Adding a judge or a language means adding files: this module finds them, checks that they fit together
(every template uses exactly the declared input fields, the scoring names real dimensions) and refuses a
broken judge with an error naming the file and the field at fault.
"""

from __future__ import annotations

import json
import os
import string
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from bqas.settings import LANGUAGES
from bqas.untrusted import UntrustedValueError, load_yaml

DimensionKind = Literal["score", "gate", "label", "list", "text", "object", "flag"]
JudgeKind = Literal["grader", "classifier", "generator"]
FALLBACK_LANGUAGE = "de"


class JudgeFileError(ValueError):
    """A judge's files are missing or inconsistent."""


@dataclass(frozen=True)
class InputField:
    """One input field of a judge (a template placeholder of the seed)."""

    name: str
    description: str = ""
    fenced: bool = True
    required: bool = True


@dataclass(frozen=True)
class Dimension:
    """One output key of a judge, with its kind and range from the output schema."""

    name: str
    kind: DimensionKind
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False

    def to_percent(self, value: Any) -> float | None:
        """Map a value of this dimension onto 0-100 (gates: pass 100, fail 0); None if not numeric."""
        if self.kind == "gate":
            return 100.0 if value == "pass" else 0.0 if value == "fail" else None
        if self.kind != "score" or not isinstance(value, int | float) or isinstance(value, bool):
            return None
        lo, hi = self.minimum or 0.0, self.maximum or 100.0
        return 100.0 * (float(value) - lo) / (hi - lo) if hi > lo else None


@dataclass(frozen=True)
class CompositeTerm:
    """Weight and scale of one dimension in the composite (judge policy: ``value * scale * weight``)."""

    weight: float
    scale: float = 1.0
    pass_value: float = 100.0
    fail_value: float = 0.0


@dataclass(frozen=True)
class ScoringRule:
    """How a grader's dimensions become a composite, a verdict and an escalation."""

    composite: dict[str, CompositeTerm]
    gates: tuple[str, ...]
    production_ready: float
    needs_review: float
    escalation_min: float
    escalation_max: float
    disagreement_margin: float
    # A verdict needs at least this share of the composite's weight measured; below it: unscored.
    min_measured_weight: float = 0.0


@dataclass(frozen=True)
class OfflineBinding:
    """An output dimension filled by an offline method, with its inputs mapped from the judge's fields."""

    dimension: str
    method: str
    inputs: dict[str, str]


@dataclass(frozen=True)
class JudgeSpec:
    """Everything BQAS knows about one judge, loaded from its folder."""

    name: str
    kind: JudgeKind
    description: str
    seed_prompt: str | None
    directory: Path
    inputs: dict[str, InputField]
    schema: dict[str, Any]
    dimensions: dict[str, Dimension]
    templates: dict[str, str]
    scoring: ScoringRule | None
    offline: dict[str, OfflineBinding]
    label_field: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Input fields that hold the evaluated system output (the answer, definition, passage): the engine
    # checks them for text that tries to steer the judge, on every backend (bqas.judging.manipulation).
    evaluated: tuple[str, ...] = ()
    # Most tokens an LLM reply may use (sent as max_tokens; BQAS_LLM_MAX_TOKENS wins when set).
    max_tokens: int | None = None

    def template_for(self, language: str) -> tuple[str, str]:
        """The template text for ``language`` and the language actually used (German as fallback)."""
        if language in self.templates:
            return self.templates[language], language
        return self.templates[FALLBACK_LANGUAGE], FALLBACK_LANGUAGE

    @property
    def graded_dimensions(self) -> list[str]:
        """Dimensions that carry a grade (scores and gates), in schema order."""
        return [d.name for d in self.dimensions.values() if d.kind in ("score", "gate")]


def template_fields(text: str, *, where: str) -> list[str]:
    """The placeholder names of a ``str.format`` template; refuse conversions, format specs and indexing."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise JudgeFileError(f"{where}: not a valid template ({exc}); write literal braces as {{{{ }}}}") from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise JudgeFileError(f"{where}: placeholder {{{name}}} must be a plain field name")
        names.append(name)
    return names


def _dimensions_from_schema(schema: dict[str, Any], where: str) -> dict[str, Dimension]:
    """Derive the dimension kinds from the JSON schema's properties."""
    if schema.get("type") != "object":
        return {}
    dims: dict[str, Dimension] = {}
    for name, prop in schema.get("properties", {}).items():
        typ = prop.get("type")
        if prop.get("enum") == ["pass", "fail"]:
            dims[name] = Dimension(name, "gate")
        elif typ in ("integer", "number"):
            if "minimum" not in prop or "maximum" not in prop:
                raise JudgeFileError(f"{where}: property {name!r} needs minimum and maximum")
            dims[name] = Dimension(name, "score", prop["minimum"], prop["maximum"], typ == "integer")
        elif typ == "array":
            dims[name] = Dimension(name, "list")
        elif typ == "boolean":
            dims[name] = Dimension(name, "flag")
        elif typ == "object":
            dims[name] = Dimension(name, "object")
        elif name == "reasoning":
            dims[name] = Dimension(name, "text")
        else:
            dims[name] = Dimension(name, "label")
    return dims


def _scoring(
    raw: dict[str, Any] | None, defaults: dict[str, Any], dims: dict[str, Dimension], where: str
) -> ScoringRule | None:
    if raw is None:
        return None
    merged = {**defaults, **{k: v for k, v in raw.items() if k not in ("composite", "gates")}}
    terms: dict[str, CompositeTerm] = {}
    for name, term in (raw.get("composite") or {}).items():
        dim = dims.get(name)
        if dim is None or dim.kind not in ("score", "gate"):
            raise JudgeFileError(f"{where}: scoring.composite.{name}: not a score or pass/fail dimension")
        if not isinstance(term, dict) or float(term.get("weight", 0)) <= 0:
            raise JudgeFileError(f"{where}: scoring.composite.{name}.weight must be a positive number")
        terms[name] = CompositeTerm(
            weight=float(term["weight"]),
            scale=float(term.get("scale", 1.0)),
            pass_value=float(term.get("pass", 100.0)),
            fail_value=float(term.get("fail", 0.0)),
        )
    if not terms:
        raise JudgeFileError(f"{where}: scoring.composite is empty")
    gates = tuple(raw.get("gates") or ())
    for gate in gates:
        if dims.get(gate) is None or dims[gate].kind != "gate":
            raise JudgeFileError(f"{where}: scoring.gates: {gate!r} is not a pass/fail dimension")
    try:
        verdict = merged["verdict"]
        escalation = merged["escalation"]
        rule = ScoringRule(
            composite=terms,
            gates=gates,
            production_ready=float(verdict["production_ready"]),
            needs_review=float(verdict["needs_review"]),
            escalation_min=float(escalation["min"]),
            escalation_max=float(escalation["max"]),
            disagreement_margin=float(merged["disagreement_margin"]),
            min_measured_weight=float(merged.get("min_measured_weight", 0.0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise JudgeFileError(f"{where}: scoring: missing or bad value {exc}") from None
    if not 0.0 <= rule.min_measured_weight <= 1.0:
        raise JudgeFileError(f"{where}: scoring.min_measured_weight: expected a share from 0 to 1")
    if not rule.needs_review <= rule.production_ready:
        raise JudgeFileError(f"{where}: scoring.verdict: needs_review must not exceed production_ready")
    return rule


def load_judge(directory: Path, policy: dict[str, Any]) -> JudgeSpec:
    """Load and check one judge folder; ``policy`` is the merged policy (defaults + per-judge overrides)."""
    where = str(directory / "judge.yaml")
    try:
        meta = yaml.safe_load((directory / "judge.yaml").read_text(encoding="utf-8")) or {}
        schema = json.loads((directory / "schema.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise JudgeFileError(f"{directory}: missing file {Path(exc.filename).name}") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise JudgeFileError(f"{directory}: cannot parse: {exc}") from None
    name = meta.get("name") or directory.name
    kind = meta.get("kind", "grader")
    if kind not in ("grader", "classifier", "generator"):
        raise JudgeFileError(f"{where}: kind: expected grader, classifier or generator, got {kind!r}")
    inputs = {
        key: InputField(
            name=key,
            description=str((val or {}).get("description", "")),
            fenced=bool((val or {}).get("fenced", True)),
            required=bool((val or {}).get("required", True)),
        )
        for key, val in (meta.get("inputs") or {}).items()
    }
    templates: dict[str, str] = {}
    for path in sorted(directory.glob("prompt.*.txt")):
        lang = path.name.split(".")[1]
        text = path.read_text(encoding="utf-8")
        fields = set(template_fields(text, where=str(path)))
        if fields != set(inputs):
            raise JudgeFileError(
                f"{path}: placeholders {sorted(fields)} differ from the inputs of judge.yaml {sorted(inputs)}"
            )
        templates[lang] = text
    if FALLBACK_LANGUAGE not in templates:
        raise JudgeFileError(f"{directory}: missing prompt.{FALLBACK_LANGUAGE}.txt (the fallback language)")
    dims = _dimensions_from_schema(schema, str(directory / "schema.json"))
    judge_policy = (policy.get("judges") or {}).get(name) or {}
    scoring_raw = meta.get("scoring")
    if judge_policy.get("scoring") and scoring_raw is not None:
        scoring_raw = {**scoring_raw, **judge_policy["scoring"]}
    scoring = _scoring(scoring_raw, policy.get("defaults") or {}, dims, where) if kind == "grader" else None
    if kind == "grader" and scoring is None:
        raise JudgeFileError(f"{where}: a grader needs a scoring section")
    offline: dict[str, OfflineBinding] = {}
    for dim_name, binding in (meta.get("offline") or {}).items():
        if dim_name not in dims:
            raise JudgeFileError(f"{where}: offline.{dim_name}: not an output of the schema")
        mapped = dict((binding or {}).get("inputs") or {})
        for arg, source in mapped.items():
            if source not in inputs:
                raise JudgeFileError(f"{where}: offline.{dim_name}.inputs.{arg}: unknown input field {source!r}")
        offline[dim_name] = OfflineBinding(dim_name, str(binding["method"]), mapped)
    label_field = meta.get("label_field")
    evaluated = meta.get("evaluated") or []
    if not isinstance(evaluated, list) or not all(isinstance(e, str) and e in inputs for e in evaluated):
        raise JudgeFileError(f"{where}: evaluated: expected a list of input fields ({', '.join(inputs)})")
    max_tokens = _max_tokens(judge_policy, meta, name, where)
    return JudgeSpec(
        name=name,
        kind=kind,
        description=str(meta.get("description", "")),
        seed_prompt=meta.get("seed_prompt"),
        directory=directory,
        inputs=inputs,
        schema=schema,
        dimensions=dims,
        templates=templates,
        scoring=scoring,
        offline=offline,
        label_field=label_field,
        # Trust or escalate: per-tier confidence models (``confidence: {offline: FILE}``), see bqas.trust.
        extra={"confidence": meta["confidence"]} if isinstance(meta.get("confidence"), dict) else {},
        evaluated=tuple(evaluated),
        max_tokens=max_tokens,
    )


def _max_tokens(judge_policy: dict[str, Any], meta: dict[str, Any], name: str, where: str) -> int | None:
    """The judge's reply limit: the policy file's ``judges.<name>.max_tokens`` over judge.yaml's."""
    if "max_tokens" in judge_policy:
        value, field_name = judge_policy["max_tokens"], f"policy: judges.{name}.max_tokens"
    else:
        value, field_name = meta.get("max_tokens"), f"{where}: max_tokens"
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise JudgeFileError(f"{field_name}: expected a whole number of tokens from 1 to 1000000, got {value!r}")
    return value


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, val in override.items():
        out[key] = _deep_merge(out[key], val) if isinstance(val, dict) and isinstance(out.get(key), dict) else val
    return out


def load_policy(policy_file: Path | None = None) -> dict[str, Any]:
    """The shipped policy (``bqas/config/policy.yaml``) merged with a user's override file."""
    shipped = resources.files("bqas").joinpath("config/policy.yaml").read_text(encoding="utf-8")
    policy: dict[str, Any] = yaml.safe_load(shipped)
    if policy_file is not None:
        try:
            user = load_yaml(Path(policy_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError, UntrustedValueError) as exc:
            raise JudgeFileError(f"{policy_file}: cannot read policy file: {exc}") from None
        if not isinstance(user, dict):
            raise JudgeFileError(f"{policy_file}: a policy file must be a mapping")
        policy = _deep_merge(policy, user)
    return policy


class JudgeRegistry:
    """All judges found in the package and in extra folders (later folders override earlier ones)."""

    def __init__(self, judges: dict[str, JudgeSpec]):
        self._judges = judges

    @classmethod
    def load(cls, extra_paths: list[Path] | None = None, policy_file: Path | None = None) -> JudgeRegistry:
        policy = load_policy(policy_file)
        roots = [Path(str(resources.files("bqas").joinpath("judges")))]
        roots += list(extra_paths or [])
        judges: dict[str, JudgeSpec] = {}
        for root in roots:
            if not root.is_dir():
                raise JudgeFileError(f"{root}: judge folder does not exist")
            for directory in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")):
                if (directory / "judge.yaml").exists():
                    spec = load_judge(directory, policy)
                    judges[spec.name] = spec
        return cls(judges)

    def get(self, name: str) -> JudgeSpec:
        try:
            return self._judges[name]
        except KeyError:
            raise KeyError(f"unknown judge {name!r}; known: {', '.join(self.grader_names())}") from None

    def names(self) -> list[str]:
        return sorted(self._judges)

    def grader_names(self) -> list[str]:
        """The judges that grade (what an unknown judge's message offers): generators such as
        ``synthetic`` make test inputs and are refused where a grader is asked for."""
        return [n for n in self.names() if self._judges[n].kind != "generator"]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._judges[n] for n in self.names())


@cache
def default_registry() -> JudgeRegistry:
    """The registry of the shipped judges plus ``BQAS_JUDGES_PATH`` folders and the policy file."""
    from bqas.settings import get_settings

    settings = get_settings()
    extra = [Path(p) for p in (settings.judges_path or "").split(os.pathsep) if p]
    return JudgeRegistry.load(extra, settings.policy_file)


@cache
def frame_texts(language: str) -> dict[str, str]:
    """The frame (system message, retry message, markers) of a language, German as fallback."""
    lang = language if language in LANGUAGES else FALLBACK_LANGUAGE
    base = resources.files("bqas").joinpath("judges/_frame")
    path = base.joinpath(f"frame.{lang}.yaml")
    if not path.is_file():
        path = base.joinpath(f"frame.{FALLBACK_LANGUAGE}.yaml")
    data: dict[str, str] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data
