"""Postal addresses: German/Austrian/Swiss streets with house number (and postcode and town), bare
postcodes with a cue, English street addresses and Chinese ``…路12号`` addresses."""

from __future__ import annotations

import re
from functools import cache

from bqas.offline.pii.match import _make, _need
from bqas.offline.pii_types import PiiFinding
from bqas.offline.text.literals import Prefilter

_STREET_SUFFIXES = (
    "straße|strasse|str\\.|gasse|weg|platz|allee|ring|damm|ufer|chaussee|steig|pfad|markt|zeile|kai|"
    "promenade|graben|stieg|twiete|berg|hof|anger|gürtel|park|brücke|tor|feld|garten"
)
_STREET_WORDS = "Straße|Strasse|Str\\.|Gasse|Weg|Platz|Allee|Ring|Damm|Ufer|Chaussee|Steig|Pfad|Markt|Zeile|Kai"
_HOUSE_NO = r"\d{1,4}(?:\s?[a-hA-H])?(?:\s?[-/]\s?\d{1,4}(?:\s?[a-hA-H])?)?"
_CAP = r"[A-ZÄÖÜ][a-zäöüß]+"
# A number followed by a unit is a distance, a price or a duration, not a house number.
_NOT_HOUSE = r"(?!\s?(?:km|m\b|cm|min|Min|Minuten|Stunden|h\b|%|€|Euro|EUR|Uhr|Jahre|Punkte|Prozent|x\b))"


@cache
def _address_patterns() -> tuple[re.Pattern[str], ...]:
    postcode_town = rf"(?:,?\s+(?:[DAL]-|CH-)?\d{{4,5}}\s+{_CAP}(?:[ -](?:{_CAP}|am|an|im|bei|ob|\(\w+\)))*)?"
    de_street = re.compile(
        # "Hauptstraße 12", "Karl-Marx-Allee 3a", "Berliner Straße 5", "Am Markt 3" (+ ", 80331 München")
        rf"(?<![\w-])(?:(?:[A-ZÄÖÜ][\wäöüß]*-)*[A-ZÄÖÜ][a-zäöüß]*(?:{_STREET_SUFFIXES})"
        rf"|(?:[A-ZÄÖÜ][\wäöüß]*-)+(?:{_STREET_WORDS})"
        rf"|(?:{_CAP}(?:er|sche|sches)|Alte|Alter|Neue|Neuer|Große|Kleine|Lange|Hohe|Obere|Untere)\s(?:{_STREET_WORDS})"
        rf"|(?:Am|An der|An den|Auf der|Auf dem|Im|In der|Unter den|Zum|Zur|Hinter der|Vor dem)\s{_CAP})"
        rf"\s{_HOUSE_NO}{_NOT_HOUSE}(?![\d,.]\d){postcode_town}"
    )
    # A bare postcode + town only with a country prefix or a cue: "80331 München" alone could be
    # "10000 Menschen".
    postcode_only = re.compile(
        rf"(?:(?<![\w-])(?:D|A|CH)-\d{{4,5}}\s+{_CAP}|(?i:PLZ|Postleitzahl|wohnhaft in|wohnt in)\s*:?\s*\d{{4,5}}\s+{_CAP})"
    )
    en_street = re.compile(
        r"(?<![\w-])\d{1,5}\s(?:[A-Z][a-z]+\s){1,3}"
        r"(?:Street|St\.|Road|Rd\.|Avenue|Ave\.|Lane|Ln\.|Drive|Dr\.|Way|Close|Court|Ct\.|Place|Pl\.|Boulevard|Blvd\.|Crescent|Terrace|Gardens)"
        r"(?:,\s?[A-Z][a-z]+)?(?:,?\s[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2})?"
    )
    zh_street = re.compile(
        r"(?:[\u4e00-\u9fff]{2,6}(?:省|市|自治区))?(?:[\u4e00-\u9fff]{1,6}(?:市|区|县|镇))*"
        r"[\u4e00-\u9fff]{1,10}(?:路|街|大道|大街|巷|胡同|里|弄)\s?\d{1,5}\s?号(?:院|楼)?(?:\s?\d{1,4}\s?(?:室|楼|单元|层))*"
    )
    return de_street, postcode_only, en_street, zh_street


def _find_addresses(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """Postal addresses; every pattern runs (answers mix languages), only confidence is shared."""
    out: list[PiiFinding] = []
    if any(map(str.isdigit, text)):
        patterns = _address_patterns()
        # A street word, a postcode cue, 号: most texts hold none, and one literal scan says which patterns
        # are worth running.
        run = _address_prefilter().candidates(lambda _: text) if pre else range(len(patterns))
        for k in run:
            method, conf = _ADDRESS_METHODS[k], _ADDRESS_CONFIDENCE[k]
            out += [_make("address", text, m.start(), m.end(), method, conf) for m in patterns[k].finditer(text)]
    return out


@cache
def _address_prefilter() -> Prefilter:
    return Prefilter([("text", _need(pattern)) for pattern in _address_patterns()])


_ADDRESS_METHODS = ("regex:street_de", "regex:postcode", "regex:street_en", "regex:street_zh")
_ADDRESS_CONFIDENCE = (0.85, 0.7, 0.8, 0.85)
