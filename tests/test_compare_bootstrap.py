"""bqas compare's bootstrap interval: the numpy draws give the interval scipy's percentile bootstrap gives,
on both paths (few distinct values: multinomial counts; many: index draws)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from bqas.runner import compare
from bqas.runner.compare import bootstrap_ci


def _scipy_ci(data: np.ndarray) -> tuple[float, float]:
    res = bootstrap(
        (data,),
        np.mean,
        confidence_level=0.95,
        n_resamples=20_000,
        method="percentile",
        random_state=np.random.default_rng(7),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@pytest.mark.parametrize("distinct", ["few", "many"])
def test_interval_matches_scipys_percentile_bootstrap(distinct: str) -> None:
    rng = np.random.default_rng(3)
    if distinct == "few":
        data = rng.choice([-12.5, -5.0, 0.0, 0.0, 5.0, 10.0], size=3000)
    else:
        data = rng.normal(0.4, 10.0, size=3000)
    distinct_values = len(np.unique(data))
    # The data takes the path the test names (few distinct values: multinomial; otherwise index draws).
    assert (distinct_values <= max(compare._MULTINOMIAL_MAX_VALUES, len(data) // 8)) == (distinct == "few")
    low, high = bootstrap_ci(data.tolist(), n_resamples=20_000)
    ref_low, ref_high = _scipy_ci(data)
    assert low is not None and high is not None
    width = ref_high - ref_low
    # Two independent 20,000-resample estimates of the same percentiles agree to a few % of the width.
    assert abs(low - ref_low) < 0.05 * width and abs(high - ref_high) < 0.05 * width
    assert low < float(np.mean(data)) < high


def test_interval_is_seeded_and_undefined_cases_say_so() -> None:
    diffs = [0.0, 5.0, -5.0, 10.0, 0.0, 2.5] * 50
    assert bootstrap_ci(diffs) == bootstrap_ci(diffs)
    assert bootstrap_ci([1.0]) == (None, None)
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
