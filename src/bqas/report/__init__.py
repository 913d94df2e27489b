"""Report writers of a BQAS run: a self-contained HTML report and JUnit XML for CI."""

from bqas.report.html import write_html_report
from bqas.report.junit import write_junit

__all__ = ["write_html_report", "write_junit"]
