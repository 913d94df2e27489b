"""Compatibility re-exports: the text helpers now live in :mod:`bqas.offline.text`, one module per job.

Import from the specific module (``bqas.offline.text.sentences`` …) in new code.
"""

from __future__ import annotations

from bqas.offline.text.inputs import as_list, as_text, is_blank, is_non_answer
from bqas.offline.text.language import detect_language
from bqas.offline.text.normalize import fold
from bqas.offline.text.sentences import split_sentences
from bqas.offline.text.stopwords import STOPWORDS, STOPWORDS_DE, STOPWORDS_EN
from bqas.offline.text.tokens import CJK_RE, cjk_bigrams, content_stems, stem, stems_found, words

__all__ = [
    "CJK_RE",
    "STOPWORDS",
    "STOPWORDS_DE",
    "STOPWORDS_EN",
    "as_list",
    "as_text",
    "cjk_bigrams",
    "content_stems",
    "detect_language",
    "fold",
    "is_blank",
    "is_non_answer",
    "split_sentences",
    "stem",
    "stems_found",
    "words",
]
