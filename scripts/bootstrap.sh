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
  echo "bootstrap: creating .venv/ with $("$PYTHON" --version 2>&1); the first install takes a few minutes" >&2
  "$PYTHON" -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
  echo "bootstrap: installing uv (the installer) into .venv/" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
fi
extras=()
if [ "${1:-}" = "--dev" ]; then extras=(--extra dev --extra ragas); fi
# --inexact keeps uv itself (and anything else already there) in the venv; --frozen installs exactly the lock.
# --compile-bytecode writes the .pyc files as pip does on install: without them every start compiles the
# sources again (with PYTHONDONTWRITEBYTECODE set, on every start), which tripled `bqas --help`.
# Not --quiet: on a terminal uv draws its download and install bars, in a log it names what it installed.
# A sync of the same lock, pyproject.toml and extras as last time is skipped (it would only compile every
# installed file again, seconds on each start of demo.sh / test.sh); BQAS_BOOTSTRAP_FORCE=1 syncs anyway.
stamp=.venv/.bqas-synced
want="$(.venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(open("uv.lock", "rb").read() + open("pyproject.toml", "rb").read()).hexdigest(), *sys.argv[1:])' "${extras[@]}")"
if [ "${BQAS_BOOTSTRAP_FORCE:-}" = 1 ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing what uv.lock pins into .venv/ ${extras[*]:+(${extras[*]})}" >&2
  rm -f "$stamp"
  UV_PYTHON_DOWNLOADS=never .venv/bin/uv sync --frozen --inexact --compile-bytecode --python .venv/bin/python "${extras[@]}"
  echo "$want" > "$stamp"
fi
# The verifier's training (bqas grounding-model train-verifier) and its tiny-configuration test need torch, a
# development dependency only (the shipped verifier runs on onnxruntime). The CPU build comes from the
# machine's local wheel folder: the PyPI wheel would pull several GB of CUDA libraries. Without that folder
# the training test is skipped, everything else works.
if [ "${1:-}" = "--dev" ] && ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then
  TORCH_WHEELS="${BQAS_TORCH_WHEELS:-/opt/wheels}"
  if ls "$TORCH_WHEELS"/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
    echo "installing torch 2.13.0 (CPU) from $TORCH_WHEELS ..."
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --find-links "$TORCH_WHEELS" "torch==2.13.0+cpu"
  else
    echo "note: no CPU torch wheel in $TORCH_WHEELS; the verifier's training test will be skipped" \
      "(it fails under BQAS_REQUIRE_TORCH=1, as .ci/run sets)" >&2
  fi
fi
.venv/bin/python -m compileall -q src >/dev/null
