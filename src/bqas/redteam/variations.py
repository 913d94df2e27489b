"""LLM-written variations of the offline attacks (``redteam.llm_variations``), through the one LLM seam.

For each plugin, the first ``n`` one-turn attacks are sent to the LLM with the prompt of
``prompts/variation.yaml`` (the attack fenced as data) and each reply's ``variation`` becomes a new attack
of the same plugin, strategy, language and tenant, dressed again by the strategy. Temperature 0 and the
seam's cache make a rerun ask nothing. Marker plugins are left out: a rewording may drop the word or the
numbers their grader looks for. A variation that repeats an attack, is empty, or holds a canary is
dropped and counted in the run's notes.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

import yaml

from bqas.redteam.canaries import CanaryIndex
from bqas.redteam.catalog import Plugin, strategies
from bqas.redteam.generate import Attack
from bqas.redteam.strategies import dress

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"variation": {"type": "string", "minLength": 1, "maxLength": 2000}},
    "required": ["variation"],
    "additionalProperties": False,
}


@cache
def prompts() -> dict[str, str]:
    text = resources.files("bqas.redteam").joinpath("prompts", "variation.yaml").read_text(encoding="utf-8")
    data: dict[str, str] = yaml.safe_load(text)
    return data


def _read(text: str) -> str | None:
    from bqas.judging.parse import extract_json

    value, _repairs, error = extract_json(text, top="object")
    if error is not None or not isinstance(value, dict):
        return None
    variation = value.get("variation")
    return variation.strip() if isinstance(variation, str) and variation.strip() else None


async def vary(
    client: Any, attacks: list[Attack], plugins: dict[str, Plugin], per_plugin: int, index: CanaryIndex, seed: int
) -> tuple[list[Attack], list[str]]:
    """The variations (new attacks) and notes on what was dropped."""
    bases: list[Attack] = []
    for name, plugin in plugins.items():
        if plugin.grader_kind == "marker":
            continue
        bases += [a for a in attacks if a.plugin == name and len(a.plain) == 1][:per_plugin]

    async def one(base: Attack) -> str | None:
        prompt = prompts()[base.language].replace("{attack}", base.plain[0])
        completion = await client.complete(
            [{"role": "user", "content": prompt}],
            schema=SCHEMA,
            schema_name="variation",
            accept=lambda t: _read(t) is not None,
            max_tokens=400,
            temperature=0.0,
        )
        return _read(completion.text)

    texts = await asyncio.gather(*(one(b) for b in bases))
    seen = {tuple(a.plain) for a in attacks}
    made: list[Attack] = []
    dropped = {"unreadable": 0, "repeats an attack": 0, "holds a canary": 0}
    for base, text in zip(bases, texts, strict=True):
        if text is None:
            dropped["unreadable"] += 1
            continue
        if (text,) in seen:
            dropped["repeats an attack"] += 1
            continue
        if index.find(text, decode=False):
            dropped["holds a canary"] += 1
            continue
        seen.add((text,))
        rng = random.Random(f"{seed}:{base.id}:llm")
        turns = dress(strategies()[base.strategy], base.language, [text], rng)
        made.append(replace(base, id=f"{base.id}/llm", plain=[text], turns=turns))
    notes = [f"LLM variations: {len(made)} of {len(bases)} kept"]
    notes += [f"LLM variations dropped ({why}): {n}" for why, n in dropped.items() if n]
    return made, notes


def run_vary(
    config: Any, attacks: list[Attack], plugins: dict[str, Plugin], per_plugin: int, index: CanaryIndex, seed: int
) -> tuple[list[Attack], list[str]]:
    """:func:`vary` with a client of ``config`` (an :class:`~bqas.llm.client.LLMConfig`), on a loop of its own."""
    from bqas.llm.client import LLMClient

    async def main() -> tuple[list[Attack], list[str]]:
        async with LLMClient(config) as client:
            return await vary(client, attacks, plugins, per_plugin, index, seed)

    return asyncio.run(main())
