"""Person names in Latin script: after a title, a role or a context phrase, from the first-name and
surname lists, and repetitions of a name already found; places, firms and pseudonyms left out."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache

from bqas.offline.pii.lexicon import (
    _ACADEMIC,
    _NOUN_MARKERS,
    _PARTICLES,
    _PLACE_HEADS,
    _PLACE_PREFIXES,
    _PLACE_PREPOSITIONS,
    _PLACEHOLDERS,
    _ROLE_WORDS,
    _TITLE_CUES,
    _Lexicon,
    _lexicon,
)
from bqas.offline.pii.match import _make, _may_match, _need
from bqas.offline.pii_types import PiiFinding
from bqas.offline.text.literals import LiteralScan, Requirement, fold_case


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
