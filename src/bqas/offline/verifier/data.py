"""Training pairs for the verifier: (claim, evidence, label 1 = not supported), from data whose licences
allow fitting and shipping weights, never from XNLI, OCNLI or MEMERAG (evaluation only).

Real labelled pairs:

* WiCE (``ryokamoi/wice``; annotations ODC-BY, Wikipedia text CC BY-SA): claims and sub-claims against
  their oracle evidence sentences; supported = 0, partially / not supported = 1;
* BEGIN (CC BY 4.0 / CDLA-Sharing-1.0): a dialogue response against its knowledge snippet;
* HalluQA (Apache-2.0): a wrong answer against the right ones (1), a right answer against the *other*
  right ones (0): Chinese paraphrases and contradictions;
* MTRAG (Apache-2.0): every sentence of an answer people rated faithful, against its passages (0).

Synthetic minimal pairs from permitted passages (MTRAG passages, BEGIN knowledge, WiCE evidence, GermEval
2014 sentences from ``pii_de.jsonl`` (CC BY 4.0), HalluQA right answers, BQAS's own scenario passages): a
passage sentence (sometimes with a clause dropped: still supported) against the evidence the run-time
selector picks, and one change that makes it unsupported: negation added or removed, a number, date or
unit changed, a name swapped for one of the same kind, a quantifier (alle/keine/höchstens/mindestens;
所有/没有/至多/至少), an antonym, a wrong cause ("weil/because/因为" + a clause of another sentence), a
hedge made certain, or the supporting sentence removed from the evidence (the claim stays on topic, the
evidence no longer says it), or a sentence of another passage with shared words.

:func:`build_pairs` refuses any pair that shares a sentence with the contradiction suite
(``tests/fixtures/contradiction_suite``), which measures the shipped model and is never trained on.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bqas.offline.grounding_data import _change_number, _negate, scenario_passages
from bqas.offline.text.language import detect_language
from bqas.offline.text.sentences import split_sentences
from bqas.offline.text.tokens import CJK_RE
from bqas.offline.verifier.evidence import context_sentences, select

#: Files that must never be read for training (non-commercial / evaluation-only licences).
FORBIDDEN = ("memerag", "nli_de", "nli_zh", "xnli", "ocnli")


@dataclass(frozen=True)
class Pair:
    claim: str
    evidence: str
    label: int  # 1 = the evidence does not support the claim
    source: str
    language: str
    kind: str = ""


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if any(f in path.name.casefold() for f in FORBIDDEN):
        raise ValueError(f"{path}: evaluation-only data, never used for training")
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


# ------------------------------------------------------------------------------------- real pairs

#: Share of each real dataset's groups kept out of the verifier's training: the cascade's band and
#: combination are fitted on them (a model's own training rows would make it look surer than it is).
CALIBRATION_SHARE = 0.3


def is_calibration(key: str) -> bool:
    """Whether the group ``key`` (BEGIN knowledge, HalluQA id, MTRAG conversation) is in the calibration part."""
    return hashlib.sha256(key.encode("utf-8")).digest()[0] < int(256 * CALIBRATION_SHARE)


def group_key(source: str, row: dict[str, Any]) -> str:
    """The group a row of a real dataset belongs to (all its answers go to the same part)."""
    if source == "begin":
        return "begin:" + str(row["knowledge"])
    if source == "halluqa":
        return "halluqa:" + str(row["id"])
    return "mtrag:" + str(row.get("task_id") or row["id"]).split("<::>")[0]


def wice_pairs(folder: Path) -> list[Pair]:
    """WiCE claims and sub-claims (``oracle_chunks/{claim,subclaim}/{dev,test}.jsonl``)."""
    out: list[Pair] = []
    for level in ("claim", "subclaim"):
        for split in ("dev", "test"):
            path = folder / level / f"{split}.jsonl"
            if not path.is_file():
                continue
            for r in _rows(path):
                claims = r["claim"] if isinstance(r["claim"], list) else [r["claim"]]
                labels = r["label"] if isinstance(r["label"], list) else [r["label"]]
                sents = [s for s in r["evidence"] if not s.startswith("(meta data)")]
                for claim, label in zip(claims, labels, strict=False):
                    ev = select(claim, sents)
                    out.append(Pair(claim, ev, int(label != "supported"), f"wice-{level}", "en"))
    return out


def begin_pairs(path: Path) -> list[Pair]:
    out = []
    for r in _rows(path):
        if r["label"] == "generic" or is_calibration(group_key("begin", r)):
            continue
        ev = select(r["response"], context_sentences([r["knowledge"]]))
        out.append(Pair(r["response"], ev, int(r["label"] == "not_fully_attributable"), "begin", "en"))
    return out


def halluqa_pairs(path: Path) -> list[Pair]:
    out = []
    for r in _rows(path):
        if is_calibration(group_key("halluqa", r)):
            continue
        rights = [a for a in r["right_answers"] if a.strip()]
        for w in r["wrong_answers"]:
            if w.strip() and rights:
                out.append(Pair(w, select(w, context_sentences(rights)), 1, "halluqa", "zh"))
        for i, a in enumerate(rights):
            others = [x for j, x in enumerate(rights) if j != i]
            if others:
                out.append(Pair(a, select(a, context_sentences(others)), 0, "halluqa", "zh"))
    return out


def mtrag_pairs(path: Path) -> list[Pair]:
    """Sentences of answers people rated faithful, each against its passages (supported)."""
    out = []
    for r in _rows(path):
        if not r.get("contexts") or r.get("faithful") is not True or is_calibration(group_key("mtrag", r)):
            continue
        sents = context_sentences(r["contexts"])
        for claim in split_sentences(r["answer"]):
            if len(claim) >= 20:
                out.append(Pair(claim, select(claim, sents), 0, "mtrag", "en"))
    return out


# ------------------------------------------------------------------------------------ perturbations

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
_CAP = re.compile(r"(?<=[a-zäöüß,] )[A-ZÄÖÜ][a-zäöüß]{2,}(?: [A-ZÄÖÜ][a-zäöüß]{2,})?")
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


def germeval_passages(path: Path, group: int = 4) -> list[tuple[str, str]]:
    """GermEval 2014 sentences (detokenised), ``group`` consecutive ones as one pseudo-passage."""
    sents = []
    for r in _rows(path):
        text = re.sub(r" ([.,;:!?)\]])", r"\1", r["text"])
        text = re.sub(r"([(\[„]) ", r"\1", text).replace(" “", "“").replace(' " ', ' "')
        sents.append(text)
    return [(" ".join(sents[i : i + group]), "de") for i in range(0, len(sents), group)]


def _wice_passages(folder: Path) -> list[tuple[str, str]]:
    out = []
    path = folder / "claim" / "dev.jsonl"
    if path.is_file():
        for r in _rows(path):
            text = " ".join(s for s in r["evidence"] if not s.startswith("(meta data)"))
            out.append((text, "en"))
    return out


# ---------------------------------------------------------------------------------------- assembly


def suite_sentences(suite: Path) -> set[str]:
    """Every context and answer sentence of the contradiction suite (casefolded, spaces collapsed)."""
    out: set[str] = set()
    for path in sorted(suite.glob("*.jsonl")):
        for r in _rows(path):
            for text in (r["context"], r["faithful"], r["unfaithful"]):
                out.update(_key(s) for s in split_sentences(text))
    return out


def drop_overlap(pairs: Sequence[Pair], banned: set[str]) -> list[Pair]:
    """The pairs none of whose claim or evidence sentences is in ``banned`` (keys of :func:`suite_sentences`)."""
    return [
        p
        for p in pairs
        if not any(_key(s) in banned for s in (*split_sentences(p.claim), *split_sentences(p.evidence)))
    ]


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def build_pairs(data: Path, wice: Path | None, scenarios: Path | None, suite: Path | None, seed: int = 0) -> list[Pair]:
    """All training pairs, shuffled (seeded). Missing inputs are skipped; the suite's sentences never pass."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    passages: dict[str, list[tuple[str, str]]] = {}
    if wice is not None and wice.is_dir():
        pairs += wice_pairs(wice)
        passages["wice"] = _wice_passages(wice)
    if (data / "attribution_en.jsonl").is_file():
        pairs += begin_pairs(data / "attribution_en.jsonl")
        passages["begin"] = list(
            dict.fromkeys(
                (r["knowledge"], "en")
                for r in _rows(data / "attribution_en.jsonl")
                if not is_calibration(group_key("begin", r))
            )
        )
    if (data / "hallucination_zh.jsonl").is_file():
        pairs += halluqa_pairs(data / "hallucination_zh.jsonl")
        passages["halluqa"] = [
            (" ".join(r["right_answers"]), "zh")
            for r in _rows(data / "hallucination_zh.jsonl")
            if r["right_answers"] and not is_calibration(group_key("halluqa", r))
        ]
    if (data / "rag_faithfulness_en.jsonl").is_file():
        pairs += mtrag_pairs(data / "rag_faithfulness_en.jsonl")
        seen: dict[str, str] = {}
        for r in _rows(data / "rag_faithfulness_en.jsonl"):
            if is_calibration(group_key("mtrag", r)):
                continue
            for c in r.get("contexts") or []:
                seen.setdefault(c, "en")
        passages["mtrag"] = list(seen.items())
    if (data / "pii_de.jsonl").is_file():
        passages["germeval"] = germeval_passages(data / "pii_de.jsonl")
    if scenarios is not None and scenarios.is_dir():
        passages["scenarios"] = [(t, detect_language(t)) for t, _ in scenario_passages(scenarios)]
    per = {"germeval": 2, "scenarios": 12, "halluqa": 2, "mtrag": 3, "begin": 1, "wice": 2}
    for i, (name, ps) in enumerate(sorted(passages.items())):
        pairs += synthesize(ps, name, seed + i, per_passage=per.get(name, 1))
    if suite is not None and suite.is_dir():
        pairs = drop_overlap(pairs, suite_sentences(suite))
    pairs = [p for p in pairs if p.claim.strip() and p.evidence.strip()]
    rng.shuffle(pairs)
    return pairs
