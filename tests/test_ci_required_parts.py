"""CI fails, never skips, when a part it promises is missing: the ``BQAS_REQUIRE_*`` switches that .ci/run
sets turn a PostgreSQL or torch skip into a failure that names the reason, and the run lists its skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pytest(test: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BQAS_REQUIRE_", "BQAS_TEST_POSTGRES"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ROOT, env=clean | env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_missing_postgresql_skips_locally_and_fails_with_the_reason_when_required() -> None:
    test = "tests/test_store_migrate_race.py"
    local = _pytest(test)
    assert local.returncode == 0, local.stdout[-2000:]
    assert "SKIPPED" in local.stdout and "no PostgreSQL" in local.stdout  # -rs lists the skip with its reason
    required = _pytest(test, BQAS_REQUIRE_POSTGRES="1")
    assert required.returncode == 1, required.stdout[-2000:]
    assert "no PostgreSQL (CI starts one with scripts/ci-postgres.sh), and BQAS_REQUIRE_POSTGRES=1 is set" in (
        required.stdout
    )
    assert "skipped" not in required.stdout.splitlines()[-1]


def test_a_missing_torch_fails_with_the_reason_when_required(tmp_path: Path) -> None:
    # A module named torch that cannot be imported stands for a machine without torch.
    (tmp_path / "torch.py").write_text("raise ModuleNotFoundError('No module named torch', name='torch')\n")
    test = "tests/test_verifier.py::test_tiny_training_resumes_from_its_checkpoint_and_exports_an_onnx_model"
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    local = _pytest(test, PYTHONPATH=pythonpath)
    assert local.returncode == 0 and "SKIPPED" in local.stdout, local.stdout[-2000:]
    required = _pytest(test, PYTHONPATH=pythonpath, BQAS_REQUIRE_TORCH="1")
    assert required.returncode == 1, required.stdout[-2000:]
    assert "could not import 'torch'" in required.stdout and "BQAS_REQUIRE_TORCH=1 is set" in required.stdout


def test_a_missing_development_package_fails_with_the_reason_when_required(tmp_path: Path) -> None:
    # A module named ray that cannot be imported stands for a dev install without Ray.
    (tmp_path / "ray.py").write_text("raise ModuleNotFoundError('No module named ray', name='ray')\n")
    test = "tests/test_ray_address.py"  # its module-level importorskip skips the whole module
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    local = _pytest(test, PYTHONPATH=pythonpath)
    assert local.returncode == 5 and "SKIPPED" in local.stdout, local.stdout[-2000:]  # 5: no test ran
    required = _pytest(test, PYTHONPATH=pythonpath, BQAS_REQUIRE_IMPORTS="1")
    assert required.returncode == 2 and "error during collection" in required.stdout, required.stdout[-2000:]
    assert "could not import 'ray'" in required.stdout and "BQAS_REQUIRE_IMPORTS=1 is set" in required.stdout


def test_ci_sets_every_require_switch_and_stops_without_postgresql() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    switches = ("BROWSER", "LOCAL_LLM", "POSTGRES", "TORCH", "IMPORTS")
    for switch in (f"BQAS_REQUIRE_{name}" for name in switches):
        assert f"export {switch}=1" in ci, switch
    assert "will be skipped" not in ci
    assert " -rs " in (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
