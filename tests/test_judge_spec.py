"""Judges are data: the German templates are the seed's prompts, verbatim; files are checked on load."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bqas.judgment.spec import JudgeFileError, JudgeRegistry, default_registry

SEED = Path(__file__).parent / "fixtures" / "seed_000_judge_prompts.txt"
SEED_NAMES = {
    "voice": "JUDGE_PROMPT",
    "synthetic": "SYNTHETIC_GENERATION_PROMPT",
    "intent": "INTENT_CLASSIFICATION_PROMPT",
    "rag_retrieval": "RAG_RETRIEVAL_JUDGE_PROMPT",
    "rag_operator": "RAG_OPERATOR_JUDGE_PROMPT",
    "rag_hallucination": "RAG_HALLUCINATION_JUDGE_PROMPT",
    "rag_privacy": "RAG_PRIVACY_JUDGE_PROMPT",
    "rag_namespace": "RAG_NAMESPACE_JUDGE_PROMPT",
}


def _seed_prompts() -> dict[str, str]:
    text = SEED.read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r'(\w+_PROMPT) = """(.*?)"""', text, re.DOTALL)}


def _ws(text: str) -> str:
    return " ".join(text.split())


def test_all_eight_seed_judges_are_registered() -> None:
    registry = default_registry()
    assert set(SEED_NAMES) <= set(registry.names())
    for name, seed_name in SEED_NAMES.items():
        assert registry.get(name).seed_prompt == seed_name


@pytest.mark.parametrize("judge", sorted(SEED_NAMES))
def test_german_template_is_the_seed_prompt_verbatim(judge: str) -> None:
    seed = _seed_prompts()[SEED_NAMES[judge]]
    template = default_registry().get(judge).templates["de"]
    # The seed file lost its line breaks; every word, brace and number must be identical.
    assert _ws(template) == _ws(seed)


def test_voice_inputs_and_dimensions_follow_the_seed() -> None:
    spec = default_registry().get("voice")
    assert list(spec.inputs) == ["user_input", "detected_intent", "response", "expected_intent"]
    dims = spec.dimensions
    assert (dims["intent_accuracy"].minimum, dims["intent_accuracy"].maximum) == (0, 100)
    assert (dims["faithfulness"].minimum, dims["faithfulness"].maximum) == (1, 5)
    assert dims["safety"].kind == "gate"
    assert spec.scoring is not None
    assert spec.scoring.gates == ("safety",)
    assert spec.scoring.composite["faithfulness"].scale == 20


def _copy_judge(tmp_path: Path, name: str = "voice") -> Path:
    src = Path(default_registry().get(name).directory)
    dst = tmp_path / "judges" / f"my_{name}"
    shutil.copytree(src, dst)
    return dst


def test_a_new_judge_is_just_files(tmp_path: Path) -> None:
    dst = _copy_judge(tmp_path)
    meta = (dst / "judge.yaml").read_text(encoding="utf-8").replace("name: voice", "name: my_voice")
    (dst / "judge.yaml").write_text(meta, encoding="utf-8")
    registry = JudgeRegistry.load([tmp_path / "judges"])
    assert "my_voice" in registry.names()
    assert registry.get("my_voice").inputs == registry.get("voice").inputs


def test_template_with_unknown_placeholder_is_refused_naming_the_file(tmp_path: Path) -> None:
    dst = _copy_judge(tmp_path)
    (dst / "prompt.en.txt").write_text("Rate {user_input} {surprise}", encoding="utf-8")
    with pytest.raises(JudgeFileError, match=r"prompt\.en\.txt.*placeholders"):
        JudgeRegistry.load([tmp_path / "judges"])


def test_scoring_on_unknown_dimension_is_refused(tmp_path: Path) -> None:
    dst = _copy_judge(tmp_path)
    meta = (dst / "judge.yaml").read_text(encoding="utf-8").replace("coherence: {weight", "cohesion: {weight")
    (dst / "judge.yaml").write_text(meta, encoding="utf-8")
    with pytest.raises(JudgeFileError, match=r"scoring\.composite\.cohesion"):
        JudgeRegistry.load([tmp_path / "judges"])


def test_policy_file_overrides_thresholds(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  verdict: {production_ready: 90, needs_review: 70}\n", encoding="utf-8")
    registry = JudgeRegistry.load(None, policy)
    scoring = registry.get("voice").scoring
    assert scoring is not None
    assert (scoring.production_ready, scoring.needs_review) == (90, 70)
    assert scoring.escalation_min == 75  # untouched values keep the shipped default
