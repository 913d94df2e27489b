"""Loggers whose records are safe to write: control characters escaped and, with redaction on, PII masked.

Every BQAS module logs through :func:`get_logger` instead of :func:`logging.getLogger`. The filter it
attaches renders each record's message once (``msg % args``), passes it through
:func:`bqas.textsafe.printable` (no forged lines, no terminal escapes) and, when ``BQAS_REDACT_PII`` is
on, through :func:`bqas.redaction.redact_text` (the masker :mod:`bqas.privacy` installs; a process that
redacts without one logs that its message was withheld instead of the message); an exception's text gets
the same treatment (its line breaks kept). This is the one place where log output is made safe, whatever
handler writes it.
"""

from __future__ import annotations

import logging

from bqas.textsafe import printable


def _withheld(text: str) -> str:
    # Redaction is on but nothing can mask: the text is not written (a log call must not fail either).
    return f"[{len(text)} characters withheld: BQAS_REDACT_PII is on and no PII masker is installed]"


class SafeRecordFilter(logging.Filter):
    """Pre-renders the message of every record safely (never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from bqas.redaction import masker_installed, redact_text, redaction_enabled

        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        redact = redaction_enabled()
        mask = redact_text if masker_installed() else _withheld
        if redact:
            message = mask(message)
        record.msg = printable(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            if redact:
                text = mask(text)
            record.exc_text = "\n".join(printable(line) for line in text.split("\n"))
        return True


_FILTER = SafeRecordFilter()


def get_logger(name: str) -> logging.Logger:
    """The logger ``name`` with :class:`SafeRecordFilter` attached (once)."""
    logger = logging.getLogger(name)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
