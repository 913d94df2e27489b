"""Synthetic minimal pairs for the verifier, from permitted passages (MTRAG passages, BEGIN knowledge, WiCE
evidence, GermEval 2014 sentences from ``pii_de.jsonl`` (CC BY 4.0), HalluQA right answers, BQAS's own
scenario passages): a passage sentence (sometimes with a clause dropped: still supported) against the
evidence the run-time selector picks, and one change that makes it unsupported: negation added or removed,
a number, date or unit changed, a name swapped for one of the same kind, a quantifier
(alle/keine/höchstens/mindestens; 所有/没有/至多/至少), an antonym, a wrong cause ("weil/because/因为" + a
clause of another sentence), a hedge made certain, or the supporting sentence removed from the evidence
(the claim stays on topic, the evidence no longer says it), or a sentence of another passage with shared
words.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from bqas.offline.text.tokens import CJK_RE
from bqas.offline.verifier.evidence import context_sentences, select
from bqas.training.grounding.synthetic import _CAP, _change_number, _negate
from bqas.training.verifier.datasets import Pair

QUANTIFIERS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("all", "no"),
        ("every", "no"),
        ("always", "never"),
        ("at least", "at most"),
        ("at most", "at least"),
        ("more than", "less than"),
        ("less than", "more than"),
        ("before", "after"),
        ("after", "before"),
        ("some", "all"),
        ("only", "also"),
        ("most", "few"),
        ("many", "few"),
        ("increase", "decrease"),
        ("higher", "lower"),
        ("lower", "higher"),
        ("first", "last"),
    ],
    "de": [
        ("alle", "keine"),
        ("jeder", "kein"),
        ("immer", "nie"),
        ("mindestens", "höchstens"),
        ("höchstens", "mindestens"),
        ("mehr als", "weniger als"),
        ("weniger als", "mehr als"),
        ("vor", "nach"),
        ("nach", "vor"),
        ("einige", "alle"),
        ("nur", "auch"),
        ("viele", "wenige"),
        ("meisten", "wenigsten"),
        ("erste", "letzte"),
        ("ersten", "letzten"),
        ("höher", "niedriger"),
        ("früher", "später"),
        ("später", "früher"),
    ],
    "zh": [
        ("所有", "没有"),
        ("全部", "部分"),
        ("总是", "从不"),
        ("至少", "至多"),
        ("至多", "至少"),
        ("超过", "不到"),
        ("以上", "以下"),
        ("以下", "以上"),
        ("之前", "之后"),
        ("之后", "之前"),
        ("一些", "所有"),
        ("只", "也"),
        ("很多", "很少"),
        ("第一", "最后"),
        ("增加", "减少"),
        ("提高", "降低"),
        ("最", "最不"),
    ],
}
ANTONYMS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("large", "small"),
        ("small", "large"),
        ("open", "closed"),
        ("allowed", "forbidden"),
        ("possible", "impossible"),
        ("true", "false"),
        ("win", "lose"),
        ("won", "lost"),
        ("north", "south"),
        ("east", "west"),
        ("old", "new"),
        ("new", "old"),
        ("early", "late"),
        ("strong", "weak"),
        ("rich", "poor"),
        ("cheap", "expensive"),
        ("positive", "negative"),
        ("start", "end"),
        ("started", "ended"),
        ("increased", "decreased"),
        ("decreased", "increased"),
        ("born", "died"),
        ("male", "female"),
        ("public", "private"),
        ("required", "optional"),
        ("success", "failure"),
    ],
    "de": [
        ("groß", "klein"),
        ("klein", "groß"),
        ("offen", "geschlossen"),
        ("erlaubt", "verboten"),
        ("möglich", "unmöglich"),
        ("gewann", "verlor"),
        ("Norden", "Süden"),
        ("Osten", "Westen"),
        ("alt", "neu"),
        ("neu", "alt"),
        ("neue", "alte"),
        ("früh", "spät"),
        ("stark", "schwach"),
        ("reich", "arm"),
        ("günstig", "teuer"),
        ("positiv", "negativ"),
        ("Beginn", "Ende"),
        ("begann", "endete"),
        ("stieg", "sank"),
        ("geboren", "gestorben"),
        ("öffentlich", "privat"),
        ("Pflicht", "freiwillig"),
        ("verpflichtend", "freiwillig"),
        ("Erfolg", "Misserfolg"),
        ("links", "rechts"),
        ("oben", "unten"),
    ],
    "zh": [
        ("大", "小"),
        ("开放", "关闭"),
        ("允许", "禁止"),
        ("可以", "不能"),
        ("成功", "失败"),
        ("北", "南"),
        ("东", "西"),
        ("新", "旧"),
        ("早", "晚"),
        ("强", "弱"),
        ("便宜", "昂贵"),
        ("开始", "结束"),
        ("上升", "下降"),
        ("出生", "去世"),
        ("公开", "私人"),
        ("必须", "可选"),
        ("正确", "错误"),
        ("打开", "关闭"),
        ("高", "低"),
        ("长", "短"),
        ("多", "少"),
    ],
}
MODALITY: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("may", "must"),
        ("might", "will"),
        ("can", "must"),
        ("could", "will"),
        ("possibly", "certainly"),
        ("probably", "definitely"),
        ("should", "must"),
        ("usually", "always"),
        ("often", "always"),
    ],
    "de": [
        ("kann", "muss"),
        ("können", "müssen"),
        ("könnte", "wird"),
        ("vielleicht", "sicher"),
        ("wahrscheinlich", "sicher"),
        ("sollte", "muss"),
        ("sollen", "müssen"),
        ("meist", "immer"),
        ("oft", "immer"),
        ("darf", "muss"),
    ],
    "zh": [
        ("可能", "一定"),
        ("可以", "必须"),
        ("也许", "肯定"),
        ("应该", "必须"),
        ("通常", "总是"),
        ("经常", "总是"),
        ("大概", "肯定"),
    ],
}
CAUSE = {"en": " because ", "de": ", weil ", "zh": "，因为"}
_DE_NEGATED = re.compile(r"\b(nicht|kein|keine|keinen|keinem|keiner|nie)\s")
_EN_NEGATED = re.compile(r"\b(not|never|no)\s|n't\b")
_ZH_NEGATED = re.compile(r"[不没未无]")
_ZH_NAME = re.compile(r"[\u4e00-\u9fff]{2,4}(?=[市省县区国公司大学])")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20[0-4]\d)(?!\d)")
_MONTHS = {
    "en": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "de": [
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ],
}
_UNITS = {"km": "m", "m": "km", "kg": "g", "Euro": "Cent", "Prozent": "Punkte", "percent": "points",
          "%": " Punkte", "hours": "minutes", "minutes": "hours", "Stunden": "Minuten", "Minuten": "Stunden",
          "小时": "分钟", "分钟": "小时", "公里": "米", "元": "角", "天": "周", "days": "weeks", "Tage": "Wochen"}  # fmt: skip


def _swap_word(sentence: str, table: Sequence[tuple[str, str]], language: str, rng: random.Random) -> str | None:
    options = []
    for a, b in table:
        if language == "zh":
            i = sentence.find(a)
            if i >= 0:
                options.append((i, i + len(a), b))
        else:
            for m in re.finditer(rf"\b{re.escape(a)}\b", sentence, flags=re.IGNORECASE):
                word = b[0].upper() + b[1:] if m.group(0)[0].isupper() else b
                options.append((m.start(), m.end(), word))
    if not options:
        return None
    s, e, w = rng.choice(options)
    return sentence[:s] + w + sentence[e:]


def _unnegate(sentence: str, language: str) -> str | None:
    if language == "zh":
        m = _ZH_NEGATED.search(sentence)
        return sentence[: m.start()] + sentence[m.end() :] if m and m.start() > 0 else None
    pattern = _DE_NEGATED if language == "de" else _EN_NEGATED
    m = pattern.search(sentence)
    if not m:
        return None
    word = m.group(0).strip().casefold()
    repl = {"kein": "ein ", "keine": "eine ", "keinen": "einen ", "keinem": "einem ", "keiner": "einer ",
            "nie": "immer ", "never": "always ", "no": "some "}.get(word, "")  # fmt: skip
    if word == "n't":
        return sentence[: m.start()] + sentence[m.end() :]
    return sentence[: m.start()] + repl + sentence[m.end() :]


def _change_date(sentence: str, language: str, rng: random.Random) -> str | None:
    years = list(_YEAR.finditer(sentence))
    if years:
        m = rng.choice(years)
        y = int(m.group(0)) + rng.choice((-3, -2, -1, 1, 2, 5))
        return sentence[: m.start()] + str(y) + sentence[m.end() :]
    months = _MONTHS.get(language, [])
    found = [(m, name) for name in months for m in re.finditer(rf"\b{name}\b", sentence)]
    if found:
        m, name = rng.choice(found)
        other = rng.choice([x for x in months if x != name])
        return sentence[: m.start()] + other + sentence[m.end() :]
    if language == "zh":
        m2 = re.search(r"([一二三四五六七八九十\d]{1,3})月", sentence)
        if m2:
            new = str(rng.randint(1, 12))
            return sentence[: m2.start(1)] + new + sentence[m2.end(1) :]
    return None


def _change_unit(sentence: str, rng: random.Random) -> str | None:
    hits = [(m, u) for u in _UNITS for m in re.finditer(rf"(?<=\d)\s?{re.escape(u)}(?![A-Za-zäöü])", sentence)]
    if not hits:
        return None
    m, unit = rng.choice(hits)
    return sentence[: m.start()] + " " + _UNITS[unit].strip() + sentence[m.end() :]


def _swap_name(sentence: str, pool: Sequence[str], language: str, rng: random.Random) -> str | None:
    found = list((_ZH_NAME if language == "zh" else _CAP).finditer(sentence))
    if not found or not pool:
        return None
    m = rng.choice(found)
    other = rng.choice(pool)
    if other.casefold() == m.group(0).casefold() or other in sentence:
        return None
    return sentence[: m.start()] + other + sentence[m.end() :]


def _wrong_cause(sentence: str, other: str, language: str) -> str | None:
    clause = other.rstrip(" .。!！?？")
    if language != "zh" and clause:
        clause = clause[0].lower() + clause[1:]
    if len(clause) < 8:
        return None
    stem = sentence.rstrip(" .。!！?？")
    end = "。" if language == "zh" else "."
    if language == "de":
        return None if len(clause.split()) < 3 else f"{stem}{CAUSE['de']}{clause}{end}"
    return f"{stem}{CAUSE[language]}{clause}{end}"


def _drop_clause(sentence: str, language: str) -> str | None:
    """A shorter sentence that says less (still supported): the part before the last comma, or without
    a parenthesis."""
    no_paren = re.sub(r"\s*[(（][^)）]{2,80}[)）]", "", sentence)
    if no_paren != sentence and len(no_paren) > 20:
        return no_paren
    sep = "，" if language == "zh" else ", "
    i = sentence.rfind(sep)
    if i < len(sentence) * 0.5:
        return None
    end = "。" if language == "zh" else "."
    return sentence[:i].rstrip() + end


#: Perturbation kinds, drawn with these weights; one that does not apply falls back to the next.
KINDS: tuple[tuple[str, int], ...] = (
    ("negate", 3), ("number", 2), ("date", 1), ("unit", 1), ("name", 2), ("quantifier", 2),
    ("antonym", 2), ("cause", 1), ("modality", 1), ("removed", 3), ("other", 1),
)  # fmt: skip


def _perturb(kind: str, s: str, lang: str, rng: random.Random, names: Sequence[str], other_sentence: str) -> str | None:
    if kind == "negate":
        return _unnegate(s, lang) if rng.random() < 0.35 else _negate(s, lang) or _unnegate(s, lang)
    if kind == "number":
        return _change_number(s, rng)
    if kind == "date":
        return _change_date(s, lang, rng)
    if kind == "unit":
        return _change_unit(s, rng)
    if kind == "name":
        return _swap_name(s, names, lang, rng)
    if kind == "quantifier":
        return _swap_word(s, QUANTIFIERS[lang], lang, rng)
    if kind == "antonym":
        return _swap_word(s, ANTONYMS[lang], lang, rng)
    if kind == "modality":
        return _swap_word(s, MODALITY[lang], lang, rng)
    if kind == "cause":
        return _wrong_cause(s, other_sentence, lang)
    return None


def _usable(s: str) -> bool:
    return 25 <= len(s) <= 400 and (bool(CJK_RE.search(s)) or len(s.split()) >= 5)


def synthesize(passages: Sequence[tuple[str, str]], source: str, seed: int, per_passage: int = 1) -> list[Pair]:
    """One supported and one unsupported pair per sampled sentence of each passage [(text, language)]."""
    rng = random.Random(seed)
    parsed = [(context_sentences([t]), lang) for t, lang in passages]
    parsed = [(s, lang) for s, lang in parsed if any(_usable(x) for x in s)]
    names: dict[str, list[str]] = {}
    by_lang: dict[str, list[str]] = {}
    for sents, lang in parsed:
        pattern = _ZH_NAME if lang == "zh" else _CAP
        names.setdefault(lang, []).extend(m.group(0) for s in sents for m in pattern.finditer(s))
        by_lang.setdefault(lang, []).extend(x for x in sents if _usable(x))
    kinds = [k for k, w in KINDS for _ in range(w)]
    out: list[Pair] = []
    for sents, lang in parsed:
        lang = lang if lang in QUANTIFIERS else "en"
        usable = [i for i, s in enumerate(sents) if _usable(s)]
        for i in rng.sample(usable, min(per_passage, len(usable))):
            s = sents[i]
            claim = s
            if rng.random() < 0.3:
                claim = _drop_clause(s, lang) or s
            out.append(Pair(claim, select(claim, sents), 0, f"synthetic:{source}", lang, "faithful"))
            other = rng.choice(by_lang[lang])
            first = rng.choice(kinds)
            order = [first, *(k for k, _ in KINDS if k != first)]
            for kind in order:
                if kind == "removed":
                    rest = sents[:i] + sents[i + 1 :]
                    if not rest:
                        continue
                    out.append(Pair(s, select(s, rest), 1, f"synthetic:{source}", lang, kind))
                    break
                if kind == "other":
                    if other in sents:
                        continue
                    out.append(Pair(other, select(other, sents), 1, f"synthetic:{source}", lang, kind))
                    break
                changed = _perturb(kind, s, lang, rng, names.get(lang, []), other)
                if changed and changed != s:
                    out.append(Pair(changed, select(changed, sents), 1, f"synthetic:{source}", lang, kind))
                    break
    return out
