"""Long commands show their steps where a person watches (a terminal on stderr) and nothing in a log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BQAS = [sys.executable, "-c", "from bqas.cli.main import app; app()"]


def _dataset(tmp_path: Path) -> Path:
    rows = [
        {"text": "Erinnere mich morgen an die Konferenz", "intent": "reminder"},
        {"text": "Schreib einen Elternbrief zum Wandertag", "intent": "parent_letter"},
        {"text": "Erstelle ein Arbeitsblatt zu Brüchen", "intent": "worksheet_generate"},
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, BQAS_HOME=str(tmp_path / "home"), TERM="xterm", COLUMNS="100")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_eval_intents_shows_its_steps_on_a_terminal(tmp_path: Path) -> None:
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*BQAS, "eval-intents", str(data := _dataset(tmp_path)), "--examples", str(data)],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=_env(tmp_path),
    )
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closes with the process
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out, _ = proc.communicate(timeout=120)
    screen = seen.decode("utf-8", "replace")
    assert proc.returncode == 0, screen
    assert "embedding 3 examples (once; cached)" in screen
    assert "fitting on" in screen and "classifying 3 texts" in screen and "3/3" in screen
    assert "accuracy:" in out.decode()  # the figures still go to stdout, untouched by the bars


def test_eval_intents_prints_no_bars_into_a_log(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*BQAS, "eval-intents", str(data := _dataset(tmp_path)), "--examples", str(data)],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "accuracy:" in proc.stdout
    # No bar in a log: no redrawn line, no counts. A step over 2 s may name itself once, on one line.
    assert "\r" not in proc.stderr and "3/3" not in proc.stderr
    named = proc.stderr.splitlines()
    assert all(line.endswith(" …") for line in named), proc.stderr
    assert len(named) == len(set(named)), proc.stderr  # once each
