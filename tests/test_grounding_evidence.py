"""The specifics an offline ``failed`` verdict may rest on (bqas.offline.grounding.evidence_against): what
counts, and what is formatting rather than a claim."""

from __future__ import annotations

from bqas.offline.embeddings import HashingEmbedder
from bqas.offline.grounding import analyse_grounding, evidence_against
from bqas.offline.methods import OfflineContext


def _findings(answer: str, fact: str, language: str = "de") -> list[str]:
    ctx = OfflineContext(language=language, embedder_factory=HashingEmbedder)
    return [e.finding() for e in evidence_against(analyse_grounding(answer, [fact], ctx))]


def test_a_weekday_or_month_the_facts_do_not_name_is_evidence() -> None:
    fact = "Die Sprechstunde von Frau Weber ist dienstags von 13:15 bis 14:00 Uhr in Raum 204."
    assert _findings("Frau Weber hat donnerstags von 13:15 bis 14:00 Uhr Sprechstunde in Raum 204.", fact) == [
        "date 'donnerstags' not in the facts"
    ]
    assert _findings("Frau Weber hat dienstags von 13:15 bis 14:00 Uhr Sprechstunde in Raum 204.", fact) == []
    assert _findings("Der Antrag muss bis Mitte April gestellt werden.", "Anträge bis zum 15. März stellen.") == [
        "date 'April' not in the facts"
    ]


def test_a_weekday_inside_a_range_of_the_facts_is_supported() -> None:
    fact = "Die Bücherei hat montags bis donnerstags bis 15:30 Uhr geöffnet, freitags bis 13 Uhr."
    assert _findings("Mittwochs hat die Bücherei bis 15:30 Uhr geöffnet.", fact) == []


def test_list_numbers_scare_quotes_and_headings_are_formatting_not_claims() -> None:
    fact = "Causes include low semen quality, drugs and infections; a helpline is open day and night."
    answer = "Causes: 1. Low semen quality 2. Drugs 3. Infections. The helpline is available 24/7."
    assert _findings(answer, fact, "en") == []
    assert _findings('The "best" choice depends on the kind of infections.', fact, "en") == []
    assert _findings("**Order Pickup**: drugs and infections are causes.", fact, "en") == []
    # "May" starts sentences as a verb: not the month.
    assert _findings("May result in drugs and infections as causes.", fact, "en") == []
    # A real number the facts lack still counts.
    assert _findings("Causes include 12 kinds of infections.", fact, "en") == ["number '12' not in the facts"]
