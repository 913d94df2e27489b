"""Calibration: measure a judge against human labels (FPR/FNR, κ, correlations, latency) and two judge
configurations against each other (agreement, κ, Krippendorff's α)."""
