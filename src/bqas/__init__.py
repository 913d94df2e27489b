"""BQAS — quality assurance for AI assistants.

Judges are data (``bqas/judges/<name>/``), one engine renders, calls, validates, repairs and scores
them, and every dimension of a result says which backend produced it.
"""

__version__ = "0.1.0"
