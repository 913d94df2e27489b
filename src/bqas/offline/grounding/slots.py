"""Closed classes of words that fill one slot of a statement: colours, seasons, ordinals, school subjects.

A claim that names one value of such a class where the facts' sentence most like it names another ("the lamp
flashes green" against "the light blinks orange") contradicts the facts in that slot, which a person can
check. A value the facts merely lack is no evidence: answers add "first" or "in summer" in other words.
"""

from __future__ import annotations

import re
from functools import cache

#: class -> value -> the words (German, English, Chinese) that name it. A Chinese colour needs a second
#: character (红色, 绿灯): a single one is part of too many words (白话).
_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    "colour": {
        "red": ("rot", "rote", "roten", "rotes", "red", "红色", "红灯"),
        "green": ("grün", "grüne", "grünen", "grünes", "green", "绿色", "绿灯"),
        "blue": ("blau", "blaue", "blauen", "blaues", "blue", "蓝色", "蓝灯"),
        "yellow": ("gelb", "gelbe", "gelben", "gelbes", "yellow", "黄色", "黄灯"),
        "orange": ("orange", "orangen", "orangefarben", "橙色", "橙灯"),
        "white": ("weiß", "weiße", "weißen", "white", "白色", "白灯"),
        "black": ("schwarz", "schwarze", "schwarzen", "black", "黑色"),
    },
    "season": {
        "spring": ("frühling", "frühjahr", "spring", "春天", "春季"),
        "summer": ("sommer", "summer", "夏天", "夏季"),
        "autumn": ("herbst", "autumn", "秋天", "秋季"),
        "winter": ("winter", "冬天", "冬季"),
    },
    "ordinal": {
        "1": ("erste", "ersten", "erster", "erstes", "first", "第一"),
        "2": ("zweite", "zweiten", "zweiter", "second", "第二"),
        "3": ("dritte", "dritten", "dritter", "third", "第三"),
        "4": ("vierte", "vierten", "vierter", "fourth", "第四"),
        "5": ("fünfte", "fünften", "fünfter", "fifth", "第五"),
        "6": ("sechste", "sechsten", "sechster", "sixth", "第六"),
        "last": ("letzte", "letzten", "letzter", "last", "最后"),
    },
    "subject": {
        "maths": ("mathematik", "mathe", "maths", "math", "mathematics", "数学"),
        "german": ("deutsch", "deutschunterricht", "语文"),
        "english": ("englisch", "english", "英语"),
        "physics": ("physik", "physics", "物理"),
        "chemistry": ("chemie", "chemistry", "化学"),
        "biology": ("biologie", "biology", "生物"),
        "history": ("geschichte", "history", "历史"),
        "geography": ("erdkunde", "geographie", "geography", "地理"),
        "medicine": ("medizin", "medicine", "医学"),
        "music": ("musik", "music", "音乐"),
        "art": ("kunst", "美术"),
        "sport": ("sportunterricht", "sport", "体育"),
    },
}

_KIND = {"colour": "entity", "season": "date", "ordinal": "number", "subject": "entity"}


@cache
def _index() -> tuple[re.Pattern[str], dict[str, tuple[str, str]]]:
    lookup: dict[str, tuple[str, str]] = {}
    for cls, values in _CLASSES.items():
        for value, names in values.items():
            for name in names:
                lookup[name] = (cls, value)
    latin = sorted((n for n in lookup if n.isascii() or (n.isalpha() and not _is_cjk(n))), key=len, reverse=True)
    cjk = sorted((n for n in lookup if _is_cjk(n)), key=len, reverse=True)
    pattern = re.compile(
        r"(?<![\w-])(?:" + "|".join(map(re.escape, latin)) + r")(?![\w-])|" + "|".join(map(re.escape, cjk)),
        re.IGNORECASE,
    )
    return pattern, lookup


def _is_cjk(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" for ch in text)


def slot_words(text: str) -> list[tuple[str, str, str]]:
    """(as written, class, value) for each slot word of ``text``."""
    pattern, lookup = _index()
    out = []
    for m in pattern.finditer(text):
        hit = lookup.get(m.group(0).casefold())
        if hit is not None:
            out.append((m.group(0), *hit))
    return out


def slot_values(text: str) -> frozenset[tuple[str, str]]:
    """The (class, value) pairs ``text`` names."""
    return frozenset((cls, value) for _, cls, value in slot_words(text))


def swapped_slots(claim: str, sentence: str, facts: frozenset[tuple[str, str]]) -> list[dict[str, str | bool]]:
    """The slot words of ``claim`` whose value the facts lack where ``sentence`` (the facts' sentence most like
    the claim) names another value of the same class that the claim lacks."""
    in_claim = slot_values(claim)
    in_sentence = slot_words(sentence)
    out: list[dict[str, str | bool]] = []
    for written, cls, value in slot_words(claim):
        if (cls, value) in facts:
            continue
        instead = next((w for w, c, v in in_sentence if c == cls and (c, v) not in in_claim), None)
        if instead is not None:
            out.append({"kind": _KIND[cls], "text": written, "supported": False, "instead": instead})
    return out
