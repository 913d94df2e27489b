"""The verifier's training pairs, network and training loop (``bqas grounding-model train-verifier``), and the
cascade's fit (``bqas grounding-model fit-cascade``)."""
