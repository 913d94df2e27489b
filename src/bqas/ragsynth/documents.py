"""Reading documents for ``bqas synth-rag``: Markdown, reStructuredText, plain text, HTML and PDF, one
:class:`Section` per heading (Markdown, reStructuredText, HTML) or page (PDF), each with its source file,
page and heading.

A file that cannot be read is not fatal: it becomes an :class:`Unreadable` with the reason (binary, too
large, a PDF without a text layer, encrypted …) and the other files go on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

MARKDOWN = frozenset({".md", ".markdown"})
RST = frozenset({".rst"})
TEXT = frozenset({".txt", ".text"})
HTML = frozenset({".html", ".htm"})
PDF = frozenset({".pdf"})
SUPPORTED = MARKDOWN | RST | TEXT | HTML | PDF
#: Files above this size are refused (a 300-page manual as PDF is a few MB; larger is rarely text).
DEFAULT_MAX_BYTES = 50 * 1024 * 1024


@dataclass(frozen=True)
class Section:
    """A run of text under one heading (or on one PDF page)."""

    source: str
    page: int | None
    heading: str
    text: str


@dataclass(frozen=True)
class Unreadable:
    """A file left out, and why."""

    source: str
    reason: str


@dataclass
class Corpus:
    """What was read: the sections, the files read and the files left out."""

    sections: list[Section]
    read: list[str]
    unreadable: list[Unreadable]


class DocumentError(ValueError):
    """A file that cannot be read (the message is the reason)."""


def collect_files(paths: Iterable[Path]) -> tuple[list[Path], list[Unreadable]]:
    """The files named, and the supported files under the folders named (sorted, so runs agree).

    Files of an unsupported type inside a folder are listed as unreadable; hidden files are skipped."""
    files: list[Path] = []
    skipped: list[Unreadable] = []
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if child.suffix.lower() in SUPPORTED:
                    files.append(child)
                else:
                    skipped.append(Unreadable(str(child), f"unsupported type {child.suffix or '(none)'}"))
        elif path.is_file():
            files.append(path)
        else:
            skipped.append(Unreadable(str(path), "no such file or folder"))
    return files, skipped


def read_documents(paths: Iterable[Path], *, max_bytes: int = DEFAULT_MAX_BYTES) -> Corpus:
    """Read every supported file under ``paths``; unreadable ones are named with their reason."""
    files, unreadable = collect_files(paths)
    sections: list[Section] = []
    read: list[str] = []
    for path in files:
        try:
            found = list(read_file(path, max_bytes=max_bytes))
        except DocumentError as exc:
            unreadable.append(Unreadable(str(path), str(exc)))
            continue
        if not any(s.text.strip() for s in found):
            unreadable.append(Unreadable(str(path), "no text in it"))
            continue
        read.append(str(path))
        sections.extend(found)
    return Corpus(sections, read, unreadable)


def read_file(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Iterator[Section]:
    """The sections of one file; DocumentError with the reason when it cannot be read."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        raise DocumentError(f"unsupported type {suffix or '(none)'} (supported: {', '.join(sorted(SUPPORTED))})")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    if size > max_bytes:
        raise DocumentError(f"{size / 1e6:.1f} MB is over the limit of {max_bytes / 1e6:.0f} MB (--max-file-mb)")
    if suffix in PDF:
        yield from _read_pdf(path)
        return
    text = _read_text(path)
    if suffix in MARKDOWN:
        yield from _markdown_sections(str(path), text)
    elif suffix in RST:
        yield from _rst_sections(str(path), text)
    elif suffix in HTML:
        yield from _html_sections(str(path), text)
    else:
        yield Section(str(path), None, "", text)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data[:65536]:
        raise DocumentError("binary file (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte {exc.start}): a binary file or another encoding") from None


_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_MD_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")


def _markdown_line(line: str) -> str:
    """A Markdown line as plain text: links to their text, emphasis marks gone, table rows as "a: b"."""
    line = _MD_EMPHASIS.sub("", _MD_LINK.sub(r"\1", line))
    if line.lstrip().startswith("|"):
        if _MD_TABLE_RULE.match(line):
            return ""
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        cells = [c for c in cells if c]
        row = "：".join(cells) if any(re.search(r"[\u4e00-\u9fff]", c) for c in cells) else ": ".join(cells)
        return row + "\n"  # each table row a paragraph of its own
    return line


