"""Python targets that misbehave in ways a reply cannot be read from (for tests/test_targets_hostile.py)."""

from __future__ import annotations

from typing import Any


class Unprintable:
    """Neither JSON nor printable: its repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr refused")


def unprintable(sample: dict[str, Any]) -> dict[str, Any]:
    if sample["user_input"].endswith(" 1"):
        return {"response": "Gern.", "detected_intent": "reminder", "extra": Unprintable()}
    return {"response": "Gern.", "detected_intent": "reminder"}
