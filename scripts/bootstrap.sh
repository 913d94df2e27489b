#!/usr/bin/env bash
# Create .venv/ at the repository root and install BQAS into it from the lock file (uv.lock).
# Usage: scripts/bootstrap.sh [--dev]     (--dev adds the test and lint tools)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "error: BQAS needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
fi
extras=()
if [ "${1:-}" = "--dev" ]; then extras=(--extra dev --extra ragas); fi
# --inexact keeps uv itself (and anything else already there) in the venv; --frozen installs exactly the lock.
# --compile-bytecode writes the .pyc files as pip does on install: without them every start compiles the
# sources again (with PYTHONDONTWRITEBYTECODE set, on every start), which tripled `bqas --help`.
UV_PYTHON_DOWNLOADS=never .venv/bin/uv sync --frozen --inexact --quiet --compile-bytecode --python .venv/bin/python "${extras[@]}"
.venv/bin/python -m compileall -q src >/dev/null
