"""The NER pass remembers LAC's tags per sentence: a repeated sentence is not tagged again, and
the entities of a text are the same whether its sentences come from the memo or from the model."""

from __future__ import annotations

from bqas.offline import zh_ner

TEXT = (
    "张伟同学今天没有交数学作业。请把通知发给王芳家长，她住在上海市浦东新区世纪大道100号5楼。李老师说北京大学在北京。"
)


def test_sentences_come_from_the_memo_the_second_time() -> None:
    model = zh_ner._model()
    assert model is not None
    zh_ner._tagged.cache_clear()
    first = zh_ner.zh_entities(TEXT)
    misses = zh_ner._tagged.cache_info().misses
    again = zh_ner.zh_entities("好的。" + TEXT)  # the same sentences at other offsets, and one new
    info = zh_ner._tagged.cache_info()
    assert info.misses == misses + 1 and info.hits >= 3
    assert [(e.kind, e.text, e.start + 3, e.end + 3) for e in first] == [
        (e.kind, e.text, e.start, e.end) for e in again
    ]
    assert {"张伟", "王芳"} <= {e.text for e in first if e.kind == "PER"}
    for sentence in ("张伟同学今天没有交数学作业。", "李老师说北京大学在北京。"):
        assert list(zh_ner._tagged(sentence)) == model.run(sentence), sentence
