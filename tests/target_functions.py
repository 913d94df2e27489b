"""Python targets for tests/test_targets_kinds.py (``type: python``, ``function: target_functions:…``)."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

CALLS: list[tuple[str, str]] = []  # (function, thread name)


def answer(sample: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("answer", threading.current_thread().name))
    if "kaputt" in sample["user_input"]:
        raise RuntimeError("assistant crashed")
    return {"response": f"Gern: {sample['user_input']}", "detected_intent": "reminder", "prompt_tokens": 5}


async def answer_async(sample: dict[str, Any]) -> dict[str, Any]:
    CALLS.append(("answer_async", threading.current_thread().name))
    await asyncio.sleep(0)
    return {"response": f"Turn {sample['turn']}: {sample['user_input']}", "detected_intent": "reminder"}


def not_a_dict(sample: dict[str, Any]) -> str:
    return "plain text"


# Never set while the process lives: a function waiting on it never returns (a hung assistant).
NEVER = threading.Event()


def hangs(sample: dict[str, Any]) -> dict[str, Any]:
    NEVER.wait()
    return {"response": "never"}


def exits(sample: dict[str, Any]) -> dict[str, Any]:
    if "Nummer 1" in sample["user_input"]:
        sys.exit(3)
    return {"response": f"Gern: {sample['user_input']}", "detected_intent": "reminder"}


async def exits_async(sample: dict[str, Any]) -> dict[str, Any]:
    sys.exit(3)


def lone_surrogate(sample: dict[str, Any]) -> dict[str, Any]:
    if "Nummer 1" in sample["user_input"]:
        return {"response": "Gern \udcff erledigt", "detected_intent": "reminder"}
    if "Nummer 2" in sample["user_input"]:
        raise RuntimeError("kaputt \ud800")
    return {"response": f"Gern: {sample['user_input']}", "detected_intent": "reminder"}
