"""PII findings from the Chinese NER model (:mod:`bqas.offline.zh_ner`), the second pass of
:func:`bqas.offline.pii.detect_pii` after the regex rules.

* ``PER`` -> ``person`` (``lac:PER``). A title LAC includes in the name is cut off (陈老师 -> 陈); specimen
  names (张三, 李四 …) are left alone. Confidence 0.85 for a listed surname with a given name, 0.7 for a
  surname alone (陈老师), 0.6 for a nickname (小王, 老李: named in notes, not gating alone), 0.75 otherwise
  (transliterated names such as 约翰·史密斯).
* ``LOC`` -> ``address`` (``lac:LOC``, 0.85) when consecutive place names end in a house number
  (上海市浦东新区世纪大道100号5楼). A city, a district or a street without a number is no personal data and is
  not reported.
* ``ORG`` and the other place names are not reported either (a school or a company is no personal data on
  its own), but a regex name hit inside one of them that LAC does not tag as a person is dropped
  (王府井大街 is a street, 北京大学 a university).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bqas.offline.pii_types import PiiFinding
from bqas.offline.zh_ner import ZhEntity, zh_entities

# Titles and roles LAC keeps inside a PER span; the name is what precedes them.
_TITLES = ("同学", "老师", "先生", "女士", "小姐", "家长", "校长", "主任", "教授", "医生", "妈妈", "爸爸", "同志", "君")
_PLACEHOLDERS = frozenset({"张三", "李四", "王五", "赵六", "小明", "小红", "某某"})
_NICKNAME_PREFIXES = ("小", "老", "阿")
_UNIT = r"(?:号|號|室|楼|樓|栋|棟|幢|单元|層|层|弄)"
_HOUSE_NUMBER_RE = re.compile(rf"[0-9０-９一二三四五六七八九十百]+\s*{_UNIT}")
# What may follow the last place name of an address: 幸福小区25栋3单元1187室 (LAC tags only part of it LOC).
_ADDRESS_TAIL_RE = re.compile(rf"(?:[\u4e00-\u9fff]{{0,8}}?[0-9０-９]+\s*{_UNIT})+")


def _person(entity: ZhEntity, surnames: Sequence[str]) -> tuple[int, int, float] | None:
    """(start, end, confidence) of the name in a PER entity, or None for a specimen name / bare title."""
    start, end, name = entity.start, entity.end, entity.text
    for title in _TITLES:
        if name.endswith(title) and len(name) > len(title):
            name, end = name[: -len(title)], end - len(title)
            break
    if name in _PLACEHOLDERS:
        return None
    if name.startswith(_NICKNAME_PREFIXES) and len(name) == 2:
        return start, end, 0.6
    surname = next((s for s in surnames if name.startswith(s)), "")
    if surname and len(name) > len(surname):
        return start, end, 0.85
    if surname:
        return start, end, 0.7
    return start, end, 0.75


def _place_groups(entities: list[ZhEntity], text: str) -> list[tuple[int, int]]:
    """Spans of consecutive LOC entities (only spaces between them)."""
    groups: list[tuple[int, int]] = []
    for e in entities:
        if e.kind != "LOC":
            continue
        if groups and not text[groups[-1][1] : e.start].strip():
            groups[-1] = (groups[-1][0], e.end)
        else:
            groups.append((e.start, e.end))
    return groups


def ner_findings(text: str, surnames: Sequence[str]) -> tuple[list[PiiFinding], list[tuple[int, int]]]:
    """(findings, spans that veto regex name hits) for ``text``; both empty when the model is off."""
    entities = zh_entities(text)
    findings: list[PiiFinding] = []
    vetoes: list[tuple[int, int]] = [(e.start, e.end) for e in entities if e.kind == "ORG"]
    for e in entities:
        if e.kind == "PER":
            span = _person(e, surnames)
            if span is not None:
                start, end, conf = span
                findings.append(PiiFinding("person", text[start:end], start, end, "lac:PER", conf))
    for start, end in _place_groups(entities, text):
        tail = _ADDRESS_TAIL_RE.match(text, end)
        end = tail.end() if tail else end
        if _HOUSE_NUMBER_RE.search(text, start, end):
            findings.append(PiiFinding("address", text[start:end], start, end, "lac:LOC", 0.85))
        else:
            vetoes.append((start, end))
    persons = [(e.start, e.end) for e in entities if e.kind == "PER"]
    # A place or firm that contains a person's name ("李娜 ORG"?) keeps the person: veto only name-free spans.
    vetoes = [v for v in vetoes if not any(p[0] < v[1] and v[0] < p[1] for p in persons)]
    return findings, vetoes
