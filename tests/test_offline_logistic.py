"""The one JSON logistic evaluator shared by the grounding scorer and the p_reject models."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bqas.mathx import sigmoid
from bqas.offline.grounding_features import FEATURE_NAMES
from bqas.offline.grounding_model import FORMAT, GroundingModel
from bqas.offline.logistic import StandardisedLinear
from bqas.offline.p_reject import MODEL_FORMAT, LogisticModel

LINEAR: dict[str, Any] = {
    "features": ["novel_share", "sim_mean"],
    "mean": [0.3, 0.6],
    "scale": [0.2, 0.0],  # a constant training feature: scale 0 counts as 1
    "coef": [1.5, -2.0],
    "intercept": -0.25,
}


def test_linear_score_by_position_and_by_name() -> None:
    lin = StandardisedLinear.from_json(LINEAR, "m.json")
    expected = -0.25 + 1.5 * (0.7 - 0.3) / 0.2 - 2.0 * (0.9 - 0.6) / 1.0
    assert lin.logit([0.7, 0.9]) == pytest.approx(expected)
    assert lin.logit_of({"novel_share": 0.7, "sim_mean": 0.9}) == pytest.approx(expected)
    assert lin.logit_of({}) == pytest.approx(-0.25 + 1.5 * -1.5 - 2.0 * -0.6)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"coef": [1.0]}, "coef"),
        ({"mean": ["x", 1]}, "mean"),
        ({"intercept": None}, "intercept"),
        ({"features": []}, "features"),
    ],
)
def test_bad_fields_are_named(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=rf"m\.json: field '{field}'"):
        StandardisedLinear.from_json(LINEAR | change, "m.json")


def test_sigmoid_has_no_overflow_and_is_symmetric() -> None:
    assert sigmoid(0.0) == 0.5
    assert sigmoid(1000.0) == 1.0 and 0.0 <= sigmoid(-1000.0) < 1e-300
    for z in (-30.0, -2.5, 0.7, 12.0):
        assert sigmoid(z) == pytest.approx(1.0 / (1.0 + math.exp(-z)))
        assert sigmoid(z) + sigmoid(-z) == pytest.approx(1.0)


def test_grounding_and_p_reject_models_agree_on_the_same_coefficients() -> None:
    """Identity calibration / Platt (a=1, b=0): both model kinds give the same probability."""
    grounding = GroundingModel.from_json(
        LINEAR | {"format": FORMAT, "model_id": "g", "calibration": [[0.0, 0.0], [1.0, 1.0]], "threshold": 0.5}
    )
    p_reject = LogisticModel.from_dict(
        LINEAR | {"format": MODEL_FORMAT, "id": "t", "judge": "j", "platt": {"a": 1.0, "b": 0.0}}, "t.json"
    )
    x = [0.0] * len(FEATURE_NAMES)
    x[FEATURE_NAMES.index("novel_share")], x[FEATURE_NAMES.index("sim_mean")] = 0.55, 0.4
    by_name = {"novel_share": 0.55, "sim_mean": 0.4}
    assert grounding.probability(x) == pytest.approx(p_reject.predict(by_name))
    assert grounding.features == p_reject.features == ("novel_share", "sim_mean")
