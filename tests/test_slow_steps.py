"""Every step of a command that can take seconds says its name: in a pipe or a CI log one plain line
``name …`` on stderr, on a terminal a spinner with the name; ``--no-progress`` says nothing. Real ``bqas``
processes; ``BQAS_SLOW_STEP_SECONDS=0`` names every step at once, so what is asserted is which steps are
named, never how long one took."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BQAS = str(Path(sys.executable).parent / "bqas")
VOICE = ROOT / "scenarios" / "data" / "voice_de.jsonl"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BQAS_LLM") and k != "BQAS_JUDGE_MODEL"}
    env.update({"BQAS_HOME": str(tmp_path / "home"), "BQAS_SLOW_STEP_SECONDS": "0", "COLUMNS": "80", **extra})
    return env


def _bqas(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BQAS, *args], env=_env(tmp_path), cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=600
    )


def _step_lines(stderr: str) -> list[str]:
    """The plain step lines of a non-terminal stderr, in order, without their ``…``."""
    return [line.removesuffix(" …") for line in stderr.splitlines() if line.endswith(" …")]


def _voice_scenario(tmp_path: Path, samples: int = 4) -> Path:
    lines = VOICE.read_text(encoding="utf-8").splitlines()[:samples]
    (tmp_path / "voice.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    scenario = tmp_path / "voice.yaml"
    scenario.write_text(
        "name: voice-steps\njudges: [voice]\nlanguage: de\nbackend: offline\ndataset: voice.jsonl\n"
        "thresholds: {max_failed: 100, max_unscored: 100}\n",
        encoding="utf-8",
    )
    return scenario


def test_run_names_its_steps_in_a_pipe_and_keeps_them_off_stdout(tmp_path: Path) -> None:
    scenario = _voice_scenario(tmp_path)
    done = _bqas(tmp_path, "run", str(scenario), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    steps = _step_lines(done.stderr)
    expected = [
        "loading the judges",
        "loading the offline models",
        "judging 4 samples",
        "summarising the results",
        f"writing results.jsonl, junit.xml and report.html to {tmp_path / 'out'}",
    ]
    assert steps == expected, done.stderr
    # An offline run asks no LLM: its known-answer check is no step of it.
    assert "known-answer" not in done.stderr
    assert not any(line.endswith(" …") for line in done.stdout.splitlines())  # stdout stays the output


def test_run_with_no_progress_names_no_step(tmp_path: Path) -> None:
    scenario = _voice_scenario(tmp_path)
    done = _bqas(tmp_path, "run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _step_lines(done.stderr) == [], done.stderr
    assert "loading the judges" not in done.stderr


def test_run_on_a_terminal_shows_a_spinner_with_the_step_name(tmp_path: Path) -> None:
    """stderr is a pseudo-terminal: the step's name comes as a spinner (rich's status line), not as the
    plain ``name …`` line of a pipe."""
    scenario = _voice_scenario(tmp_path)
    leader, follower = pty.openpty()
    env = _env(tmp_path, TERM="xterm-256color")
    env.pop("CI", None)
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [BQAS, "run", str(scenario), "--out", str(tmp_path / "out")],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end closed: the process is done
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    assert proc.wait(timeout=60) == 0, seen.decode("utf-8", "replace")
    text = seen.decode("utf-8", "replace")
    assert "loading the judges" in text, text
    assert "loading the judges …" not in text  # a spinner, not the plain line of a pipe


def test_calibrate_names_its_steps(tmp_path: Path) -> None:
    done = _bqas(
        tmp_path, "calibrate", "--gold", str(VOICE), "--judge", "voice", "--backend", "offline", "--limit", "6"
    )
    assert done.returncode in (0, 1, 3), done.stdout + done.stderr  # the figures on 6 samples may miss a target
    assert _step_lines(done.stderr)[:3] == [
        "reading the gold file voice_de.jsonl",
        "judging 6 gold samples with voice (offline)",
        "measuring agreement with the gold labels (offline: bootstrap intervals)",
    ], done.stderr
    assert "storing the calibration" in done.stderr


def test_judge_check_names_its_steps(tmp_path: Path) -> None:
    done = _bqas(tmp_path, "judge-check", "--judge", "voice", "--backend", "offline", "--limit", "2", "--json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    steps = _step_lines(done.stderr)
    assert steps[0] == "loading the judges", done.stderr
    assert steps[1].startswith("checking voice on the known-answer set(s)"), done.stderr
    assert json.loads(done.stdout)["judge"] == "voice"  # the JSON output stays clean of step lines


def test_score_names_its_steps(tmp_path: Path) -> None:
    sample = json.loads(VOICE.read_text(encoding="utf-8").splitlines()[0])
    done = _bqas(tmp_path, "score", "--judge", "voice", "--backend", "offline", "-", stdin=json.dumps(sample))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert _step_lines(done.stderr) == ["loading the judges", "judging 1 sample(s) with voice"], done.stderr


def test_synth_and_eval_intents_name_their_steps(tmp_path: Path) -> None:
    out = tmp_path / "synth.jsonl"
    done = _bqas(tmp_path, "synth", "--intent", "reminder", "--count", "6", "--backend", "offline", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _step_lines(done.stderr) == ["generating 6 inputs for intent reminder (offline)"], done.stderr
    quiet = _bqas(
        tmp_path,
        "synth",
        "--intent",
        "reminder",
        "--count",
        "6",
        "--backend",
        "offline",
        "--out",
        str(out),
        "--no-progress",
    )
    assert quiet.returncode == 0 and _step_lines(quiet.stderr) == [], quiet.stderr
    done = _bqas(tmp_path, "eval-intents", str(out), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    steps = _step_lines(done.stderr)
    assert len(steps) == 3, done.stderr
    assert steps[0].startswith("embedding ") and steps[0].endswith(" examples (once; cached)"), done.stderr
    assert steps[1].startswith("fitting on ") and steps[2] == "classifying 6 texts", done.stderr
    assert json.loads(done.stdout)["n"] == 6


def test_synth_rag_names_its_step(tmp_path: Path) -> None:
    docs = ROOT / "src" / "bqas" / "demo" / "docs"
    out = tmp_path / "testset.jsonl"
    args = ("synth-rag", "--docs", str(docs), "--language", "de", "--count", "3", "--seed", "7", "--out", str(out))
    done = _bqas(tmp_path, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _step_lines(done.stderr) == ["generating 3 RAG questions from 1 document source(s)"], done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_redteam_names_the_steps_around_its_attacks(tmp_path: Path) -> None:
    port = _free_port()
    assistant = subprocess.Popen(
        [BQAS, "demo-assistant", "--tenants", "--port", str(port)],
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        target = (
            f'{{type: http, url: "http://127.0.0.1:{port}/tenant/chat", body: {{text: "{{user_input}}", '
            f'session: "{{conversation_id}}", tenant: t-meier}}, outputs: {{response: $.answer}}}}'
        )
        done = _bqas(
            tmp_path,
            "redteam",
            "--target",
            target,
            "--plugins",
            "pii_direct",
            "--strategies",
            "plain",
            "--languages",
            "de",
            "--count",
            "2",
            "--seed",
            "7",
            "--out",
            str(tmp_path / "rt"),
        )
    finally:
        assistant.terminate()
        assistant.wait(timeout=30)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    lines = [line for line in done.stderr.replace("\r", "\n").splitlines() if line.endswith(" …")]
    assert [line.removesuffix(" …") for line in lines] == [
        "preparing the attacks (plugins, strategies, languages)",
        "summarising the attacks and writing report.md and junit.xml",
    ], done.stderr


def test_prompts_check_names_its_steps(tmp_path: Path) -> None:
    done = _bqas(tmp_path, "prompts", "check", "--language", "zh")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert _step_lines(done.stderr) == [
        "loading ragas and building its metrics",
        "checking the zh prompt files against the installed ragas prompts",
    ], done.stderr
    assert "cache folder:" in done.stdout


def test_view_names_its_start_up_step(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [BQAS, "view", "--port", "0", "--no-open"],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the viewer's first line: it has started
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert first.startswith("results viewer over"), first + err
    assert _step_lines(err)[0] == "loading the results viewer and opening the store", err
