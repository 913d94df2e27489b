"""Character n-gram features for the intent classifier (beside the sentence embeddings).

Sentence embeddings know synonyms but blur the few words that decide an intent ("Quiz" vs
"Arbeitsblatt", "Erinnerung" vs "Erinnerung um 8 Uhr"); misspelt and dialect words ("Arbeitsblat",
"Hausaufgabn", "Erinner mi") often keep most of their character n-grams. The features are scikit-learn's
stateless ``HashingVectorizer`` (``char_wb`` n-grams 2-5 of the text after :func:`normalise`: casefolded,
umlauts folded to ae/oe/ue/ss so "Uebungsblatt" meets "Übungsblatt", punctuation dropped), L2-normalised
counts, so nothing has to be stored to compute them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from bqas.synth.dedup import normalise

N_FEATURES = 2**18
NGRAM_RANGE = (2, 5)


def _prepare(text: str) -> str:
    """:func:`normalise`, with lone surrogates (invalid Unicode, e.g. undecodable bytes of a command line)
    replaced by ``?``: the hashing needs UTF-8 and must not fail on untrusted text."""
    return normalise(text).encode("utf-8", "replace").decode("utf-8")


@cache
def _vectorizer() -> Any:
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        analyzer="char_wb",
        ngram_range=NGRAM_RANGE,
        n_features=N_FEATURES,
        alternate_sign=False,
        norm="l2",
        preprocessor=_prepare,
        dtype=float,
    )


def char_features(texts: Sequence[str]) -> Any:
    """A sparse (CSR) matrix, one L2-normalised row of hashed character n-gram counts per text."""
    return _vectorizer().transform(list(texts)).tocsr()
