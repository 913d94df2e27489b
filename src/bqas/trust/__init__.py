"""Trust or escalate: calibrated ``p_reject`` per tier and decisions with a guaranteed error bound.

The statistics (:mod:`bqas.trust.bounds`, :mod:`bqas.trust.thresholds`) follow the method of Jung, Brahman
and Choi, "Trust or Escalate" (ICLR 2025): on labelled calibration data, fixed-sequence testing over
confidence thresholds with an exact (Clopper-Pearson) binomial bound at each threshold. See
docs/calibration.md, "Decisions with a guaranteed error bound".
"""
