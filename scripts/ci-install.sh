#!/usr/bin/env bash
# The install step of the BQAS GitHub Action (action.yml): BQAS from the action's own checkout with
# exactly what its uv.lock pins, into a virtual environment of its own that is put on PATH; or, when the
# workflow names something else (BQAS_INSTALL, e.g. bqas==0.1.0), that with pip.
#   BQAS_INSTALL   a pip requirement instead of the action's checkout (empty: the checkout and its lock)
#   BQAS_VENV      where the environment goes (default: $RUNNER_TEMP/bqas-venv)
#   GITHUB_PATH    set by GitHub Actions: the environment's bin/ is appended, so later steps find `bqas`
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${BQAS_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/bqas-venv}"
python="$(command -v python3 || command -v python)"

if [[ -n "${BQAS_INSTALL:-}" ]]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check "$BQAS_INSTALL"
else
    # uv installs the lock as it is (--frozen: never re-resolved) and BQAS itself as a wheel
    # (--no-editable: the action's checkout may go away after this step).
    "$python" -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
    UV_PROJECT_ENVIRONMENT="$venv" UV_PYTHON_DOWNLOADS=never \
        "$python" -m uv sync --frozen --no-editable --project "$root" --python "$python"
fi
"$venv/bin/bqas" --version >/dev/null 2>&1 || "$venv/bin/bqas" --help >/dev/null
if [[ -n "${GITHUB_PATH:-}" ]]; then
    echo "$venv/bin" >>"$GITHUB_PATH"
fi
echo "BQAS installed in $venv"
