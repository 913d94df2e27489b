"""Synthetic grounding examples: faithful spans of a passage and seeded perturbations that make them
unfaithful (negation, a changed number, a swapped name, an invented sentence, and the LLM-like kinds)."""

from __future__ import annotations

import random
import re

from bqas.offline._textutil import CJK_RE, detect_language, split_sentences
from bqas.training.grounding.datasets import Example

_NEG_EN = re.compile(r"\b(is|are|was|were|can|will|has|have|had|does|did|could|should|would)\b(?! not)")
_NEG_DE = re.compile(r"\b(ist|sind|war|waren|wird|werden|kann|können|hat|haben|muss|müssen|soll|sollen)\b(?! nicht)")
_NEG_ZH = re.compile(r"(是|能|会|可以|应该)")
_NUM = re.compile(r"(?<![\d.,])\d+(?:[.,]\d+)?(?![\d.,]*\d)")
#: A capitalised name after a lower-case word or a comma (not the sentence's first word), one or two words;
#: the verifier's perturbations swap the same names.
_CAP = re.compile(r"(?<=[a-zäöüß,] )[A-ZÄÖÜ][a-zäöüß]{2,}(?: [A-ZÄÖÜ][a-zäöüß]{2,})?")
_ZH_NAME = re.compile(r"[\u4e00-\u9fff]{2,4}(?=[市省县区国])")


def _negate(sentence: str, language: str) -> str | None:
    if language == "zh":
        m = _NEG_ZH.search(sentence)
        return sentence[: m.start()] + "不" + sentence[m.start() :] if m else None
    pattern, word = (_NEG_DE, "nicht") if language == "de" else (_NEG_EN, "not")
    m = pattern.search(sentence)
    return sentence[: m.end()] + f" {word}" + sentence[m.end() :] if m else None


def _change_number(sentence: str, rng: random.Random) -> str | None:
    nums = list(_NUM.finditer(sentence))
    if not nums:
        return None
    m = rng.choice(nums)
    text = m.group(0)
    digits = re.sub(r"\D", "", text)
    value = int(digits) if digits else 0
    new = str(value + rng.choice((1, 2, 3, 5, 10, 12)) if value < 1000 else value + rng.choice((1, 3, 7, 20)))
    return sentence[: m.start()] + new + sentence[m.end() :]


def _swap_entity(sentence: str, pool: list[str], rng: random.Random, language: str) -> str | None:
    pattern = _ZH_NAME if language == "zh" else _CAP
    found = list(pattern.finditer(sentence))
    if not found or not pool:
        return None
    m = rng.choice(found)
    other = rng.choice(pool)
    if other == m.group(0):
        return None
    return sentence[: m.start()] + other + sentence[m.end() :]


#: Over-generalisation: a hedge or quantifier of the passage made absolute ("some" -> "all").
_GENERALISE: dict[str, dict[str, str]] = {
    "en": {
        "some": "all",
        "many": "all",
        "several": "all",
        "most": "all",
        "often": "always",
        "usually": "always",
        "sometimes": "always",
        "may": "will",
        "might": "will",
        "can": "will always",
    },
    "de": {
        "einige": "alle",
        "viele": "alle",
        "manche": "alle",
        "meisten": "allen",
        "oft": "immer",
        "häufig": "immer",
        "meist": "immer",
        "manchmal": "immer",
        "kann": "wird immer",
        "könnte": "wird",
    },
    "zh": {
        "一些": "所有",
        "部分": "全部",
        "许多": "所有",
        "大多": "全都",
        "经常": "总是",
        "有时": "总是",
        "可能": "一定",
    },
}
#: Added detail: a name or year of another passage attached to a sentence of this one.
_DETAIL = {
    "en": ("{s}, according to {name}.", "{s}, including {name}.", "{s} in {year}."),
    "de": ("{s}, so {name}.", "{s}, darunter {name}.", "{s} im Jahr {year}."),
    "zh": ("{s}，据{name}称。", "{s}，包括{name}。", "{s}（{year}年）。"),
}
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20[0-2]\d)(?!\d)")


def _generalise(sentence: str, language: str) -> str | None:
    table = _GENERALISE.get(language, _GENERALISE["en"])
    if language == "zh":
        for word, absolute in table.items():
            if word in sentence:
                return sentence.replace(word, absolute, 1)
        return None
    for m in re.finditer(r"\w+", sentence):
        found = table.get(m.group(0).casefold())
        if found is not None:
            word = found[0].upper() + found[1:] if m.group(0)[0].isupper() else found
            return sentence[: m.start()] + word + sentence[m.end() :]
    return None


