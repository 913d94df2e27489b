"""The judge engine: rendering, parsing, the tiers and the evaluation loop (the judge spec, its scoring policy
and the result types are :mod:`bqas.judgment`)."""
