"""Text normalisation: folding for lenient matching (:func:`fold`)."""

from __future__ import annotations

import unicodedata

_UMLAUTS = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


def fold(text: str) -> str:
    """Casefold, NFKC-normalise and fold umlauts/ß (for lenient matching)."""
    return unicodedata.normalize("NFKC", text).casefold().translate(_UMLAUTS)
