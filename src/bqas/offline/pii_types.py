"""What a PII finding is: shared by the rule-based detector (:mod:`bqas.offline.pii`) and the Chinese NER
pass (:mod:`bqas.offline.pii_ner`), so that neither has to import the other for it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "PiiFinding"]

KINDS: tuple[str, ...] = ("email", "phone", "iban", "address", "person")


@dataclass(frozen=True)
class PiiFinding:
    """One piece of personal data found in a text.

    ``start``/``end`` are character offsets into the analysed text (``end`` exclusive), so
    ``text[start:end] == finding.text``.
    """

    kind: str
    text: str
    start: int
    end: int
    method: str
    confidence: float
