"""The learned grounding scorer's training data and fit (``bqas grounding-model train``)."""
