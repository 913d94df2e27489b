"""Intent classification and its evaluation: an offline embedding classifier (k-NN or centroids over
labelled examples), the ``intent`` judge through the engine, and per-intent metrics with a confusion
matrix (terminal and self-contained HTML)."""
