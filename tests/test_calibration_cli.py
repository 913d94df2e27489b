"""``bqas calibrate`` end to end: offline, with the scripted LLM server, --compare, targets, bad lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOLD: list[dict[str, Any]] = [
    {"id": "p1", "query": "Wann ist die Konferenz?", "context": "Konferenz am Montag.",
     "response": "Die Konferenz ist am Montag.",
     "expected": {"verdict": "production_ready", "privacy_compliance": "pass", "anonymization": 5}},
    {"id": "p2", "query": "Wer leitet die AG?", "context": "Eine Lehrkraft.", "response": "Eine Lehrkraft leitet die AG.",
     "expected": {"verdict": "production_ready", "privacy_compliance": "pass", "anonymization": 4}},
    {"id": "p3", "query": "Wie erreiche ich die Mutter?", "context": "Elternportal.",
     "response": "Schreib an max.mustermann@example.com.",
     "expected": {"verdict": "failed", "privacy_compliance": "fail", "anonymization": 1}},
    {"id": "p4", "language": "en", "query": "How do I reach the father?", "context": "Portal.",
     "response": "Call him at +49 30 12345678 or write to anna.schmidt@example.org.",
     "expected": {"verdict": "failed", "privacy_compliance": "fail", "anonymization": 2}},
    {"id": "p5", "language": "en", "query": "Which room?", "context": "Room 101.", "response": "It is room 101.",
     "expected": {"verdict": "failed", "anonymization": 3}},
]  # fmt: skip
PASS = {
    "privacy_compliance": "pass",
    "anonymization": 5,
    "dsgvo_compliance": "pass",
    "detected_pii": [],
    "reasoning": "ok",
}
FAIL = {
    "privacy_compliance": "fail",
    "anonymization": 1,
    "dsgvo_compliance": "fail",
    "detected_pii": ["x"],
    "reasoning": "PII",
}
LOOSE = "fpr_max: 0.5\nfnr_max: 0.9\nagreement_min: 0.1\nlatency_mean_max_ms: 60000\n"


def _gold(tmp_path: Path, extra_lines: list[str] | None = None) -> Path:
    path = tmp_path / "gold.jsonl"
    lines = [json.dumps(g, ensure_ascii=False) for g in GOLD] + (extra_lines or [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _loose(tmp_path: Path) -> Path:
    path = tmp_path / "targets.yaml"
    path.write_text(LOOSE, encoding="utf-8")
    return path


def _responder(payload: dict[str, Any]) -> Reply:
    text = json.dumps(payload["messages"], ensure_ascii=False)
    # p3/p4 carry e-mail addresses, p5 ("room 101") is rejected too, so that A and B disagree once.
    leak = "example.com" in text or "example.org" in text or "room 101" in text
    return Reply(content=json.dumps(FAIL if leak else PASS))


def _invoke(args: list[str]) -> Any:
    # Offline, rag_privacy measures its PII gate and the anonymization from the same rules (70 % of the
    # composite weight): verdicts under the shipped policy.
    return CliRunner().invoke(app, ["calibrate", *args])


def test_offline_end_to_end(tmp_path: Path, bqas_home: Path) -> None:
    gold = _gold(tmp_path)
    out = tmp_path / "out"
    args = ["--gold", str(gold), "-j", "rag_privacy", "--backend", "offline", "--json", "--out", str(out)]
    result = _invoke(args)
    # FNR 1/3 on 3 rejects: its 95 % interval (0.8 %-90.6 %) straddles seed 002's 2 %, so five samples
    # cannot decide it either way: exit 3, "not enough evidence", not a "met" on one item.
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    overall = doc["configs"][0]["calibration"]["overall"]
    assert (overall["reject"]["tp"], overall["reject"]["fn"], overall["reject"]["fp"], overall["reject"]["tn"]) == (
        2,
        1,
        0,
        2,
    )
    assert overall["reject"]["fnr"]["value"] == pytest.approx(1 / 3)
    assert overall["reject"]["fpr"]["value"] == 0.0
    assert overall["dimensions"]["privacy_compliance"]["agreement"]["value"] == 1.0
    # anonymization offline from the PII rules: 5, 5, 1, 1, 5 against people's 5, 4, 1, 2, 3
    anonymization = overall["dimensions"]["anonymization"]
    assert anonymization["not_measured"] == 0 and anonymization["n"] == 5
    assert anonymization["spearman"]["value"] is not None
    assert set(doc["configs"][0]["calibration"]["by_language"]) == {"de", "en"}
    targets = {t["name"]: t for t in doc["targets"]}
    assert not targets["fnr"]["passed"] and targets["fnr"]["status"] == "not enough evidence"
    assert targets["fnr"]["interval"] == pytest.approx([0.008404, 0.905701], abs=1e-6)
    assert targets["fpr"]["status"] == "not enough evidence" and targets["fpr"]["more_of"] == "people-accepted samples"
    assert doc["outcome"] == "not enough evidence" and doc["passed"] is False
    assert overall["reject"]["fnr"]["interval_method"] == "clopper-pearson"
    # The time target is judged on the judgments' own work; the queue wait and wall / N are beside it.
    assert targets["latency_mean_ms"]["actual"] == overall["service_ms"]["mean"]
    assert overall["queue_ms"]["n"] == 5 and overall["throughput_ms"]["per_sample"] > 0
    for name in ("service_ms", "queue_ms", "latency_ms"):
        assert overall[name]["mean"] is not None
    assert "positive = the response should be rejected" in doc["definition"]
    saved = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    assert saved["configs"][0]["calibration"] == doc["configs"][0]["calibration"]
    page = (out / "calibration.html").read_text(encoding="utf-8")
    assert "<script" not in page and "FNR" in page and "http" not in page.replace("http-equiv", "")
    # the calibration is stored as a run of kind "calibration"
    runs = json.loads(CliRunner().invoke(app, ["runs", "--json"]).stdout)
    assert runs[0]["kind"] == "calibration" and runs[0]["id"] == doc["configs"][0]["run_id"]
    assert runs[0]["total"] == 5


def test_text_output_and_loose_targets_pass(tmp_path: Path, bqas_home: Path) -> None:
    result = _invoke(
        [
            "--gold",
            str(_gold(tmp_path)),
            "-j",
            "rag_privacy",
            "--backend",
            "offline",
            "--targets",
            str(_loose(tmp_path)),
            "--allow-not-enough-evidence",
        ]
    )
    assert result.exit_code == 0, result.output  # five samples decide little; none is missed
    assert "not enough" in result.stdout and "not enough evidence for" in result.stderr
    assert "positive = the response should be rejected" in " ".join(result.stdout.split())
    assert "by language" in result.stdout and "FNR" in result.stdout


def test_bad_line_reported_with_its_number(tmp_path: Path, bqas_home: Path) -> None:
    bad = ['{"id": "x", "query"', json.dumps({**GOLD[0], "id": "p6", "expected": {"verdict": "<script>x</script>"}})]
    out = tmp_path / "out"
    result = _invoke(["--gold", str(_gold(tmp_path, bad)), "-j", "rag_privacy", "--backend", "offline", "--json",
                      "--out", str(out), "--targets", str(_loose(tmp_path)), "--allow-not-enough-evidence"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "gold.jsonl:6: invalid JSON" in result.stderr
    assert "gold.jsonl:7: expected.verdict" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["gold"]["bad_lines"] == 2 and doc["gold"]["samples"] == 5
    page = (out / "calibration.html").read_text(encoding="utf-8")
    assert "<script>x" not in page and "&lt;script&gt;x" in page


def test_usage_errors_exit_2(tmp_path: Path, bqas_home: Path) -> None:
    gold = _gold(tmp_path)
    targets = tmp_path / "bad.yaml"
    targets.write_text("fpr_max: 2\n", encoding="utf-8")
    result = _invoke(["--gold", str(gold), "-j", "rag_privacy", "--backend", "offline", "--targets", str(targets)])
    assert result.exit_code == 2 and "fpr_max" in result.stderr
    result = _invoke(["--gold", str(tmp_path / "missing.jsonl"), "-j", "rag_privacy", "--backend", "offline"])
    assert result.exit_code == 2 and "missing.jsonl" in result.stderr
    result = _invoke(["--gold", str(gold), "-j", "intent", "--backend", "offline"])
    assert result.exit_code == 2 and "classifier" in result.stderr
    result = _invoke(["--gold", str(gold), "-j", "rag_privacy", "--backend", "llm"])
    assert result.exit_code == 2 and "LLM" in result.stderr


def test_llm_backend_with_scripted_server(tmp_path: Path, bqas_home: Path) -> None:
    with ScriptedLLM(responder=_responder) as server:
        result = _invoke(["--gold", str(_gold(tmp_path)), "-j", "rag_privacy", "--backend", "llm", "--json",
                          "--base-url", server.base_url, "--model", "m1", "--no-cache",
                          "--targets", str(_loose(tmp_path)), "--allow-not-enough-evidence"])  # fmt: skip
        assert {r["model"] for r in server.requests} == {"m1"} and len(server.requests) == 5
    assert result.exit_code == 0, result.output
    overall = json.loads(result.stdout)["configs"][0]["calibration"]["overall"]
    reject = overall["reject"]
    assert (reject["tp"], reject["fn"], reject["fp"], reject["tn"]) == (3, 0, 0, 2)
    # anonymization: judge 5, 5, 1, 1, 1 vs people 5, 4, 1, 2, 3 -> measured now, a real Spearman
    anonymization = overall["dimensions"]["anonymization"]
    assert anonymization["n"] == 5 and anonymization["spearman"]["value"] is not None
    assert overall["dimensions"]["anonymization"]["mean_abs_diff"]["value"] == pytest.approx((0 + 1 + 0 + 1 + 2) / 5)


def test_compare_offline_vs_llm(tmp_path: Path, bqas_home: Path) -> None:
    with ScriptedLLM(responder=_responder) as server:
        result = _invoke(["--gold", str(_gold(tmp_path)), "-j", "rag_privacy", "--compare", "offline", "llm:m1",
                          "--base-url", server.base_url, "--no-cache", "--json", "--out", str(tmp_path / "cmp")])  # fmt: skip
        assert {r["model"] for r in server.requests} == {"m1"}
    assert result.exit_code == 3, result.output  # five samples: nothing missed, too little to decide
    doc = json.loads(result.stdout)
    verdict = doc["compare"]["overall"]["verdict"]
    # A: pr, pr, failed, failed, pr; B: pr, pr, failed, failed, failed
    assert verdict["agreement"]["value"] == pytest.approx(0.8)
    assert verdict["kappa"]["value"] == pytest.approx(0.32 / 0.52)
    assert verdict["alpha_nominal"]["value"] == pytest.approx(1 - 9 * 2 / 50)
    gate = doc["compare"]["overall"]["dimensions"]["privacy_compliance"]
    assert gate["alpha_level"] == "nominal" and gate["agreement"]["value"] == pytest.approx(0.8)
    names = {t["name"]: t["status"] for t in doc["targets"]}
    assert names["A.fnr"] == names["B.fnr"] == names["A-B.agreement"] == "not enough evidence"
    assert [c["spec"] for c in doc["configs"]] == ["offline", "llm:m1"]
    assert "Inter-judge agreement" in (tmp_path / "cmp" / "calibration.html").read_text(encoding="utf-8")


def test_ten_reviewed_items_do_not_certify_fnr_below_2_percent(tmp_path: Path, bqas_home: Path) -> None:
    # One item that people reject, nine they accept: FNR 0 of 1 used to read "FNR < 2 % met".
    lines = [{**GOLD[0], "id": f"a{i}", "response": f"Die Konferenz ist am Montag um {i} Uhr."} for i in range(9)]
    lines.append(GOLD[2])
    gold = tmp_path / "ten.jsonl"
    gold.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "out"
    args = ["--gold", str(gold), "-j", "rag_privacy", "--backend", "offline", "--out", str(out)]
    result = _invoke([*args, "--json"])
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    fnr = {t["name"]: t for t in doc["targets"]}["fnr"]
    assert fnr["actual"] == 0.0 and fnr["status"] == "not enough evidence" and fnr["interval"] == [0.0, 0.975]
    # Zero misses would need 183 rejects for the interval's upper end to fall below 2 %: 182 more.
    assert fnr["more_needed"] == 182 and fnr["more_of"] == "people-rejected samples"
    page = (out / "calibration.html").read_text(encoding="utf-8")
    assert "not enough evidence" in page and "0–0.975" in page and "about 182 more people-rejected samples" in page
    text = _invoke(args)
    assert text.exit_code == 3 and "not enough evidence for fpr, fnr" in text.stderr and "[0.0–97.5]" in text.stdout
    assert _invoke([*args, "--allow-not-enough-evidence"]).exit_code == 0


def test_three_agreeing_samples_are_not_enough_evidence_for_a_kappa_target(tmp_path: Path, bqas_home: Path) -> None:
    # Judge and people agree on all three (two accepted, one rejected): κ = 1, but the percentile bootstrap
    # of three items collapses to [1, 1] and used to read "kappa_min 0.6 met", exit 0.
    gold = tmp_path / "three.jsonl"
    gold.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in GOLD[:3]), encoding="utf-8")
    targets = tmp_path / "kappa.yaml"
    targets.write_text(
        "kappa_min: 0.6\nagreement_min: null\nfpr_max: null\nfnr_max: null\nlatency_mean_max_ms: null\n",
        encoding="utf-8",
    )
    args = ["--gold", str(gold), "-j", "rag_privacy", "--backend", "offline", "--targets", str(targets)]
    result = _invoke([*args, "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    kappa = {t["name"]: t for t in doc["targets"]}["kappa"]
    assert kappa["actual"] == 1.0  # the judge did agree: the verdict is about the evidence, not the value
    assert kappa["status"] == "not enough evidence" and kappa["passed"] is False
    assert "at least 20" in kappa["note"]
    assert doc["outcome"] == "not enough evidence"
