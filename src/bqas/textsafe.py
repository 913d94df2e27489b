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
