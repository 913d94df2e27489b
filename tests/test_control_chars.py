"""Control characters in ids never reach a log line or the terminal raw: through the HTTP API (a
response_id), `bqas run` and `bqas runs` (sample ids), and the helper itself."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app as cli
from bqas.textsafe import console_text, printable
from test_review_wiring import LEAK
from test_service_api import _auth, _start

RAW = ("\n", "\r", "\x1b", "\x07", "\u202e", "\x9b")
HOSTILE = "id\nCRITICAL forged\x1b[31m\x1b]0;pwned\x07\u202e\x9b"


def _clean(text: str) -> bool:
    return not any(ch in text for ch in RAW)


def test_printable_escapes_controls_and_keeps_other_scripts() -> None:
    assert printable(HOSTILE) == "id\\nCRITICAL forged\\x1b[31m\\x1b]0;pwned\\x07\\u202e\\x9b"
    assert printable("Grüße 你好 ✓") == "Grüße 你好 ✓"
    assert printable("\ud800") == "\\ud800"
    assert console_text("[bold]x[/]\x1b") == "\\[bold]x\\[/]\\x1b"


def test_a_response_id_cannot_forge_service_log_lines(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="bqas")
    for svc in _start(tmp_path):
        body = {"sample": {k: v for k, v in LEAK.items() if k != "id"}, "judges": ["voice"], "response_id": HOSTILE}
        assert httpx.post(f"{svc.url}/api/score", json=body, headers=_auth(svc.key_a)).status_code == 200
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("bqas")]
    assert any("id\\nCRITICAL forged\\x1b" in m for m in messages), messages  # the review feed logged it
    assert all(_clean(m) for m in messages)
    assert _clean(caplog.text.replace("\n", ""))  # no line of the log holds a raw control


def test_sample_ids_reach_the_terminal_escaped(tmp_path: Path, bqas_home: Path) -> None:
    rows = [{**LEAK, "id": HOSTILE}]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(f"name: {json.dumps('x' + HOSTILE)}\njudges: [voice]\ndataset: d.jsonl\n", "utf-8")
    runner = CliRunner()
    run = runner.invoke(cli, ["run", str(tmp_path / "s.yaml"), "--no-progress", "--out", str(tmp_path / "o")])
    assert run.exit_code in (0, 1), run.output
    listing = runner.invoke(cli, ["runs", "--verbose"])  # the new error categories with an example id each
    assert listing.exit_code == 0
    verbose = runner.invoke(cli, ["runs", "--verbose"])
    assert verbose.exit_code == 0
    for output in (run.output, listing.output, verbose.output):
        assert _clean(output.replace("\n", "")), output
        assert not any(line.lstrip().startswith("CRITICAL forged") for line in output.splitlines())
    assert "\\x1b" in verbose.output  # the category example (listed with --verbose) names the id, escaped
