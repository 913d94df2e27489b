#!/usr/bin/env bash
# The whole test suite: installs BQAS with its test tools into .venv/, then lint, type check, layer contracts and tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k runner).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --dev
.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/mypy
# The layer contracts of docs/architecture.md ([tool.importlinter] in pyproject.toml).
.venv/bin/lint-imports --no-cache
# pytest-xdist: BQAS_TEST_WORKERS processes (default 3: many tests wait on servers and subprocesses, so a
# 2-core machine keeps three busy). Tests sharing the PostgreSQL test database or a Ray cluster stay on one
# worker (--dist loadgroup, tests/conftest.py). `scripts/test.sh -n 0` runs them in this process.
# -rs lists every skipped test with its reason at the end of the run.
.venv/bin/python -m pytest -n "${BQAS_TEST_WORKERS:-3}" --dist loadgroup -rs "$@"
