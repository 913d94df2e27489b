"""Human labels: the form fields a judge's schema asks for, their validation and the human composite."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from bqas.judgment.spec import JudgeRegistry, JudgeSpec

HUMAN_VERDICTS: tuple[str, ...] = ("production_ready", "needs_review", "failed")


@dataclass(frozen=True)
class LabelField:
    """One dimension a reviewer can set: a score in a range or a pass/fail gate."""

    name: str
    kind: str  # "score" or "gate"
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False

    @property
    def step(self) -> str:
        if self.integer:
            return "1"
        span = (self.maximum or 100.0) - (self.minimum or 0.0)
        return "0.1" if span > 10 else "0.01"

    def confirm_text(self, judge_value: Any) -> str | None:
        """The judge's value as this field would take it, for a reviewer who confirms it (None: cannot).

        Integer fields round half up (an offline relevance of 2.5 confirms as 3, 1.92 as 2) and every
        value is clamped into the field's range, so a confirmed value always passes :func:`parse_labels`.
        """
        if self.kind == "gate":
            return judge_value if judge_value in ("pass", "fail") else None
        if isinstance(judge_value, bool) or not isinstance(judge_value, int | float):
            return None
        number = float(judge_value)
        if number != number or number in (float("inf"), float("-inf")):
            return None
        if self.minimum is not None:
            number = max(number, self.minimum)
        if self.maximum is not None:
            number = min(number, self.maximum)
        if self.integer:
            return str(math.floor(number + 0.5))
        digits = 1 if self.step == "0.1" else 2
        return f"{round(number, digits):.{digits}f}".rstrip("0").rstrip(".")


def spec_for(registry: JudgeRegistry | None, judge: str) -> JudgeSpec | None:
    """The judge's spec, or None for a judge the registry does not know (e.g. a RAGAS metric)."""
    if registry is None:
        return None
    try:
        return registry.get(judge)
    except KeyError:
        return None


def label_fields(spec: JudgeSpec | None, record: Mapping[str, Any]) -> list[LabelField]:
    """Form fields from the judge's schema; without a spec, from the record's dimensions."""
    if spec is not None:
        return [
            LabelField(d.name, d.kind, d.minimum, d.maximum, d.integer)
            for d in spec.dimensions.values()
            if d.kind in ("score", "gate")
        ]
    fields: list[LabelField] = []
    dims = record.get("dimensions")
    for name, prov in (dims if isinstance(dims, Mapping) else {}).items():
        value = prov.get("value") if isinstance(prov, Mapping) else None
        if value in ("pass", "fail"):
            fields.append(LabelField(str(name), "gate"))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            fields.append(LabelField(str(name), "score"))
    return fields


def confirmed_form_values(
    fields: list[LabelField], judge_values: Mapping[str, Any], confirmed: Collection[str]
) -> dict[str, str]:
    """Form strings for the dimensions a reviewer explicitly confirmed (only those the judge measured)."""
    out: dict[str, str] = {}
    for field in fields:
        if field.name in confirmed and field.name in judge_values:
            text = field.confirm_text(judge_values[field.name])
            if text is not None:
                out[field.name] = text
    return out


def parse_labels(
    fields: list[LabelField], verdict: str | None, raw: Mapping[str, str]
) -> tuple[str | None, dict[str, Any], list[str]]:
    """(verdict, values, errors) from form strings; an empty field means "no label" for that dimension."""
    errors: list[str] = []
    if verdict not in HUMAN_VERDICTS:
        errors.append(f"verdict: choose one of {', '.join(HUMAN_VERDICTS)}")
        verdict = None
    values: dict[str, Any] = {}
    for field in fields:
        text = (raw.get(field.name) or "").strip()
        if not text:
            continue
        if field.kind == "gate":
            if text not in ("pass", "fail"):
                errors.append(f"{field.name}: expected pass or fail")
            else:
                values[field.name] = text
            continue
        try:
            number = float(text.replace(",", "."))
        except ValueError:
            errors.append(f"{field.name}: expected a number, got {text!r}")
            continue
        if number != number or number in (float("inf"), float("-inf")):
            errors.append(f"{field.name}: expected a finite number")
            continue
        if field.minimum is not None and field.maximum is not None and not field.minimum <= number <= field.maximum:
            errors.append(f"{field.name}: {number:g} is outside {field.minimum:g}-{field.maximum:g}")
            continue
        if field.integer and number != int(number):
            errors.append(f"{field.name}: expected a whole number")
            continue
        values[field.name] = int(number) if field.integer else number
    return verdict, values, errors


def human_composite(spec: JudgeSpec | None, values: Mapping[str, Any]) -> float | None:
    """The composite of the human's dimension values under the judge's policy (None when none applies)."""
    if spec is None or spec.scoring is None or not values:
        return None
    from bqas.judgment.policy import composite_score

    composite, _coverage = composite_score(values, spec.scoring, spec.dimensions)
    return composite


def to_percent(spec: JudgeSpec | None, name: str, value: Any) -> float | None:
    """A dimension value on 0-100 (gates pass 100 / fail 0), None when the spec does not know it."""
    if spec is None or name not in spec.dimensions:
        return None
    return spec.dimensions[name].to_percent(value)
