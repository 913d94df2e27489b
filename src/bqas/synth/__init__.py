"""Synthetic test inputs per intent (``bqas synth``): an LLM generator (the ``synthetic`` judge's prompt)
and an offline generator (patterns, slot word lists, politeness variants, typos, dialect forms), both
followed by the same validation and near-duplicate removal."""
