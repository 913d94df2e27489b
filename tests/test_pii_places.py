"""Place and organisation gazetteers keep clubs, firms and towns out of the German person rules."""

from __future__ import annotations

import pytest

from bqas.offline.pii import detect_pii
from bqas.offline.pii_places import organisation_names, places


def _persons(text: str) -> list[str]:
    return [f.text for f in detect_pii(text, "de", kinds={"person"})]


@pytest.mark.parametrize(
    "text",
    [
        "Er wechselte im Sommer zum AC Milan.",  # club abbreviation before a first name
        "Hertha BSC verlor am Samstag 0:2.",  # club abbreviation after a first name
        "Der FC Carl Zeiss Jena liegt auf Platz drei.",
        "Die Klasse fliegt nach Sydney.",  # a listed place after a place preposition
        "Die Kampfjets werden im englischen Hatfield hergestellt.",  # an adjective in between
        "Santa Cruz/Madrid - So kalt wie im Münsterland ist es nicht.",  # a surname that is a big city
        "Das Buch erschien bei Paul Haupt AG.",  # legal form after the name
    ],
)
def test_clubs_firms_and_places_are_no_persons(text: str) -> None:
    assert _persons(text) == []


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Sofia hat heute ihr Heft vergessen.", ["Sofia"]),  # a city name, but no place context
        ("Ich übe mit Sofia und Jordan.", ["Sofia", "Jordan"]),
        ("Frau Sydney kommt morgen.", ["Sydney"]),  # a cue wins over the gazetteer
        ("Anna Madrid hat angerufen.", ["Anna Madrid"]),  # first name + surname
        ("Hilfe kommt von ihrer Tante Cilli.", ["Cilli"]),
    ],
)
def test_persons_named_like_places_are_still_found(text: str, names: list[str]) -> None:
    assert _persons(text) == names


def test_the_gazetteer_is_geonames_data_with_population() -> None:
    table = places()
    assert table["Sydney"] > 1_000_000 and table["Hatfield"] >= 15_000
    assert len(table) > 30_000


@pytest.mark.parametrize(
    "text",
    [
        "Er fährt seit Jahren einen Alfa Romeo.",  # a first name inside a car brand
        "Hertha gewann das Derby.",  # a club that is also an old first name, alone
        "Aston Martin stellt ein neues Modell vor.",
        "Hugo Boss meldet einen höheren Umsatz.",
        "Siemens und Porsche legen Zahlen vor.",  # founders' surnames that usually mean the firm
    ],
)
def test_listed_organisations_and_brands_are_no_persons(text: str) -> None:
    assert _persons(text) == []


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Romeo hat heute gefehlt.", ["Romeo"]),  # no brand around it
        ("Hertha Müller kommt morgen zum Elterngespräch.", ["Hertha Müller"]),  # reaches beyond "Hertha"
        ("Werner von Siemens gründete eine Firma.", ["Werner von Siemens"]),
        ("Martin Aston hat angerufen.", ["Martin Aston"]),  # the brand's words in another order
        ("Bei Procter & Gamble arbeitet Anna Schmidt.", ["Anna Schmidt"]),
        ("Frau Porsche kommt. Porsche bringt die Unterlagen mit.", ["Porsche", "Porsche"]),  # a person's repeat
    ],
)
def test_persons_next_to_or_named_like_brands_are_still_found(text: str, names: list[str]) -> None:
    assert _persons(text) == names


def test_the_organisation_list_is_clean_data() -> None:
    names = organisation_names()
    assert len(names) > 200 and len(set(names)) == len(names)
    assert "Alfa Romeo" in names and all(name == name.strip() and name for name in names)
