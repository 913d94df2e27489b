"""Report writers of a BQAS run: a self-contained HTML report and JUnit XML for CI.

The names load their module on first use: the service imports ``bqas.report.junit`` for its text
cleaning, and importing the HTML writer with it (Jinja) would add to every ``bqas serve`` start.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.report.html import write_html_report
    from bqas.report.junit import write_junit

_MODULES = {"write_html_report": "html", "write_junit": "junit"}

__all__ = ["write_html_report", "write_junit"]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"bqas.report.{module}"), name)
