"""PII redaction where data leaves BQAS for storage or logs (setting ``BQAS_REDACT_PII``, default off).

With redaction on, whatever the safety checks' PII detector (:mod:`bqas.offline.pii`) finds is masked
(``[EMAIL]``, ``[PHONE]``, ``[PERSON]`` …) before it is written anywhere:

- the store: columns declared ``RedactedJSON`` or ``RedactedText`` (:mod:`bqas.store.redacted`: records,
  inputs, reasoning, categories' examples, alerts, job items, errors, comments) are masked on the way in,
  dict keys included; id columns (``RedactedId``) keep a short hash of the original after the mask, so
  two ids that differ only in their PII stay two rows;
- the LLM response cache (:mod:`bqas.llm.cache`): the reply text;
- log records (:mod:`bqas.logs`).

The switch and the masking of values live below the store (:mod:`bqas.redaction`); this module is the
masker, installed when it is imported (the command line and the service import it at start).

A job's request is the one deliberate exception: it must stay readable while the job may still be scored
(a restarted worker scores it from the store) and is scrubbed with :func:`redact` when the job finishes.
Detection runs with the German, English and Chinese rules one after the other, so the stored text holds
nothing that the check of any judge language would find. Masking is idempotent.
"""

from __future__ import annotations

from bqas import redaction
from bqas.redaction import redact as redact
from bqas.redaction import redact_id as redact_id
from bqas.redaction import redact_text as redact_text
from bqas.redaction import redaction_enabled as redaction_enabled

LANGUAGES: tuple[str, ...] = ("de", "en", "zh")


def mask_pii(text: str) -> str:
    """``text`` with every PII finding (de, en and zh rules) masked."""
    from bqas.offline.pii import detect_pii, mask_pii

    for language in LANGUAGES:
        findings = detect_pii(text, language)
        if findings:
            text = mask_pii(text, findings)
    return text


def install() -> None:
    """Make :func:`mask_pii` the masker of :mod:`bqas.redaction` (done on import; idempotent)."""
    redaction.use_masker(mask_pii)


def enable_redaction(enabled: bool | None = True) -> None:
    """Switch redaction on (or off) for the whole process; None goes back to the environment setting.

    The service calls this when its settings say ``redact_pii``; tests reset it."""
    install()
    redaction.enable_redaction(enabled)


install()
