"""Chinese person names by cue: a listed surname with a cue after it (张伟同学, 李老师) or before it
(学生张伟, 叫王芳); the NER model's names without a cue come from :mod:`bqas.offline.pii_ner`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from bqas.offline.pii.lexicon import _lexicon, _wordtuple
from bqas.offline.pii.match import _make
from bqas.offline.pii_types import PiiFinding

# Cues after a name: 张伟同学, 李老师, 王女士, 刘芳家长.
_ZH_CUES_AFTER = _wordtuple("同学 老师 先生 女士 小姐 家长 校长 主任 教授 医生 妈妈 爸爸 同志 君")
# Cues before a name: 学生张伟, 家长：王芳, 叫李娜.
_ZH_CUES_BEFORE = ("学生", "同学", "家长", "老师", "班主任", "校长", "姓名", "名字", "叫", "名叫", "联系人", "孩子")
# Characters that end a word before a name: a name never starts right after half a word.
_ZH_BOUNDARY_CHARS = set("的和是给跟与及请让叫向对把被由在们位名个说问找为、，。：:；！？!?（）() \n\t\"'“”‘’《》")
_ZH_BOUNDARY_WORDS = _wordtuple("主任 校长 同学 学生 家长 老师 班长 教练 妈妈 爸爸 孩子 儿子 女儿 姓名 名字")
# Characters that are no part of a given name: numerals and grade words ("高一同学" is a class, not 高一).
_ZH_NOT_GIVEN = set("一二三四五六七八九十零百千年级班届们的了是在和也都就很要会有没不去来上下把被给对说今昨这那每各全")
# Words before a cue that start with a surname character but are subjects or roles (历史 -> 史, 任课 -> 任).
_ZH_NOT_NAME_WORDS = _wordtuple(
    "主任 班主任 任课 代课 历史 数学 语文 英语 体育 美术 音乐 地理 物理 化学 生物 政治 科学 信息 实习 辅导 "
    "指导 学科 班级 全体 各位 所有"
)
# Specimen names (张三, 李四, 王五 are the Chinese "John Doe"; 小明 the textbook pupil).
_ZH_PLACEHOLDERS = frozenset({"张三", "李四", "王五", "赵六", "小明", "小红", "某某"})


def _is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


_HAN_CHAR_RE = re.compile("[\u4e00-\u9fff]")  # the range of _is_han


def _has_han(text: str) -> bool:
    """Whether ``text`` has a character for which :func:`_is_han` holds (one regex scan, not a Python call
    per character)."""
    return _HAN_CHAR_RE.search(text) is not None


def _zh_boundary_before(text: str, pos: int) -> bool:
    """Whether a word ends right before ``pos`` (start, punctuation, a function character or a cue)."""
    if pos == 0 or text[pos - 1] in _ZH_BOUNDARY_CHARS or not _is_han(text[pos - 1]):
        return True
    return any(text.endswith(w, 0, pos) for w in _ZH_BOUNDARY_WORDS)


def _zh_surname_at(text: str, pos: int, surnames: Sequence[str]) -> int:
    """Length of the surname starting at ``pos`` (0 if none): the longest listed one that matches."""
    if pos >= len(text):
        return 0
    # Only the surnames starting with the character at pos can match (the first match in the longest-first
    # list is the longest match): a dict look-up instead of a startswith() per listed surname.
    index = _default_surname_index() if surnames is _lexicon().zh_surnames else _surnames_by_first(surnames)
    for s in index.get(text[pos], ()):
        if text.startswith(s, pos):
            return len(s)
    return 0


@cache
def _default_surname_index() -> dict[str, tuple[str, ...]]:
    return _surnames_by_first(_lexicon().zh_surnames)


def _surnames_by_first(surnames: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """First character -> the surnames starting with it, longest first."""
    index: dict[str, list[str]] = {}
    for s in sorted(surnames, key=len, reverse=True):
        if s:
            index.setdefault(s[0], []).append(s)
    return {first: tuple(names) for first, names in index.items()}


def _zh_given_ok(given: str) -> bool:
    return all(_is_han(ch) and ch not in _ZH_NOT_GIVEN for ch in given)


def _zh_name_before(text: str, cue_start: int, surnames: Sequence[str]) -> tuple[int, int] | None:
    """The name ending at ``cue_start``: surname + 0-2 given-name characters, preferring a candidate that
    starts at a word boundary (so 班主任王老师 gives 王, not 任王)."""
    if any(text.endswith(w, 0, cue_start) for w in _ZH_NOT_NAME_WORDS):
        return None  # 历史老师, 班主任老师, 任课老师: a subject or role, not 史/任
    options: list[tuple[int, int]] = []
    for length in (4, 3, 2, 1):
        start = cue_start - length
        if start < 0:
            continue
        s_len = _zh_surname_at(text, start, surnames)
        if not s_len or s_len > length or not _zh_given_ok(text[start + s_len : cue_start]):
            continue
        if length - s_len > 2:
            continue
        options.append((start, cue_start))
    for start, end in options:
        if _zh_boundary_before(text, start):
            return start, end
    return options[0] if options else None


def _zh_name_after(text: str, pos: int, surnames: Sequence[str]) -> tuple[int, int] | None:
    """The name starting at ``pos`` after a cue: surname + 1-2 given-name characters."""
    s_len = _zh_surname_at(text, pos, surnames)
    if not s_len:
        return None
    end = pos + s_len
    while end < len(text) and end - pos - s_len < 2 and _zh_given_ok(text[end]):
        if any(text.startswith(w, end) for w in (*_ZH_CUES_AFTER, *_ZH_BOUNDARY_WORDS)):
            break
        end += 1
    # Two given characters are the common case; the loop stops early at a function or verb character
    # (_ZH_NOT_GIVEN: 张伟说 -> 张伟) or at a cue (李娜老师 -> 李娜). Without a dictionary, 张伟明天 gives 张伟明.
    return (pos, end) if end > pos + s_len else None


def _chinese_persons(text: str, pre: bool = True) -> list[PiiFinding]:
    """Chinese names with a cue after (张伟同学, 李老师) or before (学生张伟, 叫王芳)."""
    if not _has_han(text):
        return []
    surnames = _lexicon().zh_surnames
    out: list[PiiFinding] = []
    for cue in _ZH_CUES_AFTER:
        if pre and cue not in text:
            continue  # a substring test instead of a regex look-up and scan per cue
        for m in re.finditer(re.escape(cue), text):
            span = _zh_name_before(text, m.start(), surnames)
            if span and text[span[0] : span[1]] not in _ZH_PLACEHOLDERS:
                conf = 0.9 if span[1] - span[0] > 1 else 0.7
                out.append(_make("person", text, span[0], span[1], "name:zh_cue_after", conf))
    for cue in _ZH_CUES_BEFORE:
        if pre and cue not in text:
            continue
        for m in re.finditer(re.escape(cue) + r"[：:\s]*", text):
            span = _zh_name_after(text, m.end(), surnames)
            if span and text[span[0] : span[1]] not in _ZH_PLACEHOLDERS:
                out.append(_make("person", text, span[0], span[1], "name:zh_cue_before", 0.8))
    return out
