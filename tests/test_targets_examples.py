"""The shipped target examples run end to end against the demo assistant (`bqas demo-assistant`) and
meet their own gates: one scenario per kind of target."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.demo.assistant import build_app, understand
from target_support import ServedApp, records

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = (
    "voice_de_target",
    "voice_de_openai_target",
    "school_rag_dify_target",
    "voice_de_python_target",
    "docs_rag_synth_de",
    "docs_rag_synth_zh",
)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_scenario_meets_its_gates(
    name: str, tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIFY_APP_KEY", "demo")
    with ServedApp(build_app()) as demo:
        monkeypatch.setenv("BQAS_DEMO_PORT", str(demo.port))
        result = CliRunner().invoke(
            app, ["run", str(ROOT / "scenarios" / f"{name}.yaml"), "--out", str(tmp_path / "o"), "--no-progress"]
        )
    assert result.exit_code == 0, result.output
    recs = records(tmp_path / "o")
    assert recs and all(r["target"]["attempts"] >= 1 for r in recs)
    assert not [r for r in recs if r["status"] in ("invalid", "target_error")]


def test_the_demo_assistant_is_wrong_now_and_then() -> None:
    """It recognises the teachers' intents, and some answers are wrong on purpose (reproducibly)."""
    assert understand("Erinnere mich morgen an die Konferenz")[0] == "reminder"
    assert understand("Mach ein Arbeitsblatt zu Brüchen")[0] == "worksheet_generate"
    assert understand("Wie spät ist es?")[0] == "unknown"
    texts = [f"Erinnere mich an Termin {i}" for i in range(50)]
    intents = [understand(t)[0] for t in texts]
    assert "reminder" in intents and "reminder_schedule" in intents  # the related, wrong intent
    assert intents == [understand(t)[0] for t in texts]
