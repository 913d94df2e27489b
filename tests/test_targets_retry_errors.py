"""``bqas run --resume RUN_ID --retry-target-errors``: a real assistant on 127.0.0.1 fails some samples (one
turn of a conversation) in the first run and answers when asked again. A plain resume sends nothing; with
the flag exactly the target errors are asked once more, their results and stored replies are replaced,
everything else is kept, and each result is counted once. The command is the one docs/targets.md shows."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from aiohttp import web
from typer.testing import CliRunner

from bqas.cli.main import app
from target_support import ServedApp, json_app, records, voice_samples, write_scenario

DOCS = Path(__file__).resolve().parents[1] / "docs"
OUTPUTS = {"response": "$.answer", "detected_intent": "$.intent"}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", *args, "--no-progress"])


def _docs_command() -> str:
    """The shell example of docs/targets.md's "Target errors, asked again" (one command)."""
    text = (DOCS / "targets.md").read_text(encoding="utf-8")
    start = text.index("**Target errors, asked again.**")
    (block,) = re.findall(r"```sh\n(.*?)```", text[start : text.index("\n## ", start)], flags=re.S)
    (command,) = [line for line in block.splitlines() if line.strip()]
    return command


def _bqas(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command, comments=True)
    assert words[0] == "bqas", command
    return subprocess.run(
        [sys.executable, "-m", "bqas.cli.main", *words[1:], "--no-progress"],
        cwd=cwd,
        env=dict(os.environ),  # BQAS_HOME of the bqas_home fixture
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rows(home: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(home / "bqas.sqlite") as conn:
        return conn.execute(sql, args).fetchall()


def test_retry_target_errors_asks_exactly_the_failed_samples_once_more(tmp_path: Path, bqas_home: Path) -> None:
    asked: list[str] = []
    failing = {"Nummer 1", "Nummer 3"}

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        text = body["text"]
        asked.append(text)
        if any(text.endswith(f) for f in failing):
            return web.json_response({"error": "überlastet"}, status=500)
        return web.json_response({"answer": "Ich erinnere dich morgen um 8 Uhr.", "intent": "reminder"})

    samples = voice_samples(5)
    with ServedApp(json_app(answer)) as server:
        target = {"type": "http", "url": f"{server.url}/chat", "body": {"text": "{user_input}"}, "outputs": OUTPUTS}
        target["retries"] = 0
        path = write_scenario(tmp_path, samples, target)
        first = _run(str(path), "--out", str(tmp_path / "out"))
        first_records = records(tmp_path / "out")
        run_id = first_records[0]["run_id"]
        first_calls = list(asked)
        failing.clear()  # the assistant is fixed
        plain = _run("--resume", run_id)
        after_plain = list(asked)
        command = _docs_command()
        assert command == "bqas run --resume RUN_ID --retry-target-errors"
        retried = _bqas(command.replace("RUN_ID", run_id), tmp_path)
        after_retry = list(asked)
        again = _run("--resume", run_id, "--retry-target-errors")  # nothing left to retry
    assert first.exit_code == 1, first.output  # the target-error gate
    assert len(first_calls) == 5
    errors = {r["sample_id"] for r in first_records if r["status"] == "target_error"}
    assert errors == {"s001", "s003"}
    # Without the flag a resume keeps the target errors and sends nothing.
    assert plain.exit_code == 1, plain.output
    assert after_plain == first_calls
    assert "judged now: 0" in plain.output and "target errors retried" not in plain.output
    # With it: s001 and s003 asked exactly once more, the others never.
    assert retried.returncode == 0, retried.stdout + retried.stderr
    assert sorted(after_retry[len(first_calls) :]) == [samples[1]["user_input"], samples[3]["user_input"]]
    assert "target errors retried: 2 samples or turns asked again (2 calls to the target)" in retried.stdout
    assert "judged now: 2" in retried.stdout
    assert "assistant: 5 answers · 0 target errors" in retried.stdout
    # Each result once: replaced, not added; the other results are the first run's rows, untouched.
    final = records(tmp_path / "out")
    assert sorted(r["sample_id"] for r in final) == [s["id"] for s in samples]
    assert all(r["status"] == "scored" for r in final)
    rows = _rows(bqas_home, "SELECT sample_id, id, created_at FROM results WHERE run_id = ?", run_id)
    assert len(rows) == 5
    replies = _rows(bqas_home, "SELECT sample_id, reply FROM target_replies WHERE run_id = ?", run_id)
    assert len(replies) == 5  # the failed replies replaced, not added
    assert [json.loads(reply)["error"] for _, reply in replies] == [None] * 5
    # A second retry finds no target error: nothing is sent, nothing judged.
    assert again.exit_code == 0, again.output
    assert asked == after_retry
    assert "target errors retried: 0 samples or turns asked again (0 calls to the target)" in again.output


def test_untouched_results_keep_their_rows(tmp_path: Path, bqas_home: Path) -> None:
    """The results that were not target errors are the very rows of the first run (same id, same time)."""
    broken = {"on": True}

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        if broken["on"] and body["text"].endswith("Nummer 0"):
            return web.Response(text="kein JSON", content_type="text/plain")
        return web.json_response({"answer": "Gern, morgen um 8.", "intent": "reminder"})

    with ServedApp(json_app(answer)) as server:
        target = {"type": "http", "url": f"{server.url}/chat", "body": {"text": "{user_input}"}, "outputs": OUTPUTS}
        path = write_scenario(tmp_path, voice_samples(3), target, repeats=2)
        first = _run(str(path), "--out", str(tmp_path / "out"))
        run_id = records(tmp_path / "out")[0]["run_id"]
        sql = "SELECT sample_key, repeat, id, created_at, status FROM results WHERE run_id = ? ORDER BY id"
        before = _rows(bqas_home, sql, run_id)
        broken["on"] = False
        retried = _run("--resume", run_id, "--retry-target-errors")
    assert first.exit_code == 1, first.output
    assert retried.exit_code == 0, retried.output
    after = _rows(bqas_home, sql, run_id)
    assert len(before) == len(after) == 6  # 3 samples x 2 repeats, each counted once
    failed_before = {(key, rep) for key, rep, _, _, status in before if status == "target_error"}
    assert failed_before == {(key, rep) for key, rep, *_ in before if key.startswith("s000")}
    assert {row[:4] for row in before if (row[0], row[1]) not in failed_before} == {
        row[:4] for row in after if (row[0], row[1]) not in failed_before
    }
    assert {row[4] for row in after} == {"scored"}
    assert "target errors retried: 1 samples or turns asked again (1 calls to the target)" in retried.output


def test_a_conversation_is_asked_again_from_its_failed_turn_in_the_same_session(
    tmp_path: Path, bqas_home: Path
) -> None:
    """Conversation c1 fails at turn 1 (turn 2 not sent). Retried: turn 0 is not asked again, turns 1 and
    2 are asked once each in the session the target opened at turn 0; c0 and c2 are not asked at all."""
    calls: list[tuple[int, int, str]] = []
    fail = {"on": True}

    async def answer(request: web.Request, body: dict[str, Any]) -> web.Response:
        conversation, turn = (int(w) for w in re.findall(r"\d+", body["text"])[:2])
        calls.append((conversation, turn, body["session"]))
        if fail["on"] and (conversation, turn) == (1, 1):
            return web.json_response({"error": "kaputt"}, status=503)
        return web.json_response(
            {"answer": f"Erledigt: {turn}", "intent": "reminder", "session": f"srv-{conversation}"}
        )

    samples = [
        {
            "id": f"c{i}",
            "expected_intent": "reminder",
            "turns": [{"user_input": f"Gespräch {i} Schritt {j}: erinnere mich"} for j in range(3)],
        }
        for i in range(3)
    ]
    with ServedApp(json_app(answer)) as server:
        target = {
            "type": "http",
            "url": f"{server.url}/chat",
            "body": {"text": "{user_input}", "session": "{conversation_id}"},
            "outputs": {**OUTPUTS, "conversation_id": "$.session"},
            "retries": 0,
        }
        path = write_scenario(tmp_path, samples, target)
        first = _run(str(path), "--out", str(tmp_path / "out"))
        by_id = {r["sample_id"]: r for r in records(tmp_path / "out")}
        run_id = by_id["c0#0"]["run_id"]
        first_calls = list(calls)
        plain = _run("--resume", run_id)
        after_plain = list(calls)
        fail["on"] = False
        retried = _run("--resume", run_id, "--retry-target-errors")
    assert first.exit_code == 1, first.output
    assert sorted(c[:2] for c in first_calls) == [(i, j) for i in range(3) for j in range(3) if (i, j) != (1, 2)]
    assert [by_id[f"c1#{j}"]["status"] for j in range(3)] == ["scored", "target_error", "target_error"]
    assert "not sent: turn 1 failed" in by_id["c1#2"]["target_error"]
    assert plain.exit_code == 1, plain.output
    assert after_plain == first_calls  # no call without the flag
    assert retried.exit_code == 0, retried.output
    assert calls[len(first_calls) :] == [(1, 1, "srv-1"), (1, 2, "srv-1")]
    assert "target errors retried: 2 samples or turns asked again (2 calls to the target)" in retried.output
    final = records(tmp_path / "out")
    assert sorted(r["sample_id"] for r in final) == sorted(f"c{i}#{j}" for i in range(3) for j in range(3))
    assert all(r["status"] == "scored" for r in final), [r.get("target_error") for r in final]
    turns = _rows(bqas_home, "SELECT turn, reply FROM target_replies WHERE run_id = ? AND sample_id = 'c1'", run_id)
    assert sorted(t for t, _ in turns) == [0, 1, 2]
    assert [json.loads(reply)["error"] for _, reply in sorted(turns)] == [None, None, None]


def test_the_flag_is_refused_without_resume_or_without_a_target(tmp_path: Path, bqas_home: Path) -> None:
    helped = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "--retry-target-errors" in helped.output and "target_error" in helped.output
    path = write_scenario(tmp_path, voice_samples(1), None)
    alone = _run(str(path), "--retry-target-errors")
    assert alone.exit_code == 2 and "give --resume RUN_ID" in alone.output
    samples = [{**s, "response": "Ich erinnere dich.", "detected_intent": "reminder"} for s in voice_samples(1)]
    write_scenario(tmp_path, samples, None)
    done = _run(str(path), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0, done.output
    no_target = _run("--resume", records(tmp_path / "out")[0]["run_id"], "--retry-target-errors")
    assert no_target.exit_code == 2 and "has no target" in no_target.output
