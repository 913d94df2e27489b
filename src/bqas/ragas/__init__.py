"""RAGAS metrics in BQAS (optional extra ``bqas[ragas]``; Chinese judge prompts via judge_language).

* :mod:`bqas.ragas.api` - ``score_sample(fields, metrics, llm=, judge_language=)`` and ``available()``;
* :mod:`bqas.ragas.factory` - ragas ``collections`` metrics by name on BQAS's LLM and embedding seams;
* :mod:`bqas.ragas.judge_prompts` - Chinese judge prompts from ``configs/judge_prompts/<lang>/``;
* :mod:`bqas.ragas.build_cache` - builds that cache with ragas's ``adapt()`` through the LLM seam;
* :mod:`bqas.ragas.lib` - the only module that imports ragas (lazily, analytics off).

Importing this package loads nothing heavy; ragas is imported when a metric is first built.
"""