def _misattribute(sentence: str, passage: str, rng: random.Random, language: str) -> str | None:
    """Wrong attribution: a name of the sentence replaced by *another name of the same passage*."""
    pattern = _ZH_NAME if language == "zh" else _CAP
    here = list(pattern.finditer(sentence))
    others = sorted({m.group(0) for m in pattern.finditer(passage)} - {m.group(0) for m in here})
    if not here or not others:
        return None
    m = rng.choice(here)
    return sentence[: m.start()] + rng.choice(others) + sentence[m.end() :]


def _add_detail(sentence: str, names: list[str], years: list[str], rng: random.Random, language: str) -> str | None:
    templates = _DETAIL.get(language, _DETAIL["en"])
    stem = sentence.rstrip(" .。!！")
    usable = [t for t in templates if ("{name}" in t and names) or ("{year}" in t and years)]
    if not usable:
        return None
    template = rng.choice(usable)
    return template.format(s=stem, name=rng.choice(names) if names else "", year=rng.choice(years) if years else "")


def _passage_sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if len(s) >= 25 and (CJK_RE.search(s) or len(s.split()) >= 5)]


#: Perturbation kinds the shipped model is trained with, drawn uniformly; "invent" (a sentence of another
#: passage inserted) twice as often. Kinds that do not apply to the chosen sentence fall back to "invent".
KINDS: tuple[str, ...] = ("negate", "number", "entity", "invent", "invent")
#: KINDS plus the LLM-like inventions (over-generalisation, wrong attribution, an added detail); measured
#: (``bench_grounding_recipes.py --kinds ...``) and not used by default: with the shipped recipe they
#: changed the nested leave-one-dataset-out ROC-AUCs by at most 0.002 (docs/grounding-model.md).
LLM_LIKE_KINDS: tuple[str, ...] = (*KINDS, "generalise", "attribute", "detail")


def synthesize(passages: list[tuple[str, str]], source: str, seed: int, per_passage: int = 1) -> list[Example]:
    """Faithful copies and unfaithful perturbations of ``passages`` = [(text, language)], seeded: negation,
    changed number, swapped name, an invented sentence taken from another passage, and the kinds LLM
    inventions take: over-generalisation ("some" -> "all", "可能" -> "一定"), wrong attribution (a name
    of the same passage in the wrong place) and an added detail (a name or year of another passage).

    A faithful example is 1-3 consecutive sentences of a passage; each unfaithful one starts from such a
    span and changes one sentence (or adds one from another passage of the same language). The facts are
    always the whole passage."""
    rng = random.Random(seed)
    by_lang: dict[str, list[list[str]]] = {}
    names: dict[str, list[str]] = {}
    years: dict[str, list[str]] = {}
    for text, lang in passages:
        sents = _passage_sentences(text)
        if sents:
            by_lang.setdefault(lang, []).append(sents)
            pattern = _ZH_NAME if lang == "zh" else _CAP
            names.setdefault(lang, []).extend(m.group(0) for s in sents for m in pattern.finditer(s))
            years.setdefault(lang, []).extend(m.group(0) for s in sents for m in _YEAR.finditer(s))
    out: list[Example] = []
    for text, lang in passages:
        sents = _passage_sentences(text)
        if not sents:
            continue
        for _ in range(per_passage):
            start = rng.randrange(len(sents))
            span = sents[start : start + rng.choice((1, 2, 3))]
            out.append(Example(" ".join(span), (text,), "", 0, f"synthetic:{source}", lang))
            k = rng.randrange(len(span))
            kind = rng.choice(KINDS)
            changed: str | None = None
            if kind == "generalise":
                changed = _generalise(span[k], lang)
            elif kind == "attribute":
                changed = _misattribute(span[k], text, rng, lang)
            elif kind == "detail":
                # A name/year of *another* passage: plausible, on topic, and not in this one's facts.
                pool_names = [n for n in names.get(lang, []) if n not in text]
                pool_years = [y for y in years.get(lang, []) if y not in text]
                changed = _add_detail(span[k], pool_names, pool_years, rng, lang)
            elif kind == "negate":
                changed = _negate(span[k], lang)
            elif kind == "number":
                changed = _change_number(span[k], rng)
            elif kind == "entity":
                changed = _swap_entity(span[k], names.get(lang, []), rng, lang)
            if changed is None or kind == "invent":
                others = [p for p in by_lang.get(lang, []) if p is not sents and p[0] not in text]
                if not others:
                    continue
                invented = rng.choice(rng.choice(others))
                new_span = [*span[: k + 1], invented, *span[k + 1 :]]
            else:
                new_span = [*span[:k], changed, *span[k + 1 :]]
            out.append(Example(" ".join(new_span), (text,), "", 1, f"synthetic:{source}", lang))
    return out


def passages_of(examples: list[Example]) -> list[tuple[str, str]]:
    """The distinct fact passages of ``examples`` with their language (for :func:`synthesize`)."""
    seen: dict[str, str] = {}
    for ex in examples:
        for f in ex.facts:
            if f not in seen:
                seen[f] = detect_language(f, default=ex.language)
    return list(seen.items())
