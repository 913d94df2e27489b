"""The records of a CSV file, each with the physical line it starts on, and a quote that is never closed
caught where it opens.

Python's :mod:`csv` reads a field that opens with a quote up to the next quote, across line breaks: one
unclosed quote swallows the rows after it into a single field, and ``reader.line_num`` then names the
last line it read. Here every record carries its first line. A record over several lines that does not
fit the header (more cells, a :class:`csv.Error`, or a quote that a strict reader finds unclosed) is
reported as an unclosed quote on its first line, and the lines after that line are read again as rows of
their own, so nothing else is lost. A quoted cell may still span lines where the record reads strictly
as one row (an answer with line breaks); an unclosed quote that reads so too cannot be told from one.
"""

from __future__ import annotations

import csv
import io
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

Dialect = type[csv.Dialect] | csv.Dialect


@dataclass(frozen=True)
class CsvRecord:
    """One record: its first and last physical line, and its fields or why it cannot be read."""

    line: int
    end: int
    fields: list[str] | None
    error: str | None = None


class _Lines:
    """Physical lines with their numbers; lines already read can be pushed back to be read again."""

    def __init__(self, source: Iterable[str]):
        self._source = iter(source)
        self._next = 1
        self._back: deque[tuple[int, str]] = deque()
        self.taken: list[tuple[int, str]] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if self._back:
            number, line = self._back.popleft()
        else:
            line = next(self._source)
            number = self._next
            self._next += 1
        self.taken.append((number, line))
        return line

    def start(self) -> None:
        self.taken = []

    def again(self, lines: list[tuple[int, str]]) -> None:
        self._back.extendleft(reversed(lines))


def _quoted_column(fields: list[str], header: list[str]) -> str:
    """The column whose field swallowed a line break (where the unclosed quote is), if one did."""
    for i, value in enumerate(fields):
        if "\n" in value or "\r" in value:
            return f"field {header[i]}: " if i < len(header) and header[i] else f"column {i + 1}: "
    return ""


def _fits(fields: list[str], width: int) -> bool:
    """Whether a record's fields fit a header of ``width`` columns: a row may leave trailing columns out
    or end in empty extra cells (a trailing delimiter), as some exports write them; more cells are not."""
    return len(fields) <= width or not any(cell.strip() for cell in fields[width:])


def _strictly_one_record(lines: list[str], dialect: Dialect) -> bool:
    """Whether the lines of a record over several lines read as one record under strict rules too: an
    unclosed quote in the last column reads to the end of the file, or stops at a later row's opening
    quote with text after it; both fit the header's width, and both are errors for a strict reader."""
    try:
        return len(list(csv.reader(io.StringIO("".join(lines)), dialect, strict=True))) == 1
    except csv.Error:
        return False


def csv_records(source: Iterable[str], dialect: Dialect) -> Iterator[CsvRecord]:
    """The header, then every data record of ``source`` (lines as a file opened with ``newline=""``
    gives them), blank lines skipped. A record that cannot be read has ``fields=None`` and an ``error``."""
    lines = _Lines(source)
    header: list[str] | None = None
    while True:
        reader: Any = csv.reader(lines, dialect)
        resync = False
        while not resync:
            lines.start()
            try:
                fields: list[str] = next(reader)
                problem = None
            except StopIteration:
                return
            except csv.Error as exc:  # e.g. a field over the csv module's size limit (131,072 characters)
                fields, problem = [], f"CSV: {exc}"
            taken = lines.taken
            if not taken:
                continue
            first, last = taken[0][0], taken[-1][0]
            if problem is None and not fields:
                continue  # a blank line
            if header is None:
                if problem is None and last == first:
                    header = fields
                    yield CsvRecord(first, last, fields)
                    continue
                where = _quoted_column(fields, []) if problem is None else ""
                what = problem or f"{where}a quote in the header is not closed (it runs on to line {last})"
                yield CsvRecord(first, last, None, f"CSV header: {what}")
                return
            # A cell with a line break: a quoted cell over several lines, or an unclosed quote that ran on
            # (on the last line, to the end of the file).
            broken_lines = last > first or any("\n" in cell or "\r" in cell for cell in fields)
            if (
                problem is None
                and _fits(fields, len(header))
                and (not broken_lines or _strictly_one_record([line for _, line in taken], dialect))
            ):
                yield CsvRecord(first, last, fields[: len(header)])
                continue
            if broken_lines:
                # An unclosed quote (or a broken record that swallowed lines): say so on its first line and
                # read the lines after that one again, as rows of their own.
                where = _quoted_column(fields, header)
                got = problem or (
                    f"{len(fields)} fields where the header has {len(header)}"
                    if not _fits(fields, len(header))
                    else "its closing quote is missing or belongs to a later row"
                )
                yield CsvRecord(
                    first,
                    last,
                    None,
                    f"{where}CSV: a quote opened on this line is not closed before the row ends "
                    f"(the field runs on to line {last}: {got}); the lines after it are read as rows again",
                )
                lines.again(taken[1:])
                resync = True
            elif problem is not None:
                yield CsvRecord(first, last, None, problem)
            else:
                yield CsvRecord(first, last, None, f"CSV: {len(fields)} fields where the header has {len(header)}")
