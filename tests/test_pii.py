"""Tests for the offline PII detector (bqas.offline.pii) and the safety methods (bqas.offline.safety)."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from bqas.offline.methods import OfflineContext, get_method
from bqas.offline.pii import KINDS, PiiFinding, detect_pii, mask_pii


def found(text: str, kind: str, language: str = "de") -> list[str]:
    """The texts of the findings of one kind."""
    return [f.text for f in detect_pii(text, language) if f.kind == kind]


# --- phone numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Rufen Sie mich unter 030 12345678 an.", "030 12345678"),
        ("Handy: 0171 2345678", "0171 2345678"),
        ("Tel. +49 (0)89 123456-0", "+49 (0)89 123456-0"),
        ("Mobil 0049 171 2345678.", "0049 171 2345678"),
        ("Büro 089/1234567", "089/1234567"),
        ("Österreich: +43 1 5321234", "+43 1 5321234"),
        ("Handy 0664 1234567, bitte", "0664 1234567"),
        ("Zürich: +41 44 668 18 00", "+41 44 668 18 00"),
        ("Sekretariat 044 668 18 00.", "044 668 18 00"),
    ],
)
def test_german_austrian_swiss_phones(text: str, number: str) -> None:
    assert found(text, "phone") == [number]


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("张伟的手机是138 0013 8000。", "138 0013 8000"),
        ("电话：13800138000", "13800138000"),
        ("办公室 +86 10 1234 5678，请联系。", "+86 10 1234 5678"),
        ("北京办公室 010-12345678", "010-12345678"),
    ],
)
def test_chinese_phones(text: str, number: str) -> None:
    assert found(text, "phone", "zh") == [number]


def test_english_phones() -> None:
    text = "Call (212) 555-0123 or 020 7946 0958."
    assert found(text, "phone", "en") == ["(212) 555-0123", "020 7946 0958"]


@pytest.mark.parametrize(
    "text",
    [
        "Die Klassenarbeit ist am 12.03.2024.",
        "Termin: 01.03.2024 um 14:30 Uhr.",
        "Der Notendurchschnitt liegt bei 1,7; Lea hat eine 2,3.",
        "Das Buch kostet 12,99 € bzw. 1.299,00 € für den Klassensatz.",
        "Im Schuljahr 2023/2024 gibt es 1.250 Schülerinnen und Schüler.",
        "Seite 123456789 gibt es nicht, ISBN 978-3-16-148410-0.",
        "Die Prüfung dauert 0,5 Stunden, Raum 0.12.",
        "Datum: 2024-03-12, Zeit 08:15–09:45.",
    ],
)
def test_dates_times_prices_grades_are_not_phones(text: str) -> None:
    assert found(text, "phone") == []


def test_phone_cue_raises_confidence() -> None:
    with_cue = detect_pii("Telefon: 030 12345678", kinds={"phone"})
    without = detect_pii("Zahl 030 12345678", kinds={"phone"})
    assert with_cue[0].confidence > without[0].confidence
    assert with_cue[0].method == "phonenumbers:DE"


# --- IBAN, e-mail ------------------------------------------------------------------------------------


def test_iban_valid_checksum_is_found() -> None:
    text = "Bitte überweisen Sie auf DE89 3704 0044 0532 0130 00 bis Freitag."
    findings = detect_pii(text, kinds={"iban"})
    assert [(f.text, f.method) for f in findings] == [("DE89 3704 0044 0532 0130 00", "stdnum:iban")]


def test_iban_compact_and_austrian() -> None:
    assert found("IBAN: DE89370400440532013000", "iban") == ["DE89370400440532013000"]
    assert found("Konto AT61 1904 3002 3457 3201.", "iban") == ["AT61 1904 3002 3457 3201"]


def test_iban_invalid_checksum_is_not_found() -> None:
    assert found("IBAN DE89 3704 0044 0532 0130 01", "iban") == []


def test_iban_does_not_swallow_following_number() -> None:
    assert found("IBAN DE89 3704 0044 0532 0130 00 12 Euro", "iban") == ["DE89 3704 0044 0532 0130 00"]


def test_emails() -> None:
    text = "Schreiben Sie an lea.schmidt@schule-nord.de oder an info(at)gymnasium-mitte.de."
    assert found(text, "email") == ["lea.schmidt@schule-nord.de", "info(at)gymnasium-mitte.de"]


def test_email_wins_over_name_inside_it() -> None:
    findings = detect_pii("Kontakt: anna.meier@example.org")
    assert [(f.kind, f.text) for f in findings] == [("email", "anna.meier@example.org")]


# --- addresses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("Sie wohnt in der Hauptstraße 12, 80331 München.", "Hauptstraße 12, 80331 München"),
        ("Adresse: Karl-Marx-Allee 3a", "Karl-Marx-Allee 3a"),
        ("Treffpunkt Berliner Straße 5 um acht.", "Berliner Straße 5"),
        ("Die Schule liegt Am Markt 3, 1010 Wien.", "Am Markt 3, 1010 Wien"),
        ("Goethestr. 7, 8001 Zürich", "Goethestr. 7, 8001 Zürich"),
    ],
)
def test_german_addresses(text: str, address: str) -> None:
    assert found(text, "address") == [address]


def test_not_addresses() -> None:
    assert found("Die Klasse belegte Platz 1 beim Wettbewerb.", "address") == []
    assert found("Der Rundweg 5 km ist gesperrt.", "address") == []
    assert found("Es kamen 10000 Menschen zum Fest.", "address") == []


def test_english_and_chinese_addresses() -> None:
    assert found("She lives at 221 Baker Street, London.", "address", "en") == ["221 Baker Street, London"]
    assert found("地址：北京市海淀区中关村大街27号。", "address", "zh") == ["北京市海淀区中关村大街27号"]


# --- person names: German and English ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Bitte rufen Sie Herrn Müller an.", ["Müller"]),
        ("Frau Dr. Weber hat den Elternabend verschoben.", ["Weber"]),
        ("Die Schülerin Lea hat heute gefehlt.", ["Lea"]),
        ("Notiz zu Jonas Becker: braucht mehr Zeit.", ["Jonas Becker"]),
        ("Elternbrief an Familie Yilmaz", ["Yilmaz"]),
        ("Die Mutter von Emma hat angerufen.", ["Emma"]),
        ("Paul und Marie haben die Präsentation gehalten.", ["Paul", "Marie"]),
        ("Klassenlehrerin Sabine Hoffmann", ["Sabine Hoffmann"]),
        ("Außenminister Steinmeier traf Ursula von der Leyen.", ["Steinmeier", "Ursula von der Leyen"]),
        ("Frau Yilmaz kam später. Yilmaz sagte, ...", ["Yilmaz", "Yilmaz"]),
    ],
)
def test_german_names(text: str, names: list[str]) -> None:
    assert found(text, "person") == names


def test_english_names() -> None:
    assert found("Mr Smith called, then Mrs. Brown.", "person", "en") == ["Smith", "Brown"]
    assert found("Dear Ms Johnson, thank you.", "person", "en") == ["Johnson"]


@pytest.mark.parametrize(
    "text",
    [
        "Die Klasse schreibt morgen die Mathearbeit.",
        "Der Unterricht fällt aus, die Hausaufgaben bleiben.",
        "Notiz zu Mathe: Bruchrechnung wiederholen.",
        "Liebe Eltern, der Wandertag ist am Freitag.",
        "Im August fahren wir nach Rom; im Mai ist Projektwoche.",
        "Die Rose blüht, Mark und Pfennig sind Geschichte.",
        "Er spielte in einer Band mit einer Tom und einer Gitarre.",
        "Die Schüler Bayerns schreiben das Abitur.",
    ],
)
def test_capitalised_nouns_are_not_names(text: str) -> None:
    assert found(text, "person") == []


@pytest.mark.parametrize(
    "text",
    [
        "Schülerin K. hat die Aufgabe gelöst.",
        "Schüler A und Schülerin B arbeiten zusammen.",
        "S1 und S2 haben gefehlt.",
        "Notiz zu [NAME]: fehlt oft.",
        "Herr X. hat sich beschwert.",
        "Beispiel: Max Mustermann, Erika Mustermann.",
    ],
)
def test_pseudonyms_and_placeholders_are_not_pii(text: str) -> None:
    assert detect_pii(text) == []


def test_initial_plus_surname_is_a_name() -> None:
    assert found("Das Buch von A. Wiegemann ist vergriffen.", "person") == ["A. Wiegemann"]


# --- person names: Chinese ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("张伟同学今天没有交作业。", ["张伟"]),
        ("请联系王芳老师。", ["王芳"]),
        ("班主任李娜老师说明天考试。", ["李娜"]),
        ("学生欧阳娜娜参加了比赛。", ["欧阳娜娜"]),
        ("刘先生和陈女士来了。", ["刘", "陈"]),
    ],
)
def test_chinese_names(text: str, names: list[str]) -> None:
    assert found(text, "person", "zh") == names


@pytest.mark.parametrize(
    "text", ["高一同学请到操场集合。", "历史老师生病了。", "班主任老师说今天不考试。", "张三同学是例子。"]
)
def test_chinese_non_names(text: str) -> None:
    assert found(text, "person", "zh") == []


# --- API behaviour -----------------------------------------------------------------------------------


def test_findings_are_sorted_without_overlaps_and_offsets_match() -> None:
    text = (
        "Herr Müller (m.mueller@schule.de, Tel. 0171 2345678) wohnt Hauptstraße 12, 80331 München; "
        "IBAN DE89 3704 0044 0532 0130 00."
    )
    findings = detect_pii(text)
    assert [f.kind for f in findings] == ["person", "email", "phone", "address", "iban"]
    for a, b in itertools.pairwise(findings):
        assert a.end <= b.start
    for f in findings:
        assert text[f.start : f.end] == f.text
        assert 0.0 < f.confidence <= 1.0


def test_kinds_filter_and_unknown_kind() -> None:
    text = "Herr Müller, Tel. 0171 2345678"
    assert [f.kind for f in detect_pii(text, kinds={"phone"})] == ["phone"]
    with pytest.raises(ValueError, match="unknown PII kinds"):
        detect_pii(text, kinds={"passport"})
    assert set(KINDS) == {"email", "phone", "iban", "address", "person"}


def test_regional_language_tags() -> None:
    text = "Handy 0664 1234567"
    assert found(text, "phone", "de-AT") == found(text, "phone", "de") == ["0664 1234567"]
    assert found("电话 13800138000", "phone", "zh-CN") == ["13800138000"]


def test_empty_text() -> None:
    assert detect_pii("") == []
    assert mask_pii("", []) == ""


def test_mask_pii() -> None:
    text = "Herr Müller: m.mueller@schule.de, 0171 2345678."
    masked = mask_pii(text, detect_pii(text))
    assert masked == "Herr [PERSON]: [EMAIL], [PHONE]."


def test_mask_pii_ignores_overlapping_findings() -> None:
    text = "abcdef"
    findings = [PiiFinding("person", "abcd", 0, 4, "t", 0.5), PiiFinding("email", "cdef", 2, 6, "t", 0.9)]
    assert mask_pii(text, findings) == "ab[EMAIL]"


def test_import_is_cheap_and_offline() -> None:
    # A fresh interpreter: importing the module must not load phonenumbers/stdnum or the name lists (what
    # that costs is measured by the benchmarks; a wall-clock bound here fails on a busy machine).
    code = (
        "import sys; import bqas.offline.pii; from bqas.offline.pii import lexicon; "
        "print('phonenumbers' in sys.modules, 'stdnum' in sys.modules, lexicon._lexicon.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "0"]


# --- offline methods ---------------------------------------------------------------------------------


def test_pii_gate_and_list() -> None:
    ctx = OfflineContext(language="de")
    gate = get_method("pii_gate")
    listing = get_method("pii_list")

    leak = gate({"text": "Die Nummer von Frau Yilmaz ist 0171 2345678."}, ctx)
    assert leak.value == "fail"
    assert leak.method == "pii_rules"
    assert {"kind": "phone", "text": "0171 2345678", "method": "phonenumbers:DE", "confidence": 0.95} in leak.details[
        "findings"
    ]

    clean = gate({"text": "Die Klasse schreibt morgen die Mathearbeit."}, ctx)
    assert clean.value == "pass"
    assert clean.details["findings"] == []

    items = listing({"text": "Herr Müller, m.mueller@schule.de"}, ctx)
    assert items.value == ["person: Müller", "email: m.mueller@schule.de"]


@pytest.mark.parametrize("inputs", [{}, {"text": ""}, {"text": "   "}, {"text": None}])
def test_pii_gate_empty_text_passes(inputs: dict[str, object]) -> None:
    result = get_method("pii_gate")(inputs, OfflineContext(language="de"))
    assert result.value == "pass"
    assert result.note == "empty text"
    assert get_method("pii_list")(inputs, OfflineContext(language="de")).value == []


def test_pii_gate_uses_context_language() -> None:
    result = get_method("pii_gate")({"text": "张伟同学"}, OfflineContext(language="zh"))
    assert result.value == "fail"
    found = [{k: f[k] for k in ("kind", "text", "method")} for f in result.details["findings"]]
    assert found == [{"kind": "person", "text": "张伟", "method": "name:zh_cue_after"}]
    assert all(0.0 < f["confidence"] <= 1.0 for f in result.details["findings"])
