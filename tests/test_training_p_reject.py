"""The fit of the trust tier's offline p_reject models (bqas.training.p_reject): seeded, JSON that the run-time
model (bqas.offline.p_reject.LogisticModel) reads, features the data does not cover left out."""

from __future__ import annotations

import random

import pytest

from bqas.offline.p_reject import LogisticModel
from bqas.training.p_reject import fit_model


def _data(seed: int) -> tuple[list[dict[str, float]], list[bool]]:
    rng = random.Random(seed)
    rows, rejected = [], []
    for _ in range(120):
        reject = rng.random() < 0.4
        rows.append({"risk": rng.gauss(1.0 if reject else 0.0, 0.7), "noise": rng.random(), "pii_email": 0.0})
        rejected.append(reject)
    return rows, rejected


def test_fitted_model_is_seeded_and_read_by_the_run_time_model() -> None:
    rows, rejected = _data(1)
    data = fit_model(rows, rejected, judge="rag_privacy", model_id="t", requires_zero=["pii_email"])
    assert data == fit_model(rows, rejected, judge="rag_privacy", model_id="t", requires_zero=["pii_email"])
    assert data["id"].startswith("t-") and data["id"] != "t-"  # the id names the coefficients
    assert "pii_email" not in data["features"] and data["requires_zero"] == ["pii_email"]
    assert (data["n"], data["n_reject"]) == (120, sum(rejected))
    model = LogisticModel.from_dict(data, "fitted")
    # A riskier response gets a higher p_reject: the fit learned the direction of the evidence.
    assert model.predict({"risk": 2.0, "noise": 0.5}) > model.predict({"risk": -1.0, "noise": 0.5})


def test_one_class_is_refused() -> None:
    rows, _ = _data(2)
    with pytest.raises(ValueError, match="both accepted and rejected"):
        fit_model(rows, [False] * len(rows), judge="rag_privacy", model_id="t")
