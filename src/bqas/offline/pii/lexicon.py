"""The word lists of the person rules: the shipped name lists (``bqas/data/pii/``, read once on first
use) and the cue, particle, placeholder and place words of the Latin-script rules."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class _Lexicon:
    first: frozenset[str]
    ambiguous_first: frozenset[str]
    last: frozenset[str]
    ambiguous_last: frozenset[str]
    not_names: frozenset[str]
    zh_surnames: tuple[str, ...]


def _read_words(name: str) -> list[str]:
    """Lines of ``bqas/data/pii/<name>``, without comments and blanks."""
    raw = resources.files("bqas").joinpath("data", "pii", name).read_text(encoding="utf-8")
    return [line.strip() for line in raw.splitlines() if line.strip() and not line.startswith("#")]


@cache
def _lexicon() -> _Lexicon:
    """The name lists, loaded once (a few milliseconds)."""
    zh = _read_words("zh_surnames.txt")
    return _Lexicon(
        first=frozenset(_read_words("first_names.txt")),
        ambiguous_first=frozenset(_read_words("ambiguous_first_names.txt")),
        last=frozenset(_read_words("last_names.txt")),
        ambiguous_last=frozenset(_read_words("ambiguous_last_names.txt")),
        not_names=frozenset(_read_words("not_names.txt")),
        # Longest first so that compound surnames (欧阳) win over their first character.
        zh_surnames=tuple(sorted(set(zh), key=len, reverse=True)),
    )


def _wordset(words: str) -> frozenset[str]:
    """A set from a space-separated word list (keeps long word lists compact in the source)."""
    return frozenset(words.split())


def _wordtuple(words: str) -> tuple[str, ...]:
    """A tuple from a space-separated word list, in the given order."""
    return tuple(words.split())


# Titles that make the next capitalised word(s) a name. Abbreviations may carry a full stop.
_TITLE_CUES = frozenset(
    {"Herr", "Herrn", "Frau", "Hr", "Fr", "Fräulein", "Mr", "Mrs", "Ms", "Mx", "Miss", "Mister", "Madame", "Monsieur"}
)
# Academic titles between a cue and the name ("Frau Dr. Weber"); skipped, not part of the name.
_ACADEMIC = frozenset({"Dr", "Prof", "Professor", "Professorin", "Dipl", "Ing", "med", "phil", "rer", "nat", "Mag"})
# Roles that, directly before a capitalised word, mark it as a name ("Schülerin Lea", "Außenminister
# Steinmeier"); matched as the whole word or as the end of a compound ("Klassenlehrerin", "SPD-Chef").
_ROLE_WORDS = _wordtuple(
    "schüler schülerin lehrer lehrerin kollege kollegin referendar referendarin rektor rektorin "
    "leiter leiterin direktor direktorin minister ministerin präsident präsidentin kanzler "
    "kanzlerin chef chefin sprecher sprecherin trainer trainerin bürgermeister bürgermeisterin "
    "vorsitzende vorsitzender sänger sängerin autor autorin schauspieler schauspielerin regisseur "
    "regisseurin komponist komponistin maler malerin dichter dichterin schriftsteller "
    "schriftstellerin pfarrer pfarrerin bischof papst könig königin kaiser kaiserin prinz "
    "prinzessin herzog herzogin graf gräfin stürmer torhüter torwart kapitän kommissar "
    "kommissarin anwalt anwältin richter richterin abgeordnete abgeordneter senator senatorin "
    "gouverneur sohn tochter bruder schwester nachbar nachbarin student studentin mitarbeiter "
    "mitarbeiterin sekretär sekretärin erzieher erzieherin kandidat kandidatin staatssekretär "
    "philosoph physiker historiker professor professorin teacher pupil"
)
# Name particles allowed inside a name ("Ursula von der Leyen", "Vincent van Gogh").
_PARTICLES = _wordset("von van der den de da di del della zu vom ten ter le la bin al el")
# Specimen names: a span containing one of these is a placeholder, not PII.
_PLACEHOLDERS = frozenset({"Mustermann", "Musterfrau", "Musterschüler", "Musterschülerin", "Doe", "Mustermensch"})
# Words before a name that make it part of a place or a firm: "San Remo", "Puerto Rico", "St. Johann".
_PLACE_PREFIXES = _wordset(
    "San Santa Santo São St Sankt Saint Puerto Porto Cerro Via Rio Río Fort Port Mount Mt Lake "
    "Villa Bad Banco Credito Club Cape Kap Isla"
)
# Words after a name that make the whole a place or an organisation: "Lindsey School", "Hilton Hotel".
_PLACE_HEADS = _wordset(
    "School College University Universität Institute Institut Stiftung Foundation Street Road "
    "Avenue Hall Center Centre Park Bridge Airport Stadium Stadion Arena Hotel Gymnasium Schule "
    "Kirche Verlag GmbH AG Inc Ltd Award Prize Preis Cup Pokal Trophy Memorial Island Islands "
    "River County City Square Brücke Platz Straße Allee Weg Gasse Ring Bahnhof Station Line "
    "Records Orchestra Band Quartett Trio Theatre Theater Surveys Company Group"
)
# Indefinite articles (and "des", English articles): "einer Tom", "the Earl" are nouns, not names. The
# definite "der/die" is left out on purpose: "der Paul war heute unruhig" is common spoken German.
_NOUN_MARKERS = frozenset(
    {"ein", "eine", "einer", "einem", "einen", "eines", "kein", "keine", "keinen", "des", "the", "a", "an"}
)


# Prepositions of place: a listed surname after them is mostly a town ("nach Madrid", "in Hudson").
_PLACE_PREPOSITIONS = frozenset({"in", "im", "nach", "aus", "zwischen", "Richtung", "bis", "of", "from", "to", "at"})
