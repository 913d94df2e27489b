"""Frequent Chinese words that a person name must not cut or be (``bqas/data/pii/zh_common_words.txt``).

Chinese has no spaces, so a name rule or the NER model can take the tail of a word for a name: LAC reads
可以加工程师 as 加工 + 程师 and tags 程师 as a person; the cue rule reads 许多老师 ("many teachers") as a
teacher named 许多. :func:`fit_name_span` checks a name span against the frequent words around it: a span
that is such a word, or starts inside one, is no name; a span whose guessed end runs into one (张伟明天 -> 张伟)
ends where the word starts.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

# The list holds words of two and three characters (scripts/build_zh_words.py).
_LENGTHS = (2, 3)


@cache
def common_words() -> frozenset[str]:
    """The word list, loaded once (20,000 words, a few milliseconds)."""
    raw = resources.files("bqas").joinpath("data", "pii", "zh_common_words.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in raw.splitlines() if line.strip() and not line.startswith("#"))


def fit_name_span(text: str, start: int, end: int, *, guessed_end: bool = True) -> tuple[int, int] | None:
    """``(start, end)`` of the name once no frequent word is cut, or None when no name is left.

    None when ``text[start:end]`` is a frequent word or the tail of one (the name would begin with half a
    word). Where the end was guessed (``guessed_end``: the cue rules take up to two given-name characters),
    a frequent word that starts inside the span and runs past its end moves the end to that word's start
    (学生张伟明天来 -> 张伟); fewer than two characters left is no name. The NER model's end is its own
    reading of the sentence and is kept (栾敏平和费玉英 is 栾敏平 + 和, though 平和 is a word).
    A frequent word wholly inside the span (建国 in 王建国) is part of the name and changes nothing.
    """
    words = common_words()
    if text[start:end] in words:
        return None
    for length in _LENGTHS:
        # Words that hold the whole span and start before it (程师 in 工程师, 关 in 机关). One that ends
        # inside the span is left alone: 昨天马淑兰 has 天马, and is still 昨天 + 马淑兰.
        for first in range(max(0, end - length), start):
            if first + length >= end and text[first : first + length] in words:
                if end - start == 1 and _ends_word(text, first, start, words):
                    continue  # a surname alone: 今天王老师 is 今天 + 王老师, though 天王 is a word too
                return None
    new_end = end
    for length in _LENGTHS if guessed_end else ():
        # Words that start inside the span and end after it: the name stops where the word starts.
        for first in range(max(start + 1, end - length + 1), end):
            if first + length <= len(text) and text[first : first + length] in words:
                new_end = min(new_end, first)
    if new_end - start < 2 and new_end != end:
        return None
    return start, new_end


def _ends_word(text: str, first: int, pos: int, words: frozenset[str]) -> bool:
    """Whether ``text[first:pos]`` is the end of a frequent word that starts before ``first`` (so the
    text can be read with a word ending at ``pos``)."""
    return any(text[start:pos] in words for length in _LENGTHS if (start := pos - length) < first and start >= 0)
