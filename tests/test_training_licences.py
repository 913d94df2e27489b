"""The one licence guard (bqas.training.licences): XNLI, OCNLI and MEMERAG (CC BY-NC) are for measuring only.
Every loader asked for training, fitting or choosing data refuses them with an error naming the dataset and
its licence; measuring is allowed; the fits refuse rows of theirs whatever loader made them."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bqas.training import licences
from bqas.training.grounding import datasets as gdata
from bqas.training.grounding.train import Featurized, train
from bqas.training.licences import LicenceError, check_sources, check_use, measure_only
from bqas.training.verifier import datasets as vdata
from bqas.training.verifier.fit import fit_cascade

ROOT = Path(__file__).resolve().parent.parent
#: A MEMERAG-shaped row (written for this test, no MEMERAG text): MTRAG's loader reads it just as well,
#: which is why the guard goes by the file and the source tag, not by the row's shape.
ROW = {"id": "x/en/1", "lang": "en", "question": "How high is the tower?", "contexts": ["The tower is 40 m high."],
       "answer": "The tower is 40 m high.", "faithful": True}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "dataset"),
    [
        ("rag_faithfulness_memerag.jsonl", "MEMERAG"),
        (Path("/data/elsewhere/rag_faithfulness_memerag.jsonl"), "MEMERAG"),
        ("memerag", "MEMERAG"),
        ("memerag-es", "MEMERAG"),
        ("synthetic:memerag", "MEMERAG"),
        ("nli_de.jsonl", "XNLI"),
        ("xnli", "XNLI"),
        ("nli_zh", "OCNLI"),
        ("OCNLI", "OCNLI"),
    ],
)
def test_measure_only_data_is_refused_for_training_fitting_and_choosing(name: str | Path, dataset: str) -> None:
    found = measure_only(name)
    assert found is not None and found.name == dataset
    for use in ("train", "fit", "choose"):
        with pytest.raises(LicenceError, match=rf"{dataset} \(CC BY-NC [0-9.]+\) is evaluation-only") as err:
            check_use(name, use)  # type: ignore[arg-type]
        assert str(name) in str(err.value)
    check_use(name, "measure")  # measuring is allowed


@pytest.mark.parametrize(
    "name", ["rag_faithfulness_en.jsonl", "attribution_en", "hallucination_zh", "pii_de", "mtrag", "synthetic:begin"]
)
def test_permitted_data_passes_for_every_use(name: str) -> None:
    assert measure_only(name) is None
    for use in licences.USES:
        check_use(name, use)  # type: ignore[arg-type]


def test_an_unknown_use_is_an_error_not_a_pass() -> None:
    with pytest.raises(ValueError, match="use must be one of"):
        check_use("rag_faithfulness_en.jsonl", "tune")  # type: ignore[arg-type]


def test_the_list_matches_the_datasets_readme_files() -> None:
    assert {d.file for d in licences.MEASURE_ONLY} == {"nli_de.jsonl", "nli_zh.jsonl", "rag_faithfulness_memerag.jsonl"}
    assert all(d.licence.startswith("CC BY-NC") for d in licences.MEASURE_ONLY)


def test_grounding_loaders_measure_memerag_but_refuse_it_for_training(tmp_path: Path) -> None:
    path = tmp_path / "rag_faithfulness_memerag.jsonl"
    path.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    measured = gdata.load_memerag(path)
    assert [e.source for e in measured] == ["memerag-en"]
    with pytest.raises(LicenceError, match="MEMERAG"):
        gdata.load_memerag(path, use="train")
    # The same rows through a trainable dataset's loader: refused by the file, measurable on request.
    with pytest.raises(LicenceError, match="training on it is not"):
        gdata.load_mtrag(path)
    with pytest.raises(LicenceError, match="fitting on it is not"):
        gdata.load_mtrag(path, use="fit")
    assert len(gdata.load_mtrag(path, use="measure")) == 1
    with pytest.raises(LicenceError, match="not a trainable dataset"):
        gdata.load_training(tmp_path, ["memerag"])


def test_verifier_loaders_refuse_measure_only_files(tmp_path: Path) -> None:
    for file in ("rag_faithfulness_memerag.jsonl", "nli_de.jsonl", "nli_zh.jsonl"):
        (tmp_path / file).write_text("{}\n", encoding="utf-8")
        with pytest.raises(LicenceError, match="evaluation-only"):
            list(vdata._rows(tmp_path / file))
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "pii_de.jsonl").write_text(json.dumps({"text": "Anna wohnt in Berlin ."}) + "\n", "utf-8")
    assert vdata.germeval_passages(tmp_path / "ok" / "pii_de.jsonl") == [("Anna wohnt in Berlin.", "de")]


def test_the_fits_refuse_measure_only_rows_whatever_loader_made_them() -> None:
    ok = gdata.Example("a", ("a",), "", 0, "mtrag", "en")
    bad = gdata.Example("b", ("a",), "", 1, "memerag-en", "en")
    with pytest.raises(LicenceError, match="memerag-en"):
        train(Featurized(rows=[(ok, [0.0] * 30), (bad, [1.0] * 30)]))
    rows = [{"source": "memerag-fr", "label": 1, "p1": 0.5, "claim_probabilities": [0.5]}]
    with pytest.raises(LicenceError, match="fitting on it is not"):
        fit_cascade(rows, "v")
    check_sources(["mtrag", "synthetic:scenarios"], "train")


def _blocklists(source: str) -> list[int]:
    """Lines of tuple/list/set literals of measure-only datasets alone, two or more of them: a list of its
    own (a list of the sets a benchmark measures names permitted ones beside them)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            datasets = [measure_only(n) for n in names]
            if len(names) >= 2 and None not in datasets and len({d.name for d in datasets if d}) >= 2:
                found.append(node.lineno)
    return found


def test_there_is_one_list_of_measure_only_datasets() -> None:
    others = {}
    for folder in ("src", "benchmarks", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name != "licences.py" and (lines := _blocklists(path.read_text(encoding="utf-8"))):
                others[str(path.relative_to(ROOT))] = lines
    assert others == {}
    # What the check finds: the blocklists the loaders and benchmarks used to keep each for themselves.
    assert _blocklists('FORBIDDEN = ("memerag", "nli_de", "nli_zh", "xnli", "ocnli")') == [1]
    assert _blocklists('FORBIDDEN = {"rag_faithfulness_memerag", "nli_de", "nli_zh"}') == [1]
    assert _blocklists('SETS = ("mtrag", "memerag-en", "memerag-es")') == []
