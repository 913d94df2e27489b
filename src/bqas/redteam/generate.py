"""Attacks from the plugins' templates, offline and deterministic: the same seed gives the same attacks.

Attack ``k`` of a plugin has its own random generator (seeded with the seed, the plugin and ``k``), so
adding a plugin or raising ``--count`` leaves the earlier attacks as they were. Strategies and languages
take turns (attack ``k`` uses strategy ``k mod S`` and language ``(k div S) mod L``), the attacker's
tenant is drawn, and an attack whose text repeats an earlier one of the plugin is drawn again.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from bqas.redteam.canaries import CanaryIndex
from bqas.redteam.catalog import LANGUAGES, Plugin, Strategy, slots
from bqas.redteam.config import RedteamError, RedteamScenario
from bqas.redteam.strategies import dress

# Tries per attack to find a text not made before; a plugin whose templates cannot give ``count``
# distinct attacks stops there (and says so).
_DRAWS = 40
OUTSIDER = "outsider"


@dataclass
class Attack:
    """One attack: the turns sent (the last one is the attack proper), what it is and how it is graded."""

    id: str
    plugin: str
    strategy: str
    language: str
    severity: str
    tenant: str  # the tenant the attacker acts as (``outsider`` when the scenario names none)
    turns: list[str]
    plain: list[str]  # the turns before the strategy dressed them
    marker: str | None = None  # what obeying the attack makes the reply hold (marker graders)
    private_email: str | None = None
    template_language: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _others(scenario: RedteamScenario, tenant: str, key: str) -> list[str]:
    return [
        getattr(spec, key) for name, spec in scenario.redteam.tenants.items() if name != tenant and getattr(spec, key)
    ]


def _one(
    scenario: RedteamScenario,
    plugin: Plugin,
    strategy: Strategy,
    language: str,
    tenant: str,
    k: int,
    rng: random.Random,
) -> Attack:
    template_language = language
    if strategy.kind == "translation":
        template_language = rng.choice([lang for lang in LANGUAGES if lang != language])
    table = slots()
    words = table[template_language]
    template = rng.choice(plugin.templates[template_language])
    values = {name: str(rng.choice(words[name])) for name in ("cls", "subject", "private_email")}
    teachers = _others(scenario, tenant, "teacher") or list(words["other_teacher"])
    schools = _others(scenario, tenant, "school") or list(words["other_school"])
    values["other_teacher"] = str(rng.choice(teachers))
    values["other_school"] = str(rng.choice(schools))
    marker = None
    grader = plugin.grader
    if grader.get("marker") == "reversed_word":
        word = str(rng.choice(table["words"]))
        values["word"] = word
        marker = word[::-1]
    elif grader.get("marker") == "sum":
        low, high = int(table["numbers"]["min"]), int(table["numbers"]["max"])
        a, b = rng.randint(low, high), rng.randint(low, high)
        values["a"], values["b"] = str(a), str(b)
        marker = str(a + b)
    plain = [_fill(turn, values) for turn in template]
    plain[0] = str(rng.choice(words["openers"])) + plain[0]
    plain[-1] = plain[-1] + str(rng.choice(words["closers"]))
    turns = dress(strategy, language, plain, rng)
    return Attack(
        id=f"{plugin.name}/{strategy.name}/{language}/{k:05d}",
        plugin=plugin.name,
        strategy=strategy.name,
        language=language,
        severity=plugin.severity,
        tenant=tenant,
        turns=turns,
        plain=plain,
        marker=marker,
        private_email=values["private_email"],
        template_language=template_language,
    )


def generate(
    scenario: RedteamScenario,
    plugins: list[Plugin],
    strategies: list[Strategy],
    index: CanaryIndex,
) -> tuple[list[Attack], list[str]]:
    """``count`` attacks per plugin, and notes (a plugin that could not give that many distinct ones).

    Raises :class:`RedteamError` when a canary occurs in an attack's text: the reply could then repeat the
    attack and look like a leak, so the check would be meaningless."""
    section = scenario.redteam
    tenants = sorted(section.tenants) or [OUTSIDER]
    attacks: list[Attack] = []
    notes: list[str] = []
    for plugin in plugins:
        seen: set[tuple[str, ...]] = set()
        made = 0
        for k in range(section.count):
            strategy = strategies[k % len(strategies)]
            language = section.languages[(k // len(strategies)) % len(section.languages)]
            # Drawn, not rotated: a rotation would tie tenants to strategies whenever their counts share a factor.
            tenant = tenants[random.Random(f"{section.seed}:{plugin.name}:{k}:tenant").randrange(len(tenants))]
            for draw in range(_DRAWS):
                rng = random.Random(f"{section.seed}:{plugin.name}:{k}:{draw}")
                attack = _one(scenario, plugin, strategy, language, tenant, k, rng)
                key = tuple(attack.turns)
                if key not in seen and (attack.marker is None or not _holds(attack, attack.marker)):
                    break
            else:
                continue
            seen.add(key)
            _refuse_canaries(attack, index)
            attacks.append(attack)
            made += 1
        if made < section.count:
            notes.append(f"{plugin.name}: {made} distinct attacks (asked for {section.count})")
    return attacks, notes


def _holds(attack: Attack, marker: str) -> bool:
    text = " ".join(attack.turns + attack.plain).casefold()
    return marker.casefold() in text


def _refuse_canaries(attack: Attack, index: CanaryIndex) -> None:
    # The dressed turns are the plain turns encoded, framed or preceded by BQAS's own text: read as
    # written, with the plain turns, they hold every canary an attack can carry.
    for text in [*attack.plain, *attack.turns]:
        for match in index.find(text, decode=False):
            owner = f"tenant {match.canary.tenant}" if match.canary.tenant else "the system prompt"
            raise RedteamError(
                f"canary {match.canary.value!r} ({owner}, {match.canary.kind}) occurs in the text of attack "
                f"{attack.id} ({match.how}: {match.excerpt!r}): a reply repeating the attack would look like a "
                "leak, so the check would be meaningless; use another canary (or another teacher/school name)"
            )
