#!/usr/bin/env bash
# The whole test suite: installs BQAS with its test tools into .venv/, then lint, type check and tests.
# Extra arguments go to pytest (e.g. scripts/test.sh -k runner).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --dev
.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
