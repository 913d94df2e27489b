"""The report's Jinja environment: autoescape (record texts are untrusted), characters HTML cannot carry
stripped, and the number, percentage and time filters the template uses.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import jinja2

from bqas.report.aggregate import is_number
from bqas.report.charts import verdict_css
from bqas.textsafe import html_value

_TEMPLATE = "report.html.j2"


def _num(value: Any, digits: int = 1) -> str:
    if value is None or isinstance(value, bool):
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "—"
    return str(value)


def _val(value: Any) -> str:
    """Threshold values: ratios and counts shown compactly (0.6, 0.71, 85)."""
    if is_number(value):
        return f"{value:.4g}"
    return "—" if value is None else str(value)


def _pct(value: Any, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f} %" if is_number(value) else "—"


def _signed(value: Any, digits: int = 2) -> str:
    return f"{value:+.{digits}f}" if is_number(value) else "—"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bqas.report", "templates"),
        autoescape=True,  # record texts are untrusted: every output is escaped
        undefined=jinja2.StrictUndefined,
        # Every {{ }} output before escaping: characters HTML cannot carry (NUL …) as visible escapes,
        # bidi controls shown and right-to-left text isolated (bqas.textsafe.html_value).
        finalize=html_value,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=_num, val=_val, pct=_pct, signed=_signed, when=_when, verdict_css=verdict_css)
    return env


@functools.cache
def load_template() -> jinja2.Template:
    """The report template, compiled once per process and kept in memory only.

    Never in a bytecode cache on disk: Jinja's is pickle and marshal, so whoever can write that folder
    runs code in the next process. Compiling costs about 0.1-0.2 s of CPU per process that writes a report."""
    return _environment().get_template(_TEMPLATE)


def _when(value: Any) -> str:
    """An ISO timestamp shown as ``2026-11-29 10:00:05 UTC`` (narrower than the ISO form)."""
    if value is None:
        return "—"
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    text = when.strftime("%Y-%m-%d %H:%M:%S")
    offset = when.utcoffset()
    if offset is None:
        return text
    return f"{text} UTC" if not offset else f"{text} {when.strftime('%z')}"


def duration(run: Mapping[str, Any]) -> str:
    try:
        start = datetime.fromisoformat(str(run["started_at"]))
        end = datetime.fromisoformat(str(run["finished_at"]))
    except (KeyError, TypeError, ValueError):
        return ""
    seconds = (end - start).total_seconds()
    if seconds < 0:
        return ""
    minutes, sec = divmod(seconds, 60)
    return f"{int(minutes)} min {sec:.0f} s" if minutes else f"{sec:.1f} s"
