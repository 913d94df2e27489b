"""The open-loop service benchmark sends distinct requests only (benchmarks/service/bench_open_loop.py):
a repeat would be answered from the embedding caches and flatter the service. Checked on the generator
itself, without timing anything."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "service" / "bench_open_loop.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_open_loop", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_open_loop"] = module
    spec.loader.exec_module(module)
    return module


bench = _load()


@pytest.mark.parametrize(("kind", "count"), [("voice", 6000), ("rag", 600)])
def test_the_generator_yields_only_distinct_requests(kind: str, count: int) -> None:
    bodies = list(bench.DistinctBodies(bench.sample_bodies(kind, count, seed=1000)))
    assert len(bodies) == count
    assert len(set(bodies)) == count
    # What a request asks is distinct too, not only its bytes (an id alone would make bytes differ).
    asked = {(b["question"], b["answer"]) for b in map(orjson.loads, bodies)}
    assert len(asked) == count


def test_a_repeated_body_fails_instead_of_being_sent() -> None:
    bodies = bench.DistinctBodies(iter([b'{"a": 1}', b'{"a": 2}', b'{"a": 1}']))
    assert next(bodies) == b'{"a": 1}'
    assert next(bodies) == b'{"a": 2}'
    with pytest.raises(ValueError, match="repeats"):
        next(bodies)


def test_the_voice_generator_refuses_more_turns_than_it_can_make_distinct() -> None:
    sys.path.insert(0, str(BENCH.parents[1]))
    from _samples import voice_samples

    with pytest.raises(ValueError, match="distinct turns"):
        voice_samples(10**6)


def test_requests_are_due_at_the_offered_rate_whatever_the_answers() -> None:
    even = bench.due_times(20.0, 5, False, random.Random(1))
    assert even == [0.0, 0.05, 0.1, 0.15, 0.2]
    arrivals = bench.due_times(20.0, 4000, True, random.Random(1))
    assert arrivals == sorted(arrivals) and len(arrivals) == 4000
    # Poisson arrivals at 20/s: 4,000 of them span about 200 s (a wrong rate would be far off).
    assert 180 < arrivals[-1] < 220
