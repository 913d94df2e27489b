"""The offline generator: variations of an intent's base patterns, without any LLM.

Each candidate: pick a pattern and a form (plain/imperative with or without "bitte", a du-question
"Kannst du bitte …?", an ich-form "Ich möchte …"), fill its slots from the word lists, then optionally
put in dialect forms and typos. Everything is drawn from one ``random.Random(seed)``, so a seed gives
the same items every time.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from bqas.synth._text import lower_sentence_start, starts_with_imperative
from bqas.synth.dialects import Dialect, add_marker, apply_dialect
from bqas.synth.items import Candidate
from bqas.synth.patterns import Pattern, PatternBook
from bqas.synth.typos import add_typos, fold_umlauts

_SLOT = re.compile(r"\{(\w+)\}")

# Wrappers; {x} is the imperative (or plain command), {inf} the infinitive phrase, {want} the ich-object.
_IMP_FORMS = ("{x}", "{x}", "{x} bitte", "Bitte {xl}", "{x}, danke", "Hey, {xl}")
_INF_FORMS = ("Kannst du bitte {inf}?", "Könntest du {inf}?", "Kannst du {inf}?", "Bitte {inf}", "{Inf}, bitte")
_WANT_FORMS = ("Ich möchte {want}", "Ich hätte gern {want}", "Ich bräuchte {want}")


def _fill(template: str, book: PatternBook, intent: str, rng: random.Random, slots: dict[str, str]) -> str:
    """Fill ``{slot}`` placeholders (values may contain placeholders themselves, one level deep)."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in slots:
            return slots[name]
        values = book.slot_values(intent, name)
        if not values:
            return m.group(0)
        value = rng.choice(values)
        if "{" in value:
            value = _SLOT.sub(lambda inner: _fill(inner.group(0), book, intent, rng, slots), value)
        slots[name] = value
        return value

    return _SLOT.sub(repl, template)


def _surface(pattern: Pattern, rng: random.Random) -> str:
    """Choose a form of the pattern (still with placeholders)."""
    polite = starts_with_imperative(pattern.imp) and "bitte" not in pattern.imp.lower()
    # Statements and commands that already say "bitte" get no second "bitte".
    forms: list[tuple[str, str]] = [("imp", f) for f in _IMP_FORMS if polite or "itte" not in f]
    if pattern.inf:
        # "Bitte dir … merken" is not German: reflexive du-phrases go into questions only.
        du_only = pattern.inf.split(" ", 1)[0] in ("dir", "dich")
        forms += [("inf", f) for f in _INF_FORMS if not du_only or f.endswith("?")]
    if pattern.want:
        forms += [("want", f) for f in _WANT_FORMS]
    kind, form = rng.choice(forms)
    if kind == "imp":
        return form.format(x=pattern.imp, xl=lower_sentence_start(pattern.imp))
    if kind == "inf":
        assert pattern.inf is not None
        inf = pattern.inf
        return form.format(inf=inf, Inf=inf[:1].upper() + inf[1:])
    assert pattern.want is not None
    return form.format(want=pattern.want)


def generate_candidates(
    book: PatternBook,
    intent: str,
    rng: random.Random,
    *,
    typos: bool = False,
    dialect: Dialect | None = None,
) -> Iterator[Candidate]:
    """An endless stream of candidates for ``intent`` (KeyError when it has no patterns)."""
    patterns = book.for_intent(intent).patterns
    while True:
        pattern = rng.choice(patterns)
        slots: dict[str, str] = {}
        template = _surface(pattern, rng)
        text = _fill(template, book, intent, rng, slots)
        text = text[:1].upper() + text[1:]
        tags: list[str] = []
        if dialect is not None:
            text = apply_dialect(text, dialect)
            slots = {k: _dialect_slot(v, text, dialect) for k, v in slots.items()}
            text = add_marker(text, dialect, rng)
        if typos:
            n = 1 if rng.random() < 0.7 else 2
            text, kinds = add_typos(text, rng, count=n, protected=list(slots.values()))
            if "umlaut" in kinds:
                slots = {k: fold_umlauts(v) for k, v in slots.items()}
            tags.extend(f"typo:{k}" for k in dict.fromkeys(kinds))
        yield Candidate(text, dict(slots), tuple(tags))


def _dialect_slot(value: str, text: str, dialect: Dialect) -> str:
    """The slot value as it appears in the dialect text (the same replacements, either case)."""
    converted = apply_dialect(value, dialect)
    if converted in text:
        return converted
    capital = converted[:1].upper() + converted[1:]
    return capital if capital in text else converted
