"""Chunking: sections into passages along paragraphs, then sentences (German, English, Chinese).

A passage never cuts a sentence and never mixes two headings or pages. Paragraphs (blank-line separated,
list items and table rows each on their own) are joined until ``max_chars``; a paragraph longer than
that is cut between sentences. Chinese is cut at 。！？； like the offline judges' sentence splitter; no
text is ever split at spaces inside a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bqas.offline.text.language import detect_language
from bqas.offline.text.sentences import split_sentences
from bqas.ragsynth.documents import Section

DEFAULT_MAX_CHARS = 700


@dataclass(frozen=True)
class Passage:
    """A chunk of a document with where it came from."""

    chunk_id: str
    source: str
    page: int | None
    heading: str
    text: str
    sentences: tuple[str, ...]
    language: str = field(default="de")

    def context(self) -> dict[str, object]:
        """The passage as a ``reference_contexts`` entry."""
        return {"chunk_id": self.chunk_id, "source": self.source, "page": self.page, "heading": self.heading,
                "text": self.text}  # fmt: skip


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_LIST_LINE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; inside a block, list items and table-like "a: b" lines stand alone,
    other lines are joined (a hard-wrapped paragraph is one paragraph)."""
    out: list[str] = []
    for block in _PARAGRAPH_BREAK.split(text):
        current: list[str] = []
        for line in block.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            if _LIST_LINE.match(line) and current:
                out.append(_join(current))
                current = []
            current.append(stripped)
        if current:
            out.append(_join(current))
    return [p for p in out if p]


def _join(lines: list[str]) -> str:
    """Lines of one paragraph joined: with a space between Latin text, without one between CJK text."""
    text = lines[0]
    for line in lines[1:]:
        cjk = re.search(r"[\u4e00-\u9fff]$", text) and re.match(r"[\u4e00-\u9fff]", line)
        text += ("" if cjk else " ") + line
    return text


def chunk_sections(sections: Iterable[Section], *, max_chars: int = DEFAULT_MAX_CHARS) -> list[Passage]:
    """The passages of all sections, numbered per source file (``<file name>#<n>``)."""
    passages: list[Passage] = []
    counters: dict[str, int] = {}
    for section in sections:
        groups: list[list[str]] = [[]]
        size = 0
        for para in _paragraphs(section.text):
            sentences = split_sentences(para)
            # A paragraph that does not fit into the current passage starts the next one whole.
            if groups[-1] and size + sum(len(s) for s in sentences) > max_chars:
                groups.append([])
                size = 0
            for sentence in sentences:
                if groups[-1] and size + len(sentence) > max_chars:
                    groups.append([])
                    size = 0
                groups[-1].append(sentence)
                size += len(sentence)
        for group in (g for g in groups if g):
            n = counters.get(section.source, 0) + 1
            counters[section.source] = n
            text = _join(group) if any(re.search(r"[\u4e00-\u9fff]", s) for s in group) else " ".join(group)
            passages.append(
                Passage(
                    chunk_id=f"{Path(section.source).name}#{n}",
                    source=section.source,
                    page=section.page,
                    heading=section.heading,
                    text=text,
                    sentences=tuple(group),
                    language=detect_language(text, default="en"),
                )
            )
    return passages
