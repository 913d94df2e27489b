"""Untrusted text on its way to a log line or a terminal: control characters become visible escapes.

A response id with ``\\n`` must not forge a second log line, and a sample id with ``ESC [ …`` must not
recolour, retitle or clear the user's terminal. :func:`printable` escapes C0 and C1 control characters
(newlines and tabs included), DEL, bidirectional overrides and isolates (which reorder what a reader
sees), the Unicode line and paragraph separators and lone surrogates. Everything else, other scripts
included, stays as it is. :func:`console_text` additionally escapes Rich markup, for tables and
``console.print``. Loggers from :func:`bqas.logs.get_logger` apply :func:`printable` to every message.
:func:`html_value` is what the HTML pages (report, viewer, review) do to every value they show;
:func:`clean_text` escapes only what XML and HTML cannot carry at all (JUnit files, HTML pages).
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


# Characters XML 1.0 does not allow at all (C0 controls other than tab/newline/CR, lone surrogates,
# U+FFFE/U+FFFF). Even as character references they make the document ill-formed, so they are
# replaced by a visible escape such as ``\x00``: the reader still sees that something was there.
_INVALID_XML_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean_text(value: object) -> str:
    """``str(value)`` with the characters XML/HTML cannot carry replaced by a visible ``\\xNN`` escape."""
    text = value if isinstance(value, str) else str(value)
    return _INVALID_XML_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# Bidi embeddings, overrides and isolates (U+202A-E, U+2066-9): raw, one in a sample id or an answer
# reorders what follows it on the page ("\u202eexe.txt" shows as "txt.exe").
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
# Right-to-left letters (Hebrew, Arabic, Syriac, Thaana, N'Ko …) and the right-to-left marks.
_RTL = re.compile("[\u0590-\u08ff\u061c\u200f\ufb1d-\ufdff\ufe70-\ufefc\U00010800-\U00010fff\U0001e800-\U0001efff]")
FIRST_STRONG_ISOLATE, POP_DIRECTIONAL_ISOLATE = "\u2068", "\u2069"


def bidi_isolated(text: str) -> str:
    """Untrusted text for a web page, unable to reorder the page around it: its bidi controls written as
    visible escapes (``\\u202e``), and text holding right-to-left letters or marks wrapped in FIRST STRONG
    ISOLATE … POP DIRECTIONAL ISOLATE, as ``<bdi>`` would (Arabic or Hebrew shows as it should and does
    not pull the digits and punctuation beside it into its direction). Other text is returned as it is."""
    if _BIDI_CONTROLS.search(text):
        text = _BIDI_CONTROLS.sub(_escape, text)
    if _RTL.search(text):
        return FIRST_STRONG_ISOLATE + text + POP_DIRECTIONAL_ISOLATE
    return text


def html_value(value: object) -> object:
    """What an HTML page shows of a value (Jinja's ``finalize``, before autoescaping): a string with the
    characters HTML cannot carry as visible escapes and its bidi isolated (:func:`bidi_isolated`);
    markup that is already safe (macro output) and non-strings as they are."""
    from markupsafe import Markup

    if isinstance(value, str) and not isinstance(value, Markup):
        return bidi_isolated(clean_text(value))
    return value


def form_value(value: object) -> object:
    """A value that a form sends back (an input's ``value``, a textarea's text: the filter ``form_value``),
    escaped but otherwise as it is: isolation characters or escapes added there would be submitted and
    stored. A form control is a box of its own, so its text cannot reorder the page around it."""
    from markupsafe import Markup, escape

    if value is None or isinstance(value, Markup):
        return value
    return Markup(escape(clean_text(value if isinstance(value, str) else str(value))))


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
