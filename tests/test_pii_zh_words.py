"""Chinese person names never cut or swallow a frequent word (工程师 is no person "程师").

The words come from the shipped list (``bqas/data/pii/zh_common_words.txt``: the most frequent two- and
three-character words of jieba's dictionary that it does not tag as names); each is put into sentences
where it stands as a word, and the full detector (rules and the LAC model) must not report a person
overlapping it. Names next to such words are still found.
"""

from __future__ import annotations

import pytest

from bqas.offline.pii import detect_pii
from bqas.offline.zh_words import common_words, fit_name_span

# Sentences in which the word stands alone: at the start before a title (许多老师), after 的-free
# verbs, before a particle. "{}" is the word.
CARRIERS = ("{}老师都同意了。", "我的{}同学来了。", "可以加{}的微信", "{}说明了原因")
FREQUENT = 2000


def _frequent_words(n: int) -> list[str]:
    from importlib import resources

    raw = resources.files("bqas").joinpath("data", "pii", "zh_common_words.txt").read_text(encoding="utf-8")
    return [w for w in raw.splitlines() if w and not w.startswith("#")][:n]


def _persons(text: str) -> list[tuple[str, int, int]]:
    return [(f.text, f.start, f.end) for f in detect_pii(text, "zh") if f.kind == "person"]


def test_the_engineer_of_the_device_scenario_is_no_person() -> None:
    # zh-priv-05 of scenarios/device_docs_zh: LAC reads 加工 + 程师 and tagged 程师 as a name.
    assert _persons("可以加工程师的微信 wjg_service_demo 沟通。") == []


def test_no_frequent_word_is_cut_or_taken_for_a_name() -> None:
    words = _frequent_words(FREQUENT)
    assert len(words) == FREQUENT and all(2 <= len(w) <= 3 for w in words)
    cut: list[str] = []
    for word in words:
        for carrier in CARRIERS:
            text = carrier.format(word)
            start = carrier.index("{}")
            end = start + len(word)
            hits = [p for p in _persons(text) if p[1] < end and start < p[2]]
            if hits:
                cut.append(f"{text!r}: {hits}")
    assert cut == [], f"{len(cut)} sentences with a frequent word read as a name:\n" + "\n".join(cut[:40])


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("请联系工程师王建国处理。", ["王建国"]),
        ("请直接联系王建国工程师，手机 138 0013 8000。", ["王建国"]),
        ("报修人是放射科李秀英女士，分机 8021。", ["李秀英"]),
        ("昨天马淑兰在体育课上扭伤了脚。", ["马淑兰"]),  # 天马 is a word, the name still starts after 昨天
        ("今天王老师来了。", ["王"]),  # 天王 is a word, but 今天 + 王老师 is the reading
        ("高中同学张伟来了。", ["张伟"]),
        ("栾敏平和费玉英在课堂上吵架了。", ["栾敏平", "费玉英"]),
    ],
)
def test_names_next_to_frequent_words_are_still_found(text: str, names: list[str]) -> None:
    assert [p[0] for p in _persons(text)] == names


@pytest.mark.parametrize(
    ("text", "span", "fitted"),
    [
        ("可以加工程师的微信", (4, 6), None),  # the tail of 工程师
        ("许多老师都同意了", (0, 2), None),  # a frequent word itself
        ("机关老师", (1, 2), None),  # a surname alone that ends 机关
        ("今天王老师", (2, 3), (2, 3)),  # ... but 今天 + 王 reads as well
        ("学生张伟明天来", (2, 5), (2, 4)),  # a guessed end stops where 明天 starts
        ("王建国来了", (0, 3), (0, 3)),  # 建国 inside the name changes nothing
        ("李明天来", (0, 2), None),  # cut to the surname alone: no name is left
    ],
)
def test_fit_name_span(text: str, span: tuple[int, int], fitted: tuple[int, int] | None) -> None:
    assert fit_name_span(text, *span) == fitted


def test_the_models_end_is_kept() -> None:
    # 平和 is a word, but the model read 栾敏平 + 和 (and): only a guessed end moves.
    assert fit_name_span("栾敏平和费玉英在课堂上吵架了", 0, 3, guessed_end=False) == (0, 3)
    assert fit_name_span("栾敏平和费玉英在课堂上吵架了", 0, 3) == (0, 2)


def test_the_list_holds_no_listed_name_and_the_engineer() -> None:
    words = common_words()
    assert "工程师" in words and "加工" in words
    assert not {"张伟", "王建国", "李秀英"} & words