def _markdown_sections(source: str, text: str) -> Iterator[Section]:
    path: list[str] = []
    lines: list[str] = []
    in_code = False

    def flush() -> Iterator[Section]:
        body = "\n".join(lines).strip()
        if body:
            yield Section(source, None, " › ".join(path), body)
        lines.clear()

    for raw in text.splitlines():
        if raw.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = _MD_HEADING.match(raw)
        if m:
            yield from flush()
            # A heading of level n replaces the one of level n and everything below it.
            del path[len(m.group(1)) - 1 :]
            path.append(_markdown_line(m.group(2)).strip())
            continue
        lines.append(_markdown_line(raw))
    yield from flush()


_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_RST_FIELD = re.compile(r"^:([^:]+):\s*(.*)$")
_RST_TABLE_RULE = re.compile(r"^[=\s]+$|^[+\-=|\s]+$")


def _rst_sections(source: str, text: str) -> Iterator[Section]:
    """reStructuredText, lightly: underlined titles are headings, ``:Field: value`` becomes "Field: value"
    (a paragraph of its own), directives (``.. x::``) and table rules are left out."""
    lines = text.splitlines()
    heading = ""
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and _RST_UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()):
            if any(b.strip() for b in body):
                yield Section(source, None, heading, "\n".join(body).strip())
            heading, body = line.strip(), []
            i += 2
            continue
        if line.lstrip().startswith(".. ") or (line.strip() and _RST_TABLE_RULE.match(line)):
            i += 1
            continue
        field = _RST_FIELD.match(line.strip())
        body.extend(["", f"{field.group(1).strip()}: {field.group(2).strip()}", ""] if field else [line])
        i += 1
    if any(b.strip() for b in body):
        yield Section(source, None, heading, "\n".join(body).strip())


class _HTMLText(HTMLParser):
    """Collects (heading, text) blocks; headings h1-h6 start a new block, block tags end paragraphs."""

    _BLOCKS = frozenset({"p", "div", "li", "tr", "br", "section", "article", "table", "ul", "ol", "dd", "dt"})
    _SKIP = frozenset({"script", "style", "noscript", "template", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[tuple[str, str]] = []
        self._heading = ""
        self._in_heading = 0
        self._heading_buf: list[str] = []
        self._buf: list[str] = []
        self._skip = 0

    def _flush(self) -> None:
        body = re.sub(r"\n{3,}", "\n\n", "".join(self._buf)).strip()
        if body:
            self.sections.append((self._heading, body))
        self._buf = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._in_heading += 1
            self._heading_buf = []
        elif tag in self._BLOCKS:
            self._buf.append("\n\n")
        elif tag == "td" or tag == "th":
            self._buf.append(": " if self._buf and not self._buf[-1].endswith("\n\n") else "")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag) and self._in_heading:
            self._in_heading -= 1
            self._heading = " ".join("".join(self._heading_buf).split())
        elif tag in self._BLOCKS:
            self._buf.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_heading:
            self._heading_buf.append(data)
        else:
            self._buf.append(re.sub(r"\s+", " ", data))

    def close(self) -> None:
        super().close()
        self._flush()


def _html_sections(source: str, text: str) -> Iterator[Section]:
    parser = _HTMLText()
    parser.feed(text)
    parser.close()
    for heading, body in parser.sections:
        yield Section(source, None, heading, body)


def _read_pdf(path: Path) -> Iterator[Section]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise DocumentError("encrypted PDF (decrypt it first)")
        pages = [(page.extract_text() or "") for page in reader.pages]
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DocumentError(f"not a readable PDF: {exc}") from None
    if not pages:
        raise DocumentError("PDF without pages")
    if not any(p.strip() for p in pages):
        raise DocumentError(
            f"PDF without a text layer ({len(pages)} page(s) of images, e.g. a scan); BQAS does no OCR: "
            "run it through an OCR tool first"
        )
    for number, text in enumerate(pages, start=1):
        if text.strip():
            yield Section(str(path), number, "", text)
