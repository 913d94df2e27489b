"""Dress an attack's turns with a strategy. The encodings are the ones the manipulation detector reads back
(:mod:`bqas.redteam.obfuscation`, decoded by :mod:`bqas.offline.text.decoded`), the typos and regional
wording the synthesizer's (:mod:`bqas.synth.typos`, :mod:`bqas.synth.dialects`): what BQAS detects it
can also generate. Every choice comes from the ``rng`` given, so an attack is the same for the same seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import cache
from typing import Any

from bqas.redteam.catalog import Strategy


def _encode(strategy: Strategy, language: str, text: str, rng: random.Random) -> str:
    from bqas.redteam.obfuscation import ENCODINGS

    payload = ENCODINGS[str(strategy.spec["encoding"])](text, rng)
    return str(rng.choice(strategy.spec["wrappers"][language])).replace("{payload}", payload)


def _homoglyphs(strategy: Strategy, language: str, text: str, rng: random.Random) -> str:
    from bqas.redteam.obfuscation import homoglyphs

    return homoglyphs(text, rng)


def _typos(strategy: Strategy, language: str, text: str, rng: random.Random) -> str:
    from bqas.synth.typos import add_typos

    if language == "zh":
        return str(_s2t().convert(text))  # no keyboard typos in Chinese: the other script is the variation
    if language == "de" and strategy.spec.get("dialects"):
        from bqas.synth.dialects import add_marker, apply_dialect, load_dialects

        dialect = load_dialects().get(str(rng.choice(strategy.spec["dialects"])))
        text = add_marker(apply_dialect(text, dialect), dialect, rng)
    changed, _ = add_typos(text, rng, count=int(strategy.spec.get("count", 2)))
    return changed


@cache
def _s2t() -> Any:
    """Simplified -> Traditional Chinese (OpenCC; built once: building it reads its dictionaries)."""
    import opencc

    return opencc.OpenCC("s2t")


def _frame(strategy: Strategy, language: str, text: str, rng: random.Random) -> str:
    return str(rng.choice(strategy.spec["frames"][language])).replace("{payload}", text)


_PER_TURN: dict[str, Callable[[Strategy, str, str, random.Random], str]] = {
    "encode": _encode,
    "homoglyphs": _homoglyphs,
    "typos": _typos,
    "frame": _frame,
}


def dress(strategy: Strategy, language: str, turns: list[str], rng: random.Random) -> list[str]:
    """The turns as sent. ``translation`` is applied by the generator (it picks the other language's
    template); here it only adds the request to answer in ``language``."""
    if strategy.kind == "plain":
        return list(turns)
    if strategy.kind == "translation":
        wrapper = str(rng.choice(strategy.spec["wrappers"][language]))
        return [*turns[:-1], wrapper.replace("{payload}", turns[-1])]
    if strategy.kind == "crescendo":
        warmup = [str(t) for t in rng.choice(strategy.spec["warmups"][language])]
        return [*warmup, *turns]
    apply = _PER_TURN[strategy.kind]
    return [apply(strategy, language, turn, rng) for turn in turns]
