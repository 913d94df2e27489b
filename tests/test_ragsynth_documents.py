"""Reading and chunking documents for ``bqas synth-rag``: formats, source/page/heading, unreadable files."""

from __future__ import annotations

from pathlib import Path

from bqas.ragsynth.chunks import chunk_sections
from bqas.ragsynth.documents import read_documents
from ragsynth_support import DOCS, image_only_pdf, text_pdf


def test_markdown_keeps_the_heading_path_of_every_passage() -> None:
    corpus = read_documents([DOCS / "de" / "klausuren.md"])
    passages = chunk_sections(corpus.sections)
    by_text = {s: p for p in passages for s in p.sentences}
    p = by_text["Die Klausurdauer in der Oberstufe beträgt 135 Minuten."]
    assert p.heading == "Klausurordnung der Teststadtschule › Klausurdauer in der Oberstufe"
    assert p.page is None and p.source.endswith("klausuren.md") and p.chunk_id.startswith("klausuren.md#")
    assert p.language == "de"


def test_html_headings_and_paragraphs_without_scripts_or_styles() -> None:
    corpus = read_documents([DOCS / "de" / "seite.html"])
    headings = {s.heading: s.text for s in corpus.sections}
    assert "Ein Mittagessen kostet 3,50 Euro." in headings["Preise"]
    assert not any("nicht lesen" in s.text or "color" in s.text for s in corpus.sections)


def test_pdf_pages_are_numbered(tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "m.pdf", [["The pump weighs 12 kg."], ["The filter is changed every 6 months."]])
    corpus = read_documents([pdf])
    assert [(s.page, s.text.strip()) for s in corpus.sections] == [
        (1, "The pump weighs 12 kg."),
        (2, "The filter is changed every 6 months."),
    ]


def test_unreadable_files_are_named_with_their_reason_and_the_others_go_on(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# A\n\nThe pump weighs 12 kg.\n", encoding="utf-8")
    image_only_pdf(tmp_path / "scan.pdf")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin1.txt").write_bytes("Gr\xfc\xdfe".encode("latin-1"))
    (tmp_path / "big.txt").write_text("x" * 5000, encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    corpus = read_documents([tmp_path], max_bytes=4000)
    reasons = {Path(u.source).name: u.reason for u in corpus.unreadable}
    assert "no OCR" in reasons["scan.pdf"] and "text layer" in reasons["scan.pdf"]
    assert "binary" in reasons["blob.txt"]
    assert "not UTF-8" in reasons["latin1.txt"]
    assert "over the limit" in reasons["big.txt"]
    assert "unsupported type .png" in reasons["image.png"]
    assert [Path(r).name for r in corpus.read] == ["ok.md"]


def test_chinese_is_cut_at_sentence_ends_never_at_spaces() -> None:
    corpus = read_documents([DOCS / "zh" / "shouce.txt"])
    passages = chunk_sections(corpus.sections, max_chars=40)
    sentences = [s for p in passages for s in p.sentences]
    assert "离心机的最高转速为15000转每分钟。" in sentences
    assert "测试用示例离心机手册。" in sentences
    # A passage never cuts a sentence and keeps under the limit unless one sentence is longer.
    assert all(len(p.text) <= 40 or len(p.sentences) == 1 for p in passages)
    assert all(p.language == "zh" for p in passages)
    assert "".join(p.text for p in passages).replace(" ", "") == "".join(sentences).replace(" ", "")


def test_long_sections_are_cut_between_sentences() -> None:
    corpus = read_documents([DOCS / "en" / "manual.md"])
    passages = chunk_sections(corpus.sections, max_chars=90)
    for p in passages:
        assert all(s in p.text for s in p.sentences)
        assert len(p.text) <= 90 or len(p.sentences) == 1
    assert len({p.chunk_id for p in passages}) == len(passages)
    assert any(len(p.sentences) == 1 for p in passages) and any(len(p.sentences) > 1 for p in passages)


def test_restructuredtext_titles_and_field_lists(tmp_path: Path) -> None:
    rst = tmp_path / "pump.rst"
    rst.write_text(
        ".. _pump:\n\nPump P-7\n========\n\n:Weight: 12 kg\n:Power: 400 W\n\n"
        "====== ====\nA      B\n====== ====\n\nThe pump is quiet.\n",
        encoding="utf-8",
    )
    [section] = read_documents([rst]).sections
    assert section.heading == "Pump P-7"
    sentences = [s for p in chunk_sections([section]) for s in p.sentences]
    # Field lists as "Key: value" lines, table rules dropped (the row text stays), the label left out.
    assert sentences == ["Weight: 12 kg", "Power: 400 W", "A      B", "The pump is quiet."]
