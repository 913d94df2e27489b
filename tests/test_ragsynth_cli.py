"""``bqas synth-rag`` on the command line: exit codes as ``bqas synth``, the --json summary, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from bqas.cli.main import app
from ragsynth_support import DOCS, image_only_pdf


def _invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, ["synth-rag", "--no-progress", *args])
    return res.exit_code, res.stdout, res.stderr


def test_exit_0_with_the_json_summary_and_the_file(tmp_path: Path) -> None:
    out = tmp_path / "sets" / "de.jsonl"
    code, stdout, _ = _invoke(
        "--docs", str(DOCS / "de"), "-n", "8", "-l", "de", "--seed", "1", "--out", str(out), "--json"
    )
    assert code == 0
    summary = json.loads(stdout)
    assert summary["kept"] == 8 and sum(summary["kept_per_kind"].values()) == 8
    assert isinstance(summary["dropped"], dict) and summary["unreadable"] == []
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 8 and all(json.loads(line)["language"] == "de" for line in lines)
    assert not [p for p in out.parent.iterdir() if p.name != "de.jsonl"]  # no temporary file left


def test_exit_1_when_the_documents_support_fewer_items_and_says_why(tmp_path: Path) -> None:
    out = tmp_path / "en.jsonl"
    code, stdout, _ = _invoke("--docs", str(DOCS / "en"), "-n", "500", "-l", "en", "--out", str(out))
    assert code == 1
    kept = len(out.read_text(encoding="utf-8").splitlines())
    assert 0 < kept < 500
    assert f"kept {kept} of 500 requested" in stdout
    assert "the documents support no more items" in stdout


def test_files_in_another_language_and_unreadable_files_are_named(tmp_path: Path) -> None:
    image_only_pdf(tmp_path / "scan.pdf")
    out = tmp_path / "zh.jsonl"
    code, stdout, _ = _invoke("--docs", str(DOCS), "--docs", str(tmp_path / "scan.pdf"), "-n", "3", "-l", "zh",
                              "--out", str(out), "--json")  # fmt: skip
    assert code == 0
    summary = json.loads(stdout)
    assert summary["unreadable"][0]["file"].endswith("scan.pdf") and "no OCR" in summary["unreadable"][0]["reason"]
    assert sorted(Path(f).name for f in summary["other_language"]) == ["klausuren.md", "manual.md", "seite.html"]


def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    out.write_text("kept\n", encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.txt").write_text("Die Klausur dauert 90 Minuten. " * 40, encoding="utf-8")
    cases = [
        (["--docs", str(empty)], "the folder is empty"),
        (["--docs", str(tmp_path / "missing")], "no such file or folder"),
        (["--docs", str(DOCS / "zh"), "-l", "de"], "no document in 'de': the documents are in zh"),
        (["--docs", str(DOCS / "de"), "-n", "0"], "--count must be between 1"),
        (["--docs", str(DOCS / "de"), "-n", "1000000"], "--count must be between 1"),
        (["--docs", str(DOCS / "de"), "--kinds", "fact,riddle"], "unknown kind(s) riddle"),
        (["--docs", str(DOCS / "de"), "-l", "fr"], "--language"),
        (["--docs", str(DOCS / "de"), "--persona", "pilot"], "unknown persona 'pilot'"),
        (["--docs", str(big), "--max-file-mb", "0.001"], "over the limit"),
    ]
    for args, message in cases:
        code, _, stderr = _invoke(*args, "--out", str(out))
        assert code == 2, args
        assert message in stderr, (args, stderr)
        assert out.read_text(encoding="utf-8") == "kept\n"


def test_kinds_restricts_the_set(tmp_path: Path) -> None:
    out = tmp_path / "u.jsonl"
    code, _, _ = _invoke(
        "--docs", str(DOCS / "de"), "-n", "4", "--kinds", "unanswerable", "-l", "de", "--out", str(out)
    )
    assert code == 0
    assert {json.loads(line)["kind"] for line in out.read_text(encoding="utf-8").splitlines()} == {"unanswerable"}
