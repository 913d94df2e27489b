"""``bqas calibrate fit`` and ``bqas calibrate --profile``: bad input names what is wrong (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["calibrate", *args])


def _gold(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--fnr-max", "0"], "--fnr-max: must lie between 0 and 1"),
        (["--delta", "1.5"], "--delta: must lie between 0 and 1"),
        (["--backend", "gpu"], "--backend: expected auto, llm or offline"),
        (["--score", "vibes"], "--score: expected p_reject or risk"),
        (["--offline-share", "1"], "--offline-share: must lie between 0 and 1"),
    ],
)
def test_fit_refuses_bad_options(tmp_path: Path, bqas_home: Path, extra: list[str], needle: str) -> None:
    gold = _gold(
        tmp_path, [json.dumps({"query": "", "context": "", "response": "x", "expected": {"verdict": "failed"}})]
    )
    r = _invoke("fit", "--gold", str(gold), "--judge", "rag_privacy", "--out", str(tmp_path / "p.yaml"), *extra)
    assert r.exit_code == 2 and needle in r.output


def test_fit_bad_lines_are_named_and_too_little_data_exits_1(tmp_path: Path, bqas_home: Path) -> None:
    good = {
        "query": "",
        "context": "",
        "response": "Die Klasse {x} schreibt \x1b[31m morgen.",
        "expected": {"verdict": "production_ready"},
    }
    bad = {"query": "", "context": "", "response": "y", "expected": {"verdict": "great"}}
    gold = _gold(
        tmp_path,
        [json.dumps(good), "{broken", json.dumps(bad), json.dumps({**good, "expected": {"verdict": "failed"}})],
    )
    out = tmp_path / "p.json"
    r = _invoke("fit", "--gold", str(gold), "--judge", "rag_privacy", "--out", str(out))
    assert f"{gold}:2:" in r.output and f"{gold}:3: expected.verdict" in r.output
    assert r.exit_code == 1 and "no coverage certified" in r.output and "needed to certify" in r.output
    # Said up front, before the judging and the fit: what these labels can certify at all.
    said = r.output.index("with 1 reject the tightest certifiable FNR bound is 90.0 %")
    assert said < r.output.index("profile rag_privacy-")
    assert "FNR <= 0.02 needs >= 114 rejects (113 more); auto-accept cannot be certified" in r.output
    assert "suggested targets these labels can support: --fnr-max 0.9 --fpr-max 0.9" in r.output
    profile = json.loads(out.read_text(encoding="utf-8"))
    assert profile["data"]["preflight"]["suggested"] == {"fnr_max": 0.9, "fpr_max": 0.9}
    assert profile["coverage"]["decided"] == 0.0 and profile["data"]["n"] == 2


def test_fit_needs_a_grader_and_a_readable_gold(tmp_path: Path, bqas_home: Path) -> None:
    r = _invoke("fit", "--gold", str(tmp_path / "none.jsonl"), "--judge", "rag_privacy", "--out", str(tmp_path / "p"))
    assert r.exit_code == 2 and "none.jsonl: cannot read gold file" in r.output
    r = _invoke("fit", "--gold", str(tmp_path / "none.jsonl"), "--judge", "synthetic", "--out", str(tmp_path / "p"))
    assert r.exit_code == 2 and "a profile needs a grader" in r.output


def test_check_refuses_a_broken_profile_file(tmp_path: Path, bqas_home: Path) -> None:
    gold = _gold(
        tmp_path, [json.dumps({"query": "", "context": "", "response": "x", "expected": {"verdict": "failed"}})]
    )
    broken = tmp_path / "p.yaml"
    broken.write_text("format: bqas-calibration-profile/1\nid: [unclosed\n", encoding="utf-8")
    r = _invoke("--profile", str(broken), "--gold", str(gold), "--judge", "rag_privacy")
    assert r.exit_code == 2 and "p.yaml: cannot read calibration profile" in r.output


def test_calibrate_without_gold_says_what_is_needed(bqas_home: Path) -> None:
    r = _invoke()
    assert r.exit_code == 2 and "--gold and --judge are needed" in r.output


def test_a_check_on_two_labels_shows_nothing_held_and_exits_3(tmp_path: Path, bqas_home: Path) -> None:
    rows = [
        {"query": "", "context": "", "response": "Die Klasse schreibt morgen.", "expected": {"verdict": v}}
        for v in ("production_ready", "failed")
    ]
    gold = _gold(tmp_path, [json.dumps(r) for r in rows])
    profile = tmp_path / "p.json"
    assert _invoke("fit", "--gold", str(gold), "--judge", "rag_privacy", "--out", str(profile)).exit_code == 1
    args = ["--profile", str(profile), "--gold", str(gold), "--judge", "rag_privacy"]
    r = _invoke(*args, "--json")
    # Nothing decided automatically: FNR 0 of 1 reject and FPR 0 of 1 accept, points that "held" before.
    assert r.exit_code == 3, r.output
    report = json.loads(r.stdout)
    pipe = report["tiers"]["pipeline"]
    assert (pipe["fnr"], pipe["fnr_interval"][0], pipe["fnr_status"]) == (0.0, 0.0, "not enough evidence")
    assert report["outcome"] == "not enough evidence" and report["held"] is False
    text = _invoke(*args)
    assert text.exit_code == 3 and "FNR 0.00% (90 % CI 0.0%-95.0%; target 0.02, not enough evidence)" in text.stdout
    assert "not enough evidence: no bound failed" in text.stderr
    assert _invoke(*args, "--allow-not-enough-evidence").exit_code == 0
