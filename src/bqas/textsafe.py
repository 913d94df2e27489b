"""Untrusted text on its way to a log line or a terminal: control characters become visible escapes.

A response id with ``\\n`` must not forge a second log line, and a sample id with ``ESC [ …`` must not
recolour, retitle or clear the user's terminal. :func:`printable` escapes C0 and C1 control characters
(newlines and tabs included), DEL, bidirectional overrides and isolates (which reorder what a reader
sees), the Unicode line and paragraph separators and lone surrogates. Everything else, other scripts
included, stays as it is. :func:`console_text` additionally escapes Rich markup, for tables and
``console.print``. Loggers from :func:`bqas.logs.get_logger` apply :func:`printable` to every message.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; U+2028/2029 (line/paragraph separators); bidi embeddings, overrides,
# isolates and marks that reorder text (U+061C, U+200E/F, U+202A-E, U+2066-9); lone surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(value: object) -> str:
    """``str(value)`` with every control, bidi-control and surrogate character written as an escape."""
    text = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape, text)


def console_text(value: object) -> str:
    """:func:`printable` and Rich markup escaped (``[bold]`` in a sample id is shown, not applied)."""
    from rich.markup import escape

    return escape(printable(value))


# Mid-line Markdown: emphasis, code, links/images, table pipes, strike-through (values never start a line).
_MARKDOWN_PUNCT = re.compile(r"([\\`*_\[\]|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;", '"': "&quot;"}


def markdown_text(value: object, limit: int = 200) -> str:
    """:func:`printable`, cut to ``limit`` characters, safe inside a Markdown table cell or line.

    For job summaries and pull-request comments (GitHub renders both as Markdown with HTML): markup
    (``<img>``, ``<details>``), entities, emphasis, links, table pipes and ``@mentions`` in a sample id or
    a judge's reason are shown as text, never applied.
    """
    text = printable(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = "".join(_HTML.get(ch, ch) for ch in text)
    # Entities first, then Markdown punctuation (the ';' and '#' of an entity must stay as they are).
    parts = re.split(r"(&(?:amp|lt|gt|quot|#64);)", text)
    return "".join(p if p.startswith("&") and p.endswith(";") else _MARKDOWN_PUNCT.sub(r"\\\1", p) for p in parts)
